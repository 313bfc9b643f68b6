# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock inside QEMU's seccomp sandbox, as libvirt
# starts QEMU (-sandbox on,resourcecontrol=deny): the filter fails
# sched_setaffinity() with EPERM, so QEMU must map the region without
# changing its affinity when that already fits the cache, and say that
# the sandbox is why when it does not.  The stock kernel pseudo-locks
# half of L2 cache 0 (CPUs 0-1) of the Goldmont host; the fork's QEMU
# runs inside it (qtest accelerator).

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
sandbox="-sandbox on,resourcecontrol=deny"
pl=memory-backend-pseudolock

machine="-machine none -accel qtest -nodefaults -display none \
    -qmp unix:$QMP,server=on,wait=off"

mapped() {
    qmp '{"execute": "query-pseudolock"}' | grep -q "\"mapped-size\": $size"
}

lock_region_p0
region="$pl,id=pl0,path=/dev/pseudo_lock/p0"

# The build has the sandbox at all
start_qemu $sandbox
check_eq "QEMU starts with $sandbox" 0 $?
check_eq "and runs under a seccomp filter" 2 \
    "$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/$qemu_pid/status)"
stop_qemu

# Allowed on every CPU, QEMU would have to narrow its affinity: the
# sandbox forbids that, and the error says so.
timeout -s KILL 60 $QEMU -machine none -accel qtest -nodefaults \
    -display none $sandbox -object $region 2>/tmp/wide.err
check_eq "on all CPUs, in the sandbox, QEMU cannot map the region" 1 $?
diag "$(grep -v 'TCG doesn' /tmp/wide.err)"
check "and says which CPUs it needs" \
    grep -q "cannot run on CPUs 0,1, the CPUs of the cache" /tmp/wide.err
check "and that the sandbox forbids the change" \
    grep -q "seccomp sandbox forbids changing the CPU affinity" /tmp/wide.err
check "and how to start it instead" \
    grep -q "affinity within CPUs 0,1" /tmp/wide.err
check "not blaming the cpuset" sh -c "! grep -q 'cpuset or cgroup' /tmp/wide.err"

# With its affinity within the cache's CPUs it maps, on the command line
# and over QMP
for set in 0-1 1; do
    qemu_prefix="taskset -c $set"
    start_qemu $sandbox -object $region
    qemu_prefix=
    check "with affinity $set, in the sandbox, QEMU maps the region" mapped
    check_eq "  and its affinity is still $set" "$set" \
        "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$qemu_pid/status)"
    stop_qemu
done
qemu_prefix="taskset -c 0-1"
start_qemu $sandbox
qemu_prefix=
reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl0\", \"path\": \"/dev/pseudo_lock/p0\"}}")
check_eq "object-add in the sandbox maps the region" '{"return": {}}' "$reply"
check "  query-pseudolock says mapped" mapped
reply=$(qmp '{"execute": "object-del", "arguments": {"id": "pl0"}}')
check_eq "object-del releases it" '{"return": {}}' "$reply"
stop_qemu

# Without resourcecontrol=deny the sandbox lets QEMU narrow its affinity
start_qemu -sandbox on -object $region
check "with -sandbox on alone, QEMU on all CPUs maps the region" mapped
stop_qemu
rmdir $R/p0

# A region that QEMU creates itself (on the ways p0 had), in the sandbox
qemu_prefix="taskset -c 0-1"
start_qemu $sandbox -object $pl,id=pl0,cache-level=2,cache-id=0,size=1M
qemu_prefix=
reply=$(qmp '{"execute": "query-pseudolock"}')
diag "$reply"
check "in the sandbox, QEMU creates and maps a region of 1 MiB" \
    sh -c "echo '$reply' | grep -q '\"mapped-size\": 1048576'"
group=$(cd $R && ls -d qemu-pl-*-pl0 2>/dev/null)
stop_qemu
check "and removes its group on quit" test ! -e "$R/$group"

umount $R
done_testing
