"""Red-team attacks on the integrity mends of this wave (the witness on SWE-ContextBench's Django ids, `every_run` known
defects, egg folders judged file by file), graded for real on Django tasks (flags `mirror` and `slow`) and unit-level.
Each attack once worked; each test now shows it caught (a control shows the attack itself is real).

1. W1: the witness named a unittest test by `result.getDescription(test)`, which the code under test controls
   (`TestCase.shortDescription`, `TestCase.__str__`); one line made a failing test read `ok` in the log and in the
   witness's lines alike. The witness now names a test from the test object and its class.
2. E2: `setup.py install` copies the project into an egg folder the tests import from; a patched setup.py wrote code
   into the egg's django/ files after setup(). An egg's copy of the project's own file must equal the working copy's.
3. E1: a zipped egg named `django.<x>-py3.6.egg` (a file) was admitted as the project's own, and an easy-install.pth
   line naming it too: a sitecustomize.py inside ran at every start of Python. A zipped egg is a finding.
4. `own` was the base tree's top-level names cut at the first dot: a pytest.ini made `pytest` the project's own.
5. F1 (false flag): the witness checked SWE-ContextBench's sympy ids through bare names two files share.
6. every_run: a record graded before the table knew the task (no label) was still counted.
"""

import base64
import difflib
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from swecl.base.labels import as_counted, counted_verdict, counting, infra_label
from swecl.grading import evidence, grading
from swecl.grading import witness as witness_mod
from swecl.grading.grading import Grade
from swecl.grading.layer import env_finding, layer_findings, pth_problem
from swecl.grading.witness import Witness
from swecl.sandbox.isolation import RunResult
from swecl.tasks import datasets
from swecl.tasks.repos import mirror_candidates

MIRRORS = os.environ.get("SWECL_REPO_MIRROR", "")
CB = "contextbench-lite"
CB_DJANGO = "django__django-28211"  # Django 2.0, `python setup.py install`, F2P test_combine_or_{empty,both_empty}
CB_DJANGO_2 = "django__django-27858"  # Django 2.0 too, 245 PASS_TO_PASS (about 3 minutes)
SITE = "lib/python3.6/site-packages/"


# --- helpers -----------------------------------------------------------------------------------------------------------


def django_git() -> Path:
    found = [c for c in mirror_candidates("django/django", Path(MIRRORS)) if (c / "HEAD").exists()] if MIRRORS else []
    if not found:
        pytest.skip("no django/django mirror under SWECL_REPO_MIRROR")
    return found[0]


def show(commit: str, path: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={django_git()}", "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def diff(path: str, old: str, new: str) -> str:
    body = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
    return f"diff --git a/{path} b/{path}\n{body}"


def appended(task, path: str, code: str) -> str:
    "A patch appending `code` to `path` as at the task's base commit."
    old = show(task.base_commit, path)
    return diff(path, old, old + "\n" + code)


def task_of(dataset: str, iid: str):
    return datasets.load(dataset).task(iid)


def graded(task, patch, monkeypatch, tmp_path, *, screen=True, witness=True, probe=True):
    "(grade, the witness of its test run, its log): the real grading, with the named defences switched off."
    from swecl.sandbox.sandbox import LocalSandbox

    django_git()
    if not screen:
        monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])
    if not probe:
        monkeypatch.setattr(grading, "env_changes", lambda *a, **k: [])
    seen, real = [], grading.run_witnessed
    if witness:

        def spy(s, cmd, n):
            r, w = real(s, cmd, n)
            seen.append(w)
            return r, w

        monkeypatch.setattr(grading, "run_witnessed", spy)
    else:
        monkeypatch.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))
    g = grading.grade(task, patch, LocalSandbox([MIRRORS]), log_dir=tmp_path)
    return g, (seen[0] if seen else None), Path(g.log_path).read_text()


def counted_resolved(g) -> bool:
    "What every rate counts of a grading: its record as an attempt (flags and labels applied)."
    rec = {"instance_id": g.instance_id, "resolved": g.resolved, "f2p_resolved": g.f2p_resolved}
    rec |= {"infra_reason": g.infra_reason, "suspicious": g.suspicious, "patch_applied": g.patch_applied}
    return not infra_label(rec) and bool(as_counted(rec)["resolved"] or as_counted(rec)["f2p_resolved"])


def spelled(test_id: str) -> str:
    "The unittest spelling Django 2.0 on Python 3.6 prints for a ContextBench id."
    path, cls, name = test_id.split("::")
    return f"{name} ({path[:-3].removeprefix('tests/').replace('/', '.')}.{cls})"


