#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/demo picks the real host only where it can pseudo-lock (TAP).

`scripts/demo --check-host` decides whether the demo runs natively or
on the emulated host.  Its inputs (/proc/cpuinfo, /proc/filesystems,
/dev/kvm) are pointed at fakes, one reason to refuse at a time.
"""

import os
import subprocess
import tempfile

from taplib import Tap

TOP = os.environ['QEMU_PSEUDOLOCK_TOP']

CPUINFO = """processor\t: 0
vendor_id\t: {vendor}
cpu family\t: {family}
model\t\t: {model}
model name\t: {name}
"""

WITH_RESCTRL = "nodev\tsysfs\nnodev\tresctrl\n"
WITHOUT_RESCTRL = "nodev\tsysfs\n"

CASES = [
    # (what, CPU, /proc/filesystems, /dev/kvm there, expected verdict)
    ('an AMD EPYC', ('AuthenticAMD', 23, 49, 'AMD EPYC 7742'),
     WITH_RESCTRL, True,
     "its CPU (AMD EPYC 7742) is not one whose caches Linux pseudo-locks"),
    ('a Skylake-SP (cache allocation, no pseudo-locking)',
     ('GenuineIntel', 6, 85, 'Intel(R) Xeon(R) Gold 6148'),
     WITH_RESCTRL, True,
     "its CPU (Intel(R) Xeon(R) Gold 6148) is not one whose caches"),
    ('a Goldmont without resctrl in the kernel',
     ('GenuineIntel', 6, 92, 'Intel(R) Atom(TM) C3958'),
     WITHOUT_RESCTRL, True,
     "its kernel has no resctrl file system"),
    ('a Goldmont without KVM',
     ('GenuineIntel', 6, 92, 'Intel(R) Atom(TM) C3958'),
     WITH_RESCTRL, False, "is missing or not writable"),
    ('a Broadwell-X with everything', ('GenuineIntel', 6, 79, 'Xeon E5-2699 v4'),
     WITH_RESCTRL, True, "this host can pseudo-lock"),
    ('a Goldmont Plus with everything', ('GenuineIntel', 6, 122, 'Atom J4105'),
     WITH_RESCTRL, True, "this host can pseudo-lock"),
]


def check_host(tmp, cpu, filesystems, kvm_there):
    vendor, family, model, name = cpu
    cpuinfo = os.path.join(tmp, 'cpuinfo')
    with open(cpuinfo, 'w', encoding='utf-8') as f:
        f.write(CPUINFO.format(vendor=vendor, family=family, model=model,
                               name=name))
    fs = os.path.join(tmp, 'filesystems')
    with open(fs, 'w', encoding='utf-8') as f:
        f.write(filesystems)
    # root may write any file, so a missing one stands for no KVM
    kvm = os.path.join(tmp, 'kvm' if kvm_there else 'no-kvm')
    with open(os.path.join(tmp, 'kvm'), 'w', encoding='utf-8'):
        pass
    env = dict(os.environ, PL_DEMO_CPUINFO=cpuinfo,
               PL_DEMO_FILESYSTEMS=fs, PL_DEMO_KVM=kvm)
    return subprocess.run([os.path.join(TOP, 'scripts', 'demo'),
                           '--check-host'], env=env, capture_output=True,
                          text=True, check=False)


def main():
    tap = Tap()
    with tempfile.TemporaryDirectory() as tmp:
        for what, cpu, filesystems, kvm_there, verdict in CASES:
            r = check_host(tmp, cpu, filesystems, kvm_there)
            native = verdict == "this host can pseudo-lock"
            if native and os.geteuid() != 0:
                # the one check that cannot be faked: resctrl needs root
                verdict, native = "not running as root", False
            tap.ok(verdict in r.stdout and (r.returncode == 0) == native,
                   f'{what}: {"native" if native else "emulated"}',
                   f'exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}')
    tap.done()


if __name__ == '__main__':
    main()
