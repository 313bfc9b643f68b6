#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The cache-allocation MSRs survive migration (TAP).

A rig host programs masks, a class of service and prefetcher bits, then
waits.  The host side stops it, migrates it to a file, quits, starts a
new QEMU that loads the file and lets the guest go on; the guest then
reports what it reads back.  The migration stream must carry the
"cpu/rdt-cat" subsection for this CPU and not for one without cache
allocation.

Usage: test-rdt-migration.py RIG-ARGS...   (the arguments of rig.py)
"""

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from righost import Host, migrate_to_file  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position

SUBSECTION = b'cpu/rdt-cat'

def main():
    tap = Tap()
    args = rig.parse_args(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, 'state')
        source = Host(args, tmp, 'source')
        try:
            line = ''
            while line != 'ready':
                line = source.read_line(args.timeout)
                if line.startswith(('#', 'not ok', 'Bail out')):
                    print(line, flush=True)
            status = migrate_to_file(source, state)
            tap.ok(status == 'completed', 'the source migrates to a file',
                f'migration status {status}')
            source.qmp.cmd('quit')
        finally:
            source.close()

        with open(state, 'rb') as f:
            tap.ok(SUBSECTION in f.read(),
                'the stream carries the cpu/rdt-cat subsection')

        dest = Host(args, tmp, 'dest', ['-incoming', f'file:{state}'])
        try:
            # Only a running guest can take "go": until the state is
            # loaded, what the serial port receives is overwritten by it.
            # The source was stopped, so the destination waits for 'cont'.
            deadline = time.monotonic() + 60
            while dest.qmp.cmd('query-status')['status'] == 'inmigrate':
                if time.monotonic() > deadline:
                    raise TimeoutError('the destination never loaded')
                time.sleep(0.1)
            dest.qmp.cmd('cont')
            status = dest.qmp.cmd('query-status')['status']
            tap.ok(status == 'running', 'the destination runs after loading',
                f'status {status}')
            dest.report.sendall(b'go\n')
            # The guest's own checks, renumbered after ours.
            while True:
                line = dest.read_line(args.timeout)
                if line.startswith(('ok ', 'not ok ')):
                    ok = line.startswith('ok ')
                    tap.ok(ok, line.split(' - ', 1)[-1])
                elif line.startswith('1..'):
                    break
                else:
                    print(line, flush=True)
        finally:
            dest.close()

        # Without cache allocation the subsection is not sent at all.
        plain_args = rig.parse_args(sys.argv[1:] + [
            '--cpu', args.cpu.replace(',l2-cat=on', '')
                             .replace(',l3-cat=on', ''),
            '--scenario', 'none'])
        plain = Host(plain_args, tmp, 'plain', ['-S'])
        try:
            status = migrate_to_file(plain, state + '.plain')
            plain.qmp.cmd('quit')
        finally:
            plain.close()
        with open(state + '.plain', 'rb') as f:
            tap.ok(status == 'completed' and SUBSECTION not in f.read(),
                'a CPU without cache allocation sends no cpu/rdt-cat',
                f'migration status {status}')

    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
