#!/usr/bin/env python
"""Label each experience of the SWE-ContextBench pool resolved, unresolved, unknown or not graded (swecl.pool.outcomes).

Reads the replay's reconstructed.jsonl (scripts/pool_replay.py) and the `--json` files of `swecl regrade` runs over its
patches; writes the outcomes file that `datasets.load_experience_pool` reads (package data, swecl/data/pool/).

Usage: python scripts/pool_outcomes.py RECONSTRUCTED.jsonl --gradings R1.json [R2.json ...] [--gradable JSON ...] [--out PATH]
"""

import argparse
import json
from pathlib import Path

from swecl.base.core import package_file
from swecl.pool.outcomes import experience_outcomes, outcome_counts, outcomes_file, write_outcomes
from swecl.pool.replay import POOL_FILE


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reconstructed", type=Path, help="reconstructed.jsonl from scripts/pool_replay.py")
    ap.add_argument("--gradings", nargs="+", type=Path, required=True, help="swecl regrade --json files (later win)")
    ap.add_argument(
        "--gradable",
        nargs="+",
        type=Path,
        default=[package_file("gradable", "swe-bench-cl.json")],
        help="gradable sets whose ids count as gradable (default: SWE-Bench-CL's)",
    )
    ap.add_argument("--out", type=Path, help="default: the package-data file of the pool the records came from")
    args = ap.parse_args(argv)
    recs = [json.loads(line) for line in args.reconstructed.read_text().splitlines() if line.strip()]
    gradings = [r for f in args.gradings for r in json.loads(f.read_text())["records"]]
    gradable = {i for f in args.gradable for i in json.loads(f.read_text())["gradable"]}
    outcomes = experience_outcomes(recs, gradings, gradable)
    method = (
        f"reconstructed patches ({args.reconstructed.name}) graded with swecl regrade ({', '.join(f.name for f in args.gradings)}) "
        f"on the instances of {', '.join(f.name for f in args.gradable)}"
    )
    out = args.out or outcomes_file(POOL_FILE)
    write_outcomes(out, outcomes, method)
    print(out, outcome_counts(outcomes))


if __name__ == "__main__":
    main()
