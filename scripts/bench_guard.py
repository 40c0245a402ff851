#!/usr/bin/env python
"""Time the tree guard (swecl.grading.guard) on a patch of many new empty files, on the mini benchmark's first task
in the local sandbox: applying the patch, listing the tree's changes (`tree_changes`) and `guard_tree`, each in
seconds, with the number of sandbox commands `guard_tree` ran.

Usage: python scripts/bench_guard.py [N ...]   (default: 1000 20000; files named like junk/d07/f01234.txt)
"""

import argparse
import json
import time

from swecl.grading.guard import guard_tree, tree_changes, untracked
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini
from swecl.tasks.repos import SAFE_GIT


def empty_files_patch(n: int) -> str:
    "A git diff that adds `n` empty files, 100 to a folder."
    heads = [f"junk/d{i // 100:03d}/f{i:05d}.txt" for i in range(n)]
    return "".join(f"diff --git a/{p} b/{p}\nnew file mode 100644\nindex 0000000..e69de29\n" for p in heads)


class Counting:
    "A session whose `run` counts its calls."

    def __init__(self, s):
        self.s, self.commands = s, 0

    def __getattr__(self, name):
        return getattr(self.s, name)

    def run(self, *a, **k):
        self.commands += 1
        return self.s.run(*a, **k)


def bench(n: int) -> dict:
    mini = load_mini()
    task = mini.task("swecl-mini__textkit-1")
    with LocalSandbox([mini.metadata["mirror"]]).open(task, install=False) as s:
        before = untracked(s)
        t0 = time.time()
        r = s.run(f"{SAFE_GIT} apply -", input=empty_files_patch(n), timeout=900)
        assert r.exit_code == 0, r.output[-500:]
        t1 = time.time()
        touched = tree_changes(s, before)
        t2 = time.time()
        counted = Counting(s)
        flags = guard_tree(counted, touched)
        t3 = time.time()
    return {
        "files": n,
        "touched": len(touched),
        "apply_s": round(t1 - t0, 2),
        "tree_changes_s": round(t2 - t1, 2),
        "guard_tree_s": round(t3 - t2, 2),
        "guard_commands": counted.commands,
        "flags": flags[:3],
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="*", type=int, default=[1000, 20000])
    for n in ap.parse_args(argv).n:
        print(json.dumps(bench(n)), flush=True)


if __name__ == "__main__":
    main()
