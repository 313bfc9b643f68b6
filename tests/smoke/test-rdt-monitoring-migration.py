#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The cache-monitoring state migrates, and only where it fits (TAP).

A stopped TCG machine whose CPU has L3 cache monitoring (l3-cmt=on) is
saved to a file; the stream must carry the "cpu/rdt-cat/cmt" subsection
(a machine without monitoring must not).  A destination with the same
CPU loads it; one without l3-cmt, or with another number of RMIDs,
refuses it and says which property to change.  The performance counters
(pmu=on,x-tcg-pmu=on) travel in upstream's "cpu/msr_architectural_pmu"
subsection, which a machine whose counters are all zero leaves out;
that is checked
by the rig's runs, whose guests program them.
"""

import os
import sys
import tempfile
import time

from qemu.machine import QEMUMachine
from taplib import Tap

QEMU = os.environ['QEMU_PSEUDOLOCK_QEMU']
CPU = 'Broadwell-noTSX,model=79,l3-cache=on,l3-cmt=on'
PLAIN_CPU = 'Broadwell-noTSX,model=79,l3-cache=on'
SUBSECTION = b'cpu/rdt-cat/cmt'


def machine(cpu, tmp, *extra):
    vm = QEMUMachine(QEMU, base_temp_dir=tmp)
    vm.add_args('-machine', 'q35', '-accel', 'tcg', '-cpu', cpu,
                '-smp', '2', '-nodefaults', '-display', 'none', '-S', *extra)
    return vm


def wait_migration(vm, states):
    """The migration's status once it is one of @states (or after 60 s)."""
    status = None
    for _ in range(600):
        status = vm.cmd('query-migrate').get('status')
        if status in states:
            break
        time.sleep(0.1)
    return status


def save(cpu, tmp, path):
    """Save a stopped machine with @cpu to @path; its stream, or b''."""
    vm = machine(cpu, tmp)
    vm.launch()
    try:
        vm.cmd('migrate', uri=f'file:{path}')
        if wait_migration(vm, ('completed', 'failed')) != 'completed':
            return b''
    finally:
        vm.shutdown()
    with open(path, 'rb') as f:
        return f.read()


def load(cpu, tmp, path):
    """Load @path into a destination with @cpu: (the incoming migration's
    status, None if QEMU exited; QEMU's log)."""
    vm = machine(cpu, tmp, '-incoming', 'defer')
    vm.launch()
    status = None
    # A refused stream makes QEMU exit: QMP then fails, and so does the
    # shutdown, which finds QEMU gone
    try:
        vm.cmd('migrate-incoming', uri=f'file:{path}')
        status = wait_migration(vm, ('completed', 'failed'))
    except Exception:  # pylint: disable=broad-except
        status = None
    try:
        vm.shutdown()
    except Exception:  # pylint: disable=broad-except
        pass
    return status, vm.get_log() or ''


def main():
    tap = Tap()
    with tempfile.TemporaryDirectory() as tmp:
        state = os.path.join(tmp, 'cmt.state')
        stream = save(CPU, tmp, state)
        tap.ok(stream, f'a stopped machine with -cpu {CPU} is saved to a file')
        tap.ok(SUBSECTION in stream,
               'the stream carries the cpu/rdt-cat/cmt subsection')
        plain = save(PLAIN_CPU, tmp, os.path.join(tmp, 'plain.state'))
        tap.ok(plain and SUBSECTION not in plain,
               'a machine without monitoring sends no such subsection')

        status, log = load(CPU, tmp, state)
        tap.ok(status == 'completed',
               'a destination with the same CPU loads it',
               f'status {status}\n{log}')

        for desc, cpu, want in [
            ('a destination without l3-cmt refuses it', PLAIN_CPU,
             "the source's CPU has L3 cache monitoring with 64 RMIDs, "
             'this one has none; start this QEMU with '
             'l3-cmt=on,rdt-rmids=64'),
            ('a destination with 32 RMIDs refuses it', CPU + ',rdt-rmids=32',
             "the source's CPU has L3 cache monitoring with 64 RMIDs, "
             'this one with 32; start this QEMU with rdt-rmids=64'),
        ]:
            status, log = load(cpu, tmp, state)
            tap.ok(want in log and status != 'completed',
                   f'{desc}: -cpu {cpu}', f'status {status}\n{log}')
            if want in log:
                tap.diag(next(line for line in log.splitlines()
                              if want in line))
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
