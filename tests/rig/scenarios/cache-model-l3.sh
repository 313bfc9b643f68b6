# SPDX-License-Identifier: GPL-2.0-or-later
#
# Residency in an L3 under the cache model: the emulated Broadwell-X host
# (two sockets of two cores; each core has a 256 KiB L2 of its own, each
# socket a 16 MiB, 16-way L3 with cache allocation) runs with the
# catcache plugin.  A noisy neighbour on CPU 1 streams over twice
# the L3 in the default class of service, while a reader on CPU 0 reads
# 1 MiB, four times its own L2, so that its reads go to the L3:
#   plain    ordinary memory, in the default class (the neighbour's);
#   catonly  ordinary memory in a class of its own with one exclusive way
#            (1 MiB: cache allocation alone, no lock);
#   locked   the pseudo-locked region (way 8 of L3 cache 0), mapped;
# then CPU 3 goes offline (WBINVD on the other socket: "locked2"), CPU 1
# goes offline (WBINVD on the region's L3: "locked4"), and a QEMU relocks
# the region over QMP ("relocked").  Needs the patched kernel for the
# relock.  test-cache-model.py judges the plugin's log (--layout l3).

R=/sys/fs/resctrl
PROBE=/rig/bin/cache-probe
size=1M
rounds=$(cmdline_arg rounds)
rounds=${rounds:-3}
pause=2000

$PROBE arm
check "the cache model is armed" true

l3_ids=$(for cpu in 0 1 2 3; do
    cat /sys/devices/system/cpu/cpu$cpu/cache/index3/id; done | tr '\n' ' ')
check_eq "Linux numbers the L3 caches of CPUs 0-3 as the model does" \
    "0 0 1 1 " "$l3_ids"
check_eq "each core has a 256 KiB L2" 256K \
    "$(cat /sys/devices/system/cpu/cpu0/cache/index2/size)"

ordinary_memory_reads 3 0100 'way 8' 32M

step "the pseudo-locked region"
check "way 8 of L3 cache 0 is locked as region p0" \
    pseudo_lock p0 'L3:0=0100'
check_eq "  and holds 1 MiB" 'L3:0=1048576' "$(sed -n 's/^ *//; /^L3:/p' $R/p0/size)"
reader_start 0 /dev/pseudo_lock/p0 $size
check "the reader reads the region, mapped" ask read locked $rounds $pause

step "what evicts it, and the relock"
echo 0 >/sys/devices/system/cpu/cpu3/online
check_eq "CPU 3 (the other socket) goes offline: WBINVD there" \
    0 "$(cat /sys/devices/system/cpu/cpu3/online)"
echo 1 >/sys/devices/system/cpu/cpu3/online
check "the reader reads the region again" ask read locked2 1 0
kill $noise
wait $noise 2>/dev/null
echo 0 >/sys/devices/system/cpu/cpu1/online
check_eq "CPU 1 (the region's socket) goes offline: WBINVD there" \
    0 "$(cat /sys/devices/system/cpu/cpu1/online)"
echo 1 >/sys/devices/system/cpu/cpu1/online
check "the reader reads the region again" ask read locked4 1 0

# A QEMU that was never started (-S: no relock at start) asks for it,
# from the other socket's CPUs: the kernel does it on the cache's
QEMU=/usr/bin/qemu-system-x86_64
machine="-machine none -accel qtest -nodefaults -display none -S \
    -qmp unix:$QMP,server=on,wait=off"
qemu_prefix="taskset -c 2-3"
start_qemu -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0
qemu_prefix=
reply=$(qmp '{"execute": "pseudolock-relock", "arguments": {"id": "pl0"}}')
check_eq "pseudolock-relock over QMP succeeds" '{"return": {}}' "$reply"
stop_qemu
check "the reader reads the region again" ask read relocked 1 0
check "the reader quits" reader_stop

$PROBE disarm
rmdir $R/p0
umount $R
done_testing
