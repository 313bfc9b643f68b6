#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot the rig's host again and again, taking CPU time from it at random,
until its kernel stalls; keep what each stalled boot showed.

The rig's rare boot stall (RCU: "timer wakeup didn't happen") came in CI
runs, on a machine whose own CPUs are virtual, and never in a thousand
boots on an idle one.  Taking the host CPUs away from QEMU's threads for
a few milliseconds at random, as a hypervisor does to a guest, brings it
back here (3 boots in 680 with --burst-ms 30 to 60).  That is how its
cause was caught: QEMU sent a vCPU's EOI writes through stale TLB entries
into another device while the memory map changed, fixed in patches/
(system/physmem); with the fix, 800 boots under the same steal gave no
stall.  One of those 800 failed another way: a burst cut the host
kernel's PIT calibration of the TSC short (59 MHz against the HPET's
2.1 GHz, and Linux trusts the PIT), so its clock ran 35 times fast and
the soft-lockup watchdog fired.  rig.py now gives the host kernel the
TSC rate (tsc_early_khz=), measured here once before the steal starts;
a boot whose kernel still finds its TSC off (a failed calibration, or
its clocksource watchdog marking the TSC unstable) is kept and counted.
The hunt also brought back the "Oops: int3" of static-key patching:
multi-threaded TCG kept a TB translated from bytes that another vCPU
was overwriting (fixed in patches/, accel/tcg; tests/rig/scenarios/
cross-modifying-code.sh tests it).  --trace memory_notdirty_write_stale_tb
counts the stale TBs the fix removed in each boot: with both fixes and
the TSC rate given, 520 boots (--burst-ms 60 --gap-ms 60, Broadwell and
Denverton alternating) had no stall, no oops and no wrong TSC rate, and
the fix removed 38 stale TBs in 36 of them, all left by 1-byte stores.
Run it after a change to TCG, the APIC or the memory map code.
One SCHED_FIFO process per host CPU (root needed) busy-waits BURST ms at
most, then sleeps GAP ms at most.  Each boot runs the `hello` scenario
through rig.py; a boot whose console has an RCU stall keeps its console
and its report, stall snapshot included, in OUT.

Usage: stall-hunt.py --qemu Q --kernel K --initrd I --out DIR [--boots N]
       [--burst-ms 30] [--gap-ms 100] [--cpu ...] [--smp ...]
       [--tsc-khz KHZ] [--trace EVENT]
"""

import argparse
import multiprocessing
import os
import random
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rig  # noqa: E402  pylint: disable=wrong-import-position


# What the host kernel says on its console when its TSC rate is wrong
CLOCK_WRONG = re.compile(r"PIT calibration deviates|"
                         r"Marking clocksource '[^']*tsc[^']*' as unstable")


def steal(cpu, burst_ms, gap_ms):
    """Take @cpu away from everything else, at random, for ever."""
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    while True:
        time.sleep(random.uniform(0, gap_ms) / 1000)
        end = time.monotonic() + random.uniform(1, burst_ms) / 1000
        while time.monotonic() < end:
            pass


def count_trace(path, event):
    """The number of @event's lines in QEMU's log at @path."""
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return sum(1 for line in f if event in line)
    except OSError:
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--qemu', required=True)
    p.add_argument('--kernel', required=True)
    p.add_argument('--initrd', required=True)
    p.add_argument('--out', required=True)
    p.add_argument('--boots', type=int, default=200)
    p.add_argument('--burst-ms', type=float, default=30)
    p.add_argument('--gap-ms', type=float, default=100)
    p.add_argument('--cpu', default='Broadwell-v5,model=79,l3-cache=on,'
                   'l3-cat=on')
    p.add_argument('--smp', default='4,sockets=2,cores=2')
    p.add_argument('--tsc-khz', type=int,
                   help="this machine's TSC rate for rig.py (default: what "
                   '$RIG_TSC_KHZ_PROBE measures, before the steal starts)')
    p.add_argument('--trace', metavar='EVENT',
                   help="a trace event of QEMU's to count in each boot "
                   '(its lines are kept in OUT/boot-N.trace)')
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.tsc_khz is None:
        args.tsc_khz = rig.machine_tsc_khz()
    print(f'TSC rate given to the host kernel: {args.tsc_khz} kHz'
          if args.tsc_khz else
          'no TSC rate: the host kernel measures it itself', flush=True)

    thieves = [multiprocessing.Process(target=steal, daemon=True,
                                       args=(cpu, args.burst_ms, args.gap_ms))
               for cpu in sorted(os.sched_getaffinity(0))]
    for thief in thieves:
        thief.start()
    ran = stalled = clock_wrong = failed = 0
    traced_boots = traced_events = 0
    try:
        for boot in range(1, args.boots + 1):
            console = os.path.join(args.out, f'boot-{boot}.console.log')
            report = os.path.join(args.out, f'boot-{boot}.report')
            trace = os.path.join(args.out, f'boot-{boot}.trace')
            trace_args = ['--qemu-arg=-trace', f'--qemu-arg={args.trace}',
                          '--qemu-arg=-D', f'--qemu-arg={trace}'] \
                if args.trace else []
            start = time.monotonic()
            with open(report, 'w', encoding='utf-8') as out:
                status = subprocess.call(
                    [sys.executable, os.path.join(HERE, 'rig.py'),
                     '--qemu', args.qemu, '--kernel', args.kernel,
                     '--initrd', args.initrd, '--scenario', 'hello',
                     '--cpu', args.cpu, '--smp', args.smp, '--mem', '1G',
                     '--timeout', '150', '--console-log', console,
                     '--tsc-khz', str(args.tsc_khz)] + trace_args,
                    stdout=out, stderr=subprocess.STDOUT)
            try:
                with open(console, encoding='utf-8', errors='replace') as f:
                    lines = f.readlines()
            except OSError:
                lines = []      # QEMU did not start: the report says why
            stall = any(rig.KERNEL_STALLED.search(line) for line in lines)
            wrong = [line.strip() for line in lines
                     if CLOCK_WRONG.search(line)]
            took = time.monotonic() - start
            ran += 1
            events = count_trace(trace, args.trace) if args.trace else 0
            if events:
                traced_boots += 1
                traced_events += events
                print(f'boot {boot}: {events} {args.trace} event(s); kept '
                      f'{trace}', flush=True)
            elif args.trace and os.path.exists(trace):
                os.unlink(trace)
            if stall:
                stalled += 1
                print(f'boot {boot}: STALLED ({took:.0f} s, rig.py {status});'
                      f' kept {report}', flush=True)
            elif wrong:
                clock_wrong += 1
                print(f'boot {boot}: TSC rate wrong ({took:.0f} s, rig.py '
                      f'{status}: {wrong[0]}); kept {report}', flush=True)
            elif status != 0:
                failed += 1
                print(f'boot {boot}: failed without a stall ({took:.0f} s, '
                      f'rig.py {status}); kept {report}', flush=True)
            else:
                print(f'boot {boot}: ok ({took:.0f} s)', flush=True)
                os.unlink(console)
                os.unlink(report)
    finally:
        for thief in thieves:
            thief.kill()
    print(f'{ran} boots, {stalled} stalled, {clock_wrong} with a wrong TSC '
          f'rate, {failed} failed otherwise')
    if args.trace:
        print(f'{traced_boots} boots had {traced_events} {args.trace} '
              'event(s)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