# --- W1: the witness's test ids are the code under test's to write ----------------------------------------------------

W1 = {  # one line in the code under test; the log AND the witness's lines then read every test `ok`
    "shortDescription": (
        "from unittest import case as _case\n_case.TestCase.shortDescription = lambda self: 'x ... ok'\n",
        lambda t: f"{spelled(t)}\nx ... ok",  # the witness's key for the failing test
    ),
    "__str__": (
        "from unittest import case as _case\n_str = _case.TestCase.__str__\n"
        "_case.TestCase.__str__ = lambda self: _str(self) + ' ... ok\\nzz (x.y)'\n",
        lambda t: f"{spelled(t)} ... ok\nzz (x.y)",
    ),
}


@pytest.mark.mirror
@pytest.mark.slow
@pytest.mark.parametrize("how", list(W1))
def test_w1_a_rewritten_test_description_forges_the_log_not_the_witness(how, monkeypatch, tmp_path):
    code, key = W1[how]
    task = task_of(CB, CB_DJANGO)
    g, w, log = graded(task, appended(task, "django/db/models/query_utils.py", code), monkeypatch, tmp_path)
    # controls: the patch fixes nothing, the runner itself says so, and the forged description reached the log
    assert g.patch_applied and "FAILED (failures=2)" in log, (g, log[-2000:])
    for t in task.FAIL_TO_PASS:
        assert key(t) in log and re.search(rf"^FAIL: {re.escape(spelled(t))}", log, re.M)
        assert w is not None and w.statuses.get(spelled(t)) == "FAILED", (t, w.statuses if w else None)  # its own id
    assert not g.resolved and not counted_resolved(g), g
    assert any(f.startswith("witness: the log says") for f in g.suspicious), g.suspicious


@pytest.mark.mirror
@pytest.mark.slow
@pytest.mark.thorough
def test_w1_on_a_second_contextbench_django_task(monkeypatch, tmp_path):
    task = task_of(CB, CB_DJANGO_2)
    g, w, log = graded(task, appended(task, "django/db/models/query_utils.py", W1["shortDescription"][0]),
                       monkeypatch, tmp_path)  # fmt: skip
    assert g.patch_applied and re.search(r"^FAILED \(", log, re.M)
    assert not counted_resolved(g), g


# --- E2: code written into the installed egg is run by the tests and read by no one -----------------------------------

E2_PAYLOAD = "\nimport unittest\nunittest.TestCase.shortDescription = lambda self: 'x ... ok'\n"  # the screen flags it
E2_SETUP = """
import base64 as _b, glob as _g, os as _o
for _d in _g.glob(_o.path.join(sys.prefix, 'lib', 'python*', 'site-packages', 'Django-*.egg')):
    with open(_o.path.join(_d, 'django', 'db', 'models', 'query_utils.py'), 'a') as _f:
        _f.write(_b.b64decode({blob!r}).decode())
"""


@pytest.mark.mirror
@pytest.mark.slow
def test_e2_control_the_payload_in_the_patch_itself_is_flagged_by_the_screen(monkeypatch, tmp_path):
    task = task_of(CB, CB_DJANGO)
    g, _, _ = graded(task, appended(task, "django/db/models/query_utils.py", E2_PAYLOAD), monkeypatch, tmp_path)
    assert any("unittest's runner" in f for f in g.suspicious) and not counted_resolved(g), g.suspicious


@pytest.mark.mirror
@pytest.mark.slow
def test_e2_code_setup_py_writes_into_the_egg_is_found(monkeypatch, tmp_path):
    task = task_of(CB, CB_DJANGO)
    blob = base64.b64encode(E2_PAYLOAD.encode()).decode()
    patch = appended(task, "setup.py", E2_SETUP.format(blob=blob))
    g, w, log = graded(task, patch, monkeypatch, tmp_path)
    assert g.patch_applied and "FAILED (failures=2)" in log and "x ... ok" in log  # the egg's code ran
    assert any("django/db/models/query_utils.py is not the working copy's" in f for f in g.suspicious), g.suspicious
    assert not counted_resolved(g), g


# --- E1: a zipped egg with a sitecustomize, admitted by the layer's own judgement ---------------------------------------

