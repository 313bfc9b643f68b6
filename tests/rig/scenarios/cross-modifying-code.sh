# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cross-modifying code on the emulated host's vCPUs, as x86 allows it:
# one vCPU rewrites an instruction and raises a flag; another sees the
# flag, serializes (CPUID) and must then run the new instruction.  Under
# multi-threaded TCG a vCPU could translate the old bytes while another
# vCPU's store to them was under way and keep running that translation
# (the int3 oops of Linux's text_poke_bp() in the rig's boots under
# load); patches/accel-tcg-invalidate-TBs-translated-from-a-code-page-
# while-a.patch is the fix.  rig.seconds=N: how long to run (20).

seconds=$(cmdline_arg seconds)
out=$(/rig/bin/xmc-stress "${seconds:-20}")
status=$?
diag "$out"
check_eq "xmc-stress ran (exit status 0 or 1)" yes \
    "$([ $status -le 1 ] && echo yes || echo "no, $status")"
check_eq "no call ran code overwritten before its CPU synchronized" 0 \
    "$(printf '%s\n' "$out" | sed -n 's/.* stale \([0-9]*\)$/\1/p')"
calls=$(printf '%s\n' "$out" | sed -n 's/^calls \([0-9]*\) .*/\1/p')
check "the code was called and rewritten (calls: ${calls:-none})" \
    [ "${calls:-0}" -gt 0 ]
done_testing
