# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kernel's own residency measurement, counted by the cache model: the
# emulated host runs with -cpu ...,pmu=on,x-tcg-pmu=on and the catcache
# plugin, whose model feeds the vCPUs' performance counters
# (target/i386/pmu.c).  Linux
# finds an Intel PMU, and pseudo_lock_measure's modes 2 (L2, Goldmont:
# MEM_LOAD_UOPS_RETIRED.L2_HIT/L2_MISS) and 3 (L3, Broadwell-X:
# LONGEST_LAT_CACHE.REFERENCE/MISS) read the region between two RDPMCs
# and report hits and misses through the pseudo_lock_l2/_l3 tracepoints,
# as on hardware.
#   - the locked region: every line a hit;
#   - after WBINVD on the region's own cache (CPU 1 goes offline): every
#     line a miss.
# The model has no L1, so the few loads of the measuring code itself
# between its two RDPMCs (its stack) count as L2 hits too: a handful more
# hits than lines.
# Then Linux's perf: LLC-loads and LLC-load-misses (the offcore response
# events Linux programs for them) of a reader whose buffer the last level
# holds, and of one that streams four times that level.
# rig.level=2 (Goldmont, 1 MiB in ways 8-15 of L2 cache 0) or
# rig.level=3 (Broadwell-X, 1 MiB in way 8 of L3 cache 0).

R=/sys/fs/resctrl
PROBE=/rig/bin/cache-probe
T=/sys/kernel/tracing
level=$(cmdline_arg level)
level=${level:-2}
if [ "$level" = 2 ]; then
    schemata='L2:0=ff00'
else
    schemata='L3:0=0100'
fi
event=pseudo_lock_l$level

step "the counters, as CPUID and the MSRs show them"
probe=/rig/bin/rdt-probe
if [ ! -e /dev/cpu/0/msr ]; then
    insmod "/rig/modules/$(uname -r)/msr.ko"
fi
set -- $($probe cpuid 0 0xa 0)
check_eq "CPUID.0xA:EAX: version 2, 4 counters of 48 bits, 7 events" \
    07300402 "$1"
check_eq "CPUID.0xA:EBX: of those only LLC references and misses" 00000067 "$2"
check_eq "CPUID.0xA:EDX: 3 fixed counters of 48 bits" 00000603 "$4"
# Counter 3 of CPU 3, which perf does not use here
check_eq "a reserved bit of IA32_PERFEVTSEL3 raises #GP" GP \
    "$($probe wrmsr 3 0x189 0x100000000)"
check_eq "WRMSR to IA32_PMC3 sign-extends bit 31 to the counter's 48 bits" \
    ok "$($probe wrmsr 3 0xc4 0x80000000)"
check_eq "  and reads back so" ffff80000000 "$($probe rdmsr 3 0xc4)"
$probe wrmsr 3 0xc4 0 >/dev/null
check_eq "IA32_PERF_GLOBAL_STATUS is read-only" GP \
    "$($probe wrmsr 3 0x38e 0)"

step "Linux finds performance counters"
check "the emulated CPU offers architectural performance monitoring" \
    grep -qw arch_perfmon /proc/cpuinfo
dmesg | grep 'Performance Events' | while read -r line; do diag "$line"; done
check "Linux drives them with its Intel PMU driver" \
    sh -c "dmesg | grep -q 'Performance Events:.*Intel PMU driver'"
check_fails "  which it does not call broken or unavailable" \
    sh -c "dmesg | grep -q 'PMU not available\|Broken PMU'"

# measure: the kernel's residency measurement of p0 (mode 2 or 3) with
# the performance counters; prints "HITS MISSES" from its tracepoint
measure() {
    echo >$T/trace
    echo 1 >$T/events/resctrl/$event/enable
    echo $level >/sys/kernel/debug/resctrl/p0/pseudo_lock_measure
    echo 0 >$T/events/resctrl/$event/enable
    sed -n "s/.*$event: hits=\([0-9]*\) miss=\([0-9]*\).*/\1 \2/p" $T/trace |
        tail -n 1
}

