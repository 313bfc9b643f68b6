#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot an emulated host under the fork's QEMU and run a rig scenario.

The guest is a Linux kernel with the rig's busybox initramfs.  Its /init
runs the scenario named on the kernel command line and writes what the
scenario reports to the second serial port (ttyS1), which this script
copies to its own standard output: TAP for tests, plain text for the
demo.  The kernel console (ttyS0) goes to a log file, which is kept and
its tail shown when the run fails or times out.  An oops or a panic of
the host kernel on that console ends the run at once, and is reported as
such ("host kernel oopsed at boot: ...").  When the host kernel reports
an RCU stall, the state of QEMU's vCPUs and local APICs is taken at once
over a QMP socket and shown with the console's tail, so that a rare
stall in CI can be told apart: a timer the guest never armed, an
interrupt that waits behind a stale in-service bit, or a vCPU that
sleeps with its interrupt pending.

Exit status: 0 when the guest powered off after a TAP plan with no
failures (or, without --tap, after the scenario finished), 1 otherwise.
"""

import argparse
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import tempfile
import time

TAP_RESULT = re.compile(r'^(not ok|ok)\b')
TAP_PLAN = re.compile(r'^1\.\.(\d+)')
# What the host kernel prints when it oopses or panics; the run stops
# there and says so, rather than waiting for a scenario that may never
# report again
KERNEL_DIED = re.compile(r'(Kernel panic - not syncing|Oops:|BUG: |'
                         r'general protection fault)')
# What it prints when a CPU goes without timer interrupts for 21 s: not
# fatal, but what a scenario that then times out waited for
KERNEL_STALLED = re.compile(r'rcu: INFO: \S+ detected stalls')


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    p.add_argument('--qemu', required=True)
    p.add_argument('--kernel', required=True)
    p.add_argument('--initrd',
                   help='the initramfs (none: the root is on a disk that '
                   '--qemu-arg gives)')
    p.add_argument('--scenario', required=True,
                   help='scenario script name inside the initramfs')
    p.add_argument('--cpu', default='max')
    p.add_argument('--smp', default='2')
    p.add_argument('--mem', default='512M')
    p.add_argument('--append', default='',
                   help='extra kernel command line')
    p.add_argument('--qemu-arg', action='append', default=[],
                   help='extra QEMU argument (repeatable)')
    p.add_argument('--reboot', action='store_true',
                   help='let the host reboot (a scenario over two boots); '
                   'by default a reboot ends the run, as a panic does')
    p.add_argument('--timeout', type=float, default=120)
    p.add_argument('--console-log', required=True,
                   help='file for the kernel console (ttyS0)')
    p.add_argument('--tap', action='store_true',
                   help='the scenario reports TAP; judge the run by it')
    p.add_argument('--tsc-khz', type=int,
                   help="this machine's TSC rate, given to the emulated "
                   'host as tsc_early_khz= (0: let its kernel measure it; '
                   'by default, what the program in $RIG_TSC_KHZ_PROBE '
                   'measures)')
    args = p.parse_args(argv)
    if args.tsc_khz is None:
        args.tsc_khz = machine_tsc_khz()
    return args


def machine_tsc_khz():
    """This machine's TSC rate in kHz, from the tsc-khz program that
    $RIG_TSC_KHZ_PROBE names (the meson tests set it); 0, with a note,
    when there is none.  Under TCG the emulated host's TSC ticks at this
    rate; left to measure it against the PIT, its kernel can be thrown
    off by a vCPU that loses the host CPU, and then keeps a rate many
    times too low: its clocks race and its watchdog reports soft
    lockups that never were."""
    probe = os.environ.get('RIG_TSC_KHZ_PROBE')
    if not probe:
        print('rig: RIG_TSC_KHZ_PROBE is not set (build/ours/tests/rig/'
              'tsc-khz); the emulated host measures its TSC rate itself, '
              'which a loaded machine can make it get wrong',
              file=sys.stderr)
        return 0
    try:
        done = subprocess.run([probe], capture_output=True, text=True,
                              timeout=10)
        if done.returncode == 0:
            return int(done.stdout)
        why = done.stderr.strip()
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        why = str(e)
    print(f'rig: {probe} gave no TSC rate ({why}); the emulated host '
          'measures it itself', file=sys.stderr)
    return 0


def qemu_command(args, report='stdio', qmp=None):
    """The QEMU command line of a rig host; @report is the chardev
    backend of ttyS1, the scenario's report channel; @qmp, a socket
    path for QMP."""
    # loglevel=5: the kernel's warnings reach the console log too, where
    # what comes before a rare stall (a clocksource found unstable, a
    # timer that failed its check) then shows
    append = ' '.join(filter(None, [
        'console=ttyS0', 'panic=-1', 'quiet', 'loglevel=5',
        f'rig.scenario={args.scenario}',
        f'tsc_early_khz={args.tsc_khz}' if args.tsc_khz else '',
        args.append]))
    return [
        args.qemu,
        '-machine', 'q35', '-accel', 'tcg',
        '-cpu', args.cpu, '-smp', args.smp, '-m', args.mem,
        '-nodefaults', '-display', 'none',
    ] + ([] if args.reboot else ['-no-reboot']) + [
        '-kernel', args.kernel,
    ] + (['-initrd', args.initrd] if args.initrd else []) + [
        '-append', append,
        '-chardev', f'file,id=console,path={args.console_log}',
        '-serial', 'chardev:console',
        '-serial', report,
    ] + (['-qmp', f'unix:{qmp},server=on,wait=off'] if qmp else []) + \
        args.qemu_arg


def hmp(path, commands, timeout=20):
    """The output of each HMP command in @commands, over the QMP socket
    at @path; an exception's text if QEMU cannot answer."""
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            stream = sock.makefile('rw', encoding='utf-8')

            def call(cmd, **arguments):
                stream.write(json.dumps({'execute': cmd,
                                         'arguments': arguments}) + '\n')
                stream.flush()
                while True:
                    reply = json.loads(stream.readline())
                    if 'return' in reply or 'error' in reply:
                        return reply

            json.loads(stream.readline())       # the greeting
            call('qmp_capabilities')
            return [call('human-monitor-command',
                         **{'command-line': c}).get('return', '')
                    for c in commands]
    except (OSError, ValueError) as e:
        return [f'(no answer: {e})']


