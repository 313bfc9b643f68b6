# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cache monitoring (CMT) answered by the cache model: the emulated
# Broadwell-X host runs with -cpu ...,l3-cmt=on and the catcache plugin,
# whose lines remember the RMID that filled them.  The emulation's CPUID
# leaf 0xF and its MSR rules come first; then Linux's resctrl offers
# llc_occupancy, and a task in a monitoring group that streams 4 MiB on
# CPU 0 shows about that much of socket 0's L3; after it stops and CPU 1
# goes offline (WBINVD on that L3), almost nothing.  Before that, Intel's
# pqos monitors cores 0 and 1 through the MSRs while a streamer runs on
# core 0.

R=/sys/fs/resctrl
PROBE=/rig/bin/cache-probe
probe=/rig/bin/rdt-probe
buffer_kib=4096

if [ ! -e /dev/cpu/0/msr ]; then
    insmod "/rig/modules/$(uname -r)/msr.ko"
fi

step "cache monitoring, as CPUID and the MSRs show it"
set -- $($probe cpuid 0 7 0)
check "CPUID.7.0:EBX bit 12 (RDT-M) is set" test $(( 0x$2 & (1 << 12) )) -ne 0
set -- $($probe cpuid 0 0xf 0)
check_eq "CPUID.F.0: RMIDs 0-63, L3 monitoring" "0000003f 00000002" "$2 $4"
set -- $($probe cpuid 0 0xf 1)
check_eq "CPUID.F.1: 64 bytes a unit, RMIDs 0-63, occupancy only" \
    "00000040 0000003f 00000001" "$2 $3 $4"
check_eq "IA32_PQR_ASSOC takes RMID 63" ok "$($probe wrmsr 3 0xc8f 63)"
check_eq "  but not RMID 64" GP "$($probe wrmsr 3 0xc8f 64)"
$probe wrmsr 3 0xc8f 0 >/dev/null
check_eq "a reserved bit of IA32_QM_EVTSEL raises #GP" GP \
    "$($probe wrmsr 3 0xc8d 0x100)"
check_eq "IA32_QM_EVTSEL takes an event the CPU lacks (2, total bandwidth)" \
    ok "$($probe wrmsr 3 0xc8d 2)"
check_eq "  for which IA32_QM_CTR reports an error (bit 63)" \
    8000000000000000 "$($probe rdmsr 3 0xc8e)"
check_eq "IA32_QM_CTR is read-only" GP "$($probe wrmsr 3 0xc8e 0)"

$PROBE arm
check "the cache model is armed" true

# Intel's pqos through the MSRs (before resctrl is mounted, as pqos
# wants): it gives each core of socket 0 an RMID of its own and reads
# their occupancy every half second while a streamer starts on core 0;
# the last sample shows what the streamer holds, and the other core
# next to nothing
step "pqos -m llc:0-1 through the MSRs"
# its lock file
mkdir -p /var/lock
pqos --iface=msr -m llc:0-1 -t 8 -i 5 -u csv -o /tmp/pqos.csv \
    >/tmp/pqos.out 2>&1 &
pqos=$!
sleep 2
taskset -c 0 $PROBE noise ${buffer_kib}K &
streamer=$!
wait $pqos
pqos_status=$?
kill $streamer
wait $streamer 2>/dev/null
diag "$(head -n 1 /tmp/pqos.csv)"
diag "$(tail -n 2 /tmp/pqos.csv)"
check_eq "pqos monitors cores 0 and 1 and exits" 0 $pqos_status
[ $pqos_status = 0 ] || diag "$(cat /tmp/pqos.out)"
# core_kib CORE: the last sample's LLC[KB] of CORE
core_kib() {
    awk -F, -v core="\"$1\"" '$2 == core { kib = $NF } END { printf "%d", kib }' \
        /tmp/pqos.csv
}
check "  core 0's LLC[KB] is the streamer's buffer (within an eighth)" \
    test "$(core_kib 0)" -ge $((buffer_kib * 7 / 8)) -a \
         "$(core_kib 0)" -le $((buffer_kib * 9 / 8))
check "  core 1's under a sixteenth of that" \
    test "$(core_kib 1)" -lt $((buffer_kib / 16))
# The streamer's lines stay those of the RMID pqos gave core 0, which
# resctrl may hand out again: empty the L3 (WBINVD as CPU 1 goes offline)
echo 0 >/sys/devices/system/cpu/cpu1/online
echo 1 >/sys/devices/system/cpu/cpu1/online

step "Linux's resctrl monitors the L3"
mount -t resctrl resctrl $R
check_eq "resctrl offers llc_occupancy" llc_occupancy \
    "$(grep -x llc_occupancy $R/info/L3_MON/mon_features)"
check_eq "  with the CPU's 64 RMIDs" 64 "$(cat $R/info/L3_MON/num_rmids)"
check "a monitoring group is made" mkdir $R/mon_groups/stream
occupancy() {
    cat $R/mon_groups/stream/mon_data/mon_L3_00/llc_occupancy
}
check_eq "  which holds nothing yet" 0 "$(occupancy)"

sh -c "echo \$\$ >$R/mon_groups/stream/tasks &&
       exec taskset -c 0 $PROBE noise ${buffer_kib}K" &
streamer=$!
# Until the buffer has been streamed through once
before=-1
for i in $(seq 120); do
    sleep 1
    now=$(occupancy)
    [ "$now" -ge $((buffer_kib * 1024)) ] && [ "$now" = "$before" ] && break
    before=$now
done
bytes=$(occupancy)
diag "the group's llc_occupancy while it streams $buffer_kib KiB: $bytes bytes"
check "  is the size of its buffer (within an eighth)" \
    test $bytes -ge $((buffer_kib * 1024 * 7 / 8)) -a \
         $bytes -le $((buffer_kib * 1024 * 9 / 8))
kill $streamer
wait $streamer 2>/dev/null
diag "the default group's: $(cat $R/mon_data/mon_L3_00/llc_occupancy) bytes"

step "WBINVD"
echo 0 >/sys/devices/system/cpu/cpu1/online
check_eq "CPU 1 (socket 0) goes offline: WBINVD on its L3" \
    0 "$(cat /sys/devices/system/cpu/cpu1/online)"
echo 1 >/sys/devices/system/cpu/cpu1/online
bytes=$(occupancy)
diag "the group's llc_occupancy after: $bytes bytes"
check "  drops to almost nothing (under 1% of the buffer)" \
    test $bytes -lt $((buffer_kib * 1024 / 100))

$PROBE disarm
rmdir $R/mon_groups/stream
umount $R
done_testing
