# SPDX-License-Identifier: GPL-2.0-or-later
#
# Whether the emulated host's vCPUs have performance counters, as Linux
# sees them: CPUID leaf 0xA, the arch_perfmon flag and the PMU driver
# that perf events start with.  Under TCG only x-tcg-pmu=on gives them
# (the counters that the cache model feeds); pmu=on, which upstream's
# "max" model sets, does not, as in upstream QEMU.
#   rig.expect_pmu=0|1   whether the vCPUs must have counters

probe=/rig/bin/rdt-probe
expect=$(cmdline_arg expect_pmu)

set -- $($probe cpuid 0 0xa 0)
diag "CPUID.0xA: $*; $(dmesg | grep 'Performance Events:')"
case $expect in
0) check_eq "CPUID leaf 0xA offers no performance counters" \
       "00000000 00000000 00000000 00000000" "$*"
   check "Linux shows no arch_perfmon flag" \
       sh -c "! grep -qw arch_perfmon /proc/cpuinfo"
   check "Linux starts no Intel PMU driver" \
       sh -c "! dmesg | grep -q 'Performance Events:.*Intel PMU driver'" ;;
1) check_eq "CPUID leaf 0xA reports version 2 of performance monitoring" \
       2 $((0x${1:-0} & 0xff))
   check "Linux shows the arch_perfmon flag" grep -qw arch_perfmon /proc/cpuinfo
   check "Linux starts its Intel PMU driver" \
       sh -c "dmesg | grep -q 'Performance Events:.*Intel PMU driver'" ;;
esac
done_testing
