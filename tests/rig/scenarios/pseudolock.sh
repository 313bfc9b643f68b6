# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cache pseudo-locking on the emulated host, through the kernel's own
# resctrl interface (Documentation/arch/x86/resctrl.rst), at the cache
# level given on the kernel command line:
#   rig.level=2|3        the cache level to lock in
#   rig.lock_ways=N      how many ways the region takes
#   rig.closids=N        the CLOSID count the CPU was given
#   rig.refuse_ways=N    optional: a region of N ways, over the stock
#                        kernel's 4 MiB limit, must be refused
#   rig.measure_unmount=1  optional: unmount resctrl while processes
#                        write the region's pseudo_lock_measure file
#                        (Linux 6.12 can deadlock there; the host
#                        patches must not)

level=$(cmdline_arg level)
lock_ways=$(cmdline_arg lock_ways)
closids=$(cmdline_arg closids)
refuse_ways=$(cmdline_arg refuse_ways)
res=L$level
R=/sys/fs/resctrl

# The kernel's view of the cache, to derive the expected figures from.
cache_dir=$(cpu0_cache_dir "$level")
cache_size=$(( $(sed 's/K$//' "$cache_dir/size") * 1024 ))
cache_ways=$(cat "$cache_dir/ways_of_associativity")
domain_cpus=$(cat "$cache_dir/shared_cpu_list")
diag "L$level: $cache_size bytes, $cache_ways ways, CPUs $domain_cpus of cache id $(cat "$cache_dir/id")"

check "resctrl mounts" mount -t resctrl resctrl $R
check_eq "info/$res/cbm_mask is one bit per way" \
    "$(hex_mask "$cache_ways" 0)" "$(cat $R/info/$res/cbm_mask)"
check_eq "info/$res/num_closids" "$closids" "$(cat $R/info/$res/num_closids)"
check_eq "info/$res/shareable_bits" 0 "$(cat $R/info/$res/shareable_bits)"

# Leave the region's ways (the high ones) to the pseudo-locked group.
free_ways=$((cache_ways - lock_ways))
default_mask=$(hex_mask "$free_ways" 0)
lock_mask=$(hex_mask "$lock_ways" "$free_ways")
echo "$res:0=$default_mask" >$R/schemata
check "the default group shrinks to $default_mask on cache 0" \
    grep -q "^ *$res:0=0*$default_mask[;]*" $R/schemata
diag "$(grep "$res" $R/schemata)"

mkdir $R/p0
echo pseudo-locksetup >$R/p0/mode
check_eq "a new group enters pseudo-locksetup" pseudo-locksetup "$(cat $R/p0/mode)"
echo "$res:0=$lock_mask" >$R/p0/schemata 2>/dev/null
check_eq "writing $res:0=$lock_mask locks the region" pseudo-locked "$(cat $R/p0/mode)"
diag "last_cmd_status: $(cat $R/info/last_cmd_status)"

region_size=$((cache_size / cache_ways * lock_ways))
check_eq "size is ways x way size" "$res:0=$region_size" "$(tr -d ' ' <$R/p0/size)"
check "bit_usage shows the ways as pseudo-locked (P)" \
    grep -q "0=[^;]*P" $R/info/$res/bit_usage
diag "bit_usage: $(cat $R/info/$res/bit_usage)"
check "/dev/pseudo_lock/p0 exists" test -c /dev/pseudo_lock/p0

out=$(/rig/bin/pl-map -c "$domain_cpus" -s "$region_size" -w 90 /dev/pseudo_lock/p0)
check_eq "mapping from the domain's CPUs ($domain_cpus) works" "mapped $region_size" "$out"
out=$(/rig/bin/pl-map -c "$domain_cpus" -s "$region_size" -z /dev/pseudo_lock/p0)
check_eq "every mmap zeroes the region" "verified $region_size" "$out"

other_cpu=$(awk -v dom="$domain_cpus" 'BEGIN {
    n = split(dom, parts, ",")
    for (i = 1; i <= n; i++) {
        split(parts[i], r, "-"); hi = (r[2] == "" ? r[1] : r[2])
        for (c = r[1]; c <= hi; c++) inside[c] = 1
    }
}
/^processor/ { if (!($3 in inside)) { print $3; exit } }' /proc/cpuinfo)
if [ -n "$other_cpu" ]; then
    out=$(/rig/bin/pl-map -c "$other_cpu" /dev/pseudo_lock/p0)
    check_eq "mapping from CPU $other_cpu, outside the domain, is refused" \
        "mmap: EINVAL" "$out"
else
    skip "every CPU shares this cache; no CPU outside the domain to try"
fi
out=$(/rig/bin/pl-map -c "$domain_cpus" -s $((region_size + 4096)) /dev/pseudo_lock/p0)
check_eq "mapping more than the region is refused" "mmap: ENOSPC" "$out"

rmdir $R/p0
check "rmdir of the group removes the device" test ! -e /dev/pseudo_lock/p0

if [ -n "$refuse_ways" ]; then
    big_mask=$(hex_mask "$refuse_ways" $((cache_ways - refuse_ways)))
    echo "$res:0=$(hex_mask $((cache_ways - refuse_ways)) 0)" >$R/schemata
    mkdir $R/big
    echo pseudo-locksetup >$R/big/mode
    echo "$res:0=$big_mask" >$R/big/schemata 2>/dev/null
    status=$(cat $R/info/last_cmd_status)
    diag "a $((cache_size / cache_ways * refuse_ways))-byte region: mode $(cat $R/big/mode), last_cmd_status: $status"
    check_eq "a region above 4 MiB is refused by this kernel" \
        pseudo-locksetup "$(cat $R/big/mode)"
    check "the refusal says the region exceeds the maximum size" \
        grep -q "exceeds maximum size" $R/info/last_cmd_status
    rmdir $R/big
fi

# Unmounting while the kernel's own measurement (debugfs) is asked for:
# a writer holds its debugfs file while it waits for resctrl's mutex,
# which the unmount holds; removing the region's debugfs directory under
# that mutex would wait for the writer for ever.
if [ "$(cmdline_arg measure_unmount)" = 1 ]; then
    echo "$res:0=$default_mask" >$R/schemata
    pseudo_lock m "$res:0=$lock_mask"
    measure=/sys/kernel/debug/resctrl/m/pseudo_lock_measure
    check "region m has a pseudo_lock_measure file" test -e $measure
    writers=
    for i in 1 2 3 4; do
        sh -c "while echo 1 2>/dev/null >$measure; do :; done" &
        writers="$writers $!"
    done
    sleep 1
    umount $R &
    unmount=$!
    for i in $(seq 300); do
        kill -0 $unmount 2>/dev/null || break
        sleep 0.1
    done
    # (kill's complaint that the process is gone is the good outcome)
    check_fails "resctrl unmounts within 30 s while 4 processes measure the region" \
        sh -c "kill -0 $unmount 2>/dev/null"
    kill $writers 2>/dev/null
    wait $writers 2>/dev/null
    check "the region's debugfs directory is gone" test ! -e /sys/kernel/debug/resctrl/m
    check "resctrl mounts again" mount -t resctrl resctrl $R
fi

echo "$res:0=$(hex_mask "$cache_ways" 0)" >$R/schemata
umount $R
done_testing
