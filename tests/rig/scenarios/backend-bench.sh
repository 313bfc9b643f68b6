# SPDX-License-Identifier: GPL-2.0-or-later
#
# Benchmark, not a test: how long the fork's QEMU takes from exec to
# answering QMP with a 1 MiB node 1 on memory-backend-pseudolock, next
# to the same QEMU with node 1 on memory-backend-ram of the same size.
# Two pairs: mapping an existing region, and creating one (a cache holds
# one region at most, so they cannot run at once).  The two of a pair
# run in turn, so that drift in the emulated host hits both alike; the
# ratio is of medians.  The tests only say that every start worked.
# Needs the Goldmont host.

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
rounds=$(cmdline_arg rounds)
rounds=${rounds:-20}

node1_ram="memory-backend-ram,id=pl0,size=1M"
node1_existing="memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0"
node1_created="memory-backend-pseudolock,id=pl0,cache-level=2,cache-id=0,size=1M"

# ready_time BACKEND: microseconds from exec to QMP, on stdout
ready_time() {
    /rig/bin/qmp-ready-time $QMP $QEMU -machine q35 -accel tcg -S \
        -nodefaults -display none -m 65M \
        -object memory-backend-ram,id=ram0,size=64M -object "$1" \
        -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
        -qmp unix:$QMP,server=on,wait=off 2>>/tmp/bench.err
}

median() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2];
        else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ms FILE STAT: the median or min of the times in FILE, in milliseconds
ms() {
    case $2 in
    median) median <"$1" ;;
    min) sort -n "$1" | head -n 1 ;;
    esac | awk '{ printf "%.1f", $1 / 1000 }'
}

# pair KIND: RAM and KIND in turn, $rounds times; prints their figures
pair() {
    failed=0
    : >/tmp/ram-$1.us
    : >/tmp/$1.us
    eval "ready_time \"\$node1_$1\"" >/dev/null     # warm-up
    i=0
    while [ $i -lt "$rounds" ]; do
        ready_time "$node1_ram" >>/tmp/ram-$1.us || failed=$((failed + 1))
        eval "ready_time \"\$node1_$1\"" >>/tmp/$1.us ||
            failed=$((failed + 1))
        i=$((i + 1))
    done
    check_eq "all $((rounds * 2)) starts of the $1 pair answered QMP" 0 $failed
    [ $failed = 0 ] || diag "$(grep -v 'TCG doesn' /tmp/bench.err)"
    ram=$(ms /tmp/ram-$1.us median)
    pl=$(ms /tmp/$1.us median)
    diag "$(printf '  %-44s %6s ms %6s ms' memory-backend-ram "$ram" \
        "$(ms /tmp/ram-$1.us min)")"
    diag "$(printf '  %-44s %6s ms %6s ms  %s' \
        "memory-backend-pseudolock ($1 region)" "$pl" \
        "$(ms /tmp/$1.us min)" "$(awk "BEGIN { printf \"%.3f\", $pl / $ram }")")"
}

mount -t resctrl resctrl $R
echo 'L2:0=00ff' >$R/schemata
pseudo_lock p0 'L2:0=ff00'
check_eq "region p0 is pseudo-locked" pseudo-locked "$(cat $R/p0/mode)"

diag "start to QMP ready, $rounds starts each, 1 MiB node 1, TCG -S:"
diag "$(printf '  %-44s %9s %9s  %s' '' median min 'ratio of medians')"
pair existing
rmdir $R/p0
pair created
check "no group is left behind" sh -c "! ls -d $R/qemu-pl-* 2>/dev/null"

# What creating costs on top of mapping is mostly the kernel's: locking
# a region (mkdir, pseudo-locksetup, schemata) and removing it again,
# timed from the shell by /proc/uptime, whose unit is 10 ms.
uptime_cs() {
    tr -d . </proc/uptime | cut -d ' ' -f 1
}
start=$(uptime_cs)
i=0
while [ $i -lt "$rounds" ]; do
    pseudo_lock lockcost 'L2:0=ff00'
    rmdir $R/lockcost
    i=$((i + 1))
done
end=$(uptime_cs)
diag "$(printf '  %-44s %6s ms' 'Linux: lock and remove a 1 MiB region' \
    "$(awk "BEGIN { printf \"%.1f\", ($end - $start) * 10 / $rounds }")")"
diag "ratio target: <= 1.05"

echo 'L2:0=ffff' >$R/schemata
umount $R
done_testing
