"""A small validation on a local Ray with 2 workers gives the verdicts one process gives (flag: ray)."""

import dataclasses

import pytest

from swecl.grading.parallel import grade_jobs, job_groups
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

pytestmark = pytest.mark.ray


def test_local_ray_two_workers_same_verdicts():
    ray = pytest.importorskip("ray")
    mini = load_mini()
    tasks = mini.tasks[:4]
    tasks[1] = dataclasses.replace(tasks[1], version="0.1-b")  # two env groups, so both workers grade
    jobs = [(t, p) for t in tasks for p in (t.patch, "")]
    assert len(job_groups(jobs)) >= 2
    sandbox = LocalSandbox([mini.metadata["mirror"]])
    one = grade_jobs(jobs, sandbox, progress=False)
    try:
        two = grade_jobs(jobs, sandbox, workers=2, engine="ray", progress=False)
        assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
    finally:
        ray.shutdown()
    assert [(g.instance_id, g.resolved, g.infra_reason) for g in two] == [
        (g.instance_id, g.resolved, g.infra_reason) for g in one
    ]
    assert [g.resolved for g in one] == [True, False] * 4
