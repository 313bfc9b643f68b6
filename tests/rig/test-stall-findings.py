#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The rig names the stall it has seen: a timer interrupt left in service.

Feeds rig.timer_stuck_in_service() the local APICs of a real stalled rig
host (stall-lapics.txt: vCPUs 0 and 3 with their timer vector in ISR),
then variations of them, and checks which vCPUs it names (TAP).
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[0:0] = [HERE, os.path.dirname(HERE)]
import rig  # noqa: E402  pylint: disable=wrong-import-position
from taplib import Tap  # noqa: E402  pylint: disable=wrong-import-position


def lapics_of(path):
    """{vCPU: its 'info lapic' text} from a saved stall snapshot"""
    lapics = {}
    cpu = None
    with open(path, encoding='utf-8') as f:
        for line in f:
            if line.startswith('#'):
                continue
            m = re.match(r'\(qemu\) info lapic (\d+)', line)
            if m:
                cpu = int(m.group(1))
                lapics[cpu] = ''
            elif cpu is not None:
                lapics[cpu] += line
    return lapics


def named(findings):
    return [int(re.match(r'vCPU (\d+):', f).group(1)) for f in findings]


def main():
    tap = Tap()
    lapics = lapics_of(os.path.join(HERE, 'stall-lapics.txt'))
    tap.ok(sorted(lapics) == [0, 1, 2, 3], 'the sample has 4 local APICs',
           str(sorted(lapics)))

    findings = rig.timer_stuck_in_service(lapics)
    tap.ok(named(findings) == [0, 3],
           'vCPUs 0 and 3, whose ISR holds the timer vector, are named',
           '\n'.join(findings))
    tap.ok(all('vector 236' in f and 'PPR 0xe0' in f for f in findings),
           'with the vector and the processor priority it left',
           '\n'.join(findings))

    # vCPU 3 has an interrupt pending in IRR, none in service: a vCPU
    # about to take its tick, not a stalled one
    healthy = {1: lapics[1], 3: re.sub(r'^ISR\s.*$', 'ISR\t (none)',
                                       lapics[3], flags=re.M)}
    tap.ok(rig.timer_stuck_in_service(healthy) == [],
           'none with the timer vector only in IRR',
           str(rig.timer_stuck_in_service(healthy)))

    # another vector in service (an IPI's handler running) is normal
    other = {0: re.sub(r'^ISR\s.*$', 'ISR\t 253 ', lapics[0], flags=re.M)}
    tap.ok(rig.timer_stuck_in_service(other) == [],
           'none with another vector in service',
           str(rig.timer_stuck_in_service(other)))

    # a timer moved to another vector is followed
    moved = {0: lapics[0].replace('(vec 236)', '(vec 239)')
             .replace('ISR\t 236', 'ISR\t 239')}
    tap.ok(named(rig.timer_stuck_in_service(moved)) == [0],
           "the timer's vector is read from its LVT",
           str(rig.timer_stuck_in_service(moved)))
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
