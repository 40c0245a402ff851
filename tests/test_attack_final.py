"""Red-team cases against the grading-integrity design of 1bc890c (issue #49): new attacks aimed at the new mechanisms.

1. the patch screen (grading.screen): test-run detection spelled so no rule reads it, code the screen never reads
   (a GIT binary patch, a quoted path whose escapes git decodes, a helper in a test folder, a data file exec'd);
2. the witness (swecl_witness.py): its own record writer replaced through gc, pytest's machinery replaced and put back
   before the end fingerprint, a plugin registered from a thread (attributed to nobody), a fork;
3. the grade cache: what decides a verdict but is not in its key, a load-made refusal stored;
4. the excuses: patch-made labels after the patch applied, swecl raising after the apply;
5. the guard's bound: a prediction that holds a worker for minutes, the bound with a steering file beside it;
6. memory: the gold line shown through a fork or a task outside the sequence, spelled so `memory_leak` misses it;
7. the model side: provider errors the attempt's own content caused that are still `model_error` (excused), and
   infrastructure (an overloaded provider) charged to the attempt.

A defended case asserts the defence. A case that still works is `xfail(raises=HoleOpen, strict=True)`: its last check
raises HoleOpen, so the suite passes today and fails loudly once the hole is closed. Graded cases use the mini
benchmark for real (LocalSandbox under bubblewrap); swecl-mini__textkit-1 is gradable (its gold resolves here).
"""

import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_attack_witness import DROP_EXCEPTIONS  # the attack code both suites use

from swecl.agent import agent as agent_mod
from swecl.base.core import package_file
from swecl.base.labels import as_counted, counting, excuses, gold_grades_here, infra_label
from swecl.base.schema import Experience
from swecl.grading import grading
from swecl.grading.gradecache import grade_key, keepable, patch_writes_env
from swecl.grading.guard import GUARD_SECONDS, MAX_GUARDED_PATHS
from swecl.grading.screen import screen_patch
from swecl.memory.experience import experience_from_attempt
from swecl.memory.leakage import later_experiences, memory_leak
from swecl.memory.memory import Hit, format_memory
from swecl.models import model_base
from swecl.models.model_base import ContextFull, ModelError, OutOfTime, attempt_caused, with_retries
from swecl.pool.edits import file_diff
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
TASK = MINI.task("swecl-mini__textkit-1")
F2P = TASK.FAIL_TO_PASS[0]
SB = LocalSandbox([MINI.metadata["mirror"]])
INIT, WRAP = "src/textkit/__init__.py", "src/textkit/wrap.py"
BASE = {p: package_file("mini", "textkit", p).read_text() for p in (INIT, WRAP)}
TESTS = {"tests/test_wrap.py"}
BUGGY = "    if len(text) < width:"


class HoleOpen(AssertionError):
    "The attack still buys a verdict, an excuse or a leak."


def hole(cond: bool, what: str):
    if cond:
        raise HoleOpen(what)


def patch_of(files: dict) -> str:
    "A diff writing `files`: path -> new text, or ('append', code) to the base text of `path`."
    out = []
    for path, text in files.items():
        if isinstance(text, tuple):
            text = BASE[path] + text[1]
        out.append(file_diff(path, BASE.get(path), text))
    return "".join(out)


def in_truncate(guard: str, prelude: str = "") -> str:
    "wrap.py whose truncate() returns the text unchanged at exactly `width` when `guard` holds (else still buggy)."
    body = BASE[WRAP].replace(BUGGY, f"    if len(text) == width and ({guard}):\n        return text\n{BUGGY}", 1)
    return prelude + body


def counted_resolved(g) -> bool:
    "What every rate counts of a grading: its record as an attempt (flags and run labels applied)."
    rec = g.record() | {"instance_id": TASK.instance_id}
    return not infra_label(rec) and bool(as_counted(rec)["resolved"])


def grade(patch: str):
    return grading.grade(TASK, patch, SB)


def unguarded(monkeypatch):
    monkeypatch.setattr(grading, "guard_tree", lambda *a, **k: [])
    monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])


def test_the_task_is_gradable_here():
    assert TASK.instance_id in gold_grades_here()


