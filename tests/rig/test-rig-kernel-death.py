#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rig says when the host kernel dies at boot, at once (TAP).

A rig host whose kernel cannot find its init panics while booting
(rdinit= and root= that do not exist).  rig.py must end the run as soon
as the panic is on the console, fail it, and say "host kernel panicked
at boot" with the kernel's own line, instead of waiting out its timeout
for a scenario that never reports.

With --stall, the scenario (stall-report) prints the kernel's line for
an RCU stall and waits: the run must time out, say that the kernel
reported RCU stalls, and show QEMU's vCPUs and local APICs as they were
when the line appeared.

Usage: test-rig-kernel-death.py [--stall] RIG-ARGS...   (those of rig.py)
"""

import io
import os
import re
import sys
import time
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position


def run(args):
    """rig.run()'s status, what it printed, and how long it took"""
    out = io.StringIO()
    start = time.monotonic()
    with redirect_stdout(out):
        status = rig.run(args)
    return status, out.getvalue(), time.monotonic() - start


def stall(args):
    tap = Tap()
    status, report, took = run(args)
    tap.diag(f'rig.py returned {status} after {took:.1f} s')
    tap.ok(status == 1 and 'timed out' in report, 'the run times out',
           report)
    tap.ok('the host kernel reported RCU stalls' in report,
           'saying that the host kernel reported RCU stalls', report)
    tap.ok('# QEMU when the host kernel first reported the stall:' in report,
           "with QEMU's state from that moment", report)
    cpus = int(args.smp.split(',')[0])
    for cpu in range(cpus):
        lapic = report.split(f'(qemu) info lapic {cpu}\n', 1)[-1]
        tap.ok(f'(qemu) info lapic {cpu}' in report and
               re.search(r'LVTT\s+0x[0-9a-f]+', lapic) and
               re.search(r'ISR\s', lapic) and re.search(r'IRR\s', lapic),
               f"vCPU {cpu}'s local APIC: its timer, ISR and IRR", report)
    tap.ok(len(re.findall(r'[RE]FL=[0-9a-f]+', report)) == cpus and
           len(re.findall(r'HLT=[01]', report)) == cpus,
           "each vCPU's flags (RFL= or EFL=) and whether it halted (HLT=)",
           report)
    return tap.done()


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == '--stall':
        return stall(rig.parse_args(argv[1:]))
    args = rig.parse_args(argv)
    args.append = ' '.join(filter(None, [
        args.append, 'rdinit=/nonexistent root=/dev/nonexistent']))
    tap = Tap()
    status, report, took = run(args)
    tap.diag(f'rig.py returned {status} after {took:.1f} s')
    tap.ok(status == 1, 'the run fails', report)
    tap.ok('Bail out! host kernel panicked at boot: ' in report,
           'saying that the host kernel panicked at boot', report)
    tap.ok('Kernel panic - not syncing' in report,
           "with the kernel's own line", report)
    tap.ok(took < args.timeout / 2,
           f'well before its timeout ({took:.1f} s of {args.timeout:.0f})')
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
