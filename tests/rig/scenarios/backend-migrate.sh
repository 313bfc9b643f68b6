# SPDX-License-Identifier: GPL-2.0-or-later
#
# Moving a guest whose NUMA node 1 is a pseudo-locked region.  Two of the
# fork's QEMUs run inside the emulated Goldmont host, each creating its
# region on its own L2 instance (the two modules): live (precopy)
# migration between them carries node 1; so do saving the state to a
# file and restoring it (what virsh save/restore and savevm/loadvm
# load through), and dump-guest-memory.  A destination region of
# another size, postcopy and background snapshots are refused with a
# reason, and the source goes on with its memory intact.  A vCPU
# hot-plugged next to the region leaves it alone.  Nothing is left in
# resctrl.  (qtest accelerator: the loader device writes node 1
# at reset; nothing executes guest code.)

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
NODE1=0x4000000             # node 0 is 64 MiB of RAM, node 1 follows
SRC=/tmp/src.qmp
DST=/tmp/dst.qmp
size=1048576

qmp_at() {
    sock=$1
    shift
    /rig/bin/qmp-call "$sock" "$@" | tr -d '\r'
}

# vm SOCKET CACHE-ID SIZE ARGS...: a QEMU in the background whose node 1
# is a SIZE-byte region that it creates on L2 cache CACHE-ID; its pid in
# $vm_pid, its stderr in /tmp/vm-CACHE-ID.err
vm() {
    sock=$1 id=$2 bytes=$3
    shift 3
    rm -f "$sock"
    $QEMU -machine q35 -accel qtest -nodefaults -display none \
        -m $((65536 + bytes / 1024))K \
        -object memory-backend-ram,id=ram0,size=64M \
        -object memory-backend-pseudolock,id=pl0,cache-level=2,cache-id=$id,size=$bytes \
        -numa node,nodeid=0,memdev=ram0 -numa node,nodeid=1,memdev=pl0 \
        -qmp unix:$sock,server=on,wait=off "$@" 2>/tmp/vm-$id.err &
    vm_pid=$!
}

# answers SOCKET PID: wait until that QEMU answers QMP
answers() {
    for i in $(seq 100); do
        [ -S "$1" ] && qmp_at "$1" '{"execute": "query-status"}' 2>/dev/null |
            grep -q '"return"' && return 0
        kill -0 "$2" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# status_of SOCKET: that QEMU's run state
status_of() {
    qmp_at "$1" '{"execute": "query-status"}' |
        sed -n 's/.*"status": "\([a-z-]*\)".*/\1/p'
}

# migration_status SOCKET: the source's migration status once it settles
migration_status() {
    for i in $(seq 300); do
        st=$(qmp_at "$1" '{"execute": "query-migrate"}' |
             sed -n 's/.*"status": "\([a-z-]*\)".*/\1/p')
        case $st in
        completed|failed|cancelled) break ;;
        esac
        sleep 0.1
    done
    echo "$st"
}

# node1_holds SOCKET BYTE: node 1 of that QEMU holds pl-map's pattern BYTE
node1_holds() {
    rm -f /tmp/node1
    qmp_at "$1" "{\"execute\": \"pmemsave\", \"arguments\": {\"val\": $((NODE1)), \"size\": $size, \"filename\": \"/tmp/node1\"}}" >/dev/null
    [ "$(/rig/bin/pl-map -s $size -v "$2" /tmp/node1)" = "verified $size" ]
}

groups() {
    ls -d $R/qemu-pl-* 2>/dev/null | wc -l
}

mount -t resctrl resctrl $R
echo 'L2:0=00ff;1=00ff' >$R/schemata
dd if=/dev/zero of=/tmp/pattern bs=$size count=1 2>/dev/null
/rig/bin/pl-map -s $size -w 91 /tmp/pattern >/dev/null