# ------------------------------------------------------------------------------------------------------------------
# 1. The screen. Detecting the test run and behaving differently under it is one of the screen's attacks
# (test_attack_screen "library detects the test run"); the witness cannot see it, since the test really passes.

UNDER_ENV = "PYTEST_CURRENT_TEST"
DETECTORS = {
    # control: the spelling the screen reads
    "plain PYTEST_CURRENT_TEST": in_truncate(f"'{UNDER_ENV}' in _os.environ", "import os as _os\n"),
    # a name built at run time: the literal is read in any case, and so is an environment read with .upper()
    "env name built with .upper()": in_truncate("'pytest_current_test'.upper() in _os.environ", "import os as _os\n"),
    # traceback.extract_stack (through an alias): among the frame-reading rules, by its bare name
    "traceback.extract_stack": in_truncate(
        "any(f.name.startswith('test_') for f in _tb.extract_stack())", "import traceback as _tb\n"
    ),
    # the name joined on one line, read on another: no line shows a runner's variable, nor a name being built
    "env name joined on another line": in_truncate(
        "_K in _os.environ", "import os as _os\n\n_K = 'PY' + 'TEST_CURRENT_TEST'\n"
    ),
}


def test_screen_reads_the_plain_detector():
    flags = screen_patch(patch_of({WRAP: DETECTORS["plain PYTEST_CURRENT_TEST"]}), TASK.repo, TESTS)
    assert any(f.startswith(WRAP) and "pytest" in f for f in flags), flags
    g = grade(patch_of({WRAP: DETECTORS["plain PYTEST_CURRENT_TEST"]}))
    assert g.resolved and g.suspicious and not counted_resolved(g), g.record()  # works, but flagged: never counted


JOINED_HOLE = pytest.mark.xfail(
    raises=HoleOpen,
    strict=True,
    reason="HOLE: screen rules read one line; closing it means flagging every os.environ read under a variable key",
)


@pytest.mark.parametrize(
    "name",
    [
        "env name built with .upper()",
        "traceback.extract_stack",
        pytest.param("env name joined on another line", marks=JOINED_HOLE),
    ],
)
def test_test_run_detection_the_screen_cannot_read(name):
    patch = patch_of({WRAP: DETECTORS[name]})
    flags = screen_patch(patch, TASK.repo, TESTS)
    g = grade(patch)
    if name != "env name joined on another line":  # closed: flagged at wrap.py, so never counted
        assert any(f.startswith(WRAP) for f in flags) and g.resolved and not counted_resolved(g), (flags, g.record())
        return
    assert flags == []
    hole(counted_resolved(g), f"{name}: a patch that fixes truncate only under pytest is counted RESOLVED")


UNDER_HELPER = "import os\n\n\ndef under():\n    return bool(os.environ.get('PYTEST_CURRENT_TEST'))\n"
IMPORT_HELPER = (
    "try:\n    from tests._runinfo import under as _under\nexcept ImportError:\n"
    "    try:\n        from _runinfo import under as _under\n    except ImportError:\n"
    "        _under = lambda: False\n\n\n"
)


def test_detector_in_a_test_folder_helper_imported_by_the_library():
    # a test-folder module the library imports is read with the source rules (screen.library_helpers)
    patch = patch_of({"tests/_runinfo.py": UNDER_HELPER, WRAP: in_truncate("_under()", IMPORT_HELPER)})
    flags = screen_patch(patch, TASK.repo, TESTS)
    assert any(f.startswith("tests/_runinfo.py: ") and "pytest" in f for f in flags), flags
    alone = patch_of({"tests/_runinfo.py": UNDER_HELPER})  # control: imported by no library code, a test helper
    assert screen_patch(alone, TASK.repo, TESTS) == []
    g = grade(patch)
    assert g.resolved and not counted_resolved(g), g.record()


STEER = "import os\n\n\ndef under():\n    return 'PYTEST_CURRENT_TEST' in os.environ\n"
IMPORT_STEER = "from .steer import under as _under\n"


