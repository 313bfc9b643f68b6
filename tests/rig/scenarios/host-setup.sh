# SPDX-License-Identifier: GPL-2.0-or-later
#
# The host package's boot script (contrib/pseudolock-host/host-setup, as
# qemu-pseudolock-host.service runs it) on the emulated host's real
# kernel and resctrl: it mounts resctrl, leaves the configured ways of
# every cache instance free, and a region can then be locked there
# without shrinking anything by hand.
#   rig.level=2|3        the cache level the CPU pseudo-locks in

level=$(cmdline_arg level)
res=L$level
R=/sys/fs/resctrl
setup=/usr/libexec/qemu-pseudolock/host-setup
conf=/tmp/host.conf

cache_dir=$(cpu0_cache_dir "$level")
ways=$(cat "$cache_dir/ways_of_associativity")
half=$((ways / 2))

: >$conf
check_fails "resctrl is not mounted before the script" grep -q " $R resctrl " /proc/mounts
out=$($setup --config $conf 2>&1)
check_eq "the script succeeds with the default configuration" 0 $?
diag "$out"
check "it mounted resctrl" grep -q " $R resctrl " /proc/mounts
keep=$(hex_mask $((ways - half)) 0)
line=$(sed -n "s/^ *$res://p" $R/schemata)
diag "default group: $res:$line; bit_usage: $(cat $R/info/$res/bit_usage)"
check_eq "every $res instance of the default group keeps the low half ($keep)" \
    "" "$(echo "$line" | tr ';' '\n' | grep -v "=0*$keep\$")"
free=$(tr ';' '\n' <$R/info/$res/bit_usage | grep -c "=0\{$half\}[^0]" || true)
check_eq "bit_usage shows the high $half ways free on each instance" \
    "$(echo "$line" | tr ';' '\n' | grep -c .)" "$free"

# A region in the top two of the freed ways of the last instance (within
# the stock kernel's 4 MiB), with nothing shrunk by hand
last=$(echo "$line" | tr ';' '\n' | tail -n 1 | cut -d= -f1)
region=$(hex_mask 2 $((ways - 2)))
check "a 2-way region locks in the freed ways of $res cache $last" \
    pseudo_lock p0 "$res:$last=$region"
diag "last_cmd_status: $(cat $R/info/last_cmd_status)"
check "/dev/pseudo_lock/p0 exists" test -c /dev/pseudo_lock/p0

out=$($setup --config $conf 2>&1)
check_eq "running the script again, with the region locked, succeeds" 0 $?
check_eq "the region is still locked" pseudo-locked "$(cat $R/p0/mode)"

echo "FREE_WAYS_L$level=$((ways - 2))" >$conf
out=$($setup --config $conf 2>&1)
check_eq "freeing more ways (all but 2) succeeds" 0 $?
check_eq "the default group keeps 3 on cache 0" "3" \
    "$(sed -n "s/^ *$res:0=0*\([0-9a-f]*\).*/\1/p" $R/schemata)"

echo "FREE_WAYS_L$level=1" >$conf
out=$($setup --config $conf 2>&1)
check_eq "giving the default group the region's ways fails" 1 $?
diag "$out"
check "the error quotes the kernel's reason" contains "$out" "overlaps"
check_eq "the region survives the refused change" pseudo-locked "$(cat $R/p0/mode)"

echo "FREE_WAYS_L$level=$ways" >$conf
out=$($setup --config $conf 2>&1)
check_eq "freeing every way is refused" 1 $?
check "the refusal names min_cbm_bits" contains "$out" "min_cbm_bits"

rmdir $R/p0
check "the region's group is removed" test ! -e $R/p0
done_testing