mount -t tracefs tracefs $T 2>/dev/null
check "the kernel has the pseudo-locking tracepoints" \
    test -d $T/events/resctrl/$event
$PROBE arm
check "the cache model is armed" true
step "the locked region"
mount -t resctrl resctrl $R
echo "L$level:0=00ff;1=00ff" >$R/schemata
check_eq "the default group keeps ways 0-7 of both L$level caches" \
    "L$level:0=00ff;1=00ff" "$(sed -n "s/^ *//; /^L$level:/p" $R/schemata)"
check "$schemata is locked as region p0" pseudo_lock p0 "$schemata"
bytes=$(sed -n "s/^ *L$level:0=//p" $R/p0/size)
lines=$(( ${bytes:-0} / 64 ))
set -- $(measure)
diag "$event: hits=$1 miss=$2 of $lines lines"
check "the kernel counts a hit for each of the region's $lines lines, no miss" \
    test "${1:-0}" -ge $lines -a "${2:--1}" -eq 0

step "evicted"
echo 0 >/sys/devices/system/cpu/cpu1/online
check_eq "CPU 1 (the region's cache) goes offline: WBINVD there" \
    0 "$(cat /sys/devices/system/cpu/cpu1/online)"
echo 1 >/sys/devices/system/cpu/cpu1/online
set -- $(measure)
diag "$event: hits=$1 miss=$2 of $lines lines"
check "the kernel counts a miss for each line" \
    test "${2:-0}" -eq $lines -a "${1:-$lines}" -lt $((lines / 100))


# perf_llc LABEL SIZE ROUNDS: "LOADS MISSES", perf stat's LLC-loads and
# LLC-load-misses in user mode of a reader on CPU 0 that reads SIZE of
# ordinary memory ROUNDS times, a load a line (user mode: without the
# kernel's work for the reader, such as its page faults)
perf_llc() {
    perf stat -x, -e LLC-loads:u,LLC-load-misses:u -o /tmp/perf.$1 -- \
        taskset -c 0 $PROBE read $1 $2 - $3 0 >/dev/null 2>&1
    diag "$(grep -v '^#' /tmp/perf.$1)" >&2
    echo "$(sed -n 's/^\([0-9]*\),[^,]*,LLC-loads[:u]*,.*/\1/p' /tmp/perf.$1)" \
         "$(sed -n 's/^\([0-9]*\),[^,]*,LLC-load-misses[:u]*,.*/\1/p' /tmp/perf.$1)"
}

step "perf stat -e LLC-loads:u,LLC-load-misses:u"
# A buffer the last level holds, and one four times that level (KiB)
if [ "$level" = 2 ]; then
    resident=512 stream=8192
else
    resident=2048 stream=32768
fi
set -- $(perf_llc resident ${resident}K 16)
resident_loads=${1:-0} resident_misses=${2:-0}
set -- $(perf_llc stream ${stream}K 2)
stream_loads=${1:-0} stream_misses=${2:-0}
diag "reading $resident KiB 16 times: $resident_loads LLC loads, $resident_misses misses"
diag "reading $stream KiB twice: $stream_loads LLC loads, $stream_misses misses"
# The reader's own loads besides its reads (its loop, compiled without
# optimisation, keeps its variables on the stack) hit: on the Goldmont
# host, whose last level is the L2 that every load goes to (the model has
# no L1), they count as LLC loads too
resident_reads=$((resident * 1024 / 64 * 16))
stream_reads=$((stream * 1024 / 64 * 2))
check "perf counts an LLC load at least for each line each reader reads" \
    test $resident_loads -ge $resident_reads -a $stream_loads -ge $stream_reads
check "  the streaming reader misses each (within a tenth)" \
    test $stream_misses -ge $((stream_reads * 9 / 10)) -a \
         $stream_misses -le $((stream_reads * 11 / 10))
check "  the resident reader misses under 1% of them" \
    test $((resident_misses * 100)) -lt $resident_reads

$PROBE disarm
rmdir $R/p0
umount $R
done_testing