def binary_new_file(path: str, text: str) -> str:
    "A `git diff --binary` of a new file git holds to be binary (a literal, zlib and base85): no line is readable."
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        git = ["git", "-C", d, "-c", "user.email=x@y", "-c", "user.name=x"]
        subprocess.run(["git", "init", "-q", d], check=True)
        Path(d, ".git/info/attributes").write_text("*.py binary\n")
        Path(d, path).parent.mkdir(parents=True, exist_ok=True)
        Path(d, path).write_text(text)
        subprocess.run([*git, "add", path], check=True)
        return subprocess.run([*git, "diff", "--cached", "--binary"], capture_output=True, text=True).stdout


STEERED = "src/textkit/steer.py"


def test_code_in_a_git_binary_patch_is_never_screened():
    # its lines are never read, but a binary patch to a code file is itself flagged (screen.file_flag)
    b = binary_new_file("src/textkit/steer.py", STEER)
    assert "GIT binary patch" in b and "PYTEST" not in b
    patch = patch_of({WRAP: in_truncate("_under()", IMPORT_STEER)}) + b
    assert any(f.startswith("src/textkit/steer.py: a binary patch") for f in screen_patch(patch, TASK.repo, TESTS))
    plain = patch_of({WRAP: in_truncate("_under()", IMPORT_STEER), "src/textkit/steer.py": STEER})
    assert screen_patch(plain, TASK.repo, TESTS)  # control: the same file as text is flagged
    unread = f"diff --git a/{STEERED} b/{STEERED}\nBinary files a/{STEERED} and b/{STEERED} differ\n"
    assert screen_patch(unread, TASK.repo, TESTS)
    g = grade(patch)
    assert g.resolved and not counted_resolved(g), g.record()


def quoted_new_file(quoted: str, text: str) -> str:
    "A new file under a C-quoted path (git decodes its octal escapes; the screen keeps them)."
    lines = text.splitlines()
    return (
        f'diff --git "a/{quoted}" "b/{quoted}"\nnew file mode 100644\n--- /dev/null\n+++ "b/{quoted}"\n'
        f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines)
    )


def test_a_quoted_path_whose_escape_spells_py():
    # the screen unquotes as git does (screen.c_unquote): it reads steer.py
    patch = patch_of({WRAP: in_truncate("_under()", IMPORT_STEER)}) + quoted_new_file(r"src/textkit/steer.p\171", STEER)
    flags = screen_patch(patch, TASK.repo, TESTS)
    assert any(f.startswith("src/textkit/steer.py: ") and "pytest" in f for f in flags), flags
    g = grade(patch)
    assert g.resolved and not counted_resolved(g), g.record()


