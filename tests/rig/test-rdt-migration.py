#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The cache-allocation MSRs survive migration (TAP).

A rig host programs masks, a class of service and prefetcher bits, then
waits.  The host side stops it, migrates it to a file, quits, starts a
new QEMU that loads the file and lets the guest go on; the guest then
reports what it reads back.  The migration stream must carry the
"cpu/rdt-cat" subsection for this CPU and not for one without cache
allocation.  A destination whose CPU has other cache-allocation
properties, and a stream whose masks the SDM would not let software
write, are refused, saying why.

Usage: test-rdt-migration.py RIG-ARGS...   (the arguments of rig.py)
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from righost import Host, migrate_to_file  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position

SUBSECTION = b'cpu/rdt-cat'
# Where CPU 0's L2 mask of class 1 is in the stream: after the
# subsection's name (a length byte, then the name), its version (4
# bytes), IA32_PQR_ASSOC and MISC_FEATURE_CONTROL (8 each) and mask 0
L2_MASK_1_AT = 1 + len(SUBSECTION) + 4 + 8 + 8 + 8


def load_refused(args, tmp, name, state, extra_cpu=''):
    """Start a destination that loads @state; QEMU's stderr if it
    refuses the stream and exits, None if it took it."""
    dest_args = rig.parse_args(sys.argv[1:] + ['--cpu', args.cpu + extra_cpu])
    dest_args.console_log = f'{args.console_log}.{name}'
    cmd = rig.qemu_command(dest_args, 'null')
    cmd += ['-incoming', f'file:{state}']
    qmp_path = os.path.join(tmp, f'{name}.qmp')
    cmd += ['-qmp', f'unix:{qmp_path},server=on,wait=off']
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()     # still waiting or running: it took the stream
        proc.communicate()
        return None
    return err.decode('utf-8', 'replace') if proc.returncode else None


def refusal_checks(tap, args, tmp, state):
    """What a destination does with a stream it must not take."""
    err = load_refused(args, tmp, 'shorter-masks', state, ',l2-cbm-len=8')
    tap.ok(err is not None and "the source's CPU has L2 capacity bitmasks "
           'of 16 bits, this one of 8' in err and 'l2-cbm-len' in err,
           'a destination with other mask lengths refuses the stream, '
           'naming the property', f'stderr: {err}')
    err = load_refused(args, tmp, 'fewer-classes', state, ',rdt-closids=4')
    tap.ok(err is not None and '8 classes of service, this one 4' in err and
           'rdt-closids' in err,
           'a destination with fewer classes of service refuses it',
           f'stderr: {err}')

    with open(state, 'rb') as f:
        stream = bytearray(f.read())
    at = stream.find(bytes([len(SUBSECTION)]) + SUBSECTION)
    mask = int.from_bytes(stream[at + L2_MASK_1_AT:at + L2_MASK_1_AT + 8],
                          'big')
    tap.ok(at >= 0 and mask == 0xf0, "CPU 0's L2 mask 1 is where we look "
           'in the stream', f'found 0x{mask:x} at {at}')
    stream[at + L2_MASK_1_AT:at + L2_MASK_1_AT + 8] = (5).to_bytes(8, 'big')
    bad = state + '.bad-mask'
    with open(bad, 'wb') as f:
        f.write(stream)
    err = load_refused(args, tmp, 'bad-mask', bad)
    tap.ok(err is not None and 'capacity bitmask of class 1, 0x5, is not a '
           'run of ones' in err, 'a stream with a mask that WRMSR would '
           'refuse (0x5) is refused', f'stderr: {err}')


def main():
    tap = Tap()
    args = rig.parse_args(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, 'state')
        source = Host(args, tmp, 'source')
        try:
            source.wait_ready(args.timeout)
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
            dest.relay_guest_tap(tap, args.timeout)
        finally:
            dest.close()

        refusal_checks(tap, args, tmp, state)

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