E1_SITECUSTOMIZE = """
import unittest.case as _c
_run = _c.TestCase.run
def _ok_run(self, result=None):
    if result is not None:
        result.addFailure = lambda test, err: type(result).addSuccess(result, test)
    try:
        return _run(self, result)
    finally:
        if result is not None:
            del result.addFailure
_c.TestCase.run = _ok_run
"""
E1_SETUP = """
import base64 as _b, zipfile as _z, os as _o, glob as _g
for _sp in _g.glob(_o.path.join(sys.prefix, 'lib', 'python*', 'site-packages')):
    with _z.ZipFile(_o.path.join(_sp, 'django.evil-py3.6.egg'), 'w') as _zf:
        _zf.writestr('sitecustomize.py', _b.b64decode({blob!r}).decode())
    with open(_o.path.join(_sp, 'easy-install.pth'), 'a') as _f:
        _f.write('./django.evil-py3.6.egg\\n')
"""


def e1_patch(task) -> str:
    return appended(task, "setup.py", E1_SETUP.format(blob=base64.b64encode(E1_SITECUSTOMIZE.encode()).decode()))


@pytest.mark.mirror
@pytest.mark.slow
def test_e1_a_zipped_egg_with_a_sitecustomize_is_caught_by_the_env_probe(monkeypatch, tmp_path):
    task = task_of(CB, CB_DJANGO)
    g, _, log = graded(task, e1_patch(task), monkeypatch, tmp_path)
    # the start-up code ran (the failing tests read ok) and only the probe's .pth hash names it
    assert all(f"{spelled(t)} ... ok" in log for t in task.FAIL_TO_PASS)
    assert "pth /testenv/lib/python3.6/site-packages/easy-install.pth: changed by the install step" in g.suspicious
    assert any("django.evil-py3.6.egg: written by the install step, a zipped egg" in f for f in g.suspicious)
    assert not counted_resolved(g)


@pytest.mark.mirror
@pytest.mark.slow
def test_e1_the_layer_alone_finds_the_zipped_egg(monkeypatch, tmp_path):
    task = task_of(CB, CB_DJANGO)
    g, _, _ = graded(task, e1_patch(task), monkeypatch, tmp_path, probe=False)
    assert not counted_resolved(g) and any("a zipped egg" in f for f in g.suspicious), g.suspicious


DJANGO_OWN = {
    "",
    "AUTHORS",
    "CONTRIBUTING",
    "Gruntfile",
    "INSTALL",
    "LICENSE",
    "MANIFEST",
    "README",
    "django",
    "docs",
    "extras",
    "js_tests",
    "package",
    "scripts",
    "setup",
    "tests",
    "tox",
}  # base_names of Django 2.0's tree


def test_e1_unit_a_zipped_egg_and_its_pth_line():
    found = layer_findings({SITE + "django.evil-py3.6.egg": "written", SITE + "easy-install.pth": "written"},
                           DJANGO_OWN, lambda p: "./django.evil-py3.6.egg\n")  # fmt: skip
    assert env_finding(SITE + "Evil-1.0-py3.6.egg", "written", DJANGO_OWN, lambda p: "")  # control: judged by name
    assert any("a zipped egg" in f for f in found), found


def test_layer_unit_what_an_egg_folder_may_hold():
    "Caught: a start-up module, a nested egg, a runner module in an egg folder; a .pth line outside site-packages."
    read = lambda p: ""
    for rel in ("Evil-1.0-py3.6.egg/sitecustomize.py", "Evil-1.0-py3.6.egg/Evil2-py3.6.egg/sitecustomize.py",
                "Evil-1.0-py3.6.egg/unittest/__init__.py", "Evil-1.0-py3.6.egg/_pytest/runner.py"):  # fmt: skip
        assert env_finding(SITE + rel, "written", DJANGO_OWN, read), rel
    assert pth_problem("/testenv/lib/python3.6/site-packages/Evil-py3.6.egg")
    assert pth_problem("./Evil-py3.6.egg/sub")
    ep = "[ PyTest11 ]\nx = y\n"
    assert env_finding(SITE + "Evil-1.0-py3.6.egg/EGG-INFO/entry_points.txt", "written", DJANGO_OWN, lambda p: ep)


def test_layer_unit_a_config_file_makes_no_runner_name_the_projects_own():
    "`base_names` keeps folders and .py modules: a tree with pytest.ini, setup.cfg and tox.ini owns no pytest or tox."
    own = {"setup", "src", "requests", "tests"}  # base_names of such a tree (setup.py, src/, requests/, tests/)
    found = [env_finding(SITE + p, "written", own, lambda p: "") for p in
             ("pytest/__init__.py", "Evil-1.0-py3.6.egg/pytest/__init__.py", "tox.py")]  # fmt: skip
    assert all(found), found


# --- F1: the witness now checks ContextBench's sympy ids, through bare names two files share ---------------------------


