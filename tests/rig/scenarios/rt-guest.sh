# SPDX-License-Identifier: GPL-2.0-or-later
#
# A real-time guest whose NUMA node 1 is a pseudo-locked region: the
# fork's QEMU, run in the emulated Goldmont host, creates a 1 MiB region
# on L2 cache 0, boots a small Linux guest (TCG in TCG) with node 0 on
# RAM and node 1 on the region, HMAT figures that make node 1 the fast
# one, and its vCPU threads pinned to the host-cpus query-pseudolock
# reports, as a management stack would.  The guest reports what an
# application sees (/rig/rt-guest/init): node 1's size, the nodes'
# HMAT read latencies, and a buffer bound to node 1, written and read.
#   rig.guest_timeout=S  how long the guest may take (default 420 s)

R=/sys/fs/resctrl
QEMU=/usr/bin/qemu-system-x86_64
GUEST=/rig/rt-guest
region=1048576
bind=262144
timeout=$(cmdline_arg guest_timeout)
timeout=${timeout:-420}

l2=/sys/devices/system/cpu/cpu0/cache/index2
step "The emulated host: a Goldmont-class CPU with L2 cache allocation"
diag "kernel $(uname -r); $(grep -c '^processor' /proc/cpuinfo) CPUs;" \
    "L2 cache 0: $(cat $l2/size), $(cat $l2/ways_of_associativity) ways," \
    "CPUs $(cat $l2/shared_cpu_list)"
mount -t resctrl resctrl $R
diag "bit_usage before: $(cat $R/info/L2/bit_usage)"
diag "\$ echo 'L2:0=00ff' > $R/schemata    # leave ways 8-15 free"
echo 'L2:0=00ff' >$R/schemata

step "QEMU creates a 1 MiB region on L2 cache 0 and starts the guest, stopped"
diag "node 0: 64 MiB of RAM and both vCPUs; node 1: the region" \
    "(memory-backend-pseudolock,cache-level=2,cache-id=0,size=1M);" \
    "node 2: 4 MiB of RAM; HMAT: node 1 at 10 ns and 100 GB/s, nodes 0 and 2" \
    "at 100 ns and 10 GB/s"

rm -f $QMP /tmp/guest.out
# Guest RAM is laid out node by node, and the firmware keeps its tables
# at the top of RAM below 4 GiB: node 2, a little ordinary RAM after the
# region, takes them, so that all of node 1 is the guest's to use.
$QEMU -machine q35,hmat=on -accel tcg -cpu Denverton-v4 -smp 2 -m 69M \
    -nodefaults -display none -S \
    -object memory-backend-ram,id=ram0,size=64M \
    -object memory-backend-pseudolock,id=pl0,cache-level=2,cache-id=0,size=$region \
    -object memory-backend-ram,id=ram2,size=4M \
    -numa node,nodeid=0,memdev=ram0,cpus=0-1 \
    -numa node,nodeid=1,memdev=pl0,initiator=0 \
    -numa node,nodeid=2,memdev=ram2,initiator=0 \
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=100 \
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=10 \
    -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=100 \
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=10G \
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=100G \
    -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=10G \
    -kernel $GUEST/vmlinuz -initrd $GUEST/initramfs.cpio.gz \
    -append "console=ttyS0 rt.bind=$bind" \
    -serial file:/tmp/guest-console.log -serial file:/tmp/guest.out \
    -qmp unix:$QMP,server=on,wait=off 2>/tmp/qemu.err &
qemu_pid=$!
wait_qmp 100

group=$(cd $R && ls -d qemu-pl-*-pl0 2>/dev/null)
diag "resctrl group $group: $(cat $R/$group/mode)," \
    "$(sed -n 's/.*L2:0=//p' $R/$group/size) bytes, CPUs $(cat $R/$group/cpus_list)"
diag "bit_usage after:  $(cat $R/info/L2/bit_usage)   (P: pseudo-locked)"

step "Pinning the vCPUs to the cache's CPUs, as a management stack would"
reply=$(qmp '{"execute": "query-pseudolock"}')
diag "query-pseudolock: $reply"
hmp=$(qmp '{"execute": "human-monitor-command", "arguments": {"command-line": "info pseudolock"}}' |
      sed -e 's/^{"return": "//' -e 's/"}$//' -e 's/\\r\\n/\n/g')
echo "$hmp" | while read -r line; do diag "(qemu) info pseudolock: $line"; done
host_cpus=$(echo "$reply" | sed -n 's/.*"host-cpus": \[\([0-9, ]*\)\].*/\1/p' | tr -d ' ')
# resctrl's cpus_list has ranges ("0-1"), host-cpus a list
cpus_list=$(cat $R/$(cd $R && ls -d qemu-pl-*-pl0)/cpus_list)
expanded=$(echo "$cpus_list" | awk -F, '{
    for (i = 1; i <= NF; i++) {
        n = split($i, r, "-"); if (n == 1) r[2] = r[1]
        for (c = r[1]; c <= r[2]; c++) printf "%s%d", (k++ ? "," : ""), c
    } }')
check_eq "query-pseudolock gives the cache's CPUs ($cpus_list)" \
    "$expanded" "$host_cpus"
# (each CPU's "props" has a "thread-id" of its own: the topology's)
threads=$(qmp '{"execute": "query-cpus-fast"}' |
          sed -e 's/"props": {[^}]*}//g' -e 's/"thread-id": /\n/g' |
          sed -n '2,$s/^\([0-9][0-9]*\).*/\1/p')
pinned=0
for tid in $threads; do
    taskset -p -c "$host_cpus" "$tid" >/dev/null && pinned=$((pinned + 1))
done
check_eq "both vCPU threads are pinned to them" 2 $pinned
for tid in $threads; do
    check_eq "vCPU thread $tid may run on the cache's CPUs only" "$cpus_list" \
        "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/$qemu_pid/task/$tid/status)"
done
step "The guest boots: Linux under TCG, inside the emulated host (a minute or two)"
qmp '{"execute": "cont"}' >/dev/null

# The guest powers off when it is done
waited=0
while kill -0 $qemu_pid 2>/dev/null && [ $waited -lt "$timeout" ]; do
    sleep 1
    waited=$((waited + 1))
done
if kill -0 $qemu_pid 2>/dev/null; then
    not_ok "the guest finished within $timeout s"
    kill $qemu_pid
else
    ok "the guest booted, ran and powered off in $waited s"
fi
wait $qemu_pid

step "What an application in the guest sees"
while read -r line; do diag "$line"; done </tmp/guest.out

check "the guest sees node 1 of $region bytes, the region" \
    grep -q "^guest: node 1: CPUs '', present $region bytes" /tmp/guest.out
lat0=$(sed -n 's/^node 0: read latency //p' /tmp/guest.out)
lat1=$(sed -n 's/^node 1: read latency //p' /tmp/guest.out)
check "HMAT makes node 1 faster to read (${lat1:-?} ns) than node 0 (${lat0:-?} ns)" \
    test -n "$lat0" -a -n "$lat1" -a "${lat1:-0}" -lt "${lat0:-0}"
check "a buffer bound to node 1 lands there and holds its pattern" \
    grep -q "^bound $bind bytes to node 1: all pages on node 1, pattern verified" \
    /tmp/guest.out
step "The guest powered off and QEMU quit"
check "QEMU removed the region's group" \
    sh -c "! ls -d $R/qemu-pl-* 2>/dev/null"
diag "bit_usage now: $(cat $R/info/L2/bit_usage)"

echo 'L2:0=ffff' >$R/schemata
umount $R
done_testing
