#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rig says when the host kernel dies at boot, at once (TAP).

A rig host whose kernel cannot find its init panics while booting
(rdinit= and root= that do not exist).  rig.py must end the run as soon
as the panic is on the console, fail it, and say "host kernel panicked
at boot" with the kernel's own line, instead of waiting out its timeout
for a scenario that never reports.

Usage: test-rig-kernel-death.py RIG-ARGS...   (the arguments of rig.py)
"""

import io
import os
import sys
import time
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position


def main():
    args = rig.parse_args(sys.argv[1:])
    args.append = ' '.join(filter(None, [
        args.append, 'rdinit=/nonexistent root=/dev/nonexistent']))
    tap = Tap()
    out = io.StringIO()
    start = time.monotonic()
    with redirect_stdout(out):
        status = rig.run(args)
    took = time.monotonic() - start
    report = out.getvalue()
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
