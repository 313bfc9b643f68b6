# SPDX-License-Identifier: GPL-2.0-or-later
#
# memory-backend-pseudolock over many lifetimes: hot-plug and unplug
# cycles in one QEMU, and QEMUs killed with SIGKILL one after another,
# with nothing left behind: no resctrl group, no device node, no locked
# ways, no descriptor, mapping or claim in QEMU.  The counts come from
# resctrl and /proc, and are printed.  The fork's QEMU runs inside the
# emulated Goldmont host (qtest accelerator).
#   rig.plug_cycles=N   hot-plug/unplug cycles (default 100)
#   rig.kill_cycles=N   create/kill -9 cycles (default 50)

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
QTEST=/tmp/qtest.sock
plug_cycles=$(cmdline_arg plug_cycles)
kill_cycles=$(cmdline_arg kill_cycles)
plug_cycles=${plug_cycles:-100}
kill_cycles=${kill_cycles:-50}
pl=memory-backend-pseudolock

groups() {
    ls -d $R/qemu-pl-* 2>/dev/null | wc -l
}
nodes() {
    ls /dev/pseudo_lock 2>/dev/null | wc -l
}
locked_ways() {
    sed 's/;.*//; s/^0=//' $R/info/L2/bit_usage | tr -cd P | wc -c
}
# what QEMU $qemu_pid holds of regions: descriptors, claims, mappings
qemu_fds() {
    ls -l /proc/$qemu_pid/fd | grep -c ' /dev/pseudo_lock/'
}
qemu_claims() {
    ls -l /proc/$qemu_pid/fd | grep -c /sys/devices/virtual/pseudo_lock/
}
qemu_maps() {
    grep -c ' /dev/pseudo_lock/' /proc/$qemu_pid/maps
}
qemu_fd_count() {
    ls /proc/$qemu_pid/fd | wc -l
}

mount -t resctrl resctrl $R
echo 'L2:0=00ff;1=ffff' >$R/schemata

# --- Hot-plug and unplug, $plug_cycles times ---------------------------

rm -f $QMP $QTEST
$QEMU -machine q35 -accel qtest -nodefaults -display none \
    -m 64M,slots=2,maxmem=1G -qmp unix:$QMP,server=on,wait=off \
    -qtest unix:$QTEST,server=on,wait=off 2>/tmp/cycles.err &
qemu_pid=$!
wait_qmp
fds_before=$(qemu_fd_count)
start=$(date +%s)
failed=0
cycle=0
while [ $cycle -lt $plug_cycles ]; do
    cycle=$((cycle + 1))
    r1=$(qmp "{\"execute\": \"object-add\", \"arguments\": {\"qom-type\": \"$pl\", \"id\": \"pl1\", \"cache-level\": 2, \"cache-id\": 0, \"size\": 1048576}}")
    r2=$(qmp '{"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": "dimm1", "memdev": "pl1"}}')
    in_use="$(groups) $(qemu_fds) $(qemu_claims) $(qemu_maps)"
    r3=$(qmp '{"execute": "device_del", "arguments": {"id": "dimm1"}}')
    r4=$(/rig/bin/qtest-call $QTEST "outl 0xa00 0" "outb 0xa14 8" | tr '\n' ' ')
    r5=$(qmp '{"execute": "query-memory-devices"}')
    r6=$(qmp '{"execute": "object-del", "arguments": {"id": "pl1"}}')
    got="$r1 $r2 [$in_use] $r3 $r4 $r5 $r6"
    want='{"return": {}} {"return": {}} [1 1 1 1] {"return": {}} OK OK  {"return": []} {"return": {}}'
    if [ "$got" != "$want" ]; then
        failed=$((failed + 1))
        diag "cycle $cycle: $got"
        [ $failed -ge 3 ] && break
    fi
done
took=$(( $(date +%s) - start ))
diag "$cycle hot-plug cycles in $took s; $failed went wrong"
check_eq "$plug_cycles cycles of object-add, device_add, eject, object-del" \
    "$plug_cycles 0" "$cycle $failed"
