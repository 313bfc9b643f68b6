# SPDX-License-Identifier: GPL-2.0-or-later
#
# Guest half of test-rdt-migration.py: set cache-allocation state, say
# "ready", wait for the host to migrate the machine and send "go", then
# report what the state reads back as.  L2 cache allocation, CPUs 0 and 1
# sharing one L2 (one module), and performance counters
# (pmu=on,x-tcg-pmu=on).

probe=/rig/bin/rdt-probe
[ -e /dev/cpu/0/msr ] || insmod "/rig/modules/$(uname -r)/msr.ko"

$probe wrmsr 0 0xd11 0xf0 >/dev/null          # L2 mask of CLOSID 1
$probe wrmsr 1 0xc8f $((3 << 32)) >/dev/null  # CPU 1 runs as CLOSID 3
$probe wrmsr 0 0x1a4 0x5 >/dev/null           # prefetchers off on CPU 0
# The performance counters (x-tcg-pmu=on): counter 2 of CPU 1, which perf
# does not use here, and the offcore response MSR of CPU 0
$probe wrmsr 1 0x188 0x4310d1 >/dev/null      # L2 load misses, enabled
$probe wrmsr 1 0xc3 0x12345 >/dev/null        # IA32_PMC2
$probe wrmsr 0 0x1a6 0x10001 >/dev/null       # MSR_OFFCORE_RSP_0
echo "# state set: L2 mask 1 = f0, CPU 1 in CLOSID 3, CPU 0 prefetch bits 5"
echo "# and CPU 1's IA32_PERFEVTSEL2 4310d1, IA32_PMC2 12345, CPU 0's MSR_OFFCORE_RSP_0 10001"
echo ready
read -r go </dev/ttyS1

check_eq "the L2 mask of CLOSID 1 is back (CPU 0)" f0 "$($probe rdmsr 0 0xd11)"
check_eq "and still shared with CPU 1" f0 "$($probe rdmsr 1 0xd11)"
check_eq "untouched masks are still all ones" ffff "$($probe rdmsr 0 0xd12)"
check_eq "CPU 1's CLOSID is back" 300000000 "$($probe rdmsr 1 0xc8f)"
check_eq "CPU 0's CLOSID is still 0" 0 "$($probe rdmsr 0 0xc8f)"
check_eq "CPU 0's prefetcher bits are back" 5 "$($probe rdmsr 0 0x1a4)"
check_eq "CPU 1's IA32_PERFEVTSEL2 is back" 4310d1 "$($probe rdmsr 1 0x188)"
check_eq "CPU 1's IA32_PMC2 is back" 12345 "$($probe rdmsr 1 0xc3)"
check_eq "CPU 0's MSR_OFFCORE_RSP_0 is back" 10001 "$($probe rdmsr 0 0x1a6)"
done_testing
