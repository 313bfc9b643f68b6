#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Smoke test of the built qemu-system-x86_64 (TAP output).

Starts the binary with -machine none, checks that QMP answers with the
pinned QEMU version, and that the QMP schema holds nothing but upstream's
commands, events and enum values plus the additions this project declares
in qmp-schema-additions.txt: a patch or overlay file that adds something
to the schema by accident (or forgets to) fails here.
"""

import os
import re
import subprocess
import sys
import tempfile

from qemu.machine import QEMUMachine
from taplib import Tap

QEMU = os.environ['QEMU_PSEUDOLOCK_QEMU']
QEMU_SRC = os.environ['QEMU_PSEUDOLOCK_QEMU_SRC']
TOP = os.environ['QEMU_PSEUDOLOCK_TOP']
ADDITIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         'qmp-schema-additions.txt')


def pinned_version():
    """The upstream version, from the pinned tarball's name."""
    with open(os.path.join(TOP, 'upstream.pins'), encoding='utf-8') as f:
        pins = dict(line.strip().split('=', 1) for line in f
                    if '=' in line and not line.startswith('#'))
    m = re.match(r'qemu_(\d+)\.(\d+)\.(\d+)', pins['QEMU_ORIG_TARBALL'])
    return tuple(int(x) for x in m.groups())


def upstream_schema_names():
    """Commands, events and enum values that pristine upstream declares.

    The schema is read from the 'upstream' tag of the patched tree, i.e.
    the tarball as it was before our patches and overlay, with QEMU's own
    QAPI front end.  Conditions ('if') are ignored: that gives a superset
    of what any configuration can expose.
    """
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ['git', '-C', QEMU_SRC, 'archive', 'upstream', 'qapi',
             'scripts/qapi'], check=True, capture_output=True).stdout
        subprocess.run(['tar', '-x', '-C', tmp], input=archive, check=True)
        sys.path.insert(0, os.path.join(tmp, 'scripts'))
        # pylint: disable=import-outside-toplevel
        from qapi.schema import QAPISchema, QAPISchemaVisitor

        names = set()

        class Collect(QAPISchemaVisitor):
            # pylint: disable=too-many-arguments
            def visit_enum_type(self, name, info, ifcond, features, members,
                                prefix):
                names.update(('enum-value', m.name) for m in members)

            def visit_command(self, name, info, ifcond, features, *args):
                names.add(('command', name))

            def visit_event(self, name, info, ifcond, features, *args):
                names.add(('event', name))

        QAPISchema(os.path.join(tmp, 'qapi', 'qapi-schema.json')).visit(
            Collect())
        del sys.path[0]
        return names


def built_schema_names(schema):
    names = set()
    for ent in schema:
        if ent['meta-type'] in ('command', 'event'):
            names.add((ent['meta-type'], ent['name']))
        elif ent['meta-type'] == 'enum':
            names.update(('enum-value', m['name']) for m in ent['members'])
    return names


def declared_additions():
    names = set()
    with open(ADDITIONS, encoding='utf-8') as f:
        for line in f:
            line = line.split('#', 1)[0].strip()
            if line:
                kind, name = line.split()
                names.add((kind, name))
    return names


def main():
    tap = Tap()
    vm = QEMUMachine(QEMU, args=['-machine', 'none', '-nodefaults'])
    try:
        vm.launch()
    except Exception as exc:  # pylint: disable=broad-except
        tap.ok(False, 'qemu-system-x86_64 -machine none starts',
               f'{exc}\n{vm.get_log() or ""}')
        return tap.done()
    tap.ok(True, 'qemu-system-x86_64 -machine none starts and answers QMP')

    try:
        ver = vm.cmd('query-version')['qemu']
        got = (ver['major'], ver['minor'], ver['micro'])
        tap.ok(got == pinned_version(),
               'query-version reports the pinned upstream version',
               f'got {got}, upstream.pins says {pinned_version()}')

        built = built_schema_names(vm.cmd('query-qmp-schema'))
        upstream = upstream_schema_names()
        ours = declared_additions()

        unexpected = sorted(built - upstream - ours)
        tap.ok(not unexpected,
               'the QMP schema has nothing but upstream names and our '
               'declared additions',
               'not in upstream nor in qmp-schema-additions.txt:\n' +
               '\n'.join(f'  {k} {n}' for k, n in unexpected))

        missing = sorted(ours - built)
        tap.ok(not missing,
               'every addition in qmp-schema-additions.txt is in the schema',
               'declared but absent:\n' +
               '\n'.join(f'  {k} {n}' for k, n in missing))

    finally:
        vm.shutdown()
    tap.ok(vm.exitcode() == 0, 'QEMU exits cleanly on quit',
           f'exit code {vm.exitcode()}')
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
