# SPDX-License-Identifier: GPL-2.0-or-later
"""A rig host driven from outside: the tests that act on the emulated
host's QEMU while its scenario runs (migration, vCPU hot-plug) start it
through this, with QMP and the scenario's report channel (ttyS1) as
sockets.

When the host kernel reports an RCU stall on its console, the state of
QEMU's vCPUs and local APICs is printed at once (as TAP comments), as
rig.py does for the scenarios it runs: a test that then waits for its
guest until it is killed still leaves the snapshot in its log."""

import copy
import os
import socket
import subprocess
import time

from qemu.qmp.legacy import QEMUMonitorProtocol

import rig


class Host:
    """One QEMU process of the rig, with QMP and the report channel."""

    def __init__(self, args, tmp, name, extra=(), stderr=None):
        self.qmp_path = os.path.join(tmp, f'{name}.qmp')
        self.report_path = os.path.join(tmp, f'{name}.report')
        args = copy.copy(args)
        args.console_log = f'{args.console_log}.{name}'
        self.console = rig.ConsoleWatch(args.console_log)
        self.cpus = rig.smp_cpus(args.smp)
        self.stall_reported = False
        cmd = rig.qemu_command(
            args, f'unix:{self.report_path},server=on,wait=off')
        cmd += ['-qmp', f'unix:{self.qmp_path},server=on,wait=off']
        cmd += list(extra)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stderr=stderr)
        deadline = time.monotonic() + 30
        while not (os.path.exists(self.qmp_path) and
                   os.path.exists(self.report_path)):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f'QEMU ({name}) did not start: '
                                   f'exit status {self.proc.poll()}')
            time.sleep(0.1)
        self.qmp = QEMUMonitorProtocol(self.qmp_path)
        self.qmp.connect()
        self.report = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.report.connect(self.report_path)
        self.buffer = b''

    def hmp(self, commands):
        """The output of each HMP command in @commands."""
        out = []
        for command in commands:
            try:
                out.append(self.qmp.cmd('human-monitor-command',
                                        **{'command-line': command}))
            except Exception as e:  # pylint: disable=broad-except
                out.append(f'(no answer: {e})')
        return out

    def watch_console(self):
        """Print QEMU's state the first time the host kernel stalls."""
        self.console.poll()
        if self.console.stalled and not self.stall_reported:
            self.stall_reported = True
            print(f'# the host kernel reported an RCU stall: '
                  f'{self.console.stalled}', flush=True)
            print('# QEMU at that moment:', flush=True)
            for line in rig.stall_snapshot(self.hmp, self.cpus):
                print(f'#   {line}', flush=True)

    def read_line(self, timeout):
        deadline = time.monotonic() + timeout
        while b'\n' not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError('no line from the guest')
            self.watch_console()
            self.report.settimeout(min(left, 1.0))
            try:
                data = self.report.recv(4096)
            except socket.timeout:
                continue
            if not data:
                raise EOFError('the guest closed its report channel')
            self.buffer += data
        line, self.buffer = self.buffer.split(b'\n', 1)
        return line.decode('utf-8', 'replace').rstrip('\r')

    def wait_ready(self, timeout):
        """Wait for the scenario's "ready", echoing its comments and
        failures on the way."""
        line = ''
        while line != 'ready':
            line = self.read_line(timeout)
            if line.startswith(('#', 'not ok', 'Bail out')):
                print(line, flush=True)

    def relay_guest_tap(self, tap, timeout):
        """Report the guest's own checks as @tap's, renumbered after
        ours, up to the guest's plan."""
        while True:
            line = self.read_line(timeout)
            if line.startswith(('ok ', 'not ok ')):
                tap.ok(line.startswith('ok '), line.split(' - ', 1)[-1])
            elif line.startswith('1..'):
                return
            else:
                print(line, flush=True)

    def close(self, timeout=60):
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.report.close()
        try:
            self.qmp.close()
        except (EOFError, OSError):
            pass    # QEMU closed the monitor first, as it does on quit


def migrate_to_file(host, path):
    host.qmp.cmd('stop')
    host.qmp.cmd('migrate', uri=f'file:{path}')
    deadline = time.monotonic() + 60
    while True:
        status = host.qmp.cmd('query-migrate').get('status')
        if status in ('completed', 'failed') or time.monotonic() > deadline:
            return status
        time.sleep(0.2)
