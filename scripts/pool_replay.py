#!/usr/bin/env python
"""Reconstruct the final patch of each SWE-ContextBench Lite experience session (swecl.pool.replay, swecl.pool.check).

Reads $SWECL_DATA_DIR/swe-contextbench/experience-lite.jsonl.gz and the base commits from the mirrors under
$SWECL_REPO_MIRROR; writes reconstructed.jsonl and sanity.json into $SWECL_POOL_OUT (default pool-replay/).

Usage: python scripts/pool_replay.py [--new-files package|all] [--out-dir DIR] [--no-sanity]
"""

import argparse
import os
from pathlib import Path

from swecl.pool.check import write_reconstruction
from swecl.pool.replay import POOL_FILE
from swecl.pool.session import NEW_FILE_RULES


def main(argv=None):
    data_dir = Path(os.environ.get("SWECL_DATA_DIR", "../shared/data"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--new-files",
        choices=NEW_FILE_RULES,
        default="package",
        help="which session-created files belong to the patch (default: %(default)s)",
    )
    ap.add_argument("--out-dir", type=Path, default=Path(os.environ.get("SWECL_POOL_OUT", "pool-replay")))
    ap.add_argument("--no-sanity", action="store_true", help="skip the gold/declared-patch checks")
    args = ap.parse_args(argv)
    records, checks, line = write_reconstruction(
        args.out_dir,
        data_dir / POOL_FILE,
        data_dir / "swe-bench-lite.jsonl",
        Path(os.environ.get("SWECL_REPO_MIRROR", "../.mirror")),
        args.new_files,
        checks=not args.no_sanity,
    )
    print(line)
    for r in records:
        if r["status"] != "reconstructed":
            print(f"  {r['status']}: {r['instance_id']}: {(r['reason'] or {}).get('pattern') or r['reason']}")
    for f in (checks or {}).get("git_apply_check_failed", []):
        print("  apply --check failed:", f["instance_id"], f["error"][:150])


if __name__ == "__main__":
    main()
