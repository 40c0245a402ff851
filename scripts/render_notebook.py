#!/usr/bin/env python
"""Run a notebook with papermill as swecl runs its own (`swecl.runs.notebook_engine.execute_notebook`: the kernel
over IPC, so no transport warning, and no progress bar), e.g. the report's driver in `make run`.

Usage: python scripts/render_notebook.py NOTEBOOK OUTPUT [NAME=VALUE ...]   (the notebook's parameters, as strings)
"""

import sys
from pathlib import Path

from swecl.runs.notebook_engine import execute_notebook


def main(argv: list) -> int:
    if len(argv) < 2 or not Path(argv[0]).is_file() or any("=" not in a for a in argv[2:]):
        print(
            "render_notebook.py: give NOTEBOOK (an existing file), OUTPUT and NAME=VALUE parameters.", file=sys.stderr
        )
        return 2
    Path(argv[1]).parent.mkdir(parents=True, exist_ok=True)
    execute_notebook(argv[0], argv[1], dict(a.split("=", 1) for a in argv[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
