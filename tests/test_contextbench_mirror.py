"""The pipeline check on SWE-ContextBench Lite (flags `mirror` and `slow`): the shipped contextbench-lite plan with the
scripted model over psf/requests' related tasks, with and without the oracle links into the experience pool. The two
tasks that grade here are run and graded (the scripted model submits no patch, so each is unresolved with its real
test counts); the one that does not (psf__requests-2344, needs-network) is not run and is left out under its label;
`swecl report` lists the cells as pipeline checks and puts them in no metric."""

import json
import os
from pathlib import Path

import pytest
from conftest import run

from swecl.grading.validation import load_gradable
from swecl.tasks import datasets
from swecl.tasks.repos import mirror_candidates

MIRRORS = os.environ.get("SWECL_REPO_MIRROR", "")
SEQ = "psf_requests_sequence"


def has_mirror(repo: str) -> bool:
    return bool(MIRRORS) and any((c / "HEAD").exists() for c in mirror_candidates(repo, Path(MIRRORS)))


def attempts(cell_dir: Path) -> dict:
    return {r["instance_id"]: r for r in map(json.loads, (cell_dir / "attempts.jsonl").read_text().splitlines())}


@pytest.mark.mirror
@pytest.mark.slow
def test_scripted_cell_on_contextbench_lite_grades_the_gradable_tasks(swecl_bin, data_dir, tmp_path):
    if not has_mirror("psf/requests"):
        pytest.skip("no psf/requests mirror under SWECL_REPO_MIRROR")
    bench = datasets.load("contextbench-lite")
    tasks = next(s for s in bench.sequences if s.id == SEQ).tasks
    g = load_gradable("contextbench-lite")
    gradable = [t.instance_id for t in tasks if t.instance_id in g["gradable"]]
    other = {t.instance_id: g["other"][t.instance_id]["label"] for t in tasks if t.instance_id in g["other"]}
    assert (gradable, other) == (["psf__requests-3359", "psf__requests-3481"], {"psf__requests-2344": "needs-network"})

    results, out = tmp_path / "results", tmp_path / "run.json"
    cmd = [swecl_bin, "run", "--plan", "contextbench-lite", "--model", "scripted", "--sequences", "requests"]
    cmd += ["--conditions", "none,oracle:summary", "--seeds", "0", "--embedder", "hashing", "--max-tasks", "3"]
    r = run(*cmd, "--out", str(results), "--json", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    est = json.loads(out.read_text())["estimate"]["total"]
    assert (est["cells"], est["attempts"], est["to_run"], est["left_out"]) == (2, 6, 4, 2)
    cells = {c["cell"]: c for c in json.loads(out.read_text())["cells"]}
    none, oracle = f"{SEQ}__scripted__none__s0", f"{SEQ}__scripted__oracle-summary__s0"
    assert set(cells) == {none, oracle}
    for c in cells.values():
        assert (c["n_tasks"], c["attempts"], c["new"], c["left_out"], c["model_errors"]) == (3, 3, 3, 1, 0)
    assert "1 left out (not gradable here)" in r.stdout
    # the pool's 300 experiences and the two graded first attempts; the task left out is no memory
    assert cells[oracle]["memory"] == len(bench.experiences) + 2

    for name in (none, oracle):
        a = attempts(results / "contextbench-lite" / name)
        assert set(a) == {t.instance_id for t in tasks}
        left = a["psf__requests-2344"]  # not run, never graded as 0
        assert (left["exit_reason"], left["infra_reason"], left["steps"], left["f2p_total"]) == (
            "not-gradable",
            "needs-network",
            0,
            0,
        )
        assert not (results / "contextbench-lite" / name / "trajectories" / "first-i1-j1-s0.jsonl").exists()
        for iid in gradable:  # run and graded: no patch, FAIL_TO_PASS tests fail, most PASS_TO_PASS tests pass
            x = a[iid]
            assert (x["exit_reason"], x["infra_reason"], x["resolved"], x["patch"]) == ("submitted", None, False, "")
            assert x["f2p_total"] == len(bench.task(iid).FAIL_TO_PASS) > 0 and x["f2p_passed"] == 0
            assert x["p2p_total"] == len(bench.task(iid).PASS_TO_PASS) and 0 < x["p2p_passed"] <= x["p2p_total"]
        want = {iid: bench.task(iid).links for iid in gradable} if name == oracle else {iid: [] for iid in gradable}
        assert {iid: [h[0] for h in a[iid]["retrieved"]] for iid in gradable} == want
        preds = [
            json.loads(x) for x in (results / "contextbench-lite" / name / "predictions.jsonl").read_text().splitlines()
        ]
        assert [p["instance_id"] for p in preds] == gradable

    again = run(*cmd, "--out", str(results), "--json", str(out))  # resumable: nothing left to run, nothing re-run
    assert again.returncode == 0, again.stderr[-3000:]
    assert [c["new"] for c in json.loads(out.read_text())["cells"]] == [0, 0]

    rep = run(swecl_bin, "report", "--results", str(results), "--out", str(tmp_path / "reports"))
    assert rep.returncode == 0, rep.stderr[-3000:]
    readme = (tmp_path / "reports" / "README.md").read_text()
    pipeline = readme.split("## Pipeline checks", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in pipeline.splitlines() if line.startswith("| contextbench-lite ")]
    cols = lambda line: [c.strip() for c in line.strip("|").split("|")]
    # experiment, sequence, model, kind, condition, seed, tasks, attempts, graded, left_out, patches, ended
    assert sorted(cols(line)[4:] for line in rows) == [
        [cond, "0", "3", "3", "2", "needs-network 1", "0", "not-gradable 1, submitted 2"]
        for cond in ("none", "oracle/summary")
    ]
    assert "## Continual-learning metrics" not in readme and not (tmp_path / "reports" / "cl_metrics.csv").exists()


# The witness on SWE-ContextBench's Django tasks, whose lists spell Django's tests as pytest ids
# (tests/queries/test_q.py::QTests::test_x) while Django's own runner reports `test_x (queries.test_q.QTests)`.
CB_DJANGO = "django__django-28211"
FORGED_OK = """diff --git a/django/db/models/query_utils.py b/django/db/models/query_utils.py
--- a/django/db/models/query_utils.py
+++ b/django/db/models/query_utils.py
@@ -61,6 +61,8 @@ def __init__(self, *args, **kwargs):
     def _combine(self, other, conn):
         if not isinstance(other, Q):
             raise TypeError(other)
+        import sys
+        sys.stderr.write("ok\\n")  # ends the runner's `test_x (...) ... ` line before its FAIL: the log reads ok
         obj = type(self)()
         obj.connector = conn
         obj.add(self, conn)
"""


def _graded_cb_django(monkeypatch, witness: bool):
    from swecl.grading import grading
    from swecl.sandbox.sandbox import LocalSandbox

    if not has_mirror("django/django"):
        pytest.skip("no django/django mirror under SWECL_REPO_MIRROR")
    task = datasets.load("contextbench-lite").task(CB_DJANGO)
    monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])  # the witness alone must stop it
    if not witness:
        monkeypatch.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))
    return task, grading.grade(task, FORGED_OK, LocalSandbox([MIRRORS]))


@pytest.mark.mirror
@pytest.mark.slow
def test_a_forged_ok_on_a_contextbench_django_task_is_caught_by_the_witness(monkeypatch):
    from swecl.base.labels import as_counted, infra_label

    task, g = _graded_cb_django(monkeypatch, witness=True)
    assert g.error is None and g.patch_applied and not g.resolved and not g.f2p_resolved, g
    for t in task.FAIL_TO_PASS:  # the log's status (ok) against the run's own (FAIL), under the dataset's id
        assert any(f.startswith(f"witness: the log says {t} PASSED, the test run itself FAILED") for f in g.suspicious)
    rec = {"instance_id": CB_DJANGO, "resolved": g.resolved, "infra_reason": g.infra_reason, "suspicious": g.suspicious}
    assert not infra_label(rec) and not as_counted(rec)["resolved"]


@pytest.mark.mirror
@pytest.mark.slow
def test_the_forged_ok_resolves_on_the_log_alone(monkeypatch):
    "Control: without the witness the same patch, which fixes nothing, is RESOLVED, so the attack above is real."
    task, g = _graded_cb_django(monkeypatch, witness=False)
    assert g.resolved and all(g.statuses[t] == "PASSED" for t in task.FAIL_TO_PASS), g
