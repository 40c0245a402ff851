"""The experience-pool replay reproduces its measured result on the whole SWE-ContextBench Lite pool (flag `mirror`:
it reads the base commits of all twelve repositories from the mirrors under SWECL_REPO_MIRROR)."""

import os
from pathlib import Path

import pytest

from swecl.pool.check import write_reconstruction
from swecl.pool.replay import POOL_FILE, read_pool
from swecl.pool.session import mirror_gitdir

MIRRORS = os.environ.get("SWECL_REPO_MIRROR", "")


def has_mirror(repo: str) -> bool:
    try:
        return bool(MIRRORS) and bool(mirror_gitdir(repo, Path(MIRRORS)))
    except FileNotFoundError:
        return False


@pytest.mark.mirror
def test_pool_replay_reproduces_the_measured_result(data_dir, tmp_path):
    pool = data_dir / POOL_FILE
    if not pool.exists():
        pytest.skip(f"no experience pool at {pool}")
    missing = sorted({r["repo"] for r in read_pool(pool) if not has_mirror(r["repo"])})
    if missing:
        pytest.skip(f"no mirror of {', '.join(missing)} under SWECL_REPO_MIRROR")
    records, checks, _ = write_reconstruction(tmp_path, pool, data_dir / "swe-bench-lite.jsonl", Path(MIRRORS))
    status = {r["instance_id"]: r["status"] for r in records}
    assert len(records) == 300
    assert sorted(i for i, s in status.items() if s == "unknown") == [
        "django__django-11797",
        "scikit-learn__scikit-learn-15512",
    ]
    assert list(status.values()).count("reconstructed") == 298
    assert "failed" not in status.values()
    assert checks["git_apply_check_ok"] == checks["reconstructed_nonempty"] == 298, checks["git_apply_check_failed"]
    assert checks["declared_same_tracked_files"] >= 266
