"""SWE-Bench-CL on real repositories (flag `mirror`): tasks joined to their Verified rows grade gold→resolved and
empty→unresolved, and a compiled project's second install of a commit compiles from the cache."""

import json
import os
import time
from pathlib import Path

import pytest
from conftest import run

from swecl.grading.grading import grade
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks import datasets
from swecl.tasks.repos import mirror_candidates

MIRRORS = os.environ.get("SWECL_REPO_MIRROR", "")


def has_mirror(repo: str) -> bool:
    return bool(MIRRORS) and any((c / "HEAD").exists() for c in mirror_candidates(repo, Path(MIRRORS)))


@pytest.mark.mirror
def test_sympy_task_of_swe_bench_cl_grades_both_ways(swecl_bin, data_dir, tmp_path):
    if not has_mirror("sympy/sympy"):
        pytest.skip("no sympy mirror under SWECL_REPO_MIRROR")
    out = tmp_path / "v.json"
    r = run(
        swecl_bin,
        "validate",
        "--dataset",
        "swe-bench-cl",
        "--instances",
        "sympy__sympy-12096",
        "--compat",
        "--json",
        str(out),
        "--gradable",
        str(tmp_path / "g.json"),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    recs = {x["policy"]: x for x in json.loads(out.read_text())}
    assert recs["gold"]["resolved"] and not recs["empty"]["resolved"]
    assert json.loads((tmp_path / "g.json").read_text())["gradable"] == ["sympy__sympy-12096"]


@pytest.mark.mirror
@pytest.mark.slow
def test_compiled_project_rebuilds_from_the_cache(data_dir):
    if not has_mirror("scikit-learn/scikit-learn"):
        pytest.skip("no scikit-learn mirror under SWECL_REPO_MIRROR")
    task = next(t for t in datasets.load("swe-bench-cl").tasks if t.instance_id == "scikit-learn__scikit-learn-11310")
    sandbox = LocalSandbox(compat=True)
    times = []
    for _ in range(2):  # the same commit twice: the second install's compiler calls hit ccache
        t0 = time.time()
        g = grade(task, task.patch, sandbox)
        times.append(g.seconds.get("setup", time.time() - t0))
        assert g.resolved, g.error
    ccache = sandbox.env_for(task).path / ".ccache"
    assert ccache.is_dir() and any(ccache.rglob("*")), "the env holds no compiler cache"
    assert times[1] < times[0] / 2, times
