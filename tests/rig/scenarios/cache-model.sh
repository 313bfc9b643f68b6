# SPDX-License-Identifier: GPL-2.0-or-later
#
# Residency under the cache model: the emulated Goldmont host runs with
# the catcache plugin, which models its two 2 MiB L2 caches (CPUs 0-1,
# CPUs 2-3) with CAT.  A noisy neighbour on CPU 1 streams over four times
# the cache in the default class of service, while a reader on CPU 0
# reads 1 MiB three times in labelled windows:
#   plain    ordinary memory, in the default class (the neighbour's);
#   catonly  ordinary memory in a class of its own with exclusive ways
#            (cache allocation alone, no lock);
#   locked   the pseudo-locked region (ways 8-15 of L2 cache 0), mapped;
# and the kernel measures the region itself (pseudo_lock_measure, mode
# 1, a prefetch-off window), and so does the fork's QEMU in its own
# mapping (query-pseudolock-residency: the window "qmp-res").  Then what evicts it: WBINVD on the other
# L2 (CPU 3 goes offline: nothing lost, "locked2"), writes to 1024 of
# its lines from a CPU of the other L2 ("locked3"), CLFLUSH of the next
# 512 ("locked5": those lines are lost as well), CLFLUSH of 256 more
# through 32-bit addresses ("locked6", the plugin decodes the 0x67
# prefix), an incoming migration
# into a QEMU on the cache's CPUs ("mig-in") and on the other L2's
# ("mig-out"), WBINVD on its own L2 (CPU 1 goes offline: "locked4").
#
# With rig.relock=works (the patched kernel, whose PSEUDO_LOCK_RELOCK
# ioctl loads a region again), three more: the guest migrated in by the
# QEMU on the other L2 starts running, which has QEMU relock the region
# ("mig-run"); a guest there is saved with savevm and loaded with
# loadvm, and runs on ("loadvm"); and after the WBINVD a stopped QEMU
# relocks it when asked over QMP ("relocked").
#
# The guest only acts; test-cache-model.py reads the plugin's log of the
# windows afterwards and judges the figures.  rig.size=1M and
# rig.rounds=3 set the reads.

R=/sys/fs/resctrl
PROBE=/rig/bin/cache-probe
size=$(cmdline_arg size)
size=${size:-1M}
rounds=$(cmdline_arg rounds)
rounds=${rounds:-3}
relock=$(cmdline_arg relock)
pause=300

$PROBE arm
check "the cache model is armed" true

l2_ids=$(for cpu in 0 1 2 3; do
    cat /sys/devices/system/cpu/cpu$cpu/cache/index2/id; done | tr '\n' ' ')
check_eq "Linux numbers the L2 caches of CPUs 0-3 as the model does" \
    "0 0 1 1 " "$l2_ids"

ordinary_memory_reads 2 ff00 'ways 8-15' 8M

step "the pseudo-locked region"
check "ways 8-15 of L2 cache 0 are locked as region p0" \
    pseudo_lock p0 'L2:0=ff00'
reader_start 0 /dev/pseudo_lock/p0 $size

check "the reader reads the region, mapped" ask read locked $rounds $pause
check "the kernel measures the region (pseudo_lock_measure, mode 1)" \
    sh -c "echo 1 >/sys/kernel/debug/resctrl/p0/pseudo_lock_measure"

step "QEMU measures the region in its own mapping"
QEMU=/usr/bin/qemu-system-x86_64
machine="-machine none -accel qtest -nodefaults -display none \
    -qmp unix:$QMP,server=on,wait=off"
start_qemu -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0
check_eq "QEMU maps the region" 0 $?
# qmp_succeeds COMMAND PATTERN: whether the reply to COMMAND matches
qmp_succeeds() {
    qmp "$1" | grep -q -e "$2"
}

lines=$(( $(sed -n 's/.*=//p' $R/p0/size) / 64 ))
reply=$(qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "pl0"}}')
diag "$reply"
check "query-pseudolock-residency times a read of each of its $lines lines" \
    contains "$reply" "\"reads\": $lines,"
