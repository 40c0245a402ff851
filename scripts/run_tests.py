#!/usr/bin/env python
"""Run every notebook's tests (as nbdev_test does) and `pytest tests/`, then print one closing line
`N passed, M failed` counting notebooks and pytest tests. Zero tests found is a failure.

Usage: python scripts/run_tests.py [--flags "slow mirror"] [--only NAME ...] [--workers 2]
"""

import argparse
import configparser
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _skip_flags(forced):
    cfg = configparser.ConfigParser(delimiters=["="])
    cfg.read(ROOT / "settings.ini")
    return sorted(set(cfg["DEFAULT"].get("tst_flags", "").split()) - set(forced))


def _test_one(path, skip_flags):
    # In a worker process: nbdev's own runner, so flags and directives behave exactly as nbdev_test.
    from nbdev.test import test_nb

    ok, secs = test_nb(Path(path), skip_flags=skip_flags, showerr=True)
    return ok, secs


def _expected_seconds(path: Path) -> int:
    "A notebook's test time, estimated by the size of its code cells (which tracks it well enough to order by)."
    cells = json.loads(path.read_text()).get("cells", [])
    return sum(len("".join(c.get("source", ""))) for c in cells if c.get("cell_type") == "code")


def run_notebooks(forced, only, workers):
    nbs = sorted(
        p
        for p in (ROOT / "nbs").rglob("*.ipynb")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(ROOT / "nbs").parts)
    )
    if only:
        nbs = [p for p in nbs if any(o in p.relative_to(ROOT / "nbs").as_posix() for o in only)]
    skip = _skip_flags(forced)
    results = {}
    # One fresh process per notebook: execnb replaces __main__, and notebooks must not share state. Each is forked
    # from a server that has imported nbdev's runner and the heavy third-party libraries once (scripts/
    # notebook_preload.py: seconds of CPU per notebook otherwise) and nothing of swecl, so every notebook still imports
    # the package itself.
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["nbdev.test", "notebook_preload"])
    # the longest first, so that no long notebook starts last while the other worker idles
    nbs.sort(key=_expected_seconds, reverse=True)
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, max_tasks_per_child=1) as ex:
        futs = {ex.submit(_test_one, str(p), skip): p for p in nbs}
        for f in as_completed(futs):
            p = futs[f]
            try:
                ok, secs = f.result()
            except Exception as e:
                ok, secs = False, 0.0
                print(f"{p.name}: runner crashed: {e}", file=sys.stderr)
            name = p.relative_to(ROOT / "nbs").as_posix()
            results[name] = ok
            print(f"  {'ok  ' if ok else 'FAIL'} {name} ({secs:.1f}s)", flush=True)
    return results


def start_pytest(forced, workers):
    "`pytest tests/` started in the background, its output kept in a file: (process, junit xml path, output file)."
    xml = Path(tempfile.mkdtemp()) / "junit.xml"
    env = dict(os.environ, SWECL_TEST_FLAGS=" ".join(forced))
    cmd = [sys.executable, "-m", "pytest", str(ROOT / "tests"), "-q", "-p", "no:cacheprovider", f"--junitxml={xml}"]
    # the slowest tests named at the end, where the run's time goes (SWECL_DURATIONS=0: every test)
    cmd += ["--durations=" + os.environ.get("SWECL_DURATIONS", "15")]
    if workers > 1:  # pytest-xdist: a file's tests stay on one worker, so module fixtures are built once
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    out = open(xml.with_name("pytest.out"), "w+")
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT), xml, out


def finish_pytest(started):
    "Wait for the pytest of `start_pytest`, print its output, and count: (passed, failed, skipped)."
    proc, xml, out = started
    rc = proc.wait()
    out.seek(0)
    sys.stdout.write(out.read())
    out.close()
    if not xml.exists():
        return 0, 1 if rc not in (0, 5) else 0, rc
    suite = ET.parse(xml).getroot()
    suites = [suite] if suite.tag == "testsuite" else list(suite)
    tests = sum(int(s.get("tests", 0)) for s in suites)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return tests - bad - skipped, bad, skipped


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--flags", default="", help="test flags to run that are skipped by default")
    ap.add_argument("--only", nargs="*", default=[], help="notebook name fragments to restrict to")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-pytest", action="store_true")
    a = ap.parse_args()
    forced = a.flags.split()
    t0 = time.time()
    # pytest runs beside the notebooks, its output shown after theirs: each side's serial stretches (the fork server's
    # imports, pytest's start, the last files of each) leave a core idle that the other side fills
    pytest = None if a.no_pytest else start_pytest(forced, a.workers)
    print("notebooks:", flush=True)
    nb = run_notebooks(forced, a.only, a.workers)
    nb_pass = sum(nb.values())
    nb_fail = len(nb) - nb_pass
    py_pass = py_fail = py_skip = 0
    if pytest:
        print("pytest:", flush=True)
        py_pass, py_fail, py_skip = finish_pytest(pytest)
    failed_nbs = [k for k, v in nb.items() if not v]
    print(
        f"notebooks: {nb_pass} passed, {nb_fail} failed" + (f" ({', '.join(sorted(failed_nbs))})" if failed_nbs else "")
    )
    print(f"pytest: {py_pass} passed, {py_fail} failed, {py_skip} skipped")
    print(f"time: {time.time() - t0:.1f}s")
    total_pass, total_fail = nb_pass + py_pass, nb_fail + py_fail
    print(f"{total_pass} passed, {total_fail} failed, {py_skip} skipped")
    if not nb:
        print("no notebooks were found: counting this as a failure", file=sys.stderr)
        return 1
    if total_pass + total_fail == 0:
        print("no tests ran: counting this as a failure", file=sys.stderr)
        return 1
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main())
