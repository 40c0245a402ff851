#!/usr/bin/env python
"""Run the phases of a make target one after another, each announced and timed, then the total: the log of
`make run` says what ran and how long each part took. A phase that fails stops the rest with its exit code.

Usage: python scripts/phases.py "NAME=COMMAND" ["NAME=COMMAND" ...]   (each COMMAND runs in bash)
"""

import subprocess
import sys
import time

from swecl.report.parts import duration_text  # the report's own: 12 s, 4.5 min, 2.3 h


def main(argv: list) -> int:
    phases = [a.partition("=")[::2] for a in argv]
    if not phases or any(not name or not cmd for name, cmd in phases):
        print('phases.py: give phases as "NAME=COMMAND", each with a name and a command.', file=sys.stderr)
        return 2
    start, times = time.monotonic(), []
    for i, (name, cmd) in enumerate(phases, 1):
        print(f"[{time.strftime('%H:%M:%S')}] phase {i}/{len(phases)}: {name}", flush=True)
        t = time.monotonic()
        rc = subprocess.run(["bash", "-c", cmd]).returncode
        times.append((name, time.monotonic() - t))
        if rc:
            print(f"phase {name} failed (exit {rc}) after {duration_text(times[-1][1])}", file=sys.stderr, flush=True)
            return rc
        print(f"[{time.strftime('%H:%M:%S')}] phase {name}: done in {duration_text(times[-1][1])}", flush=True)
    parts = ", ".join(f"{n} {duration_text(s)}" for n, s in times)
    print(f"{len(phases)} phases in {duration_text(time.monotonic() - start)}: {parts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