check "  and says that the emulated host runs under a hypervisor" \
    contains "$reply" '"hypervisor": true'
check "  from a CPU of the region's cache" \
    contains "$reply" '"cpu": [01],'
out=$(hmp_command 'info pseudolock-residency pl0 100')
diag "$out"
check "info pseudolock-residency prints the histogram" \
    contains "$out" "^pl0: $lines reads of 64-byte lines on CPU [01], .* at most 100 cycles"
reply=$(qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "nope"}}')
diag "$reply"
check "an id that is no such backend is refused" \
    contains "$reply" "'nope' is not a mapped memory-backend-pseudolock object"
stop_qemu

# As libvirt runs it: pinned to the cache's CPUs, in a seccomp sandbox
# that forbids changing the affinity
qemu_prefix="taskset -c 0-1"
start_qemu -sandbox on,resourcecontrol=deny \
    -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0
qemu_prefix=
reply=$(qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "pl0"}}')
diag "$reply"
check "a sandboxed QEMU on the cache's CPUs measures the region too" \
    contains "$reply" "\"reads\": $lines,"
stop_qemu

step "what evicts it"
echo 0 >/sys/devices/system/cpu/cpu3/online
check_eq "CPU 3 (the other L2) goes offline: WBINVD there" \
    0 "$(cat /sys/devices/system/cpu/cpu3/online)"
echo 1 >/sys/devices/system/cpu/cpu3/online
check "the reader reads the region again" ask read locked2 $rounds $pause
check "the reader writes 1024 of the region's lines from CPU 2 (the other L2)" \
    ask write-from 2 0 1024
check "the reader reads the region again" ask read locked3 1 0
check "the reader flushes the next 512 lines (CLFLUSH)" ask clflush 1024 512
check "the reader reads the region again" ask read locked5 1 0
check "the reader flushes 256 more through 32-bit addresses (0x67 CLFLUSH)" \
    ask clflush32 1536 256
check "the reader reads the region again" ask read locked6 1 0

# An incoming migration writes the whole region from the destination
# QEMU's threads: from the cache's CPUs (0-1) the locked lines stay,
# from the other L2's (2-3) they all leave.  The source's node 1 is a
# region it creates on L2 cache 1, filled with a pattern (so that the
# stream carries data, not zero pages, which the destination would
# only read); the state goes through a file.
vm_machine="-machine q35 -accel qtest -nodefaults -display none -m 65M \
    -object memory-backend-ram,id=ram0,size=64M \
    -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
    -qmp unix:$QMP,server=on,wait=off"
head -c 1048576 /dev/zero | tr '\0' 'Z' >/tmp/pattern
machine=$vm_machine
qemu_prefix="taskset -c 2-3"
start_qemu -object memory-backend-pseudolock,id=pl0,cache-level=2,cache-id=1,size=1M \
    -device loader,file=/tmp/pattern,addr=0x4000000,force-raw=on
qmp '{"execute": "stop"}' >/dev/null
qmp '{"execute": "migrate", "arguments": {"uri": "file:/tmp/state"}}' >/dev/null
for i in $(seq 300); do
    qmp '{"execute": "query-migrate"}' | grep -q '"completed"' && break
    sleep 0.2
done
check "a guest whose node 1 is a region on L2 cache 1 is saved to a file" \
    qmp_succeeds '{"execute": "query-migrate"}' '"completed"'
stop_qemu

# qcow2_image FILE: a 16 MiB qcow2 image FILE for the running QEMU's
# snapshots, made over QMP (the host has no qemu-img), as node "snap"
qcow2_image() {
    : >"$1"
    qmp "{\"execute\": \"blockdev-add\", \"arguments\": {\"driver\": \"file\", \"filename\": \"$1\", \"node-name\": \"snapfile\"}}" |
        grep -q '"return"' || return 1
    qmp '{"execute": "blockdev-create", "arguments": {"job-id": "mk", "options": {"driver": "qcow2", "file": "snapfile", "size": 16777216}}}' |
        grep -q '"return"' || return 1
    for i in $(seq 100); do
        qmp '{"execute": "query-jobs"}' | grep -q '"concluded"' && break
        sleep 0.1
    done
    qmp '{"execute": "job-dismiss", "arguments": {"id": "mk"}}' | grep -q '"return"' &&
        qmp '{"execute": "blockdev-add", "arguments": {"driver": "qcow2", "node-name": "snap", "file": "snapfile"}}' |
        grep -q '"return"'
}

