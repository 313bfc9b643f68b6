# SPDX-License-Identifier: GPL-2.0-or-later
#
# The cache-allocation emulation itself, seen from the guest: CPUID
# values, the SDM's #GP rules, and which state is per vCPU and which per
# cache instance.  Parameters on the kernel command line:
#   rig.level=2|3     the level the CPU was given cache allocation for
#   rig.cbm_len=N     the expected capacity bitmask length
#   rig.closids=N     the expected number of classes of service

level=$(cmdline_arg level)
cbm_len=$(cmdline_arg cbm_len)
closids=$(cmdline_arg closids)
probe=/rig/bin/rdt-probe

PQR_ASSOC=0xc8f
MISC_FEATURE_CONTROL=0x1a4
if [ "$level" = 2 ]; then
    mask_base=$((0xd10)) subleaf=2 other_subleaf=1 res_bit=4
else
    mask_base=$((0xc90)) subleaf=1 other_subleaf=2 res_bit=2
fi
mask_msr() {
    printf '0x%x' $((mask_base + $1))
}
full_mask=$(printf '%x' $(( (1 << cbm_len) - 1 )))

if [ ! -e /dev/cpu/0/msr ]; then
    insmod "/rig/modules/$(uname -r)/msr.ko"
fi
check "the msr driver is there" test -e /dev/cpu/0/msr

# --- CPUID ----------------------------------------------------------------
set -- $($probe cpuid 0 0 0)
check "the maximum basic leaf reaches 0x10" test $((0x$1)) -ge $((0x10))
set -- $($probe cpuid 0 7 0)
check "CPUID.7.0:EBX bit 15 (RDT-A) is set" test $(( 0x$2 & (1 << 15) )) -ne 0
set -- $($probe cpuid 0 0xa 0)
check_eq "without pmu=on CPUID leaf 0xA offers no performance counters" \
    "00000000 00000000 00000000 00000000" "$*"
set -- $($probe cpuid 0 0x10 0)
check_eq "CPUID.10.0:EBX lists exactly the L$level resource" $res_bit $((0x$2))
set -- $($probe cpuid 0 0x10 $subleaf)
check_eq "CPUID.10.$subleaf:EAX is the CBM length - 1" $((cbm_len - 1)) $((0x$1))
check_eq "CPUID.10.$subleaf:EBX has no shareable bits" 0 $((0x$2))
check_eq "CPUID.10.$subleaf:ECX: contiguous masks only, no CDP" 0 $((0x$3))
check_eq "CPUID.10.$subleaf:EDX is the highest CLOSID" $((closids - 1)) $((0x$4))
check_eq "CPUID.10.$other_subleaf is all zero" "00000000 00000000 00000000 00000000" \
    "$($probe cpuid 0 0x10 $other_subleaf)"
check_eq "every vCPU reports the same leaf 0x10" "$($probe cpuid 0 0x10 $subleaf)" \
    "$($probe cpuid 1 0x10 $subleaf)"

# --- the SDM's rules ------------------------------------------------------
last=$((closids - 1))
check_eq "masks reset to all ones (CLOSID 0)" $full_mask "$($probe rdmsr 0 $(mask_msr 0))"
check_eq "masks reset to all ones (CLOSID $last)" $full_mask "$($probe rdmsr 0 $(mask_msr $last))"
check_eq "a contiguous mask is accepted" ok "$($probe wrmsr 0 $(mask_msr 1) 0xf0)"
check_eq "and reads back" f0 "$($probe rdmsr 0 $(mask_msr 1))"
check_eq "a non-contiguous mask raises #GP" GP "$($probe wrmsr 0 $(mask_msr 1) 0x5)"
check_eq "an empty mask raises #GP" GP "$($probe wrmsr 0 $(mask_msr 1) 0)"
check_eq "a mask longer than the CBM raises #GP" GP \
    "$($probe wrmsr 0 $(mask_msr 1) $((1 << cbm_len)))"
check_eq "a refused write leaves the mask alone" f0 "$($probe rdmsr 0 $(mask_msr 1))"
check_eq "the mask MSR of CLOSID $closids does not exist (read)" GP \
    "$($probe rdmsr 0 $(mask_msr $closids))"
check_eq "the mask MSR of CLOSID $closids does not exist (write)" GP \
    "$($probe wrmsr 0 $(mask_msr $closids) 0x1)"

check_eq "PQR_ASSOC takes the highest CLOSID" ok \
    "$($probe wrmsr 0 $PQR_ASSOC $((last << 32)))"
check_eq "and reads it back" $(printf '%x' $((last << 32))) "$($probe rdmsr 0 $PQR_ASSOC)"
check_eq "PQR_ASSOC with CLOSID $closids raises #GP" GP \
    "$($probe wrmsr 0 $PQR_ASSOC $((closids << 32)))"
check_eq "PQR_ASSOC with an RMID raises #GP (no monitoring)" GP \
    "$($probe wrmsr 0 $PQR_ASSOC 1)"
check_eq "PQR_ASSOC is per vCPU" 0 "$($probe rdmsr 1 $PQR_ASSOC)"
$probe wrmsr 0 $PQR_ASSOC 0 >/dev/null

check_eq "MISC_FEATURE_CONTROL takes prefetcher bits" ok \
    "$($probe wrmsr 0 $MISC_FEATURE_CONTROL 0x5)"
check_eq "and reads them back" 5 "$($probe rdmsr 0 $MISC_FEATURE_CONTROL)"
check_eq "MISC_FEATURE_CONTROL reserved bits raise #GP" GP \
    "$($probe wrmsr 0 $MISC_FEATURE_CONTROL 0x10)"
$probe wrmsr 0 $MISC_FEATURE_CONTROL 0 >/dev/null

# --- masks belong to the cache instance -----------------------------------
cache_dir=$(cpu0_cache_dir "$level")
sharing=$(cat "$cache_dir/shared_cpu_list")
diag "CPU 0's L$level is shared by CPUs $sharing"
sibling= stranger=
for c in /sys/devices/system/cpu/cpu[0-9]*; do
    n=${c##*cpu}
    [ "$n" = 0 ] && continue
    d=$c/cache/${cache_dir##*/}
    if [ "$(cat "$d/id")" = "$(cat "$cache_dir/id")" ]; then
        sibling=${sibling:-$n}
    else
        stranger=${stranger:-$n}
    fi
done
if [ -n "$sibling" ]; then
    check_eq "CPU $sibling, sharing the cache, sees CPU 0's write" f0 \
        "$($probe rdmsr "$sibling" $(mask_msr 1))"
else
    skip "no CPU shares CPU 0's L$level"
fi
if [ -n "$stranger" ]; then
    check_eq "CPU $stranger, on another cache instance, keeps its own mask" \
        $full_mask "$($probe rdmsr "$stranger" $(mask_msr 1))"
    check_eq "a write there stays there" ok "$($probe wrmsr "$stranger" $(mask_msr 1) 0x3)"
    check_eq "CPU 0 is not affected" f0 "$($probe rdmsr 0 $(mask_msr 1))"
else
    skip "every CPU shares CPU 0's L$level"
fi
done_testing
