# SPDX-License-Identifier: GPL-2.0-or-later
#
# A real-time guest whose NUMA node 1 is a pseudo-locked region: the
# fork's QEMU creates a region on the host's first pseudo-lockable cache,
# boots a small Linux guest with node 0 on RAM and node 1 on the region,
# HMAT figures that make node 1 the fast one, and its vCPU threads pinned
# to the host-cpus query-pseudolock reports, as a management stack
# would.  The guest reports what an application sees (rt-guest/init):
# node 1's size, the nodes' HMAT read latencies, and a buffer bound to
# node 1, written and read.  Then a second region, on a second cache, is
# hot-plugged over QMP: as a pc-dimm, which Linux cannot add (it adds
# memory in 128 MiB blocks), and then as an NVDIMM, which it exposes as
# /dev/pmem0 whatever its size; the guest writes and reads it, and QEMU
# reads the same bytes.
#
# The rig runs this in the emulated Goldmont host (TCG in TCG, a 1 MiB
# region on L2 cache 0 and the hot-plugged one on L2 cache 1);
# scripts/demo runs it on a real host that can pseudo-lock (KVM), with
# the RIG_* variables pointing at the build.
#   rig.guest_timeout=S  how long the guest may take (default 420 s)
#   rig.model=S          instead of hot-plug, measure the guest's reads
#                        of node 1 under the catcache plugin (which the
#                        host runs with), in windows of S seconds: with
#                        its vCPUs on the cache's CPUs, then on the other
#                        cache's, each next to a noisy neighbour; the
#                        test reads the plugin's log (test-cache-model.py)

R=/sys/fs/resctrl
QEMU=${RIG_QEMU:-/usr/bin/qemu-system-x86_64}
GUEST_KERNEL=${RIG_GUEST_KERNEL:-/rig/rt-guest/vmlinuz}
GUEST_INITRD=${RIG_GUEST_INITRD:-/rig/rt-guest/initramfs.cpio.gz}
T=${RIG_TMP:-/tmp}
timeout=$(cmdline_arg guest_timeout)
timeout=${timeout:-420}
model=$(cmdline_arg model)

if [ -w /dev/kvm ]; then
    accel="-accel kvm -cpu host"
else
    accel="-accel tcg -cpu Denverton-v4"
fi

grep -q " $R resctrl " /proc/mounts || { mount -t resctrl resctrl $R && mounted_here=1; }
for level in 2 3; do
    [ -d $R/info/L$level ] && break
done
if [ ! -d $R/info/L$level ]; then
    echo "Bail out! resctrl has no L2 or L3 cache allocation on this host"
    return 0
fi

# The caches: the one CPU 0 is on takes node 1's region, another one
# (if any) the hot-plugged region
cache_dir=$(cpu0_cache_dir $level)
cache0=$(cat "$cache_dir/id")
cache1=$(sed -n "s/^ *L$level://p" $R/schemata | tr ';' '\n' |
         sed -n 's/=.*//p' | grep -vx "$cache0" | head -n 1)
cbm_mask=$(cat $R/info/L$level/cbm_mask)
cbm_bits=0
m=$((0x$cbm_mask))
while [ $m -gt 0 ]; do
    cbm_bits=$((cbm_bits + (m & 1)))
    m=$((m >> 1))
done
cache_bytes=$(($(sed 's/K$//' "$cache_dir/size") * 1024))
way_bytes=$((cache_bytes / cbm_bits))
# Half the ways, and at most 4 MiB, what stock Linux locks
ways=$((cbm_bits / 2))
while [ $((ways * way_bytes)) -gt 4194304 ] && [ $ways -gt 1 ]; do
    ways=$((ways - 1))
done
region=$((ways * way_bytes))
bind=$((region / 4))
mib=$(awk -v b=$region 'BEGIN { printf "%g MiB", b / 1048576 }')
schemata_before=$(sed -n "s/^ *\(L$level:.*\)/\1/p" $R/schemata)
default_mask=$(hex_mask $((cbm_bits - ways)) 0)
free_ways=L$level:$cache0=$default_mask${cache1:+;$cache1=$default_mask}

# restore_host: give back the ways taken from the default group, and
# the mount
restore_host() {
    echo "$schemata_before" >$R/schemata
    [ -z "$mounted_here" ] || umount $R
}

step "The host: L$level cache allocation, $(cpuinfo_field 'model name')"
diag "kernel $(uname -r); $(grep -c '^processor' /proc/cpuinfo) CPUs;" \
    "L$level cache $cache0: $(cat "$cache_dir/size"), $cbm_bits ways of $way_bytes bytes," \
    "CPUs $(cat "$cache_dir/shared_cpu_list")"
