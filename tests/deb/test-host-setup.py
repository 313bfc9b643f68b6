#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The host package's boot script decides and writes as documented (TAP).

contrib/pseudolock-host/host-setup runs against fake /proc/cpuinfo and
resctrl trees, once under dash (Debian's /bin/sh, which runs it at
boot) and once under busybox's sh (the rig's, which runs it on the real
kernel in tests/rig/scenarios/host-setup.sh).  A fake schemata file keeps
only the last line written to it, so each case has one resource line.
"""

import os
import shutil
import subprocess
import tempfile

from taplib import Tap

TOP = os.environ['QEMU_PSEUDOLOCK_TOP']
SCRIPT = os.path.join(TOP, 'contrib/pseudolock-host/host-setup')

CPUINFO = ('processor\t: 0\nvendor_id\t: {0}\ncpu family\t: {1}\n'
           'model\t\t: {2}\nmodel name\t: fake\n')
GOLDMONT = ('GenuineIntel', 6, 92)


def run(shell, cpu, schemata, config, levels=(('L2', 'ffff', 1),)):
    """Run the script; return (status, output, schemata afterwards)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, 'cpuinfo'), 'w') as f:
            f.write(CPUINFO.format(*cpu))
        res = os.path.join(d, 'resctrl')
        for name, mask, min_bits in levels:
            info = os.path.join(res, 'info', name)
            os.makedirs(info)
            with open(os.path.join(info, 'cbm_mask'), 'w') as f:
                f.write(mask + '\n')
            with open(os.path.join(info, 'min_cbm_bits'), 'w') as f:
                f.write(f'{min_bits}\n')
        os.makedirs(res, exist_ok=True)
        with open(os.path.join(res, 'schemata'), 'w') as f:
            f.write(schemata)
        with open(os.path.join(d, 'host.conf'), 'w') as f:
            f.write(config)
        p = subprocess.run(shell + [SCRIPT, '--config',
                                    os.path.join(d, 'host.conf'),
                                    '--resctrl', res,
                                    '--cpuinfo', os.path.join(d, 'cpuinfo')],
                           capture_output=True, text=True, timeout=30)
        with open(os.path.join(res, 'schemata')) as f:
            after = f.read()
        return p.returncode, p.stdout + p.stderr, after


CASES = [
    # (what, cpu, schemata, config, levels, status, schemata after, output)
    ('Goldmont, default config: half of each L2 stays free',
     GOLDMONT, '    L2:0=ffff;1=ffff\n', '', (('L2', 'ffff', 1),),
     0, 'L2:0=ff;1=ff\n', '8 of 16 ways stay free'),
    ('Goldmont, FREE_WAYS_L2=4',
     GOLDMONT, 'L2:0=ffff;1=ffff\n', 'FREE_WAYS_L2=4\n',
     (('L2', 'ffff', 1),), 0, 'L2:0=fff;1=fff\n', 'keeps ways 0-11'),
    ('Goldmont Plus, an 8-way L2 with four instances',
     ('GenuineIntel', 6, 122), 'L2:0=ff;1=ff;2=ff;3=ff\n', '',
     (('L2', 'ff', 1),), 0, 'L2:0=f;1=f;2=f;3=f\n', 'Goldmont Plus'),
    ('Broadwell-X: L3, with MB left alone',
     ('GenuineIntel', 6, 79), 'L3:0=fffff;1=fffff\n MB:0=100;1=100\n',
     'FREE_WAYS_L3=8\n', (('L3', 'fffff', 1),), 0,
     'L3:0=fff;1=fff\n', 'Broadwell-X, L3'),
    ('code and data prioritisation: the data line is written too',
     GOLDMONT, 'L2CODE:0=ffff\nL2DATA:0=ffff\n', '',
     (('L2', 'ffff', 1),), 0, 'L2DATA:0=ff\n', 'L2CODE: the default'),
    ('FREE_WAYS_L2=0 leaves the level alone',
     GOLDMONT, 'L2:0=ffff\n', 'FREE_WAYS_L2=0\n', (('L2', 'ffff', 1),),
     0, 'L2:0=ffff\n', 'FREE_WAYS_L2 is 0'),
    ('too many ways: refused, naming min_cbm_bits and the most allowed',
     GOLDMONT, 'L2:0=ffff\n', 'FREE_WAYS_L2=15\n', (('L2', 'ffff', 2),),
     1, 'L2:0=ffff\n', 'fewer than the 2 Linux requires '
     '(info/L2/min_cbm_bits); free at most 14'),
    ('a value that is not a number: refused, naming it',
     GOLDMONT, 'L2:0=ffff\n', 'FREE_WAYS_L2=most\n', (('L2', 'ffff', 1),),
     1, 'L2:0=ffff\n', "FREE_WAYS_L2='most'"),
    ('Skylake-SP: CAT but no pseudo-locking, nothing written',
     ('GenuineIntel', 6, 85), 'L3:0=7ff\n', '', (('L3', '7ff', 1),),
     0, 'L3:0=7ff\n', 'cannot pseudo-lock'),
    ('AMD: nothing written',
     ('AuthenticAMD', 25, 1), 'L3:0=ffff\n', '', (('L3', 'ffff', 1),),
     0, 'L3:0=ffff\n', 'cannot pseudo-lock'),
    ('Goldmont without L2 allocation: says so',
     GOLDMONT, ' MB:0=100\n', '', (), 0, ' MB:0=100\n',
     'offers no L2 or L3 cache allocation'),
]


def main():
    t = Tap()
    shells = [('dash', ['dash'])]
    busybox = shutil.which('busybox')
    for label, shell in shells + [('busybox sh', [busybox, 'sh'])]:
        if shell[0] is None or not shutil.which(shell[0]):
            t.skip(f'{label}: every case', f'{label} is not installed')
            continue
        for what, cpu, schemata, config, levels, status, after, says in CASES:
            rc, out, got = run(shell, cpu, schemata, config, levels)
            t.ok(rc == status and got == after and says in out,
                 f'{label}: {what}',
                 f'status {rc} (want {status})\nschemata {got!r} '
                 f'(want {after!r})\nwant in output: {says}\n{out}')
    return t.done()


if __name__ == '__main__':
    raise SystemExit(main())
