# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock and the locks it shares with other users:
# the resctrl lock, which any user can hold.  The fork's QEMU runs inside
# the emulated Goldmont host (qtest accelerator) and creates its region
# on L2 cache 0.

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
qemu_none="$QEMU -machine none -accel qtest -nodefaults -display none"
machine="-machine q35 -accel qtest -nodefaults -display none -m 65M \
    -object memory-backend-ram,id=ram0,size=64M \
    -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
    -qmp unix:$QMP,server=on,wait=off"

start_qemu() {
    rm -f $QMP
    $QEMU $machine "$@" 2>/tmp/qemu.err &
    qemu_pid=$!
    wait_qmp
}

stop_qemu() {
    qmp '{"execute": "quit"}' >/dev/null
    wait $qemu_pid
}

mount -t resctrl resctrl $R
echo 'L2:0=00ff' >$R/schemata
pl=memory-backend-pseudolock

# --- The resctrl lock, held by someone else -----------------------------
# (ways 8-15 of L2 cache 0 are free for QEMU's own region)

created="$pl,id=pl0,cache-level=2,cache-id=0,size=1M"
/rig/bin/flock-hold $R >/tmp/hold.out &
holder=$!
while ! grep -q locked /tmp/hold.out; do sleep 0.1; done
start=$(date +%s)
timeout -s KILL 120 $qemu_none -object $created 2>/tmp/held.err
status=$?
took=$(( $(date +%s) - start ))
diag "$(grep -v 'TCG doesn' /tmp/held.err)"
check_eq "QEMU cannot create a region while another process holds the lock" \
    1 $status
check "and names the holder" \
    grep -q "process $holder holds the lock on $R, still after 5000 ms" \
    /tmp/held.err
check "after waiting a bounded time (${took} s)" test $took -lt 60
check "no group is left behind" sh -c "! ls -d $R/qemu-pl-* 2>/dev/null"

# object-add over QMP: the monitor answers with the error, then answers
# again
rm -f $QMP
$QEMU -machine none -accel qtest -nodefaults -display none \
    -qmp unix:$QMP,server=on,wait=off 2>/tmp/qemu.err &
qemu_pid=$!
wait_qmp
reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl0\", \"cache-level\": 2, \"cache-id\": 0, \"size\": 1048576}}")
diag "$reply"
check "object-add fails naming the holder" \
    sh -c "echo '$reply' | grep -q 'process $holder holds the lock'"
reply=$(qmp '{"execute": "query-status"}')
check "and the monitor is responsive afterwards" \
    sh -c "echo '$reply' | grep -q return"
kill $holder
wait $holder 2>/dev/null
reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl0\", \"cache-level\": 2, \"cache-id\": 0, \"size\": 1048576}}")
check_eq "once the holder let go, object-add creates the region" \
    '{"return": {}}' "$reply"
group=$(cd $R && ls -d qemu-pl-*-pl0 2>/dev/null)

# Quitting while the lock is held: QEMU quits all the same and leaves
# its group, which the next QEMU reclaims.
/rig/bin/flock-hold $R >/tmp/hold.out &
holder=$!
while ! grep -q locked /tmp/hold.out; do sleep 0.1; done
stop_qemu
check_eq "QEMU quits while the lock is held" 0 $?
diag "$(grep -v 'TCG doesn' /tmp/qemu.err)"
check "saying that its group stays, and why" \
    grep -q "pseudo-locked region '$group' stays: process $holder holds the lock" \
    /tmp/qemu.err
check "which it does" test -d "$R/$group"
kill $holder
wait $holder 2>/dev/null
start_qemu -object $created
reply=$(qmp '{"execute": "query-pseudolock"}')
check "the next QEMU creates its region" \
    sh -c "echo '$reply' | grep -q '\"created\": true'"
check "and reclaims the group left behind" test ! -e "$R/$group"
stop_qemu
check "no group is left" sh -c "! ls -d $R/qemu-pl-* 2>/dev/null"

umount $R
done_testing
