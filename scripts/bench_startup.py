#!/usr/bin/env python
"""How long swecl takes to start: `import swecl`, `swecl --help`, `swecl run --help`, and `swecl show` (list and one
attempt) on a results folder of 100 attempts, each the median wall time of several fresh processes.

Usage: python scripts/bench_startup.py [--repeat 5]
Targets (#34): import and --help under 1 s; show under 2 s on 100 attempts.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWECL = Path(sys.executable).parent / "swecl"
SCRIPT = ROOT / "swecl" / "data" / "scripts" / "mini.yaml"


def seconds(cmd: list, repeat: int) -> float:
    "Median wall seconds of `cmd` over `repeat` fresh processes (it must succeed)."
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def hundred_attempts(folder: Path) -> tuple:
    "A results folder with one cell of 100 attempts (one real scripted attempt, copied), and one attempt id."
    plan = folder / "plan.yaml"
    plan.write_text(json.dumps({"experiment": "startup", "dataset": "mini", "models": [f"scripted:{SCRIPT}"],
                                "sequences": ["swecl-mini_textkit_sequence"], "max_tasks": 1,
                                "schedule": "sequential", "conditions": [{"memory": "none"}], "validate": False}))  # fmt: skip
    subprocess.run(
        [str(SWECL), "run", "--plan", str(plan), "--out", str(folder / "res")], check=True, capture_output=True
    )
    log = next((folder / "res").rglob("attempts.jsonl"))
    first = json.loads(log.read_text().splitlines()[0])
    traj = Path(first["trajectory"]) if first.get("trajectory") else None
    rows = []
    for k in range(100):
        rec = first | {"kind": "first", "i": k + 1, "j": k + 1}
        name = f"first-i{k + 1}-j{k + 1}-s0"
        if traj and traj.exists():
            copy = traj.with_name(f"{name}.jsonl")
            if not copy.exists():
                copy.write_bytes(traj.read_bytes())
            rec["trajectory"] = str(copy)
        rows.append(json.dumps(rec))
    log.write_text("\n".join(rows) + "\n")
    return folder / "res", "first-i50-j50-s0"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    py = sys.executable
    rows = {
        "import swecl": seconds([py, "-c", "import swecl"], a.repeat),
        "import swecl.cli.app": seconds([py, "-c", "import swecl.cli.app"], a.repeat),
        "swecl --help": seconds([str(SWECL), "--help"], a.repeat),
        "swecl run --help": seconds([str(SWECL), "run", "--help"], a.repeat),
    }
    with tempfile.TemporaryDirectory() as d:
        res, attempt = hundred_attempts(Path(d))
        rows["swecl show --list (100 attempts)"] = seconds([str(SWECL), "show", str(res), "--list"], a.repeat)
        rows["swecl show <attempt> (100 attempts)"] = seconds([str(SWECL), "show", str(res), attempt], a.repeat)
    for what, s in rows.items():
        print(f"{what:40s} {s:6.2f} s")


if __name__ == "__main__":
    main()
