# SPDX-License-Identifier: GPL-2.0-or-later
#
# Regions in a cache hierarchy: on a host with both L2 and L3 cache
# allocation (an emulated Broadwell-X with l2-cat=on: an L2 per core, an
# L3 per socket), Linux locks at most one region under any CPU's caches
# (rdtgroup_pseudo_locked_in_hierarchy()).  The fork's QEMU creates an
# L3 region on socket 0; an L2 region under it is refused with the
# kernel's reason and leaves no group; an L2 region on socket 1 works,
# and then an L3 region above that one is refused in turn.  QEMU runs
# inside the emulated host (qtest accelerator).

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
pl=memory-backend-pseudolock
qemu_none="$QEMU -machine none -accel qtest -nodefaults -display none"
machine="-machine none -accel qtest -nodefaults -display none \
    -qmp unix:$QMP,server=on,wait=off"

# cache_id CPU LEVEL: the id of CPU's cache of LEVEL
cache_id() {
    for d in /sys/devices/system/cpu/cpu$1/cache/index*; do
        [ "$(cat "$d/level")" = "$2" ] && cat "$d/id"
    done | tail -n 1
}

# refused_in_hierarchy DESCRIPTION OBJECT-OPTIONS: QEMU refuses to create
# the region, with the kernel's reason, and leaves no group behind
refused_in_hierarchy() {
    refuses "$1" /tmp/refused.err $qemu_none -object "$2"
    check "  with the kernel's reason" \
        grep -q "Pseudo-locked region in hierarchy" /tmp/refused.err
    check_eq "  and no group is left behind" "$groups" "$(qemu_groups)"
}

# qemu_groups: the resctrl groups QEMUs created, one a line
qemu_groups() {
    (cd $R && ls -d qemu-pl-* 2>/dev/null)
}

mount -t resctrl resctrl $R
check "resctrl offers L2 and L3 allocation" \
    sh -c "grep -q '^ *L2:' $R/schemata && grep -q '^ *L3:' $R/schemata"
# The default group keeps the low half of every cache's ways; the high
# half is free for regions
for level in 2 3; do
    full=$((0x$(cat $R/info/L$level/cbm_mask)))
    ways=0
    while [ $((full >> ways)) -ne 0 ]; do ways=$((ways + 1)); done
    half=$(hex_mask $((ways / 2)) 0)
    line=$(sed -n "s/^ *L$level://p" $R/schemata |
        sed "s/=[0-9a-f]*/=$half/g")
    echo "L$level:$line" >$R/schemata
done
diag "$(cat $R/schemata)"
last_cpu=$(( $(nproc) - 1 ))
l2_first=$(cache_id 0 2) l3_first=$(cache_id 0 3)
l2_last=$(cache_id $last_cpu 2) l3_last=$(cache_id $last_cpu 3)
diag "CPU 0: L2 $l2_first under L3 $l3_first; CPU $last_cpu: L2 $l2_last under L3 $l3_last"
check "the first and the last CPU are under different L3 caches" \
    test "$l3_first" != "$l3_last"

# An L3 region on socket 0, kept by a running QEMU
start_qemu -object $pl,id=l3,cache-level=3,cache-id=$l3_first,size=1M
check_eq "QEMU creates an L3 region on L3 cache $l3_first" 0 $?
l3_pid=$qemu_pid
groups=$(qemu_groups)

# An L2 region under it
refused_in_hierarchy \
    "an L2 region on L2 cache $l2_first, under the locked L3, is refused" \
    "$pl,id=l2,cache-level=2,cache-id=$l2_first,size=256K"

# Over QMP, where hints do not reach the client, the reason must too
mv $QMP $QMP.l3
rm -f $QMP
$qemu_none -qmp unix:$QMP,server=on,wait=off 2>/tmp/qemu.err &
qemu_pid=$!
wait_qmp
reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"l2\", \"cache-level\": 2, \"cache-id\": $l2_first, \"size\": 262144}}")
diag "$reply"
check "object-add of that L2 region fails with the kernel's reason" \
    sh -c "echo '$reply' | grep -q 'Pseudo-locked region in hierarchy'"
check_eq "  and no group is left behind" "$groups" "$(qemu_groups)"
stop_qemu

# An L2 region on the other socket is not under it
start_qemu -object $pl,id=l2,cache-level=2,cache-id=$l2_last,size=256K
check_eq "an L2 region on L2 cache $l2_last, on the other socket, is created" \
    0 $?
reply=$(qmp '{"execute": "query-pseudolock"}')
check "  and mapped" sh -c "echo '$reply' | grep -q '\"cache-level\": 2'"
l2_pid=$qemu_pid
mv $QMP $QMP.l2

# The L3 above that L2 region
groups=$(qemu_groups)
refused_in_hierarchy \
    "an L3 region on L3 cache $l3_last, over the locked L2, is refused" \
    "$pl,id=l3b,cache-level=3,cache-id=$l3_last,size=1M"

# Both QEMUs quit; their groups go with them
QMP=$QMP.l2 qmp '{"execute": "quit"}' >/dev/null
wait $l2_pid
QMP=$QMP.l3 qmp '{"execute": "quit"}' >/dev/null
wait $l3_pid
check_eq "no QEMU group is left once both QEMUs quit" "" "$(qemu_groups)"

umount $R
done_testing
