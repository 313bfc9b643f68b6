# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cross-modifying code on the emulated host's vCPUs, as x86 allows it:
# one vCPU rewrites an instruction and raises a flag; another sees the
# flag, serializes (CPUID) and must then run the new instruction.  Under
# multi-threaded TCG a vCPU could translate the old bytes while another
# vCPU's store to them was under way and keep running that translation
# (the int3 oops of Linux's text_poke_bp() in the rig's boots under
# load); patches/accel-tcg-*.patch are the fix.  The rewrite is done
# once with plain stores and once with atomic exchanges, which TCG
# carries out in different helpers.  rig.seconds=N: how long each runs
# (10).

seconds=$(cmdline_arg seconds)
for how in store xchg; do
    out=$(/rig/bin/xmc-stress "${seconds:-10}" $how)
    status=$?
    diag "$out"
    check_eq "xmc-stress $how ran (exit status 0 or 1)" yes \
        "$([ $status -le 1 ] && echo yes || echo "no, $status")"
    check_eq "$how: no call ran code overwritten before its CPU synchronized" \
        0 "$(printf '%s\n' "$out" | sed -n 's/.* stale \([0-9]*\)$/\1/p')"
    calls=$(printf '%s\n' "$out" | sed -n 's/.*: calls \([0-9]*\) .*/\1/p')
    check "$how: the code was called and rewritten (calls: ${calls:-none})" \
        [ "${calls:-0}" -gt 0 ]
done
done_testing