diag "bit_usage before: $(cat $R/info/L$level/bit_usage)"
diag "\$ echo '$free_ways' > $R/schemata    # leave the top $ways ways free"
echo "$free_ways" >$R/schemata

step "QEMU creates a $mib region on L$level cache $cache0 and starts the guest, stopped"
diag "node 0: 64 MiB of RAM and both vCPUs; node 1: the region" \
    "(memory-backend-pseudolock,cache-level=$level,cache-id=$cache0,size=$region);" \
    "node 2: 4 MiB of RAM; HMAT: node 1 at 10 ns and 100 GB/s, nodes 0 and 2" \
    "at 100 ns and 10 GB/s; $accel"

rm -f $QMP $T/guest.out
# What the guest does after its report: read node 1 for longer than the
# model's windows take, or wait for hot-plug
if [ -n "$model" ]; then
    guest_args=" rt.read=$((model * 20))"
    cache1=
    # Armed, the model slows the host down about 17 times, and the guest
    # far more: with its clock on the host's, its timer ticks would then
    # take all of its time and its reader would not run.  With icount,
    # its time is its own instructions' (64 ns each), as slow as it is.
    [ -w /dev/kvm ] || accel="$accel -icount shift=6"
    diag "for the model, the guest runs with $accel"
else
    guest_args=${cache1:+ rt.hotplug=120}
fi
# Without icount the guest's TSC ticks at this host's rate, which rig.py
# gave this host's kernel (tsc_early_khz=; see tests/rig/rig.py): give
# it on, or the guest measures it against the PIT, which a slow nested
# vCPU gets badly wrong
case "$accel" in
*icount*) ;;
*) guest_args="$guest_args $(grep -o 'tsc_early_khz=[0-9]*' /proc/cmdline)" ;;
esac
# Guest RAM is laid out node by node, and the firmware keeps its tables
# at the top of RAM below 4 GiB: node 2, a little ordinary RAM after the
# region, takes them, so that all of node 1 is the guest's to use.
"$QEMU" -machine q35,hmat=on,nvdimm=on $accel -smp 2 \
    -m $(((64 * 1048576 + region + 4 * 1048576) / 1024))k,slots=2,maxmem=1G \
    -nodefaults -display none -S \
    -object memory-backend-ram,id=ram0,size=64M \
    -object memory-backend-pseudolock,id=pl0,cache-level=$level,cache-id=$cache0,size=$region \
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
    -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
    -append "console=ttyS0 rt.bind=$bind$guest_args" \
    -serial file:$T/guest-console.log -serial file:$T/guest.out \
    -qmp unix:$QMP,server=on,wait=off 2>$T/qemu.err &
qemu_pid=$!
if ! wait_qmp 100; then
    echo "Bail out! QEMU did not start:" \
        "$(grep -v 'warning:' $T/qemu.err | tail -n 3 | tr '\n' ' ')"
    kill $qemu_pid 2>/dev/null
    restore_host
    return 0
fi

group=$(cd $R && ls -d qemu-pl-*-$qemu_pid-*-pl0 2>/dev/null)
diag "resctrl group $group: $(cat $R/$group/mode)," \
    "$(sed -n "s/.*L$level:$cache0=//p" $R/$group/size) bytes, CPUs $(cat $R/$group/cpus_list)"
diag "bit_usage after:  $(cat $R/info/L$level/bit_usage)   (P: pseudo-locked)"

step "Pinning the vCPUs to the cache's CPUs, as a management stack would"
reply=$(qmp '{"execute": "query-pseudolock"}')
# a member a line, as a person would read the reply
diag "QMP query-pseudolock returns one region:"
echo "$reply" | sed -e 's/^{"return": \[{//' -e 's/}\]}$//' -e 's/, "/\n"/g' |
    while read -r member; do diag "    $member"; done
hmp_command "info pseudolock" |
    while read -r line; do diag "(qemu) info pseudolock: $line"; done
host_cpus=$(echo "$reply" | sed -n 's/.*"host-cpus": \[\([0-9, ]*\)\].*/\1/p' | tr -d ' ')
# resctrl's cpus_list has ranges ("0-1"), host-cpus a list
cpus_list=$(cat $R/$group/cpus_list)
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
case $accel in
*tcg*) step "The guest boots: Linux under TCG, inside the emulated host (one to three minutes)" ;;
*) step "The guest boots: Linux under KVM" ;;
esac
t_boot=$(date +%s)
qmp '{"execute": "cont"}' >/dev/null

