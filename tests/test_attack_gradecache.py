"""A RESOLVED the grade cache holds for an attack is not served once the grader it fooled has changed (issue #49, 4).

A cache keyed without the witness hands every later run the verdict an older witness reached: an attack a fixed
witness catches would stay RESOLVED. Here the fooled grader is the one without the guard and the witness (the control
of test_attack_grading, which the attack fools for real); its RESOLVED is cached under the fingerprint of a copy of
swecl, the copy's witness changes, and the same cache grades the attack again, for real, guard and witness on. The
old key (swecl's modules and the known-defects table, not the witness) hashes both copies alike: under it the stale
RESOLVED is served, which the control shows.

Graded for real: the mini benchmark, LocalSandbox under bubblewrap.
"""

import shutil
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import run

from swecl.base.labels import as_counted, infra_label
from swecl.base.schema import Task
from swecl.grading import grading
from swecl.grading.gradecache import (
    PACKAGE_DIR,
    UNBUILT,
    VERDICT_DATA,
    GradeCache,
    code_fingerprint,
    env_identity,
    from_cache,
    grade_key,
    verdict_code,
)
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
TASK = MINI.task("swecl-mini__textkit-1")
SB = LocalSandbox([MINI.metadata["mirror"]])
INIT = "src/textkit/__init__.py"
LIE = f"PASSED {TASK.FAIL_TO_PASS[0]}"
OLD_DATA = ("known_defects.json",)  # the package data the key hashed before the witness and the labels
WITNESS = "data/witness/swecl_witness.py"


def attack_patch() -> str:
    "A patch that fixes nothing and prints the failing test's PASSED line at exit, after pytest's own report."
    with SB.open(TASK, install=False) as s:
        s.write_file(INIT, s.read_file(INIT) + f"import atexit\natexit.register(lambda: print({LIE!r}))\n")
        return s.diff()


def counted_resolved(g) -> bool:
    "What every rate counts of a grading: its record as an attempt (flags and run labels applied)."
    rec = {"instance_id": TASK.instance_id, "resolved": g.resolved, "infra_reason": g.infra_reason}
    rec |= {"suspicious": g.suspicious}
    return not infra_label(rec) and as_counted(rec)["resolved"]


def swecl_copy(root: Path, witness_tail: str = "") -> Path:
    "A copy of what swecl's fingerprint hashes (modules and package data), `witness_tail` appended to its witness."
    for p in [*PACKAGE_DIR.glob("*/*.py"), *(PACKAGE_DIR / "data" / f for f in VERDICT_DATA)]:
        dest = root / p.relative_to(PACKAGE_DIR)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest)
    (root / WITNESS).write_text((root / WITNESS).read_text() + witness_tail)
    return root


def keyed(package: Path, data: tuple = VERDICT_DATA) -> dict:
    "The verdict code of the installed swecl with the fingerprint of `package` (hashing `data` of its package data)."
    return verdict_code() | {"swecl": code_fingerprint.__wrapped__(package, data)}


def test_a_cached_resolved_is_not_served_after_the_witness_changes(tmp_path, monkeypatch):
    before, after = swecl_copy(tmp_path / "before"), swecl_copy(tmp_path / "after", "\n# the witness, fixed\n")
    assert keyed(before) != keyed(after)
    attack, store = attack_patch(), tmp_path / "grades"
    with monkeypatch.context() as m:  # the grader the attack fools, no guard and no witness: it is cached RESOLVED
        m.setattr(grading, "guard_tree", lambda *a, **k: [])
        m.setattr(grading.screen, "screen_session", lambda *a, **k: [])
        m.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))
        fooled = GradeCache(store, keyed(before)).grade(TASK, attack, SB)
        fooled_old_key = GradeCache(store, keyed(before, OLD_DATA)).grade(TASK, attack, SB)
    assert counted_resolved(fooled) and counted_resolved(fooled_old_key), fooled.record(full=True)
    assert len(list(store.rglob("*.json"))) == 2  # both kept
    # the witness changed: the key moves, the attack is graded again, for real, and is not resolved
    cache = GradeCache(store, keyed(after))
    g = cache.grade(TASK, attack, SB)
    assert (cache.misses, cache.hits, from_cache(g)) == (1, 0, False)
    assert not counted_resolved(g), g.record(full=True)
    # control: with the witness it was reached under, the stored RESOLVED is served (the entry is real and readable)
    same = GradeCache(store, keyed(before)).grade(TASK, attack, SB)
    assert from_cache(same) and counted_resolved(same)
    # the old key did not see the witness: both copies hash alike, and the stale RESOLVED is served after the change
    assert keyed(before, OLD_DATA) == keyed(after, OLD_DATA)
    stale = GradeCache(store, keyed(after, OLD_DATA)).grade(TASK, attack, SB)
    assert from_cache(stale) and counted_resolved(stale)


def test_a_cached_resolved_is_not_served_after_the_env_is_rebuilt(tmp_path, monkeypatch):
    "The attack's RESOLVED, stored with the env's build, is graded again (not resolved) once the env is rebuilt."
    monkeypatch.setenv("SWECL_CACHE_DIR", str(tmp_path / "cache"))  # an env of its own: no other test's is rebuilt
    sb, attack = LocalSandbox([MINI.metadata["mirror"]]), attack_patch()
    with monkeypatch.context() as m:
        m.setattr(grading, "guard_tree", lambda *a, **k: [])
        m.setattr(grading.screen, "screen_session", lambda *a, **k: [])
        m.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))
        assert counted_resolved(GradeCache().grade(TASK, attack, sb))
    env = Path(sb.env_for(TASK).path)
    assert env.is_relative_to(tmp_path)
    assert from_cache(GradeCache().grade(TASK, attack, sb))  # the same build: served (the unguarded verdict)
    (env / ".ready.new").write_text("ok\n")  # rebuilt: a new `.ready` renamed into place, as `venvs.atomic_dir` does
    (env / ".ready.new").replace(env / ".ready")
    g = GradeCache().grade(TASK, attack, sb)
    assert not from_cache(g) and not counted_resolved(g), g.record(full=True)


@pytest.mark.docker
def test_a_docker_verdict_is_kept_with_its_image_id(swecl_bin, tmp_path):
    from swecl.sandbox.docker_sandbox import DockerSandbox

    r = run(swecl_bin, "images", "build", "--dataset", "mini", "--instances", TASK.instance_id)
    assert r.returncode == 0, r.stdout + r.stderr
    sb = DockerSandbox()
    image, _ = sb.image_for(TASK)
    cache = GradeCache(tmp_path)
    assert cache.grade(TASK, TASK.patch, sb).resolved
    env = cache.read(grade_key(TASK, TASK.patch, sb))["env"]
    assert env == {"kind": "docker", "image": image, "build": sb.client.images.get(image).id}
    assert from_cache(cache.grade(TASK, TASK.patch, sb))
    gone = Task(**asdict(TASK) | {"instance_id": "swecl-mini__no-such-task-1"})
    assert env_identity(sb, gone)["build"] == UNBUILT  # looked up on the engine, never pulled: a miss