def stall_snapshot(run_hmp, cpus):
    """What a stall needs to be explained, from QEMU: each vCPU's
    registers (HLT= in the flags line says it halted, IF is in RFL=) and
    its local APIC (the timer's LVT and counts, ISR, IRR, PPR).
    @run_hmp(COMMANDS) gives the output of each HMP command."""
    commands = ['info cpus', 'info registers -a'] + \
        [f'info lapic {cpu}' for cpu in range(cpus)]
    lines = []
    lapics = {}
    for command, out in zip(commands, run_hmp(commands)):
        lines.append(f'(qemu) {command}')
        lines += [line for line in out.splitlines() if line.strip() and (
            command != 'info registers -a' or
            re.match(r'(CPU#|RIP=|EIP=)', line))]
        if command.startswith('info lapic '):
            lapics[int(command.split()[-1])] = out
    return lines + timer_stuck_in_service(lapics)


def timer_stuck_in_service(lapics):
    """The vCPUs whose local APIC timer interrupt is still in service, from
    @lapics ({vCPU: its 'info lapic' text}).  Every timer interrupt ends
    with the guest's EOI within microseconds; one left in ISR raises the
    processor priority (PPR) to its class, so that every later timer
    interrupt, and any other of that class or below, waits in IRR for
    ever: that vCPU's tick has stopped, and RCU reports it stalled.  The
    rig's rare stall in CI was this one: QEMU sent EOI writes through
    stale TLB entries into another device while the memory map changed
    (fixed in patches/, system/physmem)."""
    found = []
    for cpu, text in sorted(lapics.items()):
        lvtt = re.search(r'^LVTT\s.*\(vec (\d+)\)', text, re.M)
        isr = re.search(r'^ISR\s+(.*)$', text, re.M)
        ppr = re.search(r'\bPPR (0x[0-9a-f]+)', text)
        if not (lvtt and isr):
            continue
        vector = int(lvtt.group(1))
        if str(vector) in isr.group(1).split():
            found.append(f'vCPU {cpu}: its timer interrupt (vector {vector}) '
                         'is still in service, never ended by an EOI; PPR '
                         f'{ppr.group(1) if ppr else "?"} holds back its '
                         'later timer interrupts')
    return found


def smp_cpus(smp):
    """The number of vCPUs at start that an -smp argument gives."""
    return int(re.match(r'(?:cpus=)?(\d+)', smp).group(1))


