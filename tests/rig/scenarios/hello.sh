# SPDX-License-Identifier: GPL-2.0-or-later
#
# The demo's guest-side walk-through, in plain words: what the emulated
# host is, and a cache region pseudo-locked by its stock kernel.

R=/sys/fs/resctrl
say() {
    echo "  $*"
}

say "kernel:      $(uname -sr)"
say "CPU:         $(cpuinfo_field 'model name')" \
    "(family $(cpuinfo_field 'cpu family'), model $(cpuinfo_field model))"
say "vCPUs:       $(grep -c '^processor' /proc/cpuinfo)"
say "memory:      $(sed -n 's/^MemTotal: *//p' /proc/meminfo)"
l2=/sys/devices/system/cpu/cpu0/cache/index2
say "L2 cache:    $(cat $l2/size), $(cat $l2/ways_of_associativity) ways," \
    "shared by CPUs $(cat $l2/shared_cpu_list)"

# The kernel creates the mount point only when the CPU has RDT.
if ! [ -d $R ] || ! mount -t resctrl resctrl $R 2>/dev/null; then
    say "resctrl:     not available (the CPU reports no cache allocation)"
    return 0
fi
say "resctrl:     mounted; L2 capacity bitmask $(cat $R/info/L2/cbm_mask)," \
    "$(cat $R/info/L2/num_closids) classes of service"
say "bit_usage before: $(cat $R/info/L2/bit_usage)"
say "\$ echo 'L2:0=00ff' > $R/schemata          # shrink the default group"
echo 'L2:0=00ff' >$R/schemata
say "\$ mkdir $R/p0; echo pseudo-locksetup > $R/p0/mode"
mkdir $R/p0
echo pseudo-locksetup >$R/p0/mode
say "\$ echo 'L2:0=ff00' > $R/p0/schemata       # lock the upper 8 ways"
echo 'L2:0=ff00' >$R/p0/schemata
say "mode:        $(cat $R/p0/mode)"
say "size:        $(sed -n 's/.*=//p' $R/p0/size) bytes"
say "CPUs:        $(cat $R/p0/cpus_list) (the cache domain)"
say "bit_usage after:  $(cat $R/info/L2/bit_usage)   (P: pseudo-locked)"
say "device:      $(ls /dev/pseudo_lock/* 2>/dev/null)"
size=$(sed -n 's/.*=//p' $R/p0/size)
say "map it from CPUs $(cat $R/p0/cpus_list): $(/rig/bin/pl-map -c "$(cat $R/p0/cpus_list)" -s "$size" -w 7 /dev/pseudo_lock/p0)"
say "map it from CPU 2 (the other module): $(/rig/bin/pl-map -c 2 /dev/pseudo_lock/p0)"
rmdir $R/p0
say "\$ rmdir $R/p0; the device is $( [ -e /dev/pseudo_lock/p0 ] && echo 'still there' || echo gone)"
umount $R
say "powering off"
