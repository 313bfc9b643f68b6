# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock and the locks it shares with other users:
# the claim that keeps a region the memory of one backend whatever
# path, device node or descriptor reaches it, and the resctrl lock that
# any user can hold.  The stock kernel pseudo-locks half of L2 cache 0
# of the Goldmont host; the fork's QEMU runs inside it (qtest
# accelerator).  Every refused QEMU must leave the running guest's
# memory as it was: each mmap of the device would have zeroed it.
# Last, the BQL: query-pseudolock-residency on a host whose cache CPUs
# real-time tasks keep busy.

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
NODE1=0x4000000             # node 0 is 64 MiB of RAM, node 1 follows
qemu_none="$QEMU -machine none -accel qtest -nodefaults -display none"
machine="-machine q35 -accel qtest -nodefaults -display none -m 65M \
    -object memory-backend-ram,id=ram0,size=64M \
    -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
    -qmp unix:$QMP,server=on,wait=off"

# node1_holds BYTE: node 1 of the running QEMU holds pl-map's pattern
node1_holds() {
    rm -f /tmp/node1
    qmp "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": $((NODE1)), \"size\": $size, \"filename\": \"/tmp/node1\"}}" >/dev/null
    [ "$(/rig/bin/pl-map -s "$size" -v "$1" /tmp/node1)" = "verified $size" ]
}

# refused DESCRIPTION WANT COMMAND...: COMMAND (a QEMU) fails, its
# stderr says WANT, and the running guest's memory is intact
refused() {
    desc=$1
    want=$2
    shift 2
    # (a QEMU that is not refused would run: kill it, and fail)
    timeout -s KILL 60 "$@" 2>/tmp/refused.err
    check_eq "$desc" 1 $?
    diag "$(grep -v 'TCG doesn' /tmp/refused.err)"
    check "  saying: $want" grep -q -- "$want" /tmp/refused.err
    check "  and node 1 still holds the guest's data" node1_holds 77
}

lock_region_p0
check_eq "region p0 is pseudo-locked" pseudo-locked "$(cat $R/p0/mode)"
devno=$(cat /sys/class/pseudo_lock/p0/dev)
diag "its device: $devno"
pl=memory-backend-pseudolock

# --- The region's claim --------------------------------------------------

start_qemu -object $pl,id=pl0,path=/dev/pseudo_lock/p0
out=$(/rig/bin/pl-map -c "$cpus" -s "$size" -w 77 /dev/pseudo_lock/p0)
check_eq "QEMU maps p0 as node 1, a helper writes the guest's data" \
    "mapped $size" "$out"
check "node 1 holds it" node1_holds 77

# Other processes, by every way of reaching the device
refused "a second QEMU on the same path is refused" \
    "is in use: process $qemu_pid holds the lock on /sys/dev/char/$devno" \
    $qemu_none -object $pl,id=a,path=/dev/pseudo_lock/p0
mknod /tmp/p0-node c ${devno%:*} ${devno#*:}
refused "a second QEMU on a node made with mknod is refused" \
    "process $qemu_pid holds the lock" \
    $qemu_none -object $pl,id=a,path=/tmp/p0-node
# libvirt's way: a private /dev in a mount namespace, its own node
refused "a QEMU with a private /dev and its own node is refused" \
    "process $qemu_pid holds the lock" \
    unshare -m sh -c "mount -t tmpfs dev /dev && mknod /dev/null c 1 3 &&
        mknod /dev/pl c ${devno%:*} ${devno#*:} &&
        exec $qemu_none -object $pl,id=a,path=/dev/pl"
refused "a QEMU given a descriptor (-add-fd) is refused" \
    "process $qemu_pid holds the lock" \
    sh -c "exec $qemu_none -add-fd fd=3,set=1 \
        -object $pl,id=a,path=/dev/fdset/1 3<>/dev/pseudo_lock/p0"

# The same QEMU, by every way: object-add over QMP
while IFS='|' read -r args want; do
    reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"again\", $args}}")
    diag "$args: $reply"
    case $reply in
    *'"error"'*"$want"*) ok "object-add with $args is refused: $want" ;;
    *) not_ok "object-add with $args is refused: $want" ;;
    esac
    check "  and node 1 still holds the guest's data" node1_holds 77
done <<EOF
"path": "/dev/pseudo_lock/p0"|pseudo-locked region 'p0' is already the memory of backend 'pl0'
"path": "/tmp/p0-node"|pseudo-locked region 'p0' is already the memory of backend 'pl0'
EOF
check_eq "QEMU still holds one descriptor of the region" 1 \
    "$(ls -l /proc/$qemu_pid/fd | grep -c -e '/dev/pseudo_lock/p0$' -e p0-node)"
check_eq "and one claim on it" 1 \
    "$(ls -l /proc/$qemu_pid/fd | grep -c /sys/devices/virtual/pseudo_lock/p0)"
stop_qemu

