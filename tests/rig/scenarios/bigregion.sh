# SPDX-License-Identifier: GPL-2.0-or-later
#
# Regions above the stock kernel's 4 MiB limit, on the patched kernel
# (kvm-patches/): on the Broadwell-X host's 16 MiB L3 (1 MiB a way),
# lock 8, 12 and 15 ways, map each from a helper on the cache's CPUs,
# and give it to a nested QEMU as node 1 through memory-backend-pseudolock:
# the pattern the helper writes must be what QEMU reads at node 1.
# Also whether the mappings, the helper's and QEMU's own, use 2 MiB
# page-table entries:
#   rig.ways=LIST       the region sizes to try, in ways (e.g. "8 12 15")
#   rig.expect_pmd=0|1  whether the regions must be mapped with 2 MiB
#                       entries, which need no PTE pages (1: patched),
#                       or with 4 KiB ones (0: stock)

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
QTEST=/tmp/qtest.sock
ways_list=$(cmdline_arg ways | tr , ' ')
expect_pmd=$(cmdline_arg expect_pmd)
NODE1=0x4000000

cache_dir=$(cpu0_cache_dir 3)
cache_ways=$(cat "$cache_dir/ways_of_associativity")
cpus=$(cat "$cache_dir/shared_cpu_list")
way_size=$(( $(sed 's/K$//' "$cache_dir/size") * 1024 / cache_ways ))
diag "L3 cache 0: $cache_ways ways of $way_size bytes, CPUs $cpus"

# vm_pte_kb PID: the page tables of process PID, in kB
vm_pte_kb() {
    sed -n 's/^VmPTE:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/$1/status
}