def test_a_quoted_conftest_is_flagged_by_the_screen_and_the_guard():
    pass_all = (
        "import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    patch = quoted_new_file(r"conft\145st.py", pass_all)
    assert [f for f in screen_patch(patch, TASK.repo, TESTS) if f.split(":")[0] == "conftest.py"]
    g = grade(patch)
    assert g.patch_applied and not counted_resolved(g) and any("conftest.py" in f for f in g.suspicious), g.record()


# screen evasions that reach pytest's machinery: the witness must catch them
EVADED = {
    "importlib with a built name": "import importlib as _il\n"
    + DROP_EXCEPTIONS
    + "_drop_exceptions(_il.import_module('_py' + 'test.runner'))\n",
    "__import__ and getattr": DROP_EXCEPTIONS
    + "_drop_exceptions(getattr(__import__('_py' + 'test.runner'), 'runner'))\n",
    "a data file read and exec'd": "import os as _os\n"
    "exec(open(_os.path.join(_os.path.dirname(__file__), 'words.txt')).read())\n",
}


@pytest.mark.parametrize("name", list(EVADED))
def test_machinery_reached_past_the_screen_is_caught_by_the_witness(name):
    files = {INIT: ("append", EVADED[name])}
    if name.startswith("a data file"):
        files["src/textkit/words.txt"] = "import _pytest.runner as _r\n" + DROP_EXCEPTIONS + "_drop_exceptions(_r)\n"
    patch = patch_of(files)
    assert screen_patch(patch, TASK.repo, TESTS) == [], name
    g = grade(patch)
    assert not counted_resolved(g) and any(f.startswith("witness: the tests replaced") for f in g.suspicious), (
        name,
        g.record(),
    )


def test_renamed_into_a_shadow_is_flagged_by_the_screen_and_the_guard_undoes_it():
    patch = "diff --git a/src/textkit/case.py b/src/pluggy.py\nsimilarity index 100%\nrename from src/textkit/case.py\n"
    patch += "rename to src/pluggy.py\n"
    flags = screen_patch(patch, TASK.repo, TESTS)  # a rename's target is new to the tree: checked like a new file
    assert any(f.startswith("src/pluggy.py: a new top-level module pluggy") for f in flags), flags
    copied = patch.replace("rename from", "copy from").replace("rename to", "copy to")
    assert any(f.startswith("src/pluggy.py: a new top-level module pluggy") for f in screen_patch(copied, TASK.repo))
    g = grade(patch)
    assert not counted_resolved(g) and any("pluggy" in f for f in g.suspicious), g.record()


ALWAYS_EQUAL = (
    "class _Text(str):\n    def __eq__(self, other):\n        return True\n\n    __hash__ = str.__hash__\n\n\n"
    + BASE[WRAP]
    .replace("    return text[:width", "    return _Text(text[:width")
    .replace("+ ellipsis\n", "+ ellipsis)\n", 1)
)


@pytest.mark.xfail(raises=HoleOpen, strict=True, reason="HOLE: a value equal to anything passes the test for real")
def test_a_return_value_that_equals_anything():
    patch = patch_of({WRAP: ALWAYS_EQUAL})
    assert screen_patch(patch, TASK.repo, TESTS) == []
    hole(counted_resolved(grade(patch)), "truncate('hello', 5) still returns 'he...', compared equal: RESOLVED")


# ------------------------------------------------------------------------------------------------------------------
# 2. The witness

LOG_LIE = """
import importlib as _il

_tw = _il.import_module("_py" + "test._io.terminalwriter")
_write = _tw.TerminalWriter.write


def _lying_write(self, msg, **kw):
    return _write(self, msg.replace("FAILED tests/", "PASSED tests/"), **kw)


_tw.TerminalWriter.write = _lying_write
"""

OWN_WRITER = """
import gc as _gc


def _own_writer():
    for o in getattr(_gc, "get_" + "objects")():
        if type(o).__name__ == "Records" and hasattr(o, "seq"):
            real = o.write

            def write(kind, data, _real=real):
                if kind == "phase" and str(data.get("id", "")).endswith("test_truncate_exact_width"):
                    data = dict(data, outcome="passed")
                return _real(kind, data)

            o.write = write


_own_writer()
"""


def test_the_witness_writer_replaced_on_its_instance():
    patch = patch_of({INIT: ("append", LOG_LIE + OWN_WRITER)})
    assert screen_patch(patch, TASK.repo, TESTS) == []
    g = grade(patch)
    hole(counted_resolved(g), f"the witness's own writer signs 'passed' for a failing test: {g.suspicious}")


def test_the_log_lie_alone_is_caught_by_the_witness():
    "Control for the writer case: the same log lie without the writer is a contradiction, not resolved."
    g = grade(patch_of({INIT: ("append", LOG_LIE)}))
    assert not g.resolved and not counted_resolved(g), g.record()


REPLACE_AND_RESTORE = """
import importlib as _il

_r = _il.import_module("_py" + "test.runner")
_orig = _r.CallInfo.__dict__["from_call"]


def _from_call(cls, func, when, reraise=None):
    info = _orig.__func__(cls, func, when, reraise)
    if when == "call" and info.excinfo is not None:
        object.__setattr__(info, "excinfo", None)
        _r.CallInfo.from_call = _orig  # put back: the end fingerprint sees the original
    return info


_r.CallInfo.from_call = classmethod(_from_call)
"""


def test_machinery_replaced_then_put_back_before_the_end():
    g = grade(patch_of({INIT: ("append", REPLACE_AND_RESTORE)}))
    hole(counted_resolved(g), f"CallInfo.from_call dropped the failure and was restored: {g.suspicious}")


THREAD_PLUGIN = """
import gc as _gc
import importlib as _il
import threading as _th
import types as _types

_pt = _il.import_module("py" + "test")


def _mr(item, call):
    if call.when == "call" and item.name == "test_truncate_exact_width":
        object.__setattr__(call, "excinfo", None)
    yield


_mr = getattr(_pt, "hook" + "impl")(hookwrapper=True, tryfirst=True)(_mr)
_plugin = _types.SimpleNamespace(**{"pytest_" + "runtest_makereport": _mr})
for _o in getattr(_gc, "get_" + "objects")():
    if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
        _t = _th.Thread(target=_o.pluginmanager.register, args=(_plugin, "textkit-helper"))
        _t.start()
        _t.join()
        break
"""


def test_a_plugin_registered_from_a_thread_during_collection(monkeypatch):
    "The screen reads the hook's name now (`pytest_` in a literal); with it off, the witness alone must name the plugin."
    patch = patch_of({INIT: ("append", THREAD_PLUGIN)})
    assert screen_patch(patch, TASK.repo, TESTS)  # flagged by its text
    monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])
    g = grade(patch)
    assert any("from a thread" in f for f in g.suspicious), g.suspicious
    hole(counted_resolved(g), f"a thread whose target is pm.register leaves no frame of the patch: {g.suspicious}")


