#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A hot-plugged vCPU starts with its cache's masks (TAP).

A rig host with one of its four vCPUs absent programs L2 masks on both
modules and waits.  This side hot-plugs the absent vCPU into module 1,
whose mask of class 1 was changed, and reads the new vCPU's masks from
a migration stream of the machine (Linux on the emulated host, which it
takes for bare metal, does not bring the CPU up, so it cannot read
them); then it lets the guest go on, which checks the other vCPUs'
masks after the hot-plug, across an offline/online cycle and under
concurrent writers (rdt-hotplug.sh).

Usage: test-rdt-hotplug.py RIG-ARGS...   (the arguments of rig.py, with
an -smp that leaves a vCPU out)
"""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from righost import Host, migrate_to_file  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position


SUBSECTION = b'cpu/rdt-cat'


def l2_masks(stream, cpu):
    """The L2 masks of vCPU @cpu (in the order of the stream's "cpu"
    sections) in a migration stream: after the subsection's name, its
    version (4 bytes), IA32_PQR_ASSOC and MISC_FEATURE_CONTROL (8 each)
    come the 16 L2 masks."""
    at = -1
    for _ in range(cpu + 1):
        at = stream.find(bytes([len(SUBSECTION)]) + SUBSECTION, at + 1)
        if at < 0:
            return None
    first = at + 1 + len(SUBSECTION) + 4 + 16
    return [int.from_bytes(stream[first + 8 * i:first + 8 * i + 8], 'big')
            for i in range(16)]


def main():
    tap = Tap()
    args = rig.parse_args(sys.argv[1:])
    with tempfile.TemporaryDirectory() as tmp:
        host = Host(args, tmp, 'host')
        try:
            host.wait_ready(args.timeout)
            absent = [c for c in host.qmp.cmd('query-hotpluggable-cpus')
                      if 'qom-path' not in c]
            tap.ok(len(absent) == 1, 'one vCPU slot is free',
                   f'free slots: {absent}')
            props = absent[0]['props']
            reply = host.qmp.cmd_raw('device_add', dict(
                driver=absent[0]['type'], id='cpu3', **props))
            tap.ok('return' in reply,
                   f"device_add of a vCPU at {props} succeeds", f'{reply}')
            state = os.path.join(tmp, 'state')
            status = migrate_to_file(host, state)
            tap.ok(status == 'completed', 'the machine migrates to a file',
                   f'migration status {status}')
            with open(state, 'rb') as f:
                stream = f.read()
            masks = [l2_masks(stream, cpu) for cpu in range(4)]
            tap.ok(None not in masks, 'the stream has four vCPUs with cache '
                   'allocation state', f'{masks}')
            if None not in masks:
                tap.ok(masks[3][1] == 0xf0, "the hot-plugged vCPU 3 has "
                       "module 1's L2 mask of class 1 (f0), not all ones",
                       f'vCPU 3: {masks[3][1]:x}')
                tap.ok(masks[3][2] == 0xffff, "and not module 0's mask of "
                       'class 2', f'vCPU 3: {masks[3][2]:x}')
                tap.ok(masks[3] == masks[2], 'all its masks are those of '
                       'vCPU 2, its module sibling',
                       f'vCPU 2: {masks[2]}\nvCPU 3: {masks[3]}')
            host.qmp.cmd('cont')
            host.report.sendall(b'go\n')
            host.relay_guest_tap(tap, args.timeout)
        finally:
            host.close()
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