# wait_guest PATTERN: wait until the guest reports a line matching
# PATTERN; fails when QEMU exits first or after the guest's timeout
deadline=$((t_boot + timeout))
wait_guest() {
    while ! grep -q "$1" $T/guest.out 2>/dev/null; do
        kill -0 $qemu_pid 2>/dev/null && [ "$(date +%s)" -lt $deadline ] || return 1
        sleep 0.2
    done
}

# memory_device ID FIELD: FIELD (a number) of device ID in
# query-memory-devices
memory_device() {
    qmp '{"execute": "query-memory-devices"}' |
        sed 's/{"type"/\n/g' | grep "\"id\": \"$1\"" |
        sed -n "s/.*\"$2\": \([0-9]*\).*/\1/p"
}

# model_windows: the guest reads a buffer on node 1 over and over; the
# catcache plugin's shared window counts every access to QEMU's mapping
# of the region, whichever CPU makes it, twice: with the vCPU threads on
# the cache's CPUs, then on the other cache's, each time with a noisy
# neighbour on another CPU of the vCPUs' cache
model_windows() {
    local probe=/rig/bin/cache-probe noise far_noise other_cpus
    if ! wait_guest "^reading node 1 for"; then
        not_ok "the guest reads its node 1 for the model"
        return
    fi
    step "Under the cache model: the guest reads $((bind / 1024)) KiB of node 1 for ${model} s, next to a neighbour streaming 8 MiB on CPU 1"
    taskset -c 1 $probe noise 8M &
    noise=$!
    # The model was off while the guest booted, so it knows nothing of
    # what the caches hold: QEMU relocks the region (PSEUDO_LOCK_RELOCK)
    # whenever the guest starts running, which loads it into its ways
    # under the model as its locking did
    qmp '{"execute": "stop"}' >/dev/null
    check "the cache model is armed" $probe arm
    qmp '{"execute": "cont"}' >/dev/null
    diag "the guest runs again: QEMU relocked the region"
    check "the window 'node1' counts the accesses to QEMU's mapping of the region, on every CPU" \
        sh -c "$probe watch node1 $qemu_pid /dev/pseudo_lock/ >$T/watch.out 2>&1"
    diag "$(cat $T/watch.out)"
    sleep "$model"
    $probe unwatch

    other_cpus=$(cat /sys/devices/system/cpu/cpu*/cache/index$level/shared_cpu_list |
                 sort -u | grep -vx "$cpus_list" | head -n 1)
    step "The vCPUs moved to the other cache's CPUs ($other_cpus), next to a neighbour there"
    taskset -c "${other_cpus##*[,-]}" $probe noise 8M &
    far_noise=$!
    for tid in $threads; do
        taskset -p -c "$other_cpus" "$tid" >/dev/null
    done
    check "the window 'far' counts them again, the vCPUs on CPUs $other_cpus" \
        sh -c "$probe watch far $qemu_pid /dev/pseudo_lock/ >$T/watch.out 2>&1"
    diag "$(cat $T/watch.out)"
    sleep "$model"
    $probe unwatch
    $probe disarm
    kill $noise $far_noise
    wait $noise $far_noise 2>/dev/null
}

# The guest reports its nodes, then waits for hot-plug
if wait_guest "^guest: reported"; then
    ok "the guest booted and reported in $(($(date +%s) - t_boot)) s"
    ready=1
else
    not_ok "the guest booted and reported within $timeout s"
    ready=
fi

step "What an application in the guest sees"
grep -v '^guest: hot-plug:' $T/guest.out | while read -r line; do diag "$line"; done

check "the guest sees node 1 of $region bytes, the region" \
    grep -q "^guest: node 1: CPUs '', present $region bytes" $T/guest.out
lat0=$(sed -n 's/^node 0: read latency //p' $T/guest.out)
lat1=$(sed -n 's/^node 1: read latency //p' $T/guest.out)
check "HMAT makes node 1 faster to read (${lat1:-?} ns) than node 0 (${lat0:-?} ns)" \
    test -n "$lat0" -a -n "$lat1" -a "${lat1:-0}" -lt "${lat0:-0}"
check "a buffer bound to node 1 lands there and holds its pattern" \
    grep -q "^bound $bind bytes to node 1: all pages on node 1, pattern verified" \
    $T/guest.out

if [ -n "$model" ]; then
    [ -z "$ready" ] || model_windows
elif [ -z "$cache1" ]; then
    skip "hot-plug of a second region: the host has one L$level cache, and Linux locks one region per cache"