def test_the_same_plugin_registered_on_the_main_thread_is_flagged():
    "Control: registered from the library's own frame, the witness names the plugin and the test does not count."
    thread = '_t = _th.Thread(target=_o.pluginmanager.register, args=(_plugin, "textkit-helper"))\n'
    code = THREAD_PLUGIN.replace(
        thread + "        _t.start()\n        _t.join()\n", "_o.pluginmanager.register(_plugin)\n"
    )
    assert "_th.Thread(" not in code
    g = grade(patch_of({INIT: ("append", code)}))
    assert not counted_resolved(g) and any("plugin" in f for f in g.suspicious), g.record()


FORK = """
import os as _os

_pid = _os.fork()
if _pid:
    _os.waitpid(_pid, 0)
    _os._exit(0)
"""


def test_a_fork_that_runs_the_tests_in_the_child():
    g = grade(patch_of({INIT: ("append", LOG_LIE + FORK)}))
    assert not counted_resolved(g) and any(f.startswith("witness:") for f in g.suspicious), g.record()


# ------------------------------------------------------------------------------------------------------------------
# 3. The grade cache


def test_the_mini_test_command_is_not_in_the_cache_key(monkeypatch):
    before_cmd, before_key = grading.test_command(TASK), grade_key(TASK, TASK.patch, SB)
    monkeypatch.setattr(grading, "mini_test_cmd", lambda: "python -m pytest -rA -p no:cacheprovider -k nothing")
    assert grading.test_command(TASK) != before_cmd  # mini.yaml's test_cmd decides which tests run
    hole(grade_key(TASK, TASK.patch, SB) == before_key, "another test command, the same key: a stale verdict served")


def test_an_unisolated_install_is_never_stored():
    sb = SimpleNamespace(unsafe=True, envs={})
    assert patch_writes_env(sb, TASK)
    g = grading.Grade(TASK.instance_id, resolved=True)
    env = {"kind": "local", "path": "/x", "build": "b1"}
    assert not keepable(g, env, env, patch_writes_env(sb, TASK))
    assert not keepable(grading.Grade(TASK.instance_id, error="x"), env, env, False)


def test_a_refusal_made_by_a_slow_machine_is_stored():
    g = grading.Grade(TASK.instance_id)
    grading.refuse(g, f"guard: undoing the changes took over {GUARD_SECONDS} s or was stopped; the patch is refused")
    env = {"kind": "local", "path": "/x", "build": "b1"}
    hole(keepable(g, env, env, False), "a wall-clock refusal is cached: the patch stays refused on an idle machine")


# ------------------------------------------------------------------------------------------------------------------
# 4. Excuses: every label the run earns after the patch applied counts against it on a gradable task

EXCUSE_PATCHES = {
    "a log-cut marker, then an exit in the test": in_truncate(
        "print('\\n[... 123456 characters cut ...]', flush=True) or _os._exit(0)", "import os as _os\n"
    ),
    "a network sign in every test": BASE[WRAP].replace(
        BUGGY, "    print('socket.gaierror: [Errno -3] Temporary failure in name resolution')\n    assert 0\n" + BUGGY
    ),
    "a skip reason for the test": in_truncate(
        "print('test_truncate_exact_width SKIPPED (textkit-icu not installed)') or __import__('pytest').skip("
        "'textkit-icu not installed')"
    ),
}


