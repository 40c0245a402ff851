#!/usr/bin/env python
"""A cold validation of SWE-Bench-CL, gold and empty, with `--workers 2`: wall time and where it went.

One chunk (some of the sequences) runs `swecl validate` in a cache folder of its own, so every env is built and every
testbed prepared during the run (uv's download cache stays as it is: that is PyPI's side, not swecl's). A machine
that lives a few hours cannot validate all 273 tasks in one go, so the figure is the sum over chunks run one after
another; that sum bounds one run from above (one run would overlap the chunks' tails).

Usage:
  python scripts/bench_cold_validation.py run TAG SEQUENCE... [--out DIR] [--workers 2]
  python scripts/bench_cold_validation.py summary [--out DIR]
A chunk's records, wall time and disk use go to DIR/TAG.json (default `cold-validation/`); `summary` prints a row per
chunk and the sum: wall, env builds (and waits for them), testbed preparation, tests, the rest (applying, install
checks, verdicts), failed opens (the sessions that could not be opened: an env or testbed that failed to build) and
waiting (workers × wall − the gradings' own seconds), and the testbeds' disk use per task; "as packaged" counts the tasks whose verdicts (gold
resolved and empty not, or not) match the gradable set kept with swecl. Run it with the project's Python (`.venv/bin/python`).
Target (#33): all 273 tasks in at most 8 hours on this 2-core machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from swecl.grading.validation import gradable_record, load_gradable
from swecl.runs.caches import cache_entries

SWECL = Path(sys.executable).parent / "swecl"
PARTS = ("env", "testbed", "tests")


def disk_mb(folder: Path) -> float:
    "Megabytes `folder` takes on disk (0 when absent)."
    if not folder.exists():
        return 0.0
    return int(subprocess.run(["du", "-sk", str(folder)], capture_output=True, text=True).stdout.split()[0]) / 1024


def run_chunk(tag: str, sequences: list, out: Path, workers: int) -> dict:
    "Validate `sequences` cold in `out/cache-TAG`; the chunk's summary, also written to `out/TAG.json`."
    cache, records = out / f"cache-{tag}", out / f"{tag}.records.json"
    if cache.exists() and any(cache.iterdir()):
        sys.exit(f"{cache} is not empty, so the run would not be cold; remove it or pick another TAG.")
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [str(SWECL), "validate", "--dataset", "swe-bench-cl", "--policy", "both", "--compat", "--workers",
           str(workers), "--sequences", *sequences, "--json", str(records), "--logs", str(out / f"logs-{tag}")]  # fmt: skip
    t0 = time.perf_counter()
    # exit 1 means some grading was unexpected: the chunk still counts (a cold cache cannot be had twice)
    rc = subprocess.run(cmd, env={**os.environ, "SWECL_CACHE_DIR": str(cache)}).returncode
    wall = time.perf_counter() - t0
    if not records.exists():
        sys.exit(f"swecl validate ended with exit code {rc} and wrote no records; see its output above.")
    chunk = {"tag": tag, "sequences": sequences, "workers": workers, "wall": wall, "rc": rc, "records": str(records),
             "envs_mb": disk_mb(cache / "envs"), "testbeds_mb": disk_mb(cache / "testbeds"),
             "testbed_bytes": [e.bytes for e in cache_entries("testbeds", cache)]}  # fmt: skip
    (out / f"{tag}.json").write_text(json.dumps(chunk, indent=1))
    return chunk


def not_as_packaged(recs: list) -> list:
    "The tasks these records make gradable or not otherwise than the gradable set kept with swecl says (its own rule)."
    kept = set(load_gradable("swe-bench-cl")["gradable"])
    here = set(gradable_record(recs, "swe-bench-cl")["gradable"])
    return sorted((kept ^ here) & {r["instance_id"] for r in recs})


def breakdown(chunk: dict) -> dict:
    "Minutes of wall, of each part summed over the gradings, of the rest and of waiting, for one chunk."
    data = json.loads(Path(chunk["records"]).read_text())
    recs = data["records"] if isinstance(data, dict) else data
    secs = [r.get("seconds") or {} for r in recs]
    opened = [s for s in secs if "env" in s or "testbed" in s]  # the local sandbox splits an open that succeeded
    total = sum(s.get("total", 0) for s in secs)
    parts = {p: sum(s.get(p, 0) for s in opened) for p in PARTS}
    failed = sum(s.get("total", 0) for s in secs if not ("env" in s or "testbed" in s))
    tasks = len({r["instance_id"] for r in recs})
    differs = not_as_packaged(recs)
    row = {"chunk": chunk["tag"], "tasks": tasks, "as packaged": tasks - len(differs), "wall": chunk["wall"]} | parts
    row |= {"rest": total - sum(parts.values()) - failed, "failed opens": failed}
    row |= {"waiting": max(0.0, chunk["workers"] * chunk["wall"] - total)}
    return {k: round(v / 60, 1) if isinstance(v, float) else v for k, v in row.items()} | {
        "differs": differs,
        "envs GB": round(chunk["envs_mb"] / 1024, 2),
        "testbeds GB": round(chunk["testbeds_mb"] / 1024, 2),
        "testbed MB/task": round(statistics.median(chunk["testbed_bytes"]) / 1e6) if chunk["testbed_bytes"] else 0,
    }


def summary(out: Path) -> list:
    "A row per chunk in `out` and their sum, printed as a table (minutes; disk in GB)."
    rows = [
        breakdown(json.loads(f.read_text())) for f in sorted(out.glob("*.json")) if not f.name.endswith(".records.json")
    ]
    if not rows:
        sys.exit(f"No chunk in {out}; run one first: bench_cold_validation.py run TAG SEQUENCE...")
    keys = [k for k in rows[0] if k != "differs"]
    total = {k: round(sum(r[k] for r in rows), 2) if k != "chunk" else "all" for k in keys}
    total["testbed MB/task"] = "-"
    total["as packaged"] = sum(r["as packaged"] for r in rows)
    for r in [*rows, total]:
        print(" | ".join(f"{k} {r[k]}" for k in keys))
    if differs := [i for r in rows for i in r["differs"]]:
        print(f"not as the packaged gradable set says: {', '.join(differs)}")
    print(f"wall in all: {total['wall'] / 60:.2f} h over {total['tasks']} tasks (target: 273 tasks in at most 8 h)")
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["run", "summary"])
    ap.add_argument("tag", nargs="?")
    ap.add_argument("sequences", nargs="*")
    ap.add_argument("--out", type=Path, default=Path("cold-validation"))
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.what == "run":
        if not a.tag or not a.sequences:
            sys.exit("run needs a TAG and at least one sequence (django, sympy, ...).")
        run_chunk(a.tag, a.sequences, a.out, a.workers)
    summary(a.out)
