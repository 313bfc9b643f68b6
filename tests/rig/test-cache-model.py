#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Residency under the cache model (TAP).

Runs the cache-model scenario on an emulated host with the catcache
plugin, relays the guest's own checks, then reads the plugin's log of
the scenario's windows and judges the figures: the pseudo-locked region
is read with 100% hits under a noisy neighbour, ordinary memory is not,
cache allocation alone lies between, each eviction costs what it
should, and a relock brings the region back.  Prints the table of
windows and a plot of their hit rates.  --layout broadwell-l3 judges the
L3 scenario (cache-model-l3) instead of the L2 one; --layout rt-guest
judges the real-time guest's reads of its node 1 (rt-guest with
rig.model), counted by the shared windows that every vCPU of the
emulated host feeds; --layout guest relays the checks of a scenario
that judges for itself (cache-counters: the kernel's own measurement
with the performance counters that the model feeds; cache-monitoring:
resctrl's llc_occupancy, which the model answers) and shows the plugin's
windows beside them.

Usage: test-cache-model.py --plugin LIBCATCACHE.so --plugin-log LOG
           [--layout goldmont-l2|broadwell-l3|rt-guest|guest] RIG-ARGS...
"""

import argparse
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from righost import Host  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position

WINDOW = re.compile(
    r'catcache: (?:window (?P<label>\S+)|prefetch-off window (?P<n>\d+)) '
    r'vcpu (?P<vcpu>\d+) clos (?P<clos>\d+): accesses (?P<accesses>\d+) '
    r'hits (?P<hits>\d+) \(L2 (?P<l2>\d+), L3 (?P<l3>\d+)\) '
    r'misses (?P<misses>\d+) hit-rate \S+ other-ways (?P<foreign>\d+)')

# What each labelled window is, for the table
CASES = {
    'plain': 'ordinary memory, default class',
    'catonly': 'ordinary memory, exclusive class (CAT only)',
    'locked': 'pseudo-locked region',
    'qmp-res': "region, read by QEMU's query-pseudolock-residency",
    'locked2': 'region, after WBINVD on the other L2',
    'locked3': 'region, after 1024 lines written from the other L2',
    'locked5': 'region, after 512 more lines flushed (CLFLUSH)',
    'locked6': 'region, after 256 more flushed through 32-bit addresses',
    'mig-in': 'region, after an incoming migration by a QEMU on its CPUs',
    'mig-out': 'region, after an incoming migration by a QEMU on the '
               'other L2',
    'locked4': 'region, after WBINVD on its own L2',
    'mig-run': 'region, after the guest migrated in on the other L2 '
               'starts running (QEMU relocks)',
    'loadvm': 'region, after loadvm by a QEMU on the other L2 (QEMU '
              'relocks)',
    'relocked': 'region, after pseudolock-relock over QMP',
}
# The cases only a host kernel that can relock has
RELOCK_CASES = ('mig-run', 'loadvm', 'relocked')

# The L3 layout's windows (scenarios/cache-model-l3.sh)
CASES_L3 = {
    'plain': 'ordinary memory, default class',
    'catonly': 'ordinary memory, exclusive class of 1 way (CAT only)',
    'locked': 'pseudo-locked region (1 way)',
    'locked2': 'region, after WBINVD on the other socket',
    'locked4': 'region, after WBINVD on its own socket',
    'relocked': 'region, after pseudolock-relock over QMP',
}

# The real-time guest's windows (scenarios/rt-guest.sh, rig.model): the
# plugin logs a line for each vCPU of the emulated host that accessed
# QEMU's mapping of the region, and their sum with its physical span
CASES_RT = {
    'node1': "the nested guest reads its node 1, vCPUs on the cache's CPUs",
    'far': "the same, vCPUs moved to the other L2's CPUs",
}
SHARED_WINDOW = re.compile(
    r'catcache: shared window (?P<label>\S+) closed: (?P<vcpus>\d+) '
    r'vcpus, accesses (?P<accesses>\d+) hits (?P<hits>\d+) misses '
    r'(?P<misses>\d+) range 0x(?P<lo>[0-9a-f]+)-0x(?P<hi>[0-9a-f]+)')


def parse_log(path):
    """The windows of the plugin's log, in order, and its other lines."""
    windows, other = [], []
    with open(path, encoding='utf-8', errors='replace') as f:
        for line in f:
            m = WINDOW.search(line)
            if m:
                w = {k: int(v) if v and v.isdigit() else v
                     for k, v in m.groupdict().items()}
                w['label'] = w['label'] or f"prefetch-off-{w['n']}"
                w['rate'] = 100.0 * w['hits'] / max(w['accesses'], 1)
                windows.append(w)
            elif line.startswith('catcache:'):
                other.append(line.rstrip())
    return windows, other


def table(windows, cases):
    rows = ['| case | round | vCPU | class | accesses | hits | of which in '
            'ways the class may not fill | misses | hit rate |',
            '|---|---|---|---|---|---|---|---|---|']
    rounds = {}
    for w in windows:
        rounds[w['label']] = rounds.get(w['label'], 0) + 1
        what = cases.get(w['label'], w['label'])
        rows.append(f"| {what} | {rounds[w['label']]} | {w['vcpu']} | "
                    f"{w['clos']} | {w['accesses']} | {w['hits']} | "
                    f"{w['foreign']} | {w['misses']} | {w['rate']:.2f}% |")
    return '\n'.join(rows)


def plot(windows, cases, width=50):
    """The last round of each case as a bar of its hit rate."""
    last = {}
    for w in windows:
        if not w['label'].startswith('prefetch-off'):
            last[w['label']] = w
    name = max((len(cases.get(k, k)) for k in last), default=0)
    rows = [f"{'':{name}}  0%{'':{width - 6}}100%"]
    for label, w in last.items():
        bar = '#' * round(w['rate'] * width / 100)
        rows.append(f"{cases.get(label, label):{name}}  {bar:{width}} "
                    f"{w['rate']:6.2f}%")
    return '\n'.join(rows)


def main():
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument('--plugin', required=True)
    p.add_argument('--plugin-log', required=True,
                   help="where to keep the plugin's log")
    p.add_argument('--layout',
                   choices=('goldmont-l2', 'broadwell-l3', 'rt-guest',
                            'guest'),
                   default='goldmont-l2',
                   help='the scenario: cache-model, cache-model-l3, '
                   'rt-guest, or one that judges itself')
    own, rest = p.parse_known_args()
    args = rig.parse_args(rest)
    rounds = int(re.search(r'rig\.rounds=(\d+)', args.append).group(1)) \
        if 'rig.rounds=' in args.append else 3
    relock = 'rig.relock=works' in args.append
    tap = Tap()

    with tempfile.TemporaryDirectory() as tmp:
        log = own.plugin_log
        start = time.monotonic()
        host = Host(args, tmp, 'host',
                    extra=['-plugin', own.plugin, '-d', 'plugin', '-D', log])
        try:
            host.relay_guest_tap(tap, args.timeout)
        except (TimeoutError, EOFError) as e:
            tap.ok(False, 'the scenario ran to its end', str(e))
        finally:
            host.close()
        took = time.monotonic() - start
        windows, other = parse_log(log)

    tap.diag(f'the run took {took:.0f} s; the plugin logged '
             f'{len(windows)} windows')
    tap.diag('\n'.join(other[:40]))
    cases = {'goldmont-l2': CASES, 'broadwell-l3': CASES_L3,
             'rt-guest': CASES_RT, 'guest': {}}[own.layout]
    tap.diag(table(windows, cases))
    if own.layout == 'guest':
        return tap.done()
    if own.layout == 'rt-guest':
        return judge_rt_guest(tap, windows, other)
    tap.diag(plot(windows, cases))
    if own.layout == 'broadwell-l3':
        return judge_broadwell_l3(tap, windows, other, rounds)
    return judge_goldmont_l2(tap, windows, other, args, rounds, relock)


def check_model(tap, windows, other, level, sets, expected):
    """The model's geometry of the host's two caches of @level, and how
    many windows of each label (@expected: label -> count) it logged."""
    geometry = [o for o in other if re.search(
        rf'L{level} cache [01]: {sets} sets, 16 ways, 64-byte lines, cache '
        r'allocation', o)]
    tap.ok(len(geometry) == 2, f"the model has the host's two L{level} "
           f'caches ({sets} sets, 16 ways, 64-byte lines) with cache '
           'allocation', '\n'.join(other))
    for label, n in expected.items():
        got = [w['rate'] for w in windows if w['label'] == label]
        tap.ok(len(got) == n, f'{n} window(s) "{label}" logged', f'{got}')


def judge_broadwell_l3(tap, windows, other, rounds):
    """The L3 layout: the same ordering, with the L3 doing the work."""
    def rates(label):
        return [w['rate'] for w in windows if w['label'] == label]

    lines = 1 << 20 >> 6
    check_model(tap, windows, other, 3, 16384,
                {'plain': rounds, 'catonly': rounds, 'locked': rounds,
                 'locked2': 1, 'locked4': 1, 'relocked': 1})
    if not all(rates(label) for label in CASES_L3):
        return tap.done()
    locked = [w for w in windows if w['label'] == 'locked']
    tap.ok(all(w['rate'] == 100.0 and w['l3'] == w['foreign'] == lines
               for w in locked),
           'the locked region: 100% hits in every round, all in the L3\'s '
           'locked way (1 MiB does not stay in the reader\'s 256 KiB L2)',
           f'{locked}')
    tap.ok(max(rates('plain')) < 25.0,
           'ordinary memory in the neighbour\'s class: under 25% hits',
           f"{rates('plain')}")
    tap.ok(rates('plain')[-1] < rates('catonly')[-1] <= 100.0,
           'cache allocation alone keeps more than ordinary memory',
           f"plain {rates('plain')}, catonly {rates('catonly')}")
    tap.ok(rates('locked2') == [100.0],
           'WBINVD on the other socket evicts nothing', f"{rates('locked2')}")
    tap.ok(rates('locked4')[0] < 5.0,
           'WBINVD on its own socket evicts the region', f"{rates('locked4')}")
    relocked = [w for w in windows if w['label'] == 'relocked'][0]
    tap.ok(relocked['foreign'] == relocked['accesses'] == lines,
           'pseudolock-relock over QMP, and all reads hit in the locked way '
           f"({relocked['foreign']})", f'{relocked}')
    return tap.done()


def judge_rt_guest(tap, windows, other):
    """The nested guest's node 1: every access to the region, from any
    vCPU of the emulated host, hits in the locked ways while the guest's
    vCPUs run on the cache's CPUs, and not from the other L2."""
    check_model(tap, windows, other, 2, 2048, {})
    totals = {m.group('label'): {k: int(v, 16 if k in ('lo', 'hi') else 10)
                                 for k, v in m.groupdict().items()
                                 if k != 'label'}
              for m in map(SHARED_WINDOW.search, other) if m}
    rows = [f"{CASES_RT[label]}: {t['accesses']} accesses from "
            f"{t['vcpus']} vCPU(s), {t['hits']} hits, "
            f"{100.0 * t['hits'] / max(t['accesses'], 1):.2f}%"
            for label, t in totals.items() if label in CASES_RT]
    tap.diag('\n'.join(rows))
    tap.ok(set(totals) >= set(CASES_RT), 'the shared windows '
           f"{', '.join(CASES_RT)} were logged", '\n'.join(other))
    if not set(totals) >= set(CASES_RT):
        return tap.done()
    # The windows count virtual addresses in any process: what they
    # counted must be one region's worth of physical memory
    spans = {label: t['hi'] - t['lo'] for label, t in totals.items()}
    tap.ok(all(span <= 1 << 20 for span in spans.values()),
           'what each window counted lies in 1 MiB of physical memory, the '
           'region', f'{spans}')
    # One pass over the guest's 256 KiB buffer is 4096 reads
    near = [w for w in windows if w['label'] == 'node1']
    tap.ok(totals['node1']['accesses'] >= 4096,
           "the guest's reads of node 1 reach the region: "
           f"{totals['node1']['accesses']} accesses", f"{totals['node1']}")
    tap.ok({w['vcpu'] for w in near} <= {0, 1},
           "only the cache's CPUs (0 and 1) accessed it",
           f"{[w['vcpu'] for w in near]}")
    tap.ok(totals['node1']['hits'] == totals['node1']['accesses'] and
           sum(w['foreign'] for w in near) == totals['node1']['accesses'],
           "100% hits, all in the region's locked ways, next to the noisy "
           'neighbour', f'{near}')
    far = [w for w in windows if w['label'] == 'far']
    rate_far = 100.0 * totals['far']['hits'] / max(totals['far']['accesses'],
                                                   1)
    # There the region is ordinary memory in the default class's ways,
    # which the neighbour streams through: how much stays depends on how
    # fast each of them reads, but none of it is in locked ways
    tap.ok(totals['far']['accesses'] >= 4096 and
           {w['vcpu'] for w in far} <= {2, 3} and
           sum(w['foreign'] for w in far) == 0 and rate_far < 90.0,
           "with the vCPUs on the other L2's CPUs (2 and 3), next to a "
           f'neighbour there: {rate_far:.2f}% hits (under 90%), none in '
           'locked ways', f'{far}')
    relocks = [w for w in windows if w['label'].startswith('prefetch-off')
               and w['accesses'] >= 16384]
    tap.ok(bool(relocks), 'QEMU relocked the region when the guest ran '
           "again: a prefetch-off window that loads all 16384 lines",
           f"{[w for w in windows if w['label'].startswith('prefetch')]}")
    return tap.done()


def judge_goldmont_l2(tap, windows, other, args, rounds, relock):
    """The L2 layout: residency, what evicts a region, the relock."""
    def rates(label):
        return [w['rate'] for w in windows if w['label'] == label]

    expected = {'plain': rounds, 'catonly': rounds, 'locked': rounds,
                'locked2': rounds, 'locked3': 1, 'locked5': 1, 'locked6': 1,
                'mig-in': 1,
                'mig-out': 1, 'locked4': 1}
    expected.update({label: 1 if relock else 0 for label in RELOCK_CASES})
    check_model(tap, windows, other, 2, 2048, expected)
    if not all(rates(label) for label in CASES
               if relock or label not in RELOCK_CASES):
        return tap.done()

    size = re.search(r'rig\.size=(\d+)([KM]?)', args.append)
    lines = int(size.group(1)) << {'': 0, 'K': 10, 'M': 20}[size.group(2)] \
        >> 6
    tap.ok(all(r == 100.0 for r in rates('locked')),
           'the locked region: 100% hits in every round under the noisy '
           'neighbour', f"{rates('locked')}")
    tap.ok(max(rates('plain')[1:] or rates('plain')) < 25.0,
           'ordinary memory in the neighbour\'s class: under 25% hits',
           f"{rates('plain')}")
    tap.ok(rates('plain')[-1] < rates('catonly')[-1] <= 100.0,
           'cache allocation alone keeps more than ordinary memory',
           f"plain {rates('plain')}, catonly {rates('catonly')}")
    prefetch = [w for w in windows if w['label'].startswith('prefetch-off')]
    measure = [w for w in prefetch if w['accesses'] >= 2 * lines]
    tap.ok(len(prefetch) >= 2, 'the kernel\'s locking and measurement are '
           'prefetch-off windows', f'{prefetch}')
    # Its window has the region's reads (one every 32 bytes), all hits in
    # the locked ways, and the measuring thread's own, in its class's ways
    tap.ok(bool(measure) and measure[-1]['foreign'] == 2 * lines,
           "the kernel's own measurement: all its reads of the region hit "
           'in the locked ways', f'{measure}')
    # Over QMP and HMP, one window each, and over QMP in a sandbox
    qmp = [w for w in windows if w['label'] == 'qmp-res']
    tap.ok(len(qmp) == 3 and all(w['foreign'] == w['accesses'] == lines
                                 for w in qmp),
           "QEMU's query-pseudolock-residency: all its reads of its own "
           'mapping hit in the locked ways', f'{qmp}')
    tap.ok(all(r == 100.0 for r in rates('locked2')),
           'WBINVD on the other L2 evicts nothing', f"{rates('locked2')}")
    locked3 = [w for w in windows if w['label'] == 'locked3'][0]
    tap.ok(locked3['misses'] == 1024,
           'writes to 1024 lines from the other L2 evict those lines '
           f"({locked3['misses']} misses)", f'{locked3}')
    locked5 = [w for w in windows if w['label'] == 'locked5'][0]
    tap.ok(locked5['misses'] == 1024 + 512,
           'CLFLUSH of 512 more lines evicts them too '
           f"({locked5['misses']} misses: those and the 1024 written)",
           f'{locked5}')
    locked6 = [w for w in windows if w['label'] == 'locked6'][0]
    tap.ok(locked6['misses'] == 1024 + 512 + 256,
           'CLFLUSH through 32-bit addresses (0x67) of 256 more evicts '
           f"them too ({locked6['misses']} misses)", f'{locked6}')
    mig_in = [w for w in windows if w['label'] == 'mig-in'][0]
    tap.ok(mig_in['foreign'] == lines - 1024 - 512 - 256,
           'an incoming migration by a QEMU on the cache\'s CPUs leaves the '
           f"locked lines in place ({mig_in['foreign']} hits there)",
           f'{mig_in}')
    mig_out = [w for w in windows if w['label'] == 'mig-out'][0]
    tap.ok(mig_out['foreign'] == 0,
           'one by a QEMU on the other L2 takes every line out of the '
           f"locked ways ({mig_out['misses']} misses)", f'{mig_out}')
    tap.ok(rates('locked4')[0] < 5.0,
           'WBINVD on its own L2 evicts the region', f"{rates('locked4')}")
    for label, what in (('mig-run', 'the migrated guest starts running: '
                         'QEMU relocks the region'),
                        ('loadvm', 'loadvm, and the guest runs on: QEMU '
                         'relocks the region'),
                        ('relocked', 'pseudolock-relock over QMP')):
        if not relock:
            break
        w = [w for w in windows if w['label'] == label][0]
        tap.ok(w['foreign'] == w['accesses'] == lines,
               f'{what}, and all {lines} reads hit in the locked ways '
               f"({w['foreign']})", f'{w}')
    # The catonly class was class 1 on L2 cache 0, while the reader read
    per_clos = {m.group(1): (int(m.group(2)), int(m.group(3)))
                for m in (re.search(r'L2 cache 0 clos (\d+): hits (\d+) '
                                    r'misses (\d+)', o) for o in other) if m}
    tap.ok(per_clos.get('1', (0, 0))[0] >= sum(
               w['hits'] for w in windows if w['label'] == 'catonly'),
           'the model counts hits and misses by class of service: class 1 '
           "of L2 cache 0 has at least the catonly windows' hits",
           f'{per_clos}')
    wbinvd = [o for o in other if 'wbinvd vcpu' in o]
    tap.ok(any('vcpu 3: L2 cache 1 emptied' in o for o in wbinvd) and
           any('vcpu 1: L2 cache 0 emptied' in o for o in wbinvd),
           'the offlined CPUs emptied their own L2 caches',
           '\n'.join(wbinvd))
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
