# SPDX-License-Identifier: GPL-2.0-or-later
#
# Guest half of test-rdt-hotplug.py: the L2 masks are the cache's, so a
# vCPU added to a module starts with that module's masks, and a vCPU
# keeps them across offline and online (INIT).  Goldmont host: CPUs 0-1
# on module 0, 2-3 on module 1, CPU 3 absent at boot.  Linux does not
# take the hot-plugged CPU on what it believes is bare metal (a TCG
# host), so the host side reads the new vCPU's masks from the migration
# stream; this side checks what Linux can see.

probe=/rig/bin/rdt-probe
[ -e /dev/cpu/0/msr ] || insmod "/rig/modules/$(uname -r)/msr.ko"

$probe wrmsr 2 0xd11 0xf0 >/dev/null          # module 1, L2 mask of CLOSID 1
$probe wrmsr 0 0xd12 0x3 >/dev/null           # module 0, L2 mask of CLOSID 2
echo "# module 1's L2 mask 1 = f0, module 0's L2 mask 2 = 3"
echo ready
read -r go </dev/ttyS1

check_eq "CPU 2 still has module 1's mask 1 after the hot-plug" f0 \
    "$($probe rdmsr 2 0xd11)"
check_eq "and module 0 its mask 2" 3 "$($probe rdmsr 1 0xd12)"

cpu1=/sys/devices/system/cpu/cpu1
echo 0 >$cpu1/online
$probe wrmsr 0 0xd13 0xff00 >/dev/null
echo 1 >$cpu1/online
check_eq "CPU 1 is online again" 1 "$(cat $cpu1/online)"
check_eq "CPU 1, offline while CPU 0 wrote mask 3, reads it once back" ff00 \
    "$($probe rdmsr 1 0xd13)"
check_eq "and keeps mask 2 across its INIT" 3 "$($probe rdmsr 1 0xd12)"

# Two vCPUs of one module writing one mask at once leave one value
for i in $(seq 100); do $probe wrmsr 0 0xd14 0xf >/dev/null; done &
for i in $(seq 100); do $probe wrmsr 1 0xd14 0xf0 >/dev/null; done
wait
check_eq "concurrent writers leave CPUs 0 and 1 with the same mask" \
    "$($probe rdmsr 0 0xd14)" "$($probe rdmsr 1 0xd14)"
done_testing