elif [ -n "$ready" ]; then
    wait_guest "^guest: hot-plug: ready for a pc-dimm"
    step "Hot-plug: QEMU creates a second $mib region, on L$level cache $cache1, and plugs it as a pc-dimm"
    diag "the guest's memory blocks are $(guest_says $T/guest.out "memory blocks are ")"
    qmp '{"execute": "object-add", "arguments": {"qom-type": "memory-backend-pseudolock",
          "id": "pl1", "cache-level": '$level', "cache-id": '$cache1', "size": '$region'}}' >$T/qmp.out
    qmp '{"execute": "device_add", "arguments": {"driver": "pc-dimm", "id": "dimm1",
          "memdev": "pl1"}}' >>$T/qmp.out
    check "object-add and device_add pc-dimm succeed" \
        sh -c "! grep -q error $T/qmp.out"
    diag "bit_usage: $(cat $R/info/L$level/bit_usage)"
    wait_guest "^guest: hot-plug: pc-dimm: \(not \)*added\|pc-dimm: no ACPI"
    sed -n "s/^guest: hot-plug: pc-dimm: kernel: /the guest's kernel: /p" $T/guest.out |
        while read -r line; do diag "$line"; done
    check "the guest cannot add 1 MiB: x86 Linux adds memory in 128 MiB blocks" \
        grep -q "^guest: hot-plug: pc-dimm: kernel: .*Block size \[0x8000000\] unaligned hotplug range" \
        $T/guest.out

    step "Hot-plug: the same region as an NVDIMM, which Linux takes at any size"
    qmp '{"execute": "device_del", "arguments": {"id": "dimm1"}}' >/dev/null
    for i in $(seq 150); do
        [ -z "$(memory_device dimm1 size)" ] && break
        sleep 0.2
    done
    check "device_del: the guest ejected the pc-dimm" test -z "$(memory_device dimm1 size)"
    qmp '{"execute": "device_add", "arguments": {"driver": "nvdimm", "id": "nv1",
          "memdev": "pl1"}}' >$T/qmp.out
    check "device_add nvdimm succeeds" sh -c "! grep -q error $T/qmp.out"
    wait_guest "^guest: hot-plug: nvdimm: read\|nvdimm: no"
    diag "the guest has $(guest_says $T/guest.out "nvdimm: ");" \
        "it wrote random bytes there with direct I/O and read them back"
    check_eq "the guest sees all of the region as /dev/pmem0" \
        "/dev/pmem0, $region bytes" "$(guest_says $T/guest.out "nvdimm: ")"
    wrote=$(guest_says $T/guest.out "nvdimm: wrote sha256 ")
    check_eq "what the guest read back is what it wrote" \
        "$wrote" "$(guest_says $T/guest.out "nvdimm: read sha256 ")"
    addr=$(memory_device nv1 addr)
    qmp '{"execute": "pmemsave", "arguments": {"val": '"${addr:-0}"', "size": '$region',
          "filename": "'$T'/nvdimm.bin"}}' >/dev/null
    check_eq "QEMU finds the same bytes in the region, at guest address $addr" \
        "$wrote" "$(sha256sum <$T/nvdimm.bin | cut -d' ' -f1)"
    diag "sha256 of the bytes: ${wrote:-(none)}"
    hmp_command "info pseudolock" |
        while read -r line; do diag "(qemu) info pseudolock: $line"; done
fi

# The guest powers off when it is done; after hot-plug or the model's
# windows it waits for the host's checks above, and QEMU is told to quit
if [ -n "$model" ] && [ -n "$ready" ]; then
    qmp '{"execute": "quit"}' >/dev/null
elif [ -n "$ready" ] && [ -n "$cache1" ] && wait_guest "^guest: done"; then
    qmp '{"execute": "quit"}' >/dev/null
fi
while kill -0 $qemu_pid 2>/dev/null && [ "$(date +%s)" -lt $deadline ]; do
    sleep 0.2
done
if kill -0 $qemu_pid 2>/dev/null; then
    not_ok "the guest was done within $timeout s"
    kill $qemu_pid
else
    ok "the guest was done and QEMU quit $(($(date +%s) - t_boot)) s after the guest started"
fi
wait $qemu_pid

step "QEMU quit"
check "QEMU removed the regions' groups" \
    sh -c "! ls -d $R/qemu-pl-*-$qemu_pid-* 2>/dev/null"
diag "bit_usage now: $(cat $R/info/L$level/bit_usage)   (0: no group uses the way)"

# What the guest and QEMU said last, for a failure seen only in CI
if [ $rig_failed_count -gt 0 ]; then
    for f in guest-console.log guest.out qemu.err; do
        [ -s $T/$f ] || continue
        diag "the end of $f:"
        tail -n 25 $T/$f | tr -d '\r' | while read -r line; do diag "    $line"; done
    done
fi

restore_host
done_testing