mount -t resctrl resctrl $R
for ways in $ways_list; do
    size=$((ways * way_size))
    mib=$((size >> 20))
    echo "L3:0=$(hex_mask $((cache_ways - ways)) 0)" >$R/schemata
    pseudo_lock big "L3:0=$(hex_mask "$ways" $((cache_ways - ways)))"
    check_eq "a $mib MiB region ($ways ways) is pseudo-locked" \
        pseudo-locked "$(cat $R/big/mode)"
    diag "last_cmd_status: $(cat $R/info/last_cmd_status)"

    # -d: clear the soft-dirty bits right after mmap, which makes the
    # mapping's protection read-only, then fault every page in by writing
    # to it: each write fault must insert a writable entry
    out=$(timeout -s KILL 60 /rig/bin/pl-map -c "$cpus" -s "$size" -t -d \
          /dev/pseudo_lock/big | tr '\n' ' ')
    diag "$out"
    check "it takes writes after clear_refs write-protected the mapping" \
        sh -c "echo '$out' | grep -q 'rewritten after clear_refs'"
    # 2 MiB entries need no PTE page; only a tail short of 2 MiB may
    # need one (unless a neighbouring mapping's PTE page covers it), while
    # 4 KiB entries take a 4 KiB PTE page per 2 MiB.  VmPTE counts the
    # tables of every level, so a mapping that crosses a 1 GiB boundary
    # may add a page of PMD entries (4 kB) either way.
    pte_kb=$(echo "$out" | sed -n 's/.*page tables: +\([0-9]*\) kB.*/\1/p')
    case $expect_pmd in
    1) most=$((4 + (size % (2 << 20) ? 4 : 0)))
       check "it is mapped with 2 MiB entries (page tables: +${pte_kb:-?} kB, at most $most)" \
           test "${pte_kb:-99}" -le $most ;;
    0) least=$((size >> 21 << 2))
       check "it is mapped with 4 KiB entries (page tables: +${pte_kb:-?} kB, at least $least)" \
           test "${pte_kb:-0}" -ge $least ;;
    esac

    rm -f $QMP
    $QEMU -machine q35 -accel qtest -nodefaults -display none \
        -m $((64 + mib))M -object memory-backend-ram,id=ram0,size=64M \
        -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/big \
        -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
        -qmp unix:$QMP,server=on,wait=off 2>/tmp/qemu.err &
    qemu_pid=$!
    wait_qmp 100
    reply=$(qmp '{"execute": "query-pseudolock"}')
    check "QEMU maps all $mib MiB as node 1" \
        sh -c "echo '$reply' | grep -q '\"mapped-size\": $size'"
    out=$(/rig/bin/pl-map -c "$cpus" -s "$size" -w "$ways" /dev/pseudo_lock/big)
    qmp "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": $((NODE1)), \"size\": $size, \"filename\": \"/tmp/node1\"}}" >/dev/null
    out=$(/rig/bin/pl-map -s "$size" -v "$ways" /tmp/node1)
    check_eq "node 1 holds the helper's pattern, all $mib MiB" \
        "verified $size" "$out"
    qmp '{"execute": "quit"}' >/dev/null
    wait $qemu_pid
    rm -f /tmp/node1

    # QEMU's own page tables for the region: what they hold once QEMU has
    # read all of it (plugged as a DIMM, pmemsave), less what they hold
    # once it has let go of it again (unplugged, object-del), which frees
    # the page tables of the mapping; both measured in QEMU's process
    rm -f $QMP $QTEST
    $QEMU -machine q35 -accel qtest -nodefaults -display none \
        -m 64M,slots=1,maxmem=$((64 + mib + 1))M \
        -qmp unix:$QMP,server=on,wait=off \
        -qtest unix:$QTEST,server=on,wait=off 2>/tmp/qemu.err &
    qemu_pid=$!
    wait_qmp 100
    reply=$(qmp '{"execute": "object-add", "arguments": {"qom-type": "memory-backend-pseudolock", "id": "pl1", "path": "/dev/pseudo_lock/big"}}')
    check_eq "object-add maps the region in a running QEMU" '{"return": {}}' "$reply"
    start=$(sed -n 's|^\([0-9a-f]*\)-.* /dev/pseudo_lock/big$|\1|p' \
            /proc/$qemu_pid/maps | head -n 1)
    diag "QEMU maps the region at 0x$start"
    check "QEMU's mapping starts at a 2 MiB boundary" \
        test "$(( 0x${start:-1} % (2 << 20) ))" = 0
    qmp '{"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": "dimm1", "memdev": "pl1"}}' >/dev/null
    addr=$(qmp '{"execute": "query-memory-devices"}' |
           sed -n 's/.*"addr": \([0-9]*\).*/\1/p')
    qmp "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": ${addr:-0}, \"size\": $size, \"filename\": \"/tmp/dimm\"}}" >/dev/null
    check "QEMU read all $mib MiB of the DIMM" \
        test "$(stat -c %s /tmp/dimm 2>/dev/null)" = "$size"
    pte_touched=$(vm_pte_kb $qemu_pid)
    qmp '{"execute": "device_del", "arguments": {"id": "dimm1"}}' >/dev/null
    /rig/bin/qtest-call $QTEST "outl 0xa00 0" "outb 0xa14 8" >/dev/null
    reply=$(qmp '{"execute": "object-del", "arguments": {"id": "pl1"}}')
    check_eq "and lets go of it (device_del, eject, object-del)" \
        '{"return": {}}' "$reply"
    qemu_pte_kb=$(( pte_touched - $(vm_pte_kb $qemu_pid) ))
    diag "QEMU's page tables for all $mib MiB: $qemu_pte_kb kB"
    case $expect_pmd in
    1) check "QEMU maps it with 2 MiB entries (page tables: $qemu_pte_kb kB, at most $most)" \
           test "$qemu_pte_kb" -le $most ;;
    0) check "QEMU maps it with 4 KiB entries (page tables: $qemu_pte_kb kB, at least $least)" \
           test "$qemu_pte_kb" -ge $least ;;
    esac
    qmp '{"execute": "quit"}' >/dev/null
    wait $qemu_pid
    rm -f /tmp/dimm
    rmdir $R/big
    check "removing the group removes the device" test ! -e /dev/pseudo_lock/big
done
echo "L3:0=$(hex_mask "$cache_ways" 0)" >$R/schemata
umount $R
done_testing