diag "left: $(groups) groups, $(nodes) device nodes, $(locked_ways) locked ways;" \
     "QEMU: $(qemu_fds) descriptors, $(qemu_claims) claims, $(qemu_maps) mappings," \
     "$(qemu_fd_count) descriptors in all ($fds_before before)"
check_eq "no resctrl group left" 0 "$(groups)"
check_eq "no device node left" 0 "$(nodes)"
check_eq "no locked ways left" 0 "$(locked_ways)"
check_eq "QEMU holds no region descriptor" 0 "$(qemu_fds)"
check_eq "QEMU holds no claim" 0 "$(qemu_claims)"
check_eq "QEMU maps no region" 0 "$(qemu_maps)"
check_eq "QEMU has as many descriptors as before the cycles" \
    "$fds_before" "$(qemu_fd_count)"
qmp '{"execute": "quit"}' >/dev/null
wait $qemu_pid

# --- Created, then killed with SIGKILL, $kill_cycles times -------------
# Every other QEMU is killed at some moment of its start-up, the others
# once they run; each QEMU reclaims what the one before it left.

machine="-machine q35 -accel qtest -nodefaults -display none -m 65M \
    -object memory-backend-ram,id=ram0,size=64M \
    -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
    -object $pl,id=pl0,cache-level=2,cache-id=0,size=1M \
    -qmp unix:$QMP,server=on,wait=off"
start=$(date +%s)
failed=0
left_early=0
cycle=0
while [ $cycle -lt $kill_cycles ]; do
    cycle=$((cycle + 1))
    rm -f $QMP
    $QEMU $machine 2>/tmp/killed.err &
    qemu_pid=$!
    if [ $((cycle % 2)) = 1 ]; then
        # At some moment of its start-up: before, while or after it
        # creates its group; the next QEMU must reclaim whatever is left
        sleep 0.$(( (cycle * 37) % 10 ))
        kill -9 $qemu_pid
        wait $qemu_pid 2>/dev/null
        [ "$(groups)" = 0 ] || left_early=$((left_early + 1))
        continue
    fi
    if ! wait_qmp 100; then
        failed=$((failed + 1))
        diag "cycle $cycle: QEMU did not start: $(grep -v 'TCG doesn' /tmp/killed.err)"
        [ $failed -ge 3 ] && break
        continue
    fi
    # its own group only: whatever the QEMU killed before left is gone
    state="$(groups) $(nodes) $(qemu_fds) $(qemu_claims) $(qemu_maps)"
    if [ "$state" != "1 1 1 1 1" ]; then
        failed=$((failed + 1))
        diag "cycle $cycle: groups, nodes, descriptors, claims, mappings: $state"
        [ $failed -ge 3 ] && break
    fi
    kill -9 $qemu_pid
    wait $qemu_pid 2>/dev/null
done
took=$(( $(date +%s) - start ))
diag "$cycle create/kill cycles in $took s; $failed went wrong;" \
     "a group was left after $left_early of the $((kill_cycles / 2)) kills during start-up"
check_eq "$kill_cycles QEMUs created a region and were killed" \
    "$kill_cycles 0" "$cycle $failed"
check_eq "the last one's group is left" 1 "$(groups)"
rm -f $QMP
$QEMU -machine none -accel qtest -nodefaults -display none \
    -object $pl,id=pl0,cache-level=2,cache-id=0,size=1M \
    -qmp unix:$QMP,server=on,wait=off 2>/tmp/last.err &
qemu_pid=$!
wait_qmp
stop_reply=$(qmp '{"execute": "quit"}')
wait $qemu_pid
check "and the next QEMU reclaimed it" grep -q "removed resctrl group" /tmp/last.err
diag "left: $(groups) groups, $(nodes) device nodes, $(locked_ways) locked ways"
check_eq "no resctrl group left" 0 "$(groups)"
check_eq "no device node left" 0 "$(nodes)"
check_eq "no locked ways left" 0 "$(locked_ways)"

umount $R
done_testing
