"""End-to-end: `swecl run` with parallel worker processes, run_cell.ipynb through papermill, and the Ray engine (flagged)."""

import json
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run

SCRIPT = str(ROOT / "swecl" / "data" / "scripts" / "mini.yaml")


def _plan(tmp_path, **kw):
    p = tmp_path / "plan.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "experiment": "par",
                "dataset": "mini",
                "models": [f"scripted:{SCRIPT}"],
                "conditions": [{"memory": "none"}],
                "max_tasks": 2,
                "schedule": "sequential",
            }
            | kw
        )
    )
    return p


def test_run_plan_in_parallel_processes(swecl_bin, tmp_path):
    r = run(
        swecl_bin,
        "run",
        "--plan",
        str(_plan(tmp_path)),
        "--out",
        str(tmp_path / "res"),
        "--workers",
        "2",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    cells = json.loads((tmp_path / "r.json").read_text())["cells"]
    assert sorted((c["n_tasks"], c["attempts"], c["resolved_first"]) for c in cells) == [(2, 2, 1), (2, 2, 1)]
    for c in cells:
        d = Path(c["dir"])
        assert (d / "manifest.json").exists() and len((d / "predictions.jsonl").read_text().splitlines()) == 2
    again = run(
        swecl_bin,
        "run",
        "--plan",
        str(_plan(tmp_path)),
        "--out",
        str(tmp_path / "res"),
        "--workers",
        "2",
        "--json",
        str(tmp_path / "r2.json"),
    )
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads((tmp_path / "r2.json").read_text())["cells"]
    assert [c["new"] for c in resumed] == [0, 0]  # resumed: nothing redone
    changed = run(
        swecl_bin, "run", "--plan", str(_plan(tmp_path, budget={"max_steps": 3})), "--out", str(tmp_path / "res")
    )
    assert changed.returncode == 1 and "different configuration (max_steps)" in changed.stdout


@pytest.mark.thorough  # nbs/runs/11e_notebook_engine.ipynb runs the same notebook through papermill in every run
def test_run_cell_notebook_with_papermill(tmp_path):
    import papermill as pm

    cell = {
        "experiment": "nb",
        "dataset": "mini",
        "sequence_id": "swecl-mini_textkit_sequence",
        "model": f"scripted:{SCRIPT}",
        "max_tasks": 1,
        "schedule": "sequential",
    }
    pm.execute_notebook(
        str(ROOT / "nbs" / "run_cell.ipynb"),
        str(tmp_path / "out.ipynb"),
        kernel_name="python3",
        progress_bar=False,
        parameters={"cell": json.dumps(cell), "out": str(tmp_path / "res")},
        cwd=str(tmp_path),
    )
    rows = [json.loads(l) for l in next((tmp_path / "res" / "nb").glob("*/attempts.jsonl")).read_text().splitlines()]
    assert [(r["instance_id"], r["resolved"]) for r in rows] == [("swecl-mini__textkit-1", True)]


@pytest.mark.slow
def test_ray_engine(tmp_path):
    ray = pytest.importorskip("ray")
    from swecl.runs.runner import run_plan

    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        res = run_plan(str(_plan(tmp_path)), tmp_path / "res", engine="ray", progress=False)
    finally:
        ray.shutdown()
    assert sorted((c["n_tasks"], c["attempts"]) for c in res) == [(2, 2), (2, 2)]