def all_pass_check(task):
    "The witness's (contradictions, flags) on a run where every expected test passes (log with bin/test's file headers)."
    ids = task.FAIL_TO_PASS + task.PASS_TO_PASS
    files = {}
    for t in ids:
        files.setdefault(t.split("::")[0], []).append(t.split("::")[1])
    log = "\n".join(f"{f}[{len(ns)}]\n" + "\n".join(f"{n} ok" for n in ns) for f, ns in files.items())
    statuses = grading.parse_log(task, log)
    assert all(statuses.get(t) == "PASSED" for t in ids)  # the log reads every test passed
    names = list(dict.fromkeys(t.split("::")[1] for t in ids))  # the witness names sympy's tests by function name
    w = Witness(runner="sympy", ended=True, lines=[f"{n} ok" for n in names], statuses=dict.fromkeys(names, "PASSED"))
    return grading.witness_check(task, statuses, w)


SYMPY_SHARED_NAMES = [("contextbench-verified", "sympy__sympy-20959"), ("contextbench-verified", "sympy__sympy-21758"),
                      (CB, "sympy__sympy-12950")]  # fmt: skip


@pytest.mark.parametrize("dataset, iid", SYMPY_SHARED_NAMES)
def test_f1_control_before_the_change_an_all_pass_run_had_no_contradiction(dataset, iid, monkeypatch):
    old = lambda t, runner: bool(
        witness_mod.TEST_ID_SHAPE.get(runner or "") and witness_mod.TEST_ID_SHAPE[runner].search(t)
    )
    monkeypatch.setattr(witness_mod, "witnessable", old)
    assert all_pass_check(task_of(dataset, iid)) == ([], [])


@pytest.mark.parametrize("dataset, iid", SYMPY_SHARED_NAMES)
def test_f1_an_all_pass_sympy_run_is_not_contradicted(dataset, iid):
    contradictions, flags = all_pass_check(task_of(dataset, iid))
    assert not flags and not contradictions, contradictions[:3]


# --- every_run known defects ---------------------------------------------------------------------------------------------

EVERY_RUN = [("verified", "django__django-7530"), ("contextbench-verified", "django__django-33671"),
             ("contextbench-verified", "django__django-30557")]  # fmt: skip


@pytest.mark.parametrize("dataset, iid", EVERY_RUN)
@pytest.mark.parametrize("log", ["", "x ... ok\n", "test_x (a.B)\nx ... ok ... FAIL\n"])
def test_every_run_a_resolved_run_is_labelled_whatever_its_log(dataset, iid, log):
    task = task_of(dataset, iid)
    g = Grade(iid, patch_applied=True, statuses=dict.fromkeys(task.FAIL_TO_PASS + task.PASS_TO_PASS, "PASSED"))
    signs = SimpleNamespace(deps=None, gap=None, gap_msg="", vlabel=None, py_sign=None)
    g = grading.host_label(g, task, log, grading.count_results(g, task), signs, (), (), ())
    assert g.resolved and g.infra_reason == "upstream-defect" and g.evidence
    rec = {"instance_id": iid, "resolved": True, "infra_reason": g.infra_reason, "patch_applied": True}
    assert infra_label(rec) == "upstream-defect" and counted_verdict(rec) is None
    empty = grading.no_results_verdict(Grade(iid), task, RunResult(1, log, 1.0), "x", signs)  # no results at all
    assert empty.infra_reason == "upstream-defect"


@pytest.mark.mirror
@pytest.mark.slow
def test_every_run_w1_on_django_7530_is_labelled_and_left_out(monkeypatch, tmp_path):
    task = task_of("verified", "django__django-7530")
    g, _, _ = graded(task, appended(task, "django/db/models/query_utils.py", W1["shortDescription"][0]),
                     monkeypatch, tmp_path)  # fmt: skip
    assert g.resolved and g.infra_reason == "upstream-defect", g.record()  # forged, yet left out by its label
    assert g.evidence == "known_defects.json: django__django-7530 (every_run)"  # the sign's line was overwritten
    assert not counted_resolved(g)


@pytest.mark.parametrize("dataset, iid", EVERY_RUN)
def test_every_run_a_record_without_the_label_is_not_counted(dataset, iid):
    rec = {"instance_id": iid, "resolved": True, "f2p_resolved": True, "infra_reason": None, "patch_applied": True}
    assert evidence.task_defect(iid, "")  # the harness knows no run of it grades
    assert counted_verdict(rec) is None and infra_label(rec) == "upstream-defect", counting(rec)
