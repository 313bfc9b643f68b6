#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Cache-allocation and cache-monitoring CPU options that cannot work are
refused clearly (TAP).

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
BROADWELL_X = 'Broadwell-noTSX,model=79,l3-cache=on'

# (description, -cpu option, text the error must contain, or None: starts)
CASES = [
    ('l2-cat on an emulated Goldmont starts', GOLDMONT + ',l2-cat=on', None),
    ('l3-cat on Broadwell-X with an L3 starts',
     'Broadwell-noTSX,model=79,l3-cache=on,l3-cat=on', None),
    ('l3-cat without an L3 cache',
     GOLDMONT + ',l3-cat=on', 'l3-cat needs an L3 cache, but l3-cache=off'),
    ('cache allocation on an AMD model',
     'EPYC,l3-cat=on', 'l2-cat, l3-cat and l3-cmt need an Intel CPU model'),
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
    ('cache monitoring on Broadwell-X, without allocation, starts',
     BROADWELL_X + ',l3-cmt=on', None),
    ('  and with it, starts', BROADWELL_X + ',l3-cat=on,l3-cmt=on', None),
    ('cache monitoring without an L3 cache',
     GOLDMONT + ',l3-cmt=on', 'l3-cmt needs an L3 cache, but l3-cache=off'),
    ('no RMID', BROADWELL_X + ',l3-cmt=on,rdt-rmids=0',
     'rdt-rmids must be between 1 and 1024, not 0'),
    ('more RMIDs than IA32_PQR_ASSOC can name',
     BROADWELL_X + ',l3-cmt=on,rdt-rmids=1025',
     'rdt-rmids must be between 1 and 1024, not 1025'),
    ('cache monitoring with rdt-m turned off',
     BROADWELL_X + ',l3-cmt=on,rdt-m=off', 'l3-cmt needs rdt-m, but rdt-m=off'),
    ('an explicit CPUID level below 0xf',
     BROADWELL_X + ',l3-cmt=on,level=14',
     'l3-cmt needs CPUID level 0xf or higher, but level=0xe'),
    ('performance counters (pmu=on,x-tcg-pmu=on) under TCG start',
     GOLDMONT + ',pmu=on,x-tcg-pmu=on', None),
    ('the TCG performance counters without pmu=on',
     GOLDMONT + ',x-tcg-pmu=on', 'x-tcg-pmu=on needs pmu=on'),
]

# The same with another accelerator than TCG: no cache model can run
OTHER_ACCEL_CASES = [
    ('cache monitoring under qtest',
     BROADWELL_X + ',l3-cmt=on', 'l3-cmt reports what a cache model counts, '
     'which only TCG runs'),
]


def run(cpu, accel='tcg'):
    return subprocess.run(
        [QEMU, '-machine', 'q35', '-accel', accel, '-cpu', cpu,
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


def kvm_tcg_pmu_case(tap):
    """The TCG counters are TCG's: under KVM, x-tcg-pmu=on is refused."""
    desc = 'with KVM, x-tcg-pmu=on is refused'
    if not os.access('/dev/kvm', os.R_OK | os.W_OK):
        tap.skip(desc, 'no usable /dev/kvm on this machine')
        return
    res = run('max,pmu=on,x-tcg-pmu=on', 'kvm')
    want = 'x-tcg-pmu=on only applies to TCG'
    tap.ok(res.returncode == 1 and want in res.stderr, desc,
           f'exit status {res.returncode}, {res.stderr}')


def main():
    tap = Tap()
    cases = [(desc, cpu, want, 'tcg') for desc, cpu, want in CASES] + \
        [(desc, cpu, want, 'qtest') for desc, cpu, want in OTHER_ACCEL_CASES]
    for desc, cpu, want, accel in cases:
        res = run(cpu, accel)
        if want is None:
            ok = res.returncode == 0
        else:
            ok = res.returncode != 0 and want in res.stderr
        tap.ok(ok, f'{desc}: -accel {accel} -cpu {cpu}',
               f'exit status {res.returncode}, expected '
               f'{"0" if want is None else "an error: " + want}\n'
               + res.stderr)
        if ok and want is not None:
            tap.diag(res.stderr.strip().splitlines()[-1])
    kvm_case(tap)
    kvm_tcg_pmu_case(tap)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
