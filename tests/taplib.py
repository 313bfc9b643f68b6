# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP output for the project's Python tests (meson reads it)."""

import sys


class Tap:
    """Numbered TAP results; diagnostics are shown for failures only."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, diag=''):
        self.n += 1
        self.failed += not cond
        print(f"{'ok' if cond else 'not ok'} {self.n} - {desc}")
        if not cond:
            for line in diag.splitlines():
                print(f'# {line}')
        sys.stdout.flush()
        return cond

    def skip(self, desc, why):
        self.n += 1
        print(f'ok {self.n} - # SKIP {desc}: {why}', flush=True)

    def diag(self, text):
        for line in text.splitlines():
            print(f'# {line}')
        sys.stdout.flush()

    def done(self):
        """Print the plan; the exit status for the test program."""
        print(f'1..{self.n}', flush=True)
        return 1 if self.failed else 0
