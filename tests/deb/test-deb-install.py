#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The packages of `make deb` install and purge as a user's would (TAP).

A fresh Debian 12 root file system (scripts/debian-rootfs: debootstrap
from the configured mirror, with bookworm-backports) gets
build/deb/*.deb with `apt-get install ./...`, the dependencies coming
from the mirror; then the fork's QEMU must run there on Debian's
firmware and satisfy what Debian's libvirt asks of a QEMU, the fork's
libvirt must be the one installed, and `apt-get purge` must take
everything away again.  It runs as root in a private
mount namespace (proc, /dev and apt's download cache are mounted into
the root only there); without root it reports a skip.

Usage: test-deb-install.py DEB-DIR WORK-DIR libvirt|no-libvirt
  (no-libvirt: configured with --disable-libvirt, no libvirt packages)
"""

import glob
import os
import shutil
import subprocess
import sys

from taplib import Tap

TOP = os.environ['QEMU_PSEUDOLOCK_TOP']
CACHE = os.environ.get('QEMU_PSEUDOLOCK_CACHE') or os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
    'qemu-pseudolock')


def in_root(root, command, timeout=900):
    """Run a shell command chrooted into root; (status, output)."""
    archives = os.path.join(CACHE, 'apt-archives')
    os.makedirs(os.path.join(archives, 'partial'), exist_ok=True)
    setup = (f'mount -t proc proc {root}/proc && '
             f'mount --rbind /dev {root}/dev && '
             f'mount --bind {archives} {root}/var/cache/apt/archives && '
             f'exec chroot {root} /bin/sh -c "$0"')
    p = subprocess.run(['unshare', '--mount', '--propagation', 'private',
                        'sh', '-c', setup, command],
                       env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin',
                            'DEBIAN_FRONTEND': 'noninteractive',
                            'LC_ALL': 'C.UTF-8'},
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def field(deb, name):
    return subprocess.run(['dpkg-deb', '-f', deb, name], check=True,
                          capture_output=True, text=True).stdout.strip()


def main():
    deb_dir, work, with_libvirt = sys.argv[1], sys.argv[2], sys.argv[3]
    t = Tap()
    if os.geteuid() != 0:
        t.skip('installing the packages into a Debian root', 'needs root')
        return t.done()
    debs = sorted(glob.glob(os.path.join(deb_dir, '*.deb')))
    names = {field(d, 'Package'): (d, field(d, 'Version')) for d in debs}
    kernels = [n for n in names if n.startswith('linux-image-')]
    wanted = ['qemu-pseudolock-host', 'qemu-pseudolock-system-x86']
    if not t.ok(all(n in names for n in wanted) and len(kernels) == 1,
                f'make deb wrote {", ".join(wanted)} and one linux-image',
                f'found: {debs}'):
        return t.done()
    kernel = kernels[0]
    release = kernel[len('linux-image-'):]
    wanted.append(kernel)
    fork_own = list(wanted)
    # the fork's libvirt, unless configured with --disable-libvirt
    libvirt = sorted(n for n in names if n.startswith('libvirt'))
    if with_libvirt == 'libvirt':
        t.ok('libvirt-daemon-system' in libvirt and 'libvirt0' in libvirt,
             "make deb wrote the fork's libvirt-daemon-system and the "
             'libvirt packages it depends on', f'found: {debs}')
    t.diag(f'libvirt packages: {" ".join(libvirt) or "none"}')
    wanted += libvirt

    shutil.rmtree(work, ignore_errors=True)
    root = os.path.join(work, 'root')
    os.makedirs(root)
    tar = os.path.join(work, 'rootfs.tar')
    p = subprocess.run([os.path.join(TOP, 'scripts/debian-rootfs'), tar],
                       capture_output=True, text=True, timeout=1800)
    if not t.ok(p.returncode == 0, 'a Debian 12 root from debootstrap',
                p.stdout + p.stderr):
        return t.done()
    t.diag(p.stdout.strip())
    subprocess.run(['tar', '--numeric-owner', '-C', root, '-xf', tar],
                   check=True)
    os.unlink(tar)
    shutil.copy('/etc/resolv.conf', os.path.join(root, 'etc/resolv.conf'))
    os.makedirs(os.path.join(root, 'tmp/debs'))
    for d in debs:
        shutil.copy(d, os.path.join(root, 'tmp/debs'))

    rc, out = in_root(root, 'apt-get update -q')
    t.ok(rc == 0, 'apt-get update in the root', out)
    # Debian's own libvirt, for those who keep it: its QEMU driver takes
    # the fork's QEMU as the qemu-system-x86 it depends on (asked before
    # the fork's libvirt is installed, which it would downgrade)
    rc, out = in_root(root, 'apt-get install -s -q -t bookworm-backports '
                      '/tmp/debs/qemu-pseudolock-system-x86_*.deb '
                      'libvirt-daemon-driver-qemu/bookworm-backports')
    t.ok(rc == 0 and 'Inst qemu-system-x86 ' not in out,
         "Debian's libvirt QEMU driver would install with the fork's QEMU "
         '(Provides: qemu-system-x86, qemu-kvm)', out[-3000:])
    # QEMU 10's firmware and data (seabios, qemu-system-data) are in
    # bookworm-backports, which apt uses only when asked: -t, as the
    # deployment page says.
    rc, out = in_root(root, 'apt-get install -y -q --no-install-recommends '
                      '-t bookworm-backports /tmp/debs/*.deb')
    t.ok(rc == 0, 'apt-get install -t bookworm-backports ./build/deb/*.deb '
         'succeeds', out)
    t.ok('qemu-system-x86 ' not in out.replace('qemu-system-x86 (', ''),
         "Debian's qemu-system-x86 is not pulled in",
         out[-3000:])
    rc, out = in_root(root, "dpkg-query -W -f '${Package} ${Version} "
                      "${db:Status-Status}\\n' " + ' '.join(wanted))
    want = '\n'.join(f'{n} {names[n][1]} installed' for n in sorted(wanted))
    t.ok(rc == 0 and out.strip() == want,
         'dpkg shows the packages installed, at upstream+fork versions',
         f'got:\n{out}\nwant:\n{want}')
    t.diag(out.strip())

    rc, out = in_root(root, 'qemu-system-x86_64 --version')
    upstream = names['qemu-pseudolock-system-x86'][1].split(':')[1]
    upstream = upstream.split('+')[0]
    t.ok(rc == 0 and f'version {upstream}' in out,
         f'/usr/bin/qemu-system-x86_64 is QEMU {upstream}', out)
    rc, out = in_root(root, 'echo quit | timeout 60 qemu-system-x86_64 '
                      '-machine pc -accel tcg -nodefaults -display none '
                      '-S -monitor stdio')
    t.ok(rc == 0 and 'could not load' not in out,
         "it starts a PC on Debian's SeaBIOS (qemu-system-data, seabios)",
         out)
    rc, out = in_root(root, 'qemu-system-x86_64 -object '
                      'memory-backend-pseudolock,help')
    t.ok(rc == 0 and 'cache-level' in out and 'path' in out,
         'it has memory-backend-pseudolock', out)
    if libvirt:
        rc, out = in_root(root, 'virsh --version && /usr/sbin/libvirtd '
                          '--version')
        upstream = names['libvirt0'][1].split('-')[0]
        t.ok(rc == 0 and out.split()[0] == upstream
             and out.split()[-1] == upstream,
             f"virsh and libvirtd are the fork's libvirt {upstream}", out)

    rc, out = in_root(root, 'test -x /usr/libexec/qemu-pseudolock/host-setup'
                      ' && test -f /etc/qemu-pseudolock/host.conf && '
                      'readlink /etc/systemd/system/multi-user.target.wants/'
                      'qemu-pseudolock-host.service')
    t.ok(rc == 0 and 'qemu-pseudolock-host.service' in out,
         'the host unit is installed and enabled, its configuration in /etc',
         out)

    rc, out = in_root(root, f'test -f /boot/vmlinuz-{release} && '
                      f'grep -x -e CONFIG_SECURITY_APPARMOR=y -e CONFIG_KVM=y '
                      f'-e CONFIG_X86_CPU_RESCTRL=y /boot/config-{release}')
    t.ok(rc == 0 and len(out.split()) == 3,
         f'the kernel {release} is in /boot, with AppArmor, KVM and resctrl',
         out)

    # What the deployment page says to purge: libvirt's two packages
    # that all its others depend on take those with them
    purge = fork_own + [n for n in ('libvirt0', 'libvirt-common')
                        if n in libvirt]
    rc, out = in_root(root, 'apt-get purge -y -q ' + ' '.join(purge))
    t.ok(rc == 0, f'apt-get purge {" ".join(purge)} succeeds', out)
    rc, out = in_root(root, "dpkg-query -W -f '${Package} "
                      "${db:Status-Status}\\n' " + ' '.join(wanted) +
                      ' 2>/dev/null; ls -d /usr/bin/qemu-system-x86_64 '
                      '/usr/sbin/libvirtd /usr/bin/virsh '
                      '/etc/qemu-pseudolock /usr/libexec/qemu-pseudolock '
                      f'/boot/vmlinuz-{release} /lib/modules/{release} '
                      '/etc/systemd/system/multi-user.target.wants/'
                      'qemu-pseudolock-host.service 2>&1; true')
    left = [line for line in out.splitlines()
            if not line.endswith(' not-installed')
            and 'No such file' not in line]
    t.ok(not left, 'nothing of the packages is left after the purge',
         out)

    shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    raise SystemExit(main())