# incoming CPUS LABEL [cont]: restore the guest into a QEMU on CPUS whose
# node 1 is region p0 (and with "cont", let it run), then have the reader
# read the region in window LABEL
incoming() {
    qemu_prefix="taskset -c $1"
    start_qemu \
        -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0 \
        -incoming file:/tmp/state
    for i in $(seq 300); do
        qmp '{"execute": "query-status"}' | grep -q '"inmigrate"' || break
        sleep 0.2
    done
    check "the guest is restored into region p0 by a QEMU on CPUs $1" \
        qmp_succeeds '{"execute": "query-status"}' '"postmigrate"\|"paused"'
    if [ "${3:-}" = cont ]; then
        check "  and runs" qmp_succeeds '{"execute": "cont"}' '"return"'
        qmp "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": $((0x4000000)), \"size\": 1048576, \"filename\": \"/tmp/node1\"}}" >/dev/null
        check "  with the saved guest's node 1 in the region" \
            cmp -s /tmp/node1 /tmp/pattern
    fi
    stop_qemu
    check "the reader reads the region again" ask read $2 1 0
}
incoming 0-1 mig-in
incoming 2-3 mig-out
if [ "$relock" = works ]; then
    # QEMU relocks its regions when the guest starts running
    incoming 2-3 mig-run cont

    # loadvm: a guest running on the other L2's CPUs, node 1 in p0, is
    # saved into a qcow2 image and loaded again, which writes the region
    # from those CPUs; then it runs on, and QEMU relocks the region
    # (with data in node 1: loadvm leaves a page that stays zero unwritten)
    start_qemu -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0 \
        -device loader,file=/tmp/pattern,addr=0x4000000,force-raw=on
    check "QEMU gets a qcow2 image for snapshots" qcow2_image /tmp/vm.qcow2
    check_eq "savevm saves the guest" "" "$(hmp_command 'savevm s1')"
    check_eq "loadvm loads it" "" "$(hmp_command 'loadvm s1')"
    check "  and the guest runs" \
        qmp_succeeds '{"execute": "query-status"}' '"running"'
    qmp "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": $((0x4000000)), \"size\": 1048576, \"filename\": \"/tmp/node1\"}}" >/dev/null
    check "  with its node 1 in the region" cmp -s /tmp/node1 /tmp/pattern
    stop_qemu
    check "the reader reads the region again" ask read loadvm 1 0
fi
qemu_prefix=
kill $noise
wait $noise 2>/dev/null
echo 0 >/sys/devices/system/cpu/cpu1/online
check_eq "CPU 1 (the region's L2) goes offline: WBINVD there" \
    0 "$(cat /sys/devices/system/cpu/cpu1/online)"
echo 1 >/sys/devices/system/cpu/cpu1/online
check "the reader reads the region again" ask read locked4 1 0
if [ "$relock" = works ]; then
    # A QEMU that was never started (-S: no relock at start) asks for it,
    # from the other L2's CPUs: the kernel does it on the cache's
    machine="-machine none -accel qtest -nodefaults -display none -S \
        -qmp unix:$QMP,server=on,wait=off"
    qemu_prefix="taskset -c 2-3"
    start_qemu -object memory-backend-pseudolock,id=pl0,path=/dev/pseudo_lock/p0
    qemu_prefix=
    check "pseudolock-relock over QMP succeeds" qmp_succeeds \
        '{"execute": "pseudolock-relock", "arguments": {"id": "pl0"}}' \
        '"return": {}'
    stop_qemu
    check "the reader reads the region again" ask read relocked 1 0
fi
check "the reader quits" reader_stop

$PROBE disarm
rmdir $R/p0
umount $R
done_testing
