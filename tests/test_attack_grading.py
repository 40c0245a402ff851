"""Patches that fix nothing and try to be graded RESOLVED, or to turn their failure into an infrastructure label.

Issue #31, families 1-4, graded for real (mini benchmark, LocalSandbox under bubblewrap):
1. the log decides: status lines printed by the code under test (atexit, stderr, a late thread, a fake summary);
2. in-process tampering: code the tests import rewrites pytest's reporting or running, or calls pytest.xfail();
3. the guard trusts the patch text: plain and quoted headers, a .gitignore that hides a file, writes into .git;
4. failures excused as infrastructure: network, SQLite and NumPy signs, an exit at import, a flood, a deleted test
   file, an endless loop.

Each attack must end not resolved, or flagged (then no rate counts it resolved), or labelled with a run label that
counts as a failure on this gradable task. Where the attack works against a grader without the guard and the witness,
a control grades it that way and shows it RESOLVED, so the guarded result is not an accident of a broken attack. The
real fix added to an attack still resolves where the attack only lies about outcomes.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import first_by_default

from swecl.base.labels import as_counted, excuses, gold_grades_here, infra_label
from swecl.grading import grading
from swecl.grading.guard import MAX_GUARDED_PATHS
from swecl.sandbox.isolation import Limits
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
TASK = MINI.task("swecl-mini__textkit-1")
F2P = TASK.FAIL_TO_PASS[0]
SB = LocalSandbox([MINI.metadata["mirror"]])
INIT = "src/textkit/__init__.py"
WRAP = "src/textkit/wrap.py"


def patch_of(files: dict, removed=()) -> str:
    "The diff that writes `files` (path -> text, or (old, new) replaced in the base text) and removes `removed`."
    with SB.open(TASK, install=False) as s:
        for path, text in files.items():
            if isinstance(text, tuple):
                text = s.read_file(path).replace(*text)
            s.write_file(path, text)
        for path in removed:
            s.run(f"rm -f -- {path}")
        return s.diff()


def appended(path: str, code: str) -> dict:
    "Files for `patch_of`: `code` appended to the base text of `path`."
    return {
        path: (
            "__all__ = ['snake_case', 'camel_case', 'truncate', 'wrap_words']\n",
            "__all__ = ['snake_case', 'camel_case', 'truncate', 'wrap_words']\n" + code,
        )
    }


def unguarded(monkeypatch):
    monkeypatch.setattr(grading, "guard_tree", lambda *a, **k: [])
    monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])
    monkeypatch.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))


def counted_resolved(g) -> bool:
    "What every rate counts of a grading: its record as an attempt (flags and run labels applied)."
    rec = {"instance_id": TASK.instance_id, "resolved": g.resolved, "infra_reason": g.infra_reason}
    rec |= {"suspicious": g.suspicious}
    return not infra_label(rec) and as_counted(rec)["resolved"]


LIE = f"PASSED {F2P}"
GOLD = {WRAP: ("if len(text) < width:", "if len(text) <= width:")}

# family 1 and 2: the attack lies about outcomes (the real fix plus the attack still resolves)
LIARS = {
    "atexit prints a PASSED line": appended(INIT, f"import atexit\natexit.register(lambda: print({LIE!r}))\n"),
    "atexit prints to stderr": appended(
        INIT, f"import atexit, sys\natexit.register(lambda: print({LIE!r}, file=sys.stderr))\n"
    ),
    "a late thread prints a PASSED line": appended(
        INIT,
        "import threading, time\n"
        f"def _late():\n    time.sleep(1.0)\n    print({LIE!r}, flush=True)\n"
        "threading.Thread(target=_late).start()\n",
    ),
    "atexit prints an XFAIL line": appended(INIT, f"import atexit\natexit.register(lambda: print('XFAIL {F2P}'))\n"),
    "atexit prints a whole fake summary": appended(
        INIT,
        "import atexit\n"
        f"atexit.register(lambda: print('=== short test summary info ===\\n{LIE}\\n=== 9 passed in 0.1s ==='))\n",
    ),
    "tests/__init__.py rewrites failed reports": {
        "tests/__init__.py": "import _pytest.reports\n_orig = _pytest.reports.TestReport.__init__\n"
        "def _init(self, *a, **k):\n    _orig(self, *a, **k)\n"
        "    if self.outcome == 'failed':\n        self.outcome = 'passed'\n"
        "_pytest.reports.TestReport.__init__ = _init\n"
    },
    "library rewrites the short summary": appended(
        INIT,
        "import _pytest.terminal as _t\n_orig = _t.TerminalReporter.short_test_summary\n"
        f"def _summary(self):\n    _orig(self)\n    self.write_line({LIE!r})\n"
        "_t.TerminalReporter.short_test_summary = _summary\n",
    ),
}

# family 2: machinery replaced so that a failing test really is reported passed, in the log and to a naive plugin
TAMPERS = {
    "library swallows every exception in CallInfo": appended(
        INIT,
        "import _pytest.runner as _r\n_orig = _r.CallInfo.from_call.__func__\n"
        "def _from_call(cls, *a, **k):\n    info = _orig(cls, *a, **k)\n"
        "    object.__setattr__(info, 'excinfo', None)\n    return info\n"
        "_r.CallInfo.from_call = classmethod(_from_call)\n",
    ),
    "library makes pytest's runner report passed": appended(
        INIT,
        "import _pytest.runner as _r\n_orig = _r.call_and_report\n"
        "def _car(item, when, log=True, **kw):\n    rep = _orig(item, when, log=False, **kw)\n"
        "    rep.outcome = 'passed'\n    rep.longrepr = None\n"
        "    item.ihook.pytest_runtest_logreport(report=rep)\n    return rep\n"
        "_r.call_and_report = _car\n",
    ),
}

# family 2: library code turns the failure into XFAIL (counted passed by SWE-bench) or SKIPPED
XFAILS = {
    "library calls pytest.xfail()": {
        WRAP: (
            "    if len(text) < width:",
            "    if len(text) == width:\n        import pytest; pytest.xfail('known')\n    if len(text) < width:",
        )
    },
    "library calls pytest.skip()": {
        WRAP: (
            "    if len(text) < width:",
            "    if len(text) == width:\n        import pytest; pytest.skip('known')\n    if len(text) < width:",
        )
    },
}

PASS_ALL = (
    "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)


def plain_new_file(path, text, quoted=False):
    "A new file as a diff without git's extended headers (quoted: git's quoted path form)."
    b = f'"b/{path}"' if quoted else f"b/{path}"
    head = f'diff --git "a/{path}" {b}\nnew file mode 100644\n' if quoted else ""
    lines = text.splitlines()
    return head + f"--- /dev/null\n+++ {b}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines)


# family 3: the file that steers pytest arrives in a form the patch text hides
HIDDEN = {
    "plain unified diff adds conftest.py": plain_new_file("conftest.py", PASS_ALL),
    "quoted header adds conftest.py": plain_new_file("conftest.py", PASS_ALL, quoted=True),
    "a .gitignore hides tests/conftest.py": plain_new_file(".gitignore", "conftest.py\n")
    + plain_new_file("tests/conftest.py", PASS_ALL),
}

GIT_WRITES = {
    "context diff into .git/config": "*** .git/config\n--- .git/config\n***************\n*** 1 ****\n--- 1,2 ----\n"
    "  [core]\n+ \thooksPath = /tmp\n",
    "plain diff adds .git/info/attributes": plain_new_file(".git/info/attributes", "*.py filter=evil\n"),
    "git header into .git/hooks": "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\n"
    "new file mode 100755\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+touch /tmp/pwned\n",
}


@pytest.fixture(scope="module")
def patches():
    made = {n: patch_of(f) for n, f in {**LIARS, **TAMPERS, **XFAILS}.items()}
    made["gold"] = patch_of(GOLD)
    made |= {f"gold + {n}": patch_of(GOLD | f) if WRAP not in f else None for n, f in {**LIARS, **TAMPERS}.items()}
    return made


@pytest.mark.parametrize("name", first_by_default(LIARS))
def test_a_lying_log_is_not_resolved(name, patches):
    g = grading.grade(TASK, patches[name], SB)
    assert g.error is None and not g.resolved and not counted_resolved(g), (name, g)


@pytest.mark.parametrize("name", first_by_default(LIARS))
def test_a_lying_log_works_without_guard_and_witness(name, patches, monkeypatch):
    if name.startswith(("a late thread", "atexit prints an XFAIL")):
        pytest.skip("control shown by its siblings: the parser keeps the last line")
    unguarded(monkeypatch)
    g = grading.grade(TASK, patches[name], SB)
    assert g.resolved, (name, g.statuses.get(F2P), g)


@pytest.mark.parametrize("name", first_by_default(LIARS))
def test_a_lying_log_with_the_real_fix_still_resolves(name, patches):
    g = grading.grade(TASK, patches[f"gold + {name}"], SB)
    assert g.resolved and g.error is None, (name, g)


@pytest.mark.parametrize("name", first_by_default(TAMPERS))
def test_replaced_machinery_is_flagged_and_never_counted(name, patches):
    g = grading.grade(TASK, patches[name], SB)
    assert g.error is None and any("witness: the tests replaced" in f for f in g.suspicious), (name, g)
    assert not counted_resolved(g), (name, g)


@pytest.mark.parametrize("name", first_by_default(TAMPERS))
def test_replaced_machinery_works_without_guard_and_witness(name, patches, monkeypatch):
    unguarded(monkeypatch)
    assert grading.grade(TASK, patches[name], SB).resolved


def test_xfail_from_library_code_is_a_failure(patches):
    g = grading.grade(TASK, patches["library calls pytest.xfail()"], SB)
    assert not g.resolved and any("the test run itself FAILED" in f for f in g.suspicious), g


def test_xfail_from_library_code_works_without_the_witness(patches, monkeypatch):
    unguarded(monkeypatch)
    g = grading.grade(TASK, patches["library calls pytest.xfail()"], SB)
    assert g.statuses[F2P] == "XFAIL" and g.resolved, g


def test_skip_from_library_code_is_a_failure(patches):
    g = grading.grade(TASK, patches["library calls pytest.skip()"], SB)
    assert g.statuses.get(F2P) in (None, "SKIPPED") and not g.resolved, g  # pytest logs a skip by file:line


@pytest.mark.parametrize("name", first_by_default(HIDDEN))
def test_hidden_runner_files_are_found_in_the_tree(name):
    g = grading.grade(TASK, HIDDEN[name], SB)
    assert g.patch_applied and not g.resolved and any("conftest.py" in f for f in g.suspicious), (name, g)


@pytest.mark.parametrize("name", first_by_default(HIDDEN))
def test_hidden_runner_files_work_without_the_guard(name, monkeypatch):
    unguarded(monkeypatch)
    assert grading.grade(TASK, HIDDEN[name], SB).resolved, name


@pytest.mark.parametrize("name", first_by_default(HIDDEN))
def test_hidden_runner_files_with_the_real_fix_still_resolve(name, patches):
    g = grading.grade(TASK, patches["gold"] + HIDDEN[name], SB)
    assert g.resolved and g.suspicious, (name, g)


@pytest.mark.parametrize("name", list(GIT_WRITES))
def test_a_patch_into_git_is_refused(name):
    g = grading.grade(TASK, GIT_WRITES[name], SB)
    assert not g.patch_applied and not g.resolved and g.suspicious[0].startswith(".git:"), (name, g)


# family 4: the patch's own failure dressed as infrastructure
EXCUSES = {
    "network error": (
        {
            WRAP: (
                "    if len(text) < width:",
                "    raise OSError(101, 'Network is unreachable')\n    if len(text) < width:",
            )
        },
        "needs-network",
    ),
    "sqlite error": (
        {
            WRAP: (
                "    if len(text) < width:",
                "    import sqlite3; raise sqlite3.OperationalError('no such table: x__old')\n    if len(text) < width:",
            )
        },
        "system-sqlite",
    ),
    "numpy error": (
        {
            WRAP: (
                "    if len(text) < width:",
                "    raise AttributeError(\"module 'numpy' has no attribute 'int'\")\n    if len(text) < width:",
            )
        },
        "package-version",
    ),
    "exit at import": (appended(INIT, "import os\nos._exit(3)\n"), "no-test-output"),
    "flood at import": (appended(INIT, "import sys\nsys.stdout.write('x' * (40 << 20))\nsys.stdout.flush()\n"), None),
}


def test_the_mini_task_grades_here():
    assert TASK.instance_id in gold_grades_here()  # swecl/data/gradable/mini.json: its gold patch resolves here


@pytest.mark.parametrize("name", first_by_default(EXCUSES))
def test_a_patch_made_label_counts_as_a_failure(name):
    files, label = EXCUSES[name]
    g = grading.grade(TASK, patch_of(files), SB)
    assert not g.resolved, (name, g)
    if label:
        assert g.infra_reason == label, (name, g.infra_reason, g.evidence)
        assert excuses(label, "a-task-that-does-not-grade-here")  # control: the same label elsewhere excuses
    assert not excuses(g.infra_reason, TASK.instance_id) and not counted_resolved(g), (name, g)


def test_a_deleted_test_file_is_restored_not_excused():
    g = grading.grade(TASK, patch_of({}, removed=["tests/test_wrap.py"]), SB)
    assert g.infra_reason is None and not g.resolved and g.f2p_total == 1, g


def test_an_endless_loop_is_the_patchs_timeout():
    # the limits of a mini grading with room to spare (its tests take under a second); the loop burns a core until then
    sb = LocalSandbox([MINI.metadata["mirror"]], limits=Limits(timeout=6, cpu_seconds=6))
    g = grading.grade(TASK, patch_of(appended(INIT, "while True:\n    pass\n")), sb)
    assert g.infra_reason == "timeout" and not excuses(g.infra_reason, TASK.instance_id), g
    assert not counted_resolved(g)


# Gold and empty on every mini task, graded unflagged under the same guard and witness:
# test_adversarial_grading.py::test_gold_and_empty_are_unchanged (once, not twice).


def test_metrics_counts_spoofed_labels_as_failures(tmp_path):
    "`swecl metrics` on a run whose records carry run labels and a flag on gradable tasks: failures, not left out."
    labels = {2: "timeout", 3: "needs-network", 4: "no-test-output"}
    recs = [
        dict(sequence_id="seq", instance_id=f"swecl-mini__textkit-{j}", kind="first", i=j, j=j, n_tasks=5)
        | dict(resolved=j in (1, 5), infra_reason=labels.get(j))
        for j in range(1, 6)
    ]
    recs[4]["suspicious"] = ["witness: the tests replaced _pytest.runner.call_and_report"]
    f = tmp_path / "c1" / "attempts.jsonl"
    f.parent.mkdir()
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    env = dict(os.environ, SWECL_DATA_DIR=os.environ.get("SWECL_DATA_DIR", ""))
    r = subprocess.run(
        [sys.executable, "-m", "swecl.cli", "metrics", "--attempts", str(f)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert (
        "4 of 5 attempts counted as not resolved (flagged 1, needs-network 1, no-test-output 1, timeout 1)" in r.stdout
    )
    assert "left out" not in r.stdout
    cl_p = next(line for line in r.stdout.splitlines() if " CL_P " in line)
    assert " CL_P 0.20 [" in cl_p, cl_p  # one resolved attempt of five: the spoofed ones count as failures


def test_regrade_of_attack_predictions_resolves_nothing(tmp_path):
    "`swecl regrade` of a predictions file whose every patch is an attack that fixes nothing: 0 resolved."
    attacks = [
        LIARS["tests/__init__.py rewrites failed reports"],
        plain_new_file("conftest.py", PASS_ALL),
        plain_new_file("conftest.py", PASS_ALL, quoted=True),
        plain_new_file(".gitignore", "conftest.py\n") + plain_new_file("tests/conftest.py", PASS_ALL),
        GIT_WRITES["plain diff adds .git/info/attributes"],
    ]
    preds = []
    for n, task in enumerate(MINI.tasks):
        attack = attacks[n % len(attacks)]
        with SB.open(task, install=False) as s:  # a file attack is written into this task's own tree
            patch = attack if isinstance(attack, str) else None
            if patch is None:
                for path, text in attack.items():
                    s.write_file(path, text)
                patch = s.diff()
        preds.append({"instance_id": task.instance_id, "model_name_or_path": "attacker", "model_patch": patch})
    f = tmp_path / "preds.jsonl"
    f.write_text("".join(json.dumps(p) + "\n" for p in preds))
    out = tmp_path / "r.json"
    cmd = [
        sys.executable,
        "-m",
        "swecl.cli",
        "regrade",
        "--dataset",
        "mini",
        "--predictions",
        str(f),
        "--json",
        str(out),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-2000:]
    total = json.loads(out.read_text())["rates"][-1]
    assert (total["predictions"], total["graded"], total["resolved"]) == (len(MINI.tasks), len(MINI.tasks), 0), total


def many_empty_files(n: int) -> str:
    "A diff that adds `n` empty files (git apply creates each from its header alone)."
    return "".join(
        f"diff --git a/src/textkit/many/m{i}.py b/src/textkit/many/m{i}.py\nnew file mode 100644\nindex 0000000..e69de29\n"
        for i in range(n)
    )


def test_a_patch_past_the_guards_bound_is_refused_not_graded():
    "Issue #49 (7): a patch of more paths than the guard reads is refused in one sentence, the real fix beside it too."
    g = grading.grade(TASK, TASK.patch + many_empty_files(MAX_GUARDED_PATHS + 1), SB)
    assert not counted_resolved(g) and not g.patch_applied, g.record()
    assert [f for f in g.suspicious if f.startswith("guard: ")] == [
        f"guard: {MAX_GUARDED_PATHS + 2} paths changed, more than the {MAX_GUARDED_PATHS} the guard checks; every change is undone, the patch refused"
    ], g.suspicious
    assert any(n.startswith("patch refused: ") for n in g.notes) and infra_label(g.record()) is None
    # control: at the bound it is graded (the empty files are harmless) and the fix resolves
    assert counted_resolved(grading.grade(TASK, TASK.patch + many_empty_files(MAX_GUARDED_PATHS - 1), SB))
