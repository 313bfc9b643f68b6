#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""configure refuses bad inputs with a message that names the culprit (TAP).

Runs ./configure of a scratch copy of the project with a broken pin and
with a patch that cannot apply, against the tarball already in the
download cache, and checks the exit status and the message.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

from taplib import Tap

TOP = os.environ['QEMU_PSEUDOLOCK_TOP']
ENTRY_POINTS = ['configure', 'upstream.pins', 'scripts', 'patches',
                'libvirt-patches']


def scratch_copy(tmp):
    tree = os.path.join(tmp, 'tree')
    os.mkdir(tree)
    for name in ENTRY_POINTS:
        src = os.path.join(TOP, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(tree, name))
        else:
            shutil.copy2(src, tree)
    return tree


def read_pins(tree):
    with open(os.path.join(tree, 'upstream.pins'), encoding='utf-8') as f:
        return dict(line.strip().split('=', 1) for line in f
                    if '=' in line and not line.startswith('#'))


def configure(tree):
    return subprocess.run(['./configure', '--build-dir=' + tree + '/build'],
                          cwd=tree, capture_output=True, text=True,
                          timeout=600, check=False)


def test_checksum_mismatch(tap, tmp, pin, tarball_re):
    tree = scratch_copy(tmp)
    pins_path = os.path.join(tree, 'upstream.pins')
    good = read_pins(tree)[pin]
    bad = ('0' if good[0] != '0' else '1') + good[1:]
    with open(pins_path, encoding='utf-8') as f:
        text = f.read()
    with open(pins_path, 'w', encoding='utf-8') as f:
        f.write(text.replace(good, bad))

    res = configure(tree)
    out = res.stderr
    tap.ok(res.returncode != 0, f'a wrong {pin} stops configure',
           f'exit status {res.returncode}\n{out}')
    tap.ok(bad in out and good in out and pin in out,
           f'the message gives the pin {pin}, its checksum and the actual one',
           out)
    tap.ok(re.search(r'checksum mismatch for \S+' + tarball_re, out)
           is not None, 'the message names the tarball', out)
    tap.ok(not os.path.exists(os.path.join(tree, 'build', 'src')),
           'nothing is unpacked when a tarball fails the check')


def test_conflicting_patch(tap, tmp, patch_dir, build_subdir):
    tree = scratch_copy(tmp)
    patch = 'test-conflict-with-upstream.patch'
    # Context that upstream's meson.build (QEMU's and libvirt's) lacks.
    with open(os.path.join(tree, patch_dir, patch), 'w',
              encoding='utf-8') as f:
        f.write('From 0000000000000000000000000000000000000000 Mon Sep 17 '
                '00:00:00 2001\n'
                'From: Test <test@example.invalid>\n'
                'Date: Thu, 1 Jan 2026 00:00:00 +0000\n'
                'Subject: [PATCH] test: a patch that cannot apply\n\n'
                'Signed-off-by: Test <test@example.invalid>\n---\n'
                'diff --git a/meson.build b/meson.build\n'
                '--- a/meson.build\n+++ b/meson.build\n'
                '@@ -1,3 +1,3 @@\n'
                ' this line is not in upstream meson.build\n'
                '-neither is this one\n'
                '+so the hunk cannot apply\n'
                ' nor this one\n'
                '-- \n2.39.5\n\n')
    with open(os.path.join(tree, patch_dir, 'series'), 'a',
              encoding='utf-8') as f:
        f.write(patch + '\n')

    res = configure(tree)
    out = res.stderr
    tap.ok(res.returncode != 0,
           f'a patch in {patch_dir}/ that does not apply stops configure',
           f'exit status {res.returncode}\n{out}')
    tap.ok(f'patch {patch}' in out and f'{patch_dir}/series' in out,
           'the message names the patch and its series', out)
    tap.ok('meson.build:1' in out, 'the message names the failing hunk', out)
    tap.ok(not os.path.exists(os.path.join(tree, 'build', build_subdir)),
           f'{build_subdir} is not configured from a half-patched tree')


def main():
    tap = Tap()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            (test_checksum_mismatch, 'QEMU_ORIG_SHA256', r'qemu_\S+\.orig\.tar\.xz'),
            (test_checksum_mismatch, 'LIBVIRT_ORIG_SHA256',
             r'libvirt_\S+\.orig\.tar\.xz'),
            (test_conflicting_patch, 'patches', 'qemu'),
            (test_conflicting_patch, 'libvirt-patches', 'libvirt'),
        ]
        for n, (case, *args) in enumerate(cases):
            scratch = os.path.join(tmp, str(n))
            os.mkdir(scratch)
            case(tap, scratch, *args)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