# Within one QEMU on the command line: one fdset twice, two fdsets that
# hold dups of one descriptor, a path and a mknod node.  Each pair
# shares what flock() on the device would key on (its open file, or
# nothing at all), but not the device number.
dev=/dev/pseudo_lock/p0
while IFS='|' read -r desc args; do
    timeout -s KILL 60 sh -c "exec $qemu_none $args 3<>$dev 4<&3" \
        2>/tmp/pair.err
    check_eq "$desc: refused" 1 $?
    diag "$(grep -v 'TCG doesn' /tmp/pair.err)"
    check "  as the memory of backend 'a' already" \
        grep -q "pseudo-locked region 'p0' is already the memory of backend 'a'" \
        /tmp/pair.err
done <<EOF
one fdset for two backends|-add-fd fd=3,set=1 -object $pl,id=a,path=/dev/fdset/1 -object $pl,id=b,path=/dev/fdset/1
two fdsets of dups of one descriptor|-add-fd fd=3,set=1 -add-fd fd=4,set=2 -object $pl,id=a,path=/dev/fdset/1 -object $pl,id=b,path=/dev/fdset/2
a path and a mknod node|-object $pl,id=a,path=$dev -object $pl,id=b,path=/tmp/p0-node
EOF

# The claim goes with the backend: object-del gives the region up, and
# so does a QEMU killed with SIGKILL.
start_qemu -object $pl,id=pl0,path=/tmp/p0-node
reply=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl9\", \"path\": \"$dev\"}}")
check "a QEMU on the mknod node holds the claim" \
    sh -c "echo '$reply' | grep -q 'already the memory'"
kill -9 $qemu_pid
wait $qemu_pid 2>/dev/null
start_qemu -object $pl,id=pl0,path=$dev
reply=$(qmp '{"execute": "query-pseudolock"}')
check "after it was killed, the region can be mapped again" \
    sh -c "echo '$reply' | grep -q '\"mapped-size\": $size'"
stop_qemu

rm -f $QMP
$QEMU -machine q35 -accel qtest -nodefaults -display none -m 64M,slots=2,maxmem=1G \
    -qmp unix:$QMP,server=on,wait=off 2>/tmp/qemu.err &
qemu_pid=$!
wait_qmp
for i in 1 2 3; do
    for path in $dev /tmp/p0-node; do
        r1=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl1\", \"path\": \"$path\"}}")
        r2=$(qmp '{"execute": "object-del", "arguments": {"id": "pl1"}}')
        [ "$r1$r2" = '{"return": {}}{"return": {}}' ] || break 2
    done
done
check_eq "object-add and object-del, 6 times by path and by node" \
    '{"return": {}}{"return": {}}' "$r1$r2"
check "and QEMU holds no claim or descriptor afterwards" \
    sh -c "! ls -l /proc/$qemu_pid/fd | grep -q -e pseudo_lock -e p0-node -e sys/devices"
stop_qemu
rm /tmp/p0-node
rmdir $R/p0

# --- The resctrl lock, held by someone else -----------------------------
# (ways 8-15 of L2 cache 0 are free again for QEMU's own region)

created="$pl,id=pl0,cache-level=2,cache-id=0,size=1M"
rm -f /tmp/hold.out     # not the last holder's word: wait for this one's
/rig/bin/flock-hold $R >/tmp/hold.out &
holder=$!
while ! grep -q locked /tmp/hold.out 2>/dev/null; do sleep 0.1; done
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
rm -f /tmp/hold.out     # not the last holder's word: wait for this one's
/rig/bin/flock-hold $R >/tmp/hold.out &
holder=$!
while ! grep -q locked /tmp/hold.out 2>/dev/null; do sleep 0.1; done
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

# Two QEMUs creating a region on the same cache at once: the resctrl lock
# lets one in at a time; the first gets the ways, the second is told
# that the cache holds a region already.  Both keep their QMP monitor
# up, and stay until told to quit (the loser exits at once).
for n in 1 2; do
    rm -f /tmp/race$n.qmp
    $qemu_none -object $created -qmp unix:/tmp/race$n.qmp,server=on,wait=off \
        2>/tmp/race$n.err &
    eval race$n=\$!
done
# until each has either answered QMP or exited
for i in $(seq 300); do
    settled=0
    for n in 1 2; do
        eval pid=\$race$n
        if ! kill -0 $pid 2>/dev/null ||
           /rig/bin/qmp-call /tmp/race$n.qmp '{"execute": "query-status"}' \
               >/dev/null 2>&1; then
            settled=$((settled + 1))
        fi
    done
    [ $settled = 2 ] && break
    sleep 0.1
done
winners=0 losers=0
for n in 1 2; do
    eval pid=\$race$n
    if kill -0 $pid 2>/dev/null; then
        winners=$((winners + 1))
        /rig/bin/qmp-call /tmp/race$n.qmp '{"execute": "quit"}' >/dev/null
    elif grep -q "already holds a pseudo-locked region" /tmp/race$n.err; then
        losers=$((losers + 1))
    else
        diag "QEMU $n: $(grep -v 'TCG doesn' /tmp/race$n.err)"
    fi
    wait $pid 2>/dev/null