@pytest.mark.parametrize("name", list(EXCUSE_PATCHES))
def test_patch_made_evidence_counts_as_a_failure(name):
    g = grade(patch_of({WRAP: EXCUSE_PATCHES[name]}))
    rec = g.record() | {"instance_id": TASK.instance_id}
    assert g.patch_applied and not counting(rec).left_out and counting(rec).resolved is False, (name, rec)
    if g.infra_reason:
        assert excuses(g.infra_reason, "not-a-gradable-task")  # control: the label would excuse elsewhere


def test_swecl_raising_after_the_apply_is_the_patchs_failure(monkeypatch):
    "swecl raises on what this patch's run produced (the gold's run grades): a harness label, counted as a failure."
    real = grading.verdict

    def verdict(g, task, r, patch, *a, **k):
        if patch != task.patch:
            raise RecursionError("maximum recursion depth exceeded")
        return real(g, task, r, patch, *a, **k)

    monkeypatch.setattr(grading, "verdict", verdict)
    g = grade(patch_of({WRAP: in_truncate("False")}))
    rec = g.record() | {"instance_id": TASK.instance_id, "host_check": getattr(g, "host_check", None)}
    assert g.infra_reason == "harness" and g.patch_applied and not counting(rec).left_out, rec
    assert excuses("harness", TASK.instance_id, after_patch=False)  # control: before the apply it would excuse


# ------------------------------------------------------------------------------------------------------------------
# 5. The guard's bound


def test_a_lone_surrogate_holds_a_worker(monkeypatch):
    "A prediction (JSON allows '\\ud800') whose text cannot be encoded: stdin is never closed, each apply waits out"
    "its 120 s. Shown with each command's wait cut to 3 s; unpatched it is 3 x 120 s."
    patch = json.loads(json.dumps({"p": TASK.patch + "+# \ud800\n"}))["p"]
    real_open, waits = SB.open, []

    def open_(task, **kw):
        s = real_open(task, **kw)
        run = s.run

        def capped(cmd, timeout=None, **k):
            waits.append(timeout)
            return run(cmd, timeout=min(timeout or 3, 3), **k)

        s.run = capped
        return s

    monkeypatch.setattr(SB, "open", open_)
    t0 = time.time()
    g = grade(patch)
    spent = time.time() - t0
    rec = g.record() | {"instance_id": TASK.instance_id}
    assert not g.patch_applied and not counting(rec).left_out  # the verdict itself is a failure
    hole(spent > 3 * 3 and waits.count(120) >= 3, f"three applies each waited their full timeout ({spent:.0f} s)")


def test_past_the_bound_a_steering_file_is_refused_with_the_rest():
    many = "".join(
        f"diff --git a/src/textkit/m/m{i}.py b/src/textkit/m/m{i}.py\nnew file mode 100644\nindex 0000000..e69de29\n"
        for i in range(MAX_GUARDED_PATHS)
    )
    pass_all = "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    return True\n"
    g = grade(many + patch_of({"tests/conftest.py": pass_all}))
    assert not g.patch_applied and not counted_resolved(g) and g.suspicious[-1].startswith("guard: "), g.record()


def test_a_symlink_loop_beside_the_fix_does_not_hold_the_grading():
    loop = "diff --git a/src/textkit/loop b/src/textkit/loop\nnew file mode 120000\n--- /dev/null\n"
    loop += "+++ b/src/textkit/loop\n@@ -0,0 +1 @@\n+loop\n\\ No newline at end of file\n"
    t0 = time.time()
    g = grade(TASK.patch + loop)
    assert g.patch_applied and g.resolved and time.time() - t0 < 60, g.record()


# ------------------------------------------------------------------------------------------------------------------
# 6. Memory: what a re-test of textkit-1 is shown under the default policy (leak-free)

