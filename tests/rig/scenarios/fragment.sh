# SPDX-License-Identifier: GPL-2.0-or-later
#
# Creating large regions while the host's memory is fragmented: after a
# workload that leaves free memory in 1 MiB holes between movable and
# unmovable pages (/rig/bin/fragment), lock and remove regions of the
# given sizes on the Broadwell-X host's L3, again and again.  Each try
# must either lock the region or fail with the kernel's message, never
# crash, and the tries together may not lose memory.  The success rate
# per size is printed; as a benchmark (rig.cycles=20) that is the figure.
#   rig.ways=LIST     region sizes in ways of 1 MiB ("8,12,15")
#   rig.cycles=N      tries per size
#   rig.kernel=stock|patched  which refusal is expected: the stock kernel
#                     refuses every region above 4 MiB outright

R=/sys/fs/resctrl
ways_list=$(cmdline_arg ways | tr , ' ')
cycles=$(cmdline_arg cycles)
kernel=$(cmdline_arg kernel)

meminfo_kb() {
    sed -n "s/^$1: *\\([0-9]*\\) kB/\\1/p" /proc/meminfo
}

# free_kb: free memory, MemFree and the pages on the per-CPU free lists,
# which MemFree leaves out; a freed region goes there in part
free_kb() {
    pcp=$(awk '$1 == "count:" { n += $2 } END { print n * 4 }' /proc/zoneinfo)
    echo $(($(meminfo_kb MemFree) + pcp))
}

cache_dir=$(cpu0_cache_dir 3)
cache_ways=$(cat "$cache_dir/ways_of_associativity")
way_size=$(( $(sed 's/K$//' "$cache_dir/size") * 1024 / cache_ways ))

mount -t resctrl resctrl $R
/rig/bin/fragment -k 96 -s 1024 >/tmp/fragment.out &
fragment_pid=$!
for i in $(seq 600); do
    grep -q fragmented /tmp/fragment.out && break
    sleep 0.2
done
check "the fragmenting workload is in place" grep -q fragmented /tmp/fragment.out
diag "$(cat /tmp/fragment.out); MemFree $(meminfo_kb MemFree) kB"
diag "buddyinfo before: $(grep -v 'zone *DMA ' /proc/buddyinfo)"

# uptime_cs: the time since boot in hundredths of a second
uptime_cs() {
    awk '{ sub(/\./, "", $1); print $1 + 0 }' /proc/uptime
}

# Locking a region allocates it with rdtgroup_mutex and the CPU hot-plug
# lock held (patch 0006), compaction and migration included: the
# longest schemata write is how long other resctrl users can wait.
free_before=$(free_kb)
diag "$(printf '  %-8s %-14s %-14s %s' size locked 'longest lock' 'failures (last_cmd_status)')"
for ways in $ways_list; do
    size=$((ways * way_size))
    locked=0
    bad=0
    failures=
    longest=0
    i=0
    while [ $i -lt "$cycles" ]; do
        echo "L3:0=$(hex_mask $((cache_ways - ways)) 0)" >$R/schemata
        start=$(uptime_cs)
        pseudo_lock big "L3:0=$(hex_mask "$ways" $((cache_ways - ways)))" \
            2>/dev/null
        took=$(( $(uptime_cs) - start ))
        [ $took -gt $longest ] && longest=$took
        if [ "$(cat $R/big/mode)" = pseudo-locked ]; then
            locked=$((locked + 1))
        else
            status=$(cat $R/info/last_cmd_status)
            failures="$status"
            case $kernel:$status in
            patched:"Cannot allocate $size bytes of contiguous memory"*) ;;
            stock:*"exceeds maximum size"*) ;;
            *) bad=$((bad + 1)); diag "unexpected failure: $status" ;;
            esac
        fi
        rmdir $R/big
        i=$((i + 1))
    done
    diag "$(printf '  %-8s %-14s %-14s %s' "$((size >> 20)) MiB" \
        "$locked/$cycles ($((locked * 100 / cycles)) %)" \
        "$((longest * 10)) ms" "${failures:--}")"
    check_eq "every failure to lock $((size >> 20)) MiB gave the kernel's reason" \
        0 $bad
done
free_after=$(free_kb)
diag "free memory before the tries $free_before kB, after $free_after kB"
diag "buddyinfo after: $(grep -v 'zone *DMA ' /proc/buddyinfo)"
# Other activity moves free memory by a few MiB; a region leaked by
# every try would take at least 8 MiB times the tries
check "the tries leaked no memory (free memory within 16 MiB)" \
    test $((free_before - free_after)) -lt 16384
check "and the kernel logged no bug or warning" \
    sh -c "! dmesg | grep -q -E 'BUG|WARNING|Oops'"

kill $fragment_pid
wait $fragment_pid

echo "L3:0=$(hex_mask "$cache_ways" 0)" >$R/schemata
umount $R
done_testing
