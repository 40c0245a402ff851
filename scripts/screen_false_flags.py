#!/usr/bin/env python
"""Measure the static patch screen's false flags (swecl.grading.screen): run `screen_patch` over every gold patch of
every gradable set (and of all of SWE-bench Verified), over the real agents' predictions in
$SWECL_DATA_DIR/real-predictions (CodeR's dev half only), and over the recorded runs' patches kept in
$SWECL_DATA_DIR (the SWE-Bench-CL authors' Gemini 2.0 Flash patches that swecl/data/regrade grades). Prints the
patches and flags per source, then every flag. A gold patch is a real fix, so any flag on one is a false flag.

Usage: python scripts/screen_false_flags.py [--quiet]   (exit 1 when a gold patch is flagged)
"""

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

from swecl.base.core import diff_paths
from swecl.grading.screen import screen_patch
from swecl.grading.validation import GRADABLE_DIR, load_gradable
from swecl.tasks.datasets import load

DATA = Path(os.environ.get("SWECL_DATA_DIR", "../shared/data"))
REAL = DATA / "real-predictions"
GEMINI = DATA / "swe-bench-cl-authors" / "gemini-2.0-flash"
POOL = DATA / "swe-contextbench" / "experience-lite.jsonl.gz"


def jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def task_rows() -> dict:
    "instance_id -> task, from Verified and Lite (the repositories and test patches of every prediction here)."
    return {t.instance_id: t for name in ("lite", "verified") for t in load(name).tasks}


def gold_sources() -> dict:
    "source name -> [(instance_id, patch, task)]: the gold patches of each gradable set, and of all of Verified."
    out = {}
    for path in sorted(GRADABLE_DIR.glob("*.json")):
        g = load_gradable(path.stem)
        tasks = {t.instance_id: t for t in load(g["dataset"]).tasks}
        out[f"gold {path.stem}"] = [(i, tasks[i].patch, tasks[i]) for i in g["gradable"]]
    out["gold verified (all 500)"] = [(t.instance_id, t.patch, t) for t in load("verified").tasks]
    return out


def preds_entries(content: str) -> list:
    "The prediction records of a `*_preds.json` text: a map of instance ids to records, a list, or one record."
    try:
        data = json.loads(content)
    except ValueError:
        return []
    data = list(data.values()) if isinstance(data, dict) and "model_patch" not in data else data
    return [r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict)]


def pool_declared() -> list:
    "(instance_id, patch) of each SWE-ContextBench Lite session: the last `*_preds.json` its agent wrote (Write tool)."
    out = []
    for line in gzip.open(POOL, "rt"):
        s, patch = json.loads(line), None
        for e in s["trajectory"]:
            inp = json.loads(e["text"]) if e["kind"] == "tool_use" and e.get("tool") == "Write" else {}
            if str(inp.get("file_path", "")).endswith("_preds.json"):
                mine = [
                    r
                    for r in preds_entries(inp.get("content", ""))
                    if r.get("instance_id") == s["experience_instance_id"]
                ]
                patch = mine[-1].get("model_patch") if mine else patch
        if patch:
            out.append((s["experience_instance_id"], patch))
    return out


def prediction_sources(rows: dict) -> dict:
    "source name -> [(instance_id, patch, task)]: real agents' predictions and the recorded runs' patches."
    files = {
        "coder lite dev-half": REAL / "coder-2024-06/all_preds.dev-half.jsonl",
        "vorflux verified500": REAL / "vorflux-verified500/all_preds.jsonl",
    }
    files |= {
        f"mini-swe-agent {p.name.split('.')[0]}": p
        for p in sorted((REAL / "mini-swe-agent-sonnet45-verified100").glob("*.preds.jsonl"))
    }
    files["gemini memory_disabled preds"] = GEMINI / "preds_memory_disabled.jsonl"
    out = {k: [(r["instance_id"], r.get("model_patch") or "") for r in jsonl(p)] for k, p in files.items()}
    state = json.loads((GEMINI / "eval_state.json").read_text())["task_eval_progress"]
    for model, conditions in state.items():
        for cond, runs in conditions.items():
            out[f"gemini eval_state {cond}"] = [(i, v.get("model_patch") or "") for i, v in runs.items()]
    out["claude-code contextbench pool"] = pool_declared()
    return {k: [(i, p, rows[i]) for i, p in v if p.strip()] for k, v in out.items()}


def screen_source(patches: list) -> list:
    "(instance_id, flag) for every flag the screen gives the patches."
    return [(i, f) for i, patch, t in patches for f in screen_patch(patch, t.repo, set(diff_paths(t.test_patch, "b")))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quiet", action="store_true", help="counts only, not each flag")
    args = ap.parse_args(argv)
    rows = task_rows()
    sources = gold_sources() | prediction_sources(rows)
    results = {k: screen_source(v) for k, v in sources.items()}
    print(f"{'source':34} {'patches':>8} {'flagged':>8} {'flags':>6}")
    for k, flags in results.items():
        print(f"{k:34} {len(sources[k]):>8} {len({i for i, _ in flags}):>8} {len(flags):>6}")
    if not args.quiet:
        for k, flags in results.items():
            for i, f in flags:
                print(f"{k} | {i} | {f}")
    return int(any(flags for k, flags in results.items() if k.startswith("gold")))


if __name__ == "__main__":
    sys.exit(main())