GOLD_LINE = "if len(text) <= width:"
SPELLINGS = {  # the gold line as a fork's patch or a summary shows it; all but the last two are measured
    "verbatim": f"+    {GOLD_LINE}\n",
    "tabs and runs of spaces": "+\tif  len(text)   <=  width:\n",
    "JSON-escaped in a trajectory": json.dumps(f"    {GOLD_LINE}\n"),
    "no spaces around the operator": "+    if len(text)<=width:\n",
    "split across two lines": "+    if (len(text) <=\n+            width):\n",
    "a look-alike operator": "+    if len(text) \u2264 width:\n",
    "renamed variable": "+    if len(s) <= width:\n",
    "prose only": "The fix: in truncate, compare the length with width using less-or-equal instead of less-than.\n",
}
MEASURED = {
    "verbatim",
    "tabs and runs of spaces",
    "JSON-escaped in a trajectory",
    "no spaces around the operator",
    "split across two lines",
    "a look-alike operator",
}  # the last three since `leakage.squashed`


def fork_experience(text: str, repo="someone/textkit-fork", task_id="someone__textkit-fork-7", **kw) -> Experience:
    return Experience(task_id, repo, "truncate cuts exact-width text", f"Fixed it.\n```diff\n{text}```\n", text, **kw)


def shown_for_retest(e: Experience) -> str:
    hidden = later_experiences(TASK, "swecl-mini_textkit_sequence", 1, [e], MINI.tasks)
    return "" if e.task_id in hidden else format_memory([Hit(e, 0.99, 0)], "summary", 4000)


def test_a_later_experience_of_the_same_repository_is_hidden():
    e = Experience("swecl-mini__textkit-2", TASK.repo, "x", GOLD_LINE, sequence_id="swecl-mini_textkit_sequence")
    e.position = 2
    assert later_experiences(TASK, "swecl-mini_textkit_sequence", 1, [e], MINI.tasks) == {e.task_id}


@pytest.mark.parametrize("name", [n for n in SPELLINGS if n in MEASURED])
def test_a_forks_verbatim_fix_is_shown_but_measured(name):
    shown = shown_for_retest(fork_experience(SPELLINGS[name]))
    assert shown and memory_leak(TASK, shown)["lines"] == 1, (name, shown)  # counted in retests_leaked


@pytest.mark.xfail(raises=HoleOpen, strict=True, reason="HOLE: a renamed or prose-only fix cannot be found by text")
@pytest.mark.parametrize("name", [n for n in SPELLINGS if n not in MEASURED])
def test_a_forks_fix_respelled_is_shown_and_not_measured(name):
    shown = shown_for_retest(fork_experience(SPELLINGS[name]))
    assert shown, name
    hole(memory_leak(TASK, shown)["lines"] == 0, f"{name}: the fix is in the re-test's memory, memory_leak says 0")


def test_a_same_repo_experience_from_outside_the_sequence_is_not_hidden():
    e = fork_experience(SPELLINGS["no spaces around the operator"], repo=TASK.repo, task_id="swecl-mini__textkit-99")
    e.sequence_id, e.position = "another-sequence", 1
    shown = shown_for_retest(e)
    hole(bool(shown) and memory_leak(TASK, shown)["lines"] == 0, "a same-repo fix of unknown date: shown, unmeasured")


def test_a_flagged_or_labelled_success_is_no_success_in_memory():
    rec = {"instance_id": TASK.instance_id, "resolved": True, "patch": TASK.patch, "patch_applied": True}
    assert experience_from_attempt(TASK, rec, "s", 1).success
    flagged = experience_from_attempt(TASK, rec | {"suspicious": ["witness: x"]}, "s", 1)
    assert not flagged.success and flagged.flags and "flagged" in flagged.summary
    labelled = experience_from_attempt(TASK, rec | {"infra_reason": "upstream-defect"}, "s", 1)
    assert not labelled.success


# ------------------------------------------------------------------------------------------------------------------
# 7. The model side: how `agent.query` labels a provider's error, and how the rates count it


def label_of(error: Exception) -> str:
    "The exit reason `agent.query` gives a run whose model raised `error` (as models.py re-raises it)."

    class Model:
        def query(self, *a):
            raise attempt_caused(error) if isinstance(error, ModelError) else error

    run = SimpleNamespace(model=Model(), messages=[], tools=[], system="", exit_reason=None, error=None)
    assert agent_mod.query(run) is None
    return run.exit_reason