# --- the source: node 1 on L2 cache 0, written at reset ----------------
vm $SRC 0 $size -device loader,file=/tmp/pattern,addr=$NODE1,force-raw=on
src_pid=$vm_pid
check "the source starts with its region on L2 cache 0" answers $SRC $src_pid
check "its node 1 holds the pattern" node1_holds $SRC 91

# --- refused up front: postcopy, background snapshot -------------------
vm $DST 1 $size -incoming unix:/tmp/mig.sock
dst_pid=$vm_pid
answers $DST $dst_pid
caps='{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "postcopy-ram", "state": true}]}}'
qmp_at $SRC "$caps" >/dev/null
qmp_at $DST "$caps" >/dev/null
qmp_at $SRC '{"execute": "migrate", "arguments": {"uri": "unix:/tmp/mig.sock"}}' >/dev/null
check_eq "postcopy migration fails" failed "$(migration_status $SRC)"
qmp_at $SRC '{"execute": "query-migrate"}' >/tmp/reply
diag "$(cat /tmp/reply)"
check "before it starts, naming the backend and the capability" \
    grep -q "migration capability postcopy-ram does not work with memory backend 'pl0'" /tmp/reply
check_eq "the source goes on running" running "$(status_of $SRC)"
check "with node 1 intact" node1_holds $SRC 91
qmp_at $SRC '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "postcopy-ram", "state": false}]}}' >/dev/null
# the destination saw its incoming connection close
kill $dst_pid 2>/dev/null
wait $dst_pid 2>/dev/null

# userfaultfd's write protection, which background snapshots need, does
# not take a device mapping: QEMU's own check refuses the capability
reply=$(qmp_at $SRC '{"execute": "migrate-set-capabilities", "arguments": {"capabilities": [{"capability": "background-snapshot", "state": true}]}}')
diag "$reply"
check "a background snapshot is refused when asked for" \
    sh -c "echo '$reply' | grep -q 'Background-snapshot is not'"

# --- a destination region of another size ------------------------------
vm $DST 1 524288 -incoming unix:/tmp/mig.sock
dst_pid=$vm_pid
answers $DST $dst_pid
qmp_at $SRC '{"execute": "migrate", "arguments": {"uri": "unix:/tmp/mig.sock"}}' >/dev/null
check_eq "migrating to a 512 KiB region fails" failed "$(migration_status $SRC)"
wait $dst_pid
diag "$(cat /tmp/vm-1.err)"
check "the destination says the sizes differ" \
    grep -q "Size mismatch: pl0: 0x100000 != 0x80000" /tmp/vm-1.err
check_eq "the source goes on running" running "$(status_of $SRC)"
check "with node 1 intact" node1_holds $SRC 91
check_eq "the failed destination's group is gone (the source's stays)" 1 "$(groups)"

# --- live migration to a region on the other L2 instance --------------
vm $DST 1 $size -incoming unix:/tmp/mig.sock
dst_pid=$vm_pid
answers $DST $dst_pid
check_eq "two regions, one per L2 instance" 2 "$(groups)"
qmp_at $SRC '{"execute": "migrate", "arguments": {"uri": "unix:/tmp/mig.sock"}}' >/dev/null
check_eq "live migration to a region on L2 cache 1 completes" completed \
    "$(migration_status $SRC)"
for i in $(seq 50); do
    [ "$(status_of $DST)" = running ] && break
    sleep 0.1
done
check_eq "the destination runs" running "$(status_of $DST)"
check "and its node 1 holds the pattern, on L2 cache 1" node1_holds $DST 91
reply=$(qmp_at $DST '{"execute": "query-pseudolock"}')
diag "$reply"
check "query-pseudolock on the destination: cache 1, locked" \
    sh -c "echo '$reply' | grep -q '\"cache-id\": 1' && echo '$reply' | grep -q '\"locked\": true'"
qmp_at $SRC '{"execute": "quit"}' >/dev/null
wait $src_pid
check_eq "the source's group is gone once it quits" 1 "$(groups)"

