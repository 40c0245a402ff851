"""The mini benchmark graded both ways, gold and empty patches: `swecl validate --sandbox docker` (images built by
`swecl images build`) gives every task the verdict `--sandbox local` gives it. Needs a Docker engine
(scripts/docker-engine.sh start)."""

import json

import pytest
from conftest import run

pytestmark = pytest.mark.docker


def verdicts(path) -> dict:
    "(instance, policy) -> resolved, unresolved or the infrastructure label."
    recs = json.loads(path.read_text())
    label = lambda r: r["infra_reason"] or ("resolved" if r["resolved"] else "unresolved")
    return {(r["instance_id"], r["policy"]): label(r) for r in recs}


def test_mini_benchmark_has_the_same_verdicts_in_docker_and_locally(swecl_bin, tmp_path):
    r = run(swecl_bin, "images", "build", "--dataset", "mini", "--json", str(tmp_path / "images.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    built = json.loads((tmp_path / "images.json").read_text())
    assert len(built) == 10 and {b["status"] for b in built} <= {"built", "current"}, built
    for kind in ("local", "docker"):
        r = run(swecl_bin, "validate", "--dataset", "mini", "--policy", "both", "--sandbox", kind, "--json", str(tmp_path / f"{kind}.json"))  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr  # every gold patch resolves and no empty one does
    local, docker = verdicts(tmp_path / "local.json"), verdicts(tmp_path / "docker.json")
    assert len(local) == 20 and docker == local, {k: (v, docker.get(k)) for k, v in local.items() if docker.get(k) != v}


def test_bench_grading_adds_the_docker_sandbox_figures(swecl_bin, tmp_path):
    r = run(swecl_bin, "images", "build", "--dataset", "mini", "--instances", "swecl-mini__textkit-1")
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "bench.json"
    r = run(swecl_bin, "bench", "grading", "--dataset", "mini", "--instances", "swecl-mini__textkit-1", "--sandbox", "docker", "--json", str(out))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    b = json.loads(out.read_text())
    assert (b["n"], b["agreeing"], b["docker_agreeing"]) == (1, 1, 1), b
    assert b["tasks"][0]["docker_verdicts"] == ["resolved", "unresolved"] and b["median_docker_total_s"] > 0, b
    assert "docker" in r.stdout, r.stdout