def console_tail(path, lines=25):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read().splitlines()[-lines:]
    except OSError:
        return []


class ConsoleWatch:
    """Reads the kernel console log as it grows, for oopses and panics
    (and RCU stalls, which explain a time-out)."""

    def __init__(self, path):
        self.path = path
        # QEMU truncates the log only once it opens it; until then a
        # previous run's stall or panic would be read as this run's
        with open(path, 'w', encoding='utf-8'):
            pass
        self.offset = 0
        self.partial = ''
        self.died = None
        self.stalled = None

    def poll(self):
        try:
            with open(self.path, encoding='utf-8', errors='replace') as f:
                f.seek(self.offset)
                text = f.read()
                self.offset = f.tell()
        except OSError:
            return None
        *lines, self.partial = (self.partial + text).split('\n')
        for line in lines:
            if self.died is None and KERNEL_DIED.search(line):
                self.died = line.strip()
            if self.stalled is None and KERNEL_STALLED.search(line):
                self.stalled = line.strip()
        return self.died


def run(args):
    tmp = tempfile.TemporaryDirectory()
    qmp = os.path.join(tmp.name, 'rig.qmp')
    cmd = qemu_command(args, qmp=qmp)
    cpus = smp_cpus(args.smp)
    snapshot = []
    console = ConsoleWatch(args.console_log)
    reported = False
    died = None
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, 'out')
    sel.register(proc.stderr, selectors.EVENT_READ, 'err')

    planned = None
    results = []
    stderr = b''
    pending = b''
    timed_out = False
    open_streams = 2
    while open_streams:
        remaining = args.timeout - (time.monotonic() - start)
        if remaining <= 0:
            timed_out = True
            proc.kill()
            break
        died = console.poll()
        if died:
            proc.kill()
            break
        if console.stalled and not snapshot:
            snapshot = stall_snapshot(lambda c: hmp(qmp, c), cpus)
        for key, _ in sel.select(timeout=min(remaining, 1.0)):
            data = os.read(key.fileobj.fileno(), 65536)
            if not data:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if key.data == 'err':
                stderr += data
                continue
            pending += data
            *lines, pending = pending.split(b'\n')
            for raw in lines:
                line = raw.decode('utf-8', 'replace').rstrip('\r')
                print(line, flush=True)
                reported = True
                if TAP_RESULT.match(line):
                    results.append(line.startswith('ok'))
                elif TAP_PLAN.match(line):
                    planned = int(TAP_PLAN.match(line).group(1))
    status = proc.wait()
    elapsed = time.monotonic() - start
    # a panic reboots, which -no-reboot turns into QEMU's exit
    died = died or console.poll()

    problems = []
    if died:
        what = 'panicked' if 'panic' in died else 'oopsed'
        when = 'during the scenario' if reported else 'at boot'
        problems.append(f'host kernel {what} {when}: {died}')
    if timed_out:
        problems.append(f'timed out after {args.timeout:.0f} s')
        if console.stalled:
            problems.append('the host kernel reported RCU stalls (vCPUs '
                            'without timer interrupts; an overloaded '
                            f'machine?): {console.stalled}')
    elif status != 0:
        problems.append(f'QEMU exited with status {status}')
    if args.tap and not timed_out:
        if planned is None:
            problems.append('the scenario printed no TAP plan')
        elif planned != len(results):
            problems.append(f'planned {planned} tests, ran {len(results)}')
    if args.tap and not all(results):
        problems.append(f'{results.count(False)} test(s) failed')

    if problems:
        say = print if args.tap else (lambda s: print(s, file=sys.stderr))
        if args.tap:
            print(f'Bail out! {"; ".join(problems)}'
                  if planned is None or timed_out or died else
                  f'# {"; ".join(problems)}')
        else:
            say(f'rig: {"; ".join(problems)}')
        for line in stderr.decode('utf-8', 'replace').splitlines():
            say(f'# qemu: {line}')
        say(f'# kernel console kept in {args.console_log}; its end:')
        for line in console_tail(args.console_log):
            say(f'#   {line}')
        if snapshot:
            say('# QEMU when the host kernel first reported the stall:')
            for line in snapshot:
                say(f'#   {line}')
        return 1
    print(f'# guest ran for {elapsed:.1f} s', flush=True)
    return 0


def main():
    return run(parse_args())


if __name__ == '__main__':
    sys.exit(main())