# --- dump-guest-memory of node 1 ---------------------------------------
# With begin/length, the dump is an ELF file with one PT_LOAD segment,
# node 1: find where its bytes are from the program headers
qmp_at $DST "{\"execute\": \"dump-guest-memory\", \"arguments\": {\"paging\": false, \"protocol\": \"file:/tmp/dump\", \"begin\": $((NODE1)), \"length\": $size}}" >/dev/null
# elf_field FILE OFFSET BYTES: an unsigned little-endian field
elf_field() {
    od -A n -t u$3 -j $2 -N $3 "$1" | tr -d ' '
}
phoff=$(elf_field /tmp/dump 32 8)
phnum=$(elf_field /tmp/dump 56 2)
load_offset=
for i in $(seq 0 $((phnum - 1))); do
    ph=$((phoff + i * 56))
    if [ "$(elf_field /tmp/dump $ph 4)" = 1 ] &&
       [ "$(elf_field /tmp/dump $((ph + 24)) 8)" = $((NODE1)) ]; then
        load_offset=$(elf_field /tmp/dump $((ph + 8)) 8)
    fi
done
check "the dump has a PT_LOAD segment at node 1's address" test -n "$load_offset"
tail -c +$((${load_offset:-0} + 1)) /tmp/dump | head -c $size >/tmp/dump-node1
check_eq "dump-guest-memory writes node 1 as the guest has it" "verified $size" \
    "$(/rig/bin/pl-map -s $size -v 91 /tmp/dump-node1)"
rm -f /tmp/dump /tmp/dump-node1

# --- saved to a file and restored, on the other cache ------------------
qmp_at $DST '{"execute": "stop"}' >/dev/null
qmp_at $DST '{"execute": "migrate", "arguments": {"uri": "file:/tmp/state"}}' >/dev/null
check_eq "the state saves to a file" completed "$(migration_status $DST)"
qmp_at $DST '{"execute": "quit"}' >/dev/null
wait $dst_pid
check_eq "no group left once it quits" 0 "$(groups)"
vm $SRC 0 $size -incoming file:/tmp/state
src_pid=$vm_pid
answers $SRC $src_pid
for i in $(seq 50); do
    [ "$(status_of $SRC)" = paused ] && break
    sleep 0.1
done
check "a QEMU with its region on L2 cache 0 restores it" node1_holds $SRC 91
qmp_at $SRC '{"execute": "quit"}' >/dev/null
wait $src_pid
rm -f /tmp/state

# --- a vCPU hot-plugged next to the region ------------------------------
# Nothing happens to the region: it stays mapped and locked, and the new
# vCPU is one more thread with QEMU's affinity, which the user (or
# libvirt's vcpupin) pins as the others
vm $SRC 0 $size -smp 1,maxcpus=2
src_pid=$vm_pid
answers $SRC $src_pid
threads=$(ls /proc/$src_pid/task | wc -l)
reply=$(qmp_at $SRC '{"execute": "device_add", "arguments": {"driver": "qemu64-x86_64-cpu", "id": "cpu1", "socket-id": 0, "core-id": 1, "thread-id": 0}}')
diag "$reply"
check_eq "a vCPU is hot-plugged into the machine with the region" \
    '{"return": {}}' "$reply"
check_eq "  which now has two vCPUs" 2 \
    "$(qmp_at $SRC '{"execute": "query-cpus-fast"}' | grep -o '"cpu-index"' | wc -l)"
check "  and one more thread" test "$(ls /proc/$src_pid/task | wc -l)" -gt $threads
reply=$(qmp_at $SRC '{"execute": "query-pseudolock"}')
check "  and the region is still mapped and locked" \
    sh -c "echo '$reply' | grep -q '\"mapped-size\": $size' &&
           echo '$reply' | grep -q '\"locked\": true'"
qmp_at $SRC '{"execute": "quit"}' >/dev/null
wait $src_pid
check_eq "nothing is left in resctrl" 0 "$(groups)"
check_eq "no device node is left" 0 "$(ls /dev/pseudo_lock 2>/dev/null | wc -l)"
done_testing
