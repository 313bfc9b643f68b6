# SPDX-License-Identifier: GPL-2.0-or-later
#
# The emulated host boots: the pinned stock kernel runs on the CPU model
# the host side asked for, with every vCPU online, and its clock runs at
# the right rate.

check_eq "kernel is the pinned stock release" \
    "$(cmdline_arg expect_release)" "$(uname -r)"
check_eq "CPU vendor" GenuineIntel "$(cpuinfo_field vendor_id)"
check_eq "CPU family" "$(cmdline_arg expect_family)" "$(cpuinfo_field 'cpu family')"
check_eq "CPU model" "$(cmdline_arg expect_model)" "$(cpuinfo_field model)"
check_eq "all vCPUs online" "$(cmdline_arg expect_cpus)" \
    "$(grep -c '^processor' /proc/cpuinfo)"

# rig.py gives the kernel this machine's TSC rate (tsc_early_khz=), so
# that it does not measure it against the PIT while a loaded machine
# takes its vCPU away.  About a second after boot the kernel measures
# the rate once more, against the HPET and over a long interval, and
# keeps what it finds only within 1% of the rate it had, saying so
# ("Refined TSC clocksource calibration"): that line is the proof that
# the given rate is the one the emulated host's TSC really ticks at.
given_khz=$(sed -n 's/.*tsc_early_khz=\([0-9]*\).*/\1/p' /proc/cmdline)
if [ -z "$given_khz" ]; then
    skip "TSC rate confirmed against the HPET: rig.py had none to give"
else
    refined=
    for _ in $(seq 100); do
        refined=$(dmesg | sed -n 's/.*Refined TSC clocksource calibration: \([0-9]*\)\.\([0-9]*\) MHz.*/\1\2/p')
        [ -n "$refined" ] && break
        sleep 0.1
    done
    if [ -n "$refined" ]; then
        ok "TSC rate confirmed against the HPET: $refined kHz (given $given_khz kHz)"
    else
        not_ok "TSC rate confirmed against the HPET"
        diag "given $given_khz kHz; the kernel's own measurement was more than 1% away, or did not come in 10 s:"
        diag "$(dmesg | grep -i -e tsc -e hpet -e clocksource)"
    fi
fi
done_testing
