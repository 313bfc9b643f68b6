# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock and VFIO device assignment.  A device
# assigned with VFIO reaches guest memory through the host's IOMMU, for
# which the host kernel pins every page of guest RAM; it cannot pin a
# region's device mapping (VM_PFNMAP of ordinary memory: EFAULT), so the
# two cannot share a machine.  QEMU refuses the combination with a
# message that says so: with the region on the command line, when the
# region is plugged next to an assigned device (QEMU 10.0 aborts there),
# and when a device is hot-plugged next to the region.  The device is
# QEMU's "edu" PCI device of the emulated host, behind its emulated
# Intel IOMMU, bound to vfio-pci; the fork's QEMU runs inside the
# emulated Goldmont host (qtest accelerator).

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
pl=memory-backend-pseudolock
machine="-machine q35 -accel qtest -nodefaults -display none \
    -object memory-backend-memfd,id=ram0,size=64M \
    -numa node,nodeid=0,memdev=ram0 -qmp unix:$QMP,server=on,wait=off"
modules=/rig/modules/$(uname -r)

# qemu_answers: whether $qemu_pid still answers QMP (a QEMU that aborted
# is a zombie until waited for, so kill -0 would not tell)
qemu_answers() {
    qmp '{"execute": "query-status"}' | grep -q '"return"'
}

# The emulated IOMMU remaps DMA but not interrupts, which type1 wants
# unless told that MSIs need no isolation here
insmod $modules/irqbypass.ko && insmod $modules/vfio.ko &&
    insmod $modules/vfio_iommu_type1.ko allow_unsafe_interrupts=1 &&
    insmod $modules/vfio-pci-core.ko && insmod $modules/vfio-pci.ko
check_eq "the VFIO modules load" 0 $?

edu=
for d in /sys/bus/pci/devices/*; do
    [ "$(cat $d/vendor):$(cat $d/device)" = 0x1234:0x11e8 ] && edu=${d##*/}
done
echo vfio-pci >/sys/bus/pci/devices/$edu/driver_override &&
    echo $edu >/sys/bus/pci/drivers_probe
group=$(basename "$(readlink /sys/bus/pci/devices/$edu/iommu_group)")
check "the edu device $edu is bound to vfio-pci, IOMMU group $group" \
    test -c /dev/vfio/$group
vfio="-device vfio-pci,host=$edu,id=hostdev0"

lock_region_p0

# The assignment works with memory the host can pin: RAM in a memfd
start_qemu -m 64M $vfio
check_eq "QEMU starts with the assigned device and memfd RAM" 0 $?
diag "$(cat /tmp/qemu.err)"
stop_qemu

# The region as node 1 of that machine
refuses "with the region as node 1, QEMU refuses the assigned device" \
    /tmp/refused.err $QEMU $machine -m 65M \
    -object $pl,id=pl0,path=/dev/pseudo_lock/p0 \
    -numa node,nodeid=1,memdev=pl0 $vfio
check "  saying that the host cannot pin the region for the device's DMA" \
    grep -q "Region pl0: the host cannot pin its pages for DMA" \
    /tmp/refused.err
check "  and which memory a device assigned with VFIO needs" \
    grep -q "VFIO can only reach guest memory that the host can pin" \
    /tmp/refused.err
check "the region's group is still there, locked" \
    grep -qx pseudo-locked $R/p0/mode

# Plugged while the assigned device runs: refused, and nothing stays
start_qemu -m 64M,slots=2,maxmem=1G $vfio
dimm_refused "the assigned device" \
    "memory region 'pl1' cannot be plugged: the host cannot pin its pages"
stop_qemu

# A device hot-plugged next to the region: refused, the region stays.
# Twenty times, as a management stack that retries would: each refusal
# must leave the backend's references as they were (QEMU's listener
# once dropped one per refusal, until the backend was freed while it
# was still the guest's node 1)
start_qemu -m 65M -object $pl,id=pl0,path=/dev/pseudo_lock/p0 \
    -numa node,nodeid=1,memdev=pl0 \
    -device pcie-root-port,id=rp1,chassis=1
refused=0
for try in $(seq 20); do
    reply=$(qmp "{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"vfio-pci\", \"host\": \"$edu\", \"id\": \"hostdev1\", \"bus\": \"rp1\"}}")
    [ "$try" = 1 ] && diag "$reply"
    case $reply in
    *'"error"'*"Region pl0: the host cannot pin its pages for DMA"*)
        refused=$((refused + 1)) ;;
    *) diag "try $try: $reply" ;;
    esac
done
check_eq "a device hot-plugged next to the region is refused, saying why, 20 times of 20" \
    20 "$refused"
check "QEMU still runs" qemu_answers
reply=$(qmp '{"execute": "query-pseudolock"}')
check "and the region is still node 1" \
    sh -c "echo '$reply' | grep -q '\"mapped-size\": $size'"
check "and still mapped in QEMU" \
    grep -q " /dev/pseudo_lock/p0\$" /proc/$qemu_pid/maps
stop_qemu
check_eq "QEMU quits cleanly afterwards" 0 $?
# The device is free again: nothing holds its group
start_qemu -m 64M $vfio
check_eq "the device can be assigned again afterwards" 0 $?
stop_qemu

rmdir $R/p0
umount $R
done_testing
