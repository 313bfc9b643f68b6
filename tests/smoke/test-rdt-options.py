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

from taplib import Tap

QEMU = os.environ['QEMU_PSEUDOLOCK_QEMU']

GOLDMONT = 'Denverton-v4,model=92'

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
    ('cache allocation with rdt-a turned off',
     GOLDMONT + ',l2-cat=on,rdt-a=off',
     'l2-cat and l3-cat need rdt-a, but rdt-a=off'),
    ('rdt-a=on, which l2-cat implies anyway, starts',
     GOLDMONT + ',l2-cat=on,rdt-a=on', None),
]


def run(cpu):
    return subprocess.run(
        [QEMU, '-machine', 'q35', '-accel', 'tcg', '-cpu', cpu,
         '-nodefaults', '-display', 'none', '-S', '-qmp', 'stdio'],
        input='{"execute": "qmp_capabilities"}\n{"execute": "quit"}\n',
        capture_output=True, text=True, timeout=60, check=False)


def kvm_case(tap):
    """Under KVM the MSRs go through KVM's user-space MSR filter."""
    desc = 'with KVM, l2-cat starts (MSR filter) or is refused clearly'
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        tap.skip(desc, 'no usable /dev/kvm on this machine')
        return
    with open('/proc/cpuinfo', encoding='utf-8') as f:
        intel = 'GenuineIntel' in f.read()
    if not intel:
        # KVM gives a guest the host's vendor; Intel models need Intel hosts
        tap.skip(desc, 'the host CPU is not Intel')
        return
    res = subprocess.run(
        [QEMU, '-machine', 'q35', '-accel', 'kvm',
         '-cpu', GOLDMONT + ',l2-cat=on', '-nodefaults', '-display', 'none',
         '-S', '-qmp', 'stdio'],
        input='{"execute": "qmp_capabilities"}\n{"execute": "quit"}\n',
        capture_output=True, text=True, timeout=60, check=False)
    refused = 'need KVM\'s user-space MSR filter' in res.stderr
    tap.ok(res.returncode == 0 or (res.returncode == 1 and refused), desc,
           res.stderr)


def main():
    tap = Tap()
    for desc, cpu, want in CASES:
        res = run(cpu)
        if want is None:
            ok = res.returncode == 0
        else:
            ok = res.returncode != 0 and want in res.stderr
        tap.ok(ok, f'{desc}: -cpu {cpu}',
               f'exit status {res.returncode}, expected '
               f'{"0" if want is None else "an error: " + want}\n'
               + res.stderr)
        if ok and want is not None:
            tap.diag(res.stderr.strip().splitlines()[-1])
    kvm_case(tap)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