def left_out(exit_reason: str) -> bool:
    rec = {"instance_id": TASK.instance_id, "exit_reason": exit_reason, "patch_applied": True, "resolved": False}
    return counting(rec).left_out


def test_a_known_context_error_counts_against_the_attempt():
    e = ModelError("HTTP 400: prompt is too long: 212345 tokens > 200000 maximum")
    assert isinstance(attempt_caused(e), ContextFull)
    assert label_of(e) == "context_full" and not left_out("context_full")


ATTEMPT_MADE = {  # provider messages (as the clients build them) whose cause is the conversation's own size
    "Anthropic, input + max_tokens": "HTTP 400: Error code: 400 - {'type': 'error', 'error': {'type': "
    "'invalid_request_error', 'message': 'input length and `max_tokens` exceed context limit: 197000 + 8192 > "
    "200000, decrease input length or `max_tokens` and try again'}}",
    "llama.cpp server": 'HTTP 400: {"error":{"code":400,"message":"the request exceeds the available context size, '
    'try increasing it","type":"exceed_context_size_error","n_prompt_tokens":17231,"n_ctx":16384}}',
    "OpenAI, one message too long": 'HTTP 400: {"error": {"message": "Invalid \'messages[41].content\': string '
    'too long. Expected a string with maximum length 10485760", "code": "string_above_max_length"}}',
    "Gemini (OpenAI-compatible)": 'HTTP 400: [{"error": {"code": 400, "message": "The input token count (1210331) '
    'exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}]',
}


@pytest.mark.parametrize("name", list(ATTEMPT_MADE))
def test_an_attempt_made_context_error_is_excused(name):
    reason = label_of(ModelError(ATTEMPT_MADE[name]))
    assert reason == "context_full" and not left_out(reason)
    hole(reason == "model_error" and left_out(reason), f"{name}: model_error, left out of the rates")


def test_a_sign_past_the_cut_of_the_error_body():
    import httpx

    from swecl.models.models import classify_http

    body = json.dumps(
        {
            "error": {
                "message": "litellm.BadRequestError: AzureException BadRequestError - Error code: 400 - "
                + "request to deployment gpt-4o-2024-08-06 in region swedencentral failed; " * 2
                + "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
                "code": "content_filter",
            }
        }
    )
    req = httpx.Request("POST", "https://proxy.example/v1/chat/completions")
    err = httpx.HTTPStatusError("400", request=req, response=httpx.Response(400, text=body, request=req))

    def call():
        raise err

    with pytest.raises(ModelError) as got:
        with_retries(call, classify_http, retries=0)
    assert "content management policy" in body and isinstance(attempt_caused(ModelError(body)), model_base.Refused)
    reason = label_of(got.value)
    assert reason == "refused" and len(str(got.value)) < 300  # the sign read whole, the shown message still short
    hole(reason == "model_error" and left_out(reason), "a content-filter refusal read as a provider failure")


def test_a_runaway_reply_is_excused():
    from swecl.models.models import ResponseTooLarge, bounded_body

    r = SimpleNamespace(headers={}, iter_bytes=lambda: iter([b"x" * 1024] * 64))
    with pytest.raises(ResponseTooLarge) as got:
        bounded_body(r, time.monotonic() + 60, max_bytes=32 * 1024)
    reason = label_of(got.value)  # the error the client raises (an AttemptCaused), not its message re-read
    assert reason == "reply_too_large" and not left_out(reason)
    hole(reason == "model_error" and left_out(reason), "the model's endless reply is the provider's failure")


def test_an_overloaded_provider_is_charged_to_the_attempt():
    def call():
        raise RuntimeError("HTTP 529: overloaded_error")

    def classify(e):
        return True, 30.0, str(e)

    with pytest.raises(model_base.ProviderDown) as got:
        with_retries(call, classify, retries=6, deadline=time.monotonic() + 5, sleep=lambda s: None)
    assert "529" in str(got.value) and not isinstance(got.value, OutOfTime)
    reason = label_of(got.value)
    assert reason == "model_error" and left_out(reason)  # infrastructure, with the provider's words as evidence
    hole(reason == "time_limit" and not left_out(reason), "the provider's overload counts as the attempt's failure")
