#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What the cache model costs (TAP, figures for make bench).

Boots the emulated host to the end of its boot scenario ROUNDS times in
each of three ways, in turn: without the catcache plugin, with it loaded
but not armed (how every scenario boots), and armed from the start; with
--fed-cpu-options, a fourth: armed, with those CPU options added (such as
pmu=on,x-tcg-pmu=on, whose counters the model feeds); and prints the
median wall time of each and its ratio to the first.

Usage: bench-cache-model.py --plugin LIBCATCACHE.so --rounds N
           [--fed-cpu-options ,OPTIONS] RIG-ARGS...
(the arguments of rig.py for the boot scenario, less --qemu-arg)
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position


def main():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument('--plugin', required=True)
    p.add_argument('--rounds', type=int, default=3)
    p.add_argument('--fed-cpu-options', default='')
    own, rig_args = p.parse_known_args()
    cpu = argparse.ArgumentParser(add_help=False)
    cpu.add_argument('--cpu', default='')
    base_cpu = cpu.parse_known_args(rig_args)[0].cpu
    tap = Tap()
    configs = [
        ('no plugin', []),
        ('catcache loaded, not armed', ['--qemu-arg=-plugin',
                                        '--qemu-arg=' + own.plugin]),
        ('catcache armed from the start',
         ['--qemu-arg=-plugin', f'--qemu-arg={own.plugin},armed=on']),
    ]
    if own.fed_cpu_options:
        configs.append((f'armed, -cpu ...{own.fed_cpu_options}',
                        ['--qemu-arg=-plugin',
                         f'--qemu-arg={own.plugin},armed=on',
                         '--cpu', base_cpu + own.fed_cpu_options]))
    times = {name: [] for name, _ in configs}
    for _ in range(own.rounds):
        for name, extra in configs:
            start = time.monotonic()
            run = subprocess.run([sys.executable, os.path.join(HERE, 'rig.py')]
                                 + rig_args + extra, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True,
                                 check=False)
            took = time.monotonic() - start
            if not tap.ok(run.returncode == 0, f'boot, {name}: {took:.1f} s',
                          run.stdout[-2000:]):
                return tap.done()
            times[name].append(took)
    base = statistics.median(times['no plugin'])
    rows = ['| emulated host boot | median | ratio |', '|---|---|---|']
    for name, _ in configs:
        median = statistics.median(times[name])
        rows.append(f'| {name} | {median:.1f} s | {median / base:.2f} |')
    tap.diag('\n'.join(rows))
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
