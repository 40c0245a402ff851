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
