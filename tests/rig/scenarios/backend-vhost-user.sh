# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock and vhost-user: a back end in another process
# maps guest memory from the RAM blocks' descriptors, and its mapping of
# the region's device would zero it (or fail on CPUs outside the cache).
# The backend gives no descriptor out, and QEMU refuses a vhost-user
# device that could not reach the region, on the command line and when
# the region is plugged later.  The back end is QEMU's own storage daemon
# exporting a null disk as vhost-user-blk; the fork's QEMU runs inside
# the emulated Goldmont host (qtest accelerator).

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
QSD=/usr/bin/qemu-storage-daemon
VUB=/tmp/vub.sock
pl=memory-backend-pseudolock
machine="-machine q35 -accel qtest -nodefaults -display none \
    -object memory-backend-memfd,id=ram0,size=64M,share=on \
    -numa node,nodeid=0,memdev=ram0 -qmp unix:$QMP,server=on,wait=off"
vub="-chardev socket,id=vub,path=$VUB -device vhost-user-blk-pci,chardev=vub"

lock_region_p0

rm -f $VUB
$QSD --blockdev driver=null-co,node-name=disk0,size=67108864 \
    --export type=vhost-user-blk,id=exp0,node-name=disk0,addr.type=unix,addr.path=$VUB,writable=on \
    2>/tmp/qsd.err &
qsd_pid=$!
for i in $(seq 100); do [ -S $VUB ] && break; sleep 0.1; done
check "the storage daemon exports a vhost-user-blk disk" test -S $VUB

# The set-up works with memory it can map: RAM in a memfd
start_qemu -m 64M $vub
check_eq "QEMU starts with the vhost-user disk and memfd RAM" 0 $?
stop_qemu

# Memory without a descriptor that is not the region's stays upstream's
# business: QEMU leaves it out of what the back end maps, and starts.
# Here an ivshmem device's memory in plain RAM, which the guest never
# gives to the disk.
start_qemu -m 64M -object memory-backend-ram,id=shm0,size=1M \
    -device ivshmem-plain,memdev=shm0 $vub
check_eq "QEMU starts with the vhost-user disk and an ivshmem memdev in memory-backend-ram" \
    0 $?
diag "$(cat /tmp/qemu.err)"
stop_qemu

# The region as node 1 of that machine
refuses "with the region as node 1, QEMU refuses the vhost-user disk" \
    /tmp/refused.err $QEMU $machine -m 65M \
    -object $pl,id=pl0,path=/dev/pseudo_lock/p0 \
    -numa node,nodeid=1,memdev=pl0 $vub
check "  saying that the back end cannot map the region's memory" \
    grep -q "cannot map memory backend 'pl0' (memory-backend-pseudolock): it has no file descriptor to share" \
    /tmp/refused.err
check "  and which memory backends it can map" \
    grep -q "memory-backend-memfd or memory-backend-file" /tmp/refused.err

# Plugged while the vhost-user disk runs: refused, and nothing stays
start_qemu -m 64M,slots=2,maxmem=1G $vub
dimm_refused "the vhost-user disk" \
    "cannot map memory region 'pl1': it has no file descriptor"
stop_qemu

# The region still works as node 1 without vhost-user
start_qemu -m 65M -object $pl,id=pl0,path=/dev/pseudo_lock/p0 \
    -numa node,nodeid=1,memdev=pl0
reply=$(qmp '{"execute": "query-pseudolock"}')
check "without the vhost-user disk, the region is node 1" \
    sh -c "echo '$reply' | grep -q '\"mapped-size\": $size'"
stop_qemu

kill $qsd_pid
wait $qsd_pid 2>/dev/null
rmdir $R/p0
umount $R
done_testing
