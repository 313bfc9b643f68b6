# SPDX-License-Identifier: GPL-2.0-or-later
#
# The emulated host boots: the pinned stock kernel runs on the CPU model
# the host side asked for, with every vCPU online.

check_eq "kernel is the pinned stock release" \
    "$(cmdline_arg expect_release)" "$(uname -r)"
check_eq "CPU vendor" GenuineIntel "$(cpuinfo_field vendor_id)"
check_eq "CPU family" "$(cmdline_arg expect_family)" "$(cpuinfo_field 'cpu family')"
check_eq "CPU model" "$(cmdline_arg expect_model)" "$(cpuinfo_field model)"
check_eq "all vCPUs online" "$(cmdline_arg expect_cpus)" \
    "$(grep -c '^processor' /proc/cpuinfo)"
done_testing
