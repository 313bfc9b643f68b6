#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Cache-allocation CPU options that cannot work are refused clearly (TAP).

Each case starts qemu-system-x86_64 with a -cpu option that asks for
something impossible and checks that QEMU exits with an error whose
message says what is wrong; a good option must start.
"""

import os
import subprocess
import sys

QEMU = os.environ['QEMU_PSEUDOLOCK_QEMU']

GOLDMONT = 'Denverton-v2,model=92,l3-cache=off'

# (description, -cpu option, text the error must contain, or None: starts)
CASES = [
    ('l2-cat on an emulated Goldmont starts', GOLDMONT + ',l2-cat=on', None),
    ('l3-cat on Broadwell-X with an L3 starts',
     'Broadwell-noTSX,model=79,l3-cache=on,l3-cat=on', None),
    ('l3-cat without an L3 cache',
     GOLDMONT + ',l3-cat=on', 'l3-cat needs an L3 cache, but l3-cache=off'),
    ('cache allocation on an AMD model',
     'EPYC,l3-cat=on', 'l2-cat and l3-cat need an Intel CPU model'),
    ('too many classes of service',
     GOLDMONT + ',l2-cat=on,rdt-closids=17',
     'rdt-closids must be between 1 and 16, not 17'),
    ('no class of service',
     GOLDMONT + ',l2-cat=on,rdt-closids=0',
     'rdt-closids must be between 1 and 16, not 0'),
    ('a capacity bitmask longer than 32 bits',
     GOLDMONT + ',l2-cat=on,l2-cbm-len=33',
     'l2-cbm-len and l3-cbm-len are at most 32 bits'),
    ('an explicit CPUID level below 0x10',
     GOLDMONT + ',l2-cat=on,level=13',
     'need CPUID level 0x10 or higher, but level=0xd'),
    ('host cache information',
     'max,vendor=GenuineIntel,l2-cat=on,host-cache-info=on',
     'cannot be combined with host-cache-info=on'),
]


def run(cpu):
    return subprocess.run(
        [QEMU, '-machine', 'q35', '-accel', 'tcg', '-cpu', cpu,
         '-nodefaults', '-display', 'none', '-S', '-qmp', 'stdio'],
        input='{"execute": "qmp_capabilities"}\n{"execute": "quit"}\n',
        capture_output=True, text=True, timeout=60, check=False)


def main():
    failed = 0
    for n, (desc, cpu, want) in enumerate(CASES, 1):
        res = run(cpu)
        if want is None:
            ok = res.returncode == 0
        else:
            ok = res.returncode != 0 and want in res.stderr
        failed += not ok
        print(f"{'ok' if ok else 'not ok'} {n} - {desc}: -cpu {cpu}")
        if not ok:
            print(f'# exit status {res.returncode}, expected '
                  f'{"0" if want is None else "an error: " + want}')
            for line in res.stderr.splitlines():
                print(f'# {line}')
        elif want is not None:
            print(f'# {res.stderr.strip().splitlines()[-1]}')
    print(f'1..{len(CASES)}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