done
check_eq "two creators started at once: one gets the region" 1 $winners
check_eq "and the other is told the cache holds one already" 1 $losers
check "no group is left once the winner quits" \
    sh -c "! ls -d $R/qemu-pl-* 2>/dev/null"

# --- A real-time host --------------------------------------------------
# The CPUs of L2 cache 0 (0-1), where region rt is, run FIFO busy loops, with RT throttling
# and the fair server off, as hard real-time hosts run their vCPUs:
# query-pseudolock-residency's thread, an ordinary one pinned there,
# does not get on them.  QEMU and this shell run on the other L2's CPUs.

step "query-pseudolock-residency on a real-time host"
# now_ms: the uptime in milliseconds (to a hundredth of a second)
now_ms() {
    awk '{ printf "%d", $1 * 1000 }' /proc/uptime
}
taskset -p -c 2-3 $$ >/dev/null
echo 'L2:0=00ff' >$R/schemata
check "ways 8-15 of L2 cache 0 are locked as region rt" pseudo_lock rt 'L2:0=ff00'
QMP2=/tmp/qmp2.sock QTEST=/tmp/qtest.sock
qemu_prefix="taskset -c 2-3"
start_qemu -object $pl,id=pl0,path=/dev/pseudo_lock/rt \
    -qmp unix:$QMP2,server=on,wait=off -qtest unix:$QTEST,server=on,wait=off
started=$?
check_eq "QEMU maps rt as node 1, on CPUs 2-3" 0 $started
[ $started = 0 ] || diag "$(grep -v 'TCG doesn' /tmp/qemu.err)"
qemu_prefix=
rt_runtime=$(cat /proc/sys/kernel/sched_rt_runtime_us)
FS=/sys/kernel/debug/sched/fair_server
fs0=$(cat $FS/cpu0/runtime) fs1=$(cat $FS/cpu1/runtime)
check "RT throttling goes off" \
    sh -c 'echo -1 >/proc/sys/kernel/sched_rt_runtime_us'
check "the fair server of CPUs 0 and 1 goes off" \
    sh -c "echo 0 >$FS/cpu0/runtime && echo 0 >$FS/cpu1/runtime"
/rig/bin/rt-spin 0 10 60 & spin0=$!
/rig/bin/rt-spin 1 10 60 & spin1=$!
sleep 0.5
check "FIFO busy loops take CPUs 0 and 1" kill -0 $spin0 $spin1

# between MIN MAX: whether $elapsed is at least MIN and under MAX (ms)
between() {
    [ "$elapsed" -ge "$1" ] && [ "$elapsed" -lt "$2" ]
}
t0=$(now_ms)
qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "pl0"}}' \
    >/tmp/residency.out &
query=$!
sleep 1
t1=$(now_ms)
out=$(timeout -s KILL 10 /rig/bin/qtest-call $QTEST "readb $NODE1")
elapsed=$(($(now_ms) - t1))
diag "main loop: '$out' in $elapsed ms, $((t1 - t0)) ms into the query"
check "while the query waits, QEMU's main loop answers (qtest readb)" \
    contains "$out" '^OK'
check "  within a second" between 0 1000
check "  and the query still waits" kill -0 $query
reply=$(timeout -s KILL 20 /rig/bin/qmp-call $QMP2 \
    '{"execute": "query-status"}' | tr -d '\r')
elapsed=$(($(now_ms) - t0))
diag "second QMP monitor: $reply, $elapsed ms into the query"
check "another QMP monitor's query-status answers" \
    contains "$reply" '"running"'
check "  within the query's deadline (QMP runs in-band commands in turn)" \
    between 0 7000
wait $query
elapsed=$(($(now_ms) - t0))
reply=$(cat /tmp/residency.out)
diag "$reply after $elapsed ms"
check "the query fails: the measurement did not run within 5000 ms" \
    contains "$reply" "the measurement of 'pl0' did not run within 5000 ms"
check "  after 5 to 7 seconds" between 4900 7000
reply=$(qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "pl0", "timeout-ms": 100}}')
diag "$reply"
check "a second query while its thread still waits is refused" \
    contains "$reply" "an earlier measurement of 'pl0' has not run yet"

kill $spin0 $spin1
wait $spin0 $spin1
check "the fair server of CPUs 0 and 1 and RT throttling come back" \
    sh -c "echo $fs0 >$FS/cpu0/runtime && echo $fs1 >$FS/cpu1/runtime &&
        echo $rt_runtime >/proc/sys/kernel/sched_rt_runtime_us"
lines=$((size / 64))
for i in $(seq 50); do
    reply=$(qmp '{"execute": "query-pseudolock-residency", "arguments": {"id": "pl0", "timeout-ms": 60000}}')
    contains "$reply" "has not run yet" || break
    sleep 0.1
done
diag "$reply"
check "once the CPUs are free, the region is measured: $lines reads" \
    contains "$reply" "\"reads\": $lines,"
stop_qemu
check_eq "  and QEMU quits cleanly" 0 $?
rmdir $R/rt
taskset -p -c 0-3 $$ >/dev/null

umount $R
done_testing
