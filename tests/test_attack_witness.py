"""Patches that fix nothing and try to steer the test witness itself (issue #49 item 3, "a witness the code under test
cannot steer"), graded for real (mini benchmark, LocalSandbox under bubblewrap):
1. a module named like one of the runner's dependencies, where the project's source is importable, runs while the
   runner is imported, before the witness fingerprints it;
2. hook implementations registered while the tests run, and a test's code replaced after collection;
3. xfail marks and pytest.xfail() reached from the code under test, so that a failing FAIL_TO_PASS test reads XFAIL
   (which SWE-bench counts as passed);
4. the witness's own tables, its records and the runner's module table edited from inside the tests, a test module
   whose attribute lookup is replaced, and records garbled to crash swecl's parser.

Each attack must end not resolved, or flagged (then no rate counts it resolved), and never as swecl's own exception.
Where the attack needs the log to lie as well, a control grades it without the witness and shows it RESOLVED, so the
result is not an accident of a broken attack. The gold patch, with the witness, still resolves unflagged.
"""

import pytest
from conftest import first_by_default

from swecl.base.core import package_file
from swecl.base.labels import as_counted, infra_label
from swecl.grading import grading
from swecl.pool.edits import file_diff
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
TASK = MINI.task("swecl-mini__textkit-1")
F2P = TASK.FAIL_TO_PASS[0]
SB = LocalSandbox([MINI.metadata["mirror"]])
INIT, WRAP = "src/textkit/__init__.py", "src/textkit/wrap.py"
BASE = {p: package_file("mini", "textkit", p).read_text() for p in (INIT, WRAP)}  # textkit-1 starts from these


def patch_of(files: dict) -> str:
    "A diff writing `files`: path -> new text, or ('append', code) to the base text of `path`."
    diffs = []
    for path, text in files.items():
        if isinstance(text, tuple):
            text = BASE[path] + text[1]
        diffs.append(file_diff(path, BASE.get(path), text))
    return "".join(diffs)


def counted_resolved(g) -> bool:
    "What every rate counts of a grading: its record as an attempt (flags and run labels applied)."
    rec = {"instance_id": TASK.instance_id, "resolved": g.resolved, "infra_reason": g.infra_reason}
    rec |= {"suspicious": g.suspicious}
    return not infra_label(rec) and as_counted(rec)["resolved"]


def without_guard(monkeypatch):
    "The tree guard off, so that what only the witness stops reaches the test run."
    monkeypatch.setattr(grading, "guard_tree", lambda *a, **k: [])
    monkeypatch.setattr(grading.screen, "screen_session", lambda *a, **k: [])


def without_witness(monkeypatch):
    without_guard(monkeypatch)
    monkeypatch.setattr(grading, "run_witnessed", lambda s, cmd, n: (s.run(cmd, max_output=n), None))


# Code the attacks share: pytest's CallInfo made to drop every exception, so a failing test is reported passed
DROP_EXCEPTIONS = """
def _drop_exceptions(runner):
    orig = runner.CallInfo.from_call.__func__

    def from_call(cls, *a, **k):
        info = orig(cls, *a, **k)
        object.__setattr__(info, "excinfo", None)
        return info

    runner.CallInfo.from_call = classmethod(from_call)
"""

# ...and the same done as `_pytest.runner` is first executed, if it is not yet
WHEN_RUNNER_LOADS = """
import sys as _sys


class _WhenLoaded(object):
    def find_spec(self, name, path=None, target=None):
        if name != "_pytest.runner":
            return None
        import importlib.util

        _sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _drop_exceptions(module)

        spec.loader.exec_module = exec_module
        return spec


if "_pytest.runner" in _sys.modules:
    _drop_exceptions(_sys.modules["_pytest.runner"])
else:
    _sys.meta_path.insert(0, _WhenLoaded())
"""


def shadow(name: str, folder: str) -> str:
    "A module `name` in `folder` of the working copy that steers pytest, then hands the importer the real module."
    return (
        DROP_EXCEPTIONS
        + WHEN_RUNNER_LOADS
        + f"""
import os as _os
_here = _os.path.abspath({folder!r})
del _sys.modules[__name__]
_saved = list(_sys.path)
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
try:
    import {name} as _real
finally:
    _sys.path[:] = _saved
_sys.modules[__name__] = _real
"""
    )


# family 1: (files, whether the tree guard stays on); the guard alone stops all but pygments (not on its list)
SHADOWS = {
    "src/pygments shadows pytest's highlighter": ({"src/pygments/__init__.py": shadow("pygments", "src")}, True),
    "pluggy.py at the root": ({"pluggy.py": shadow("pluggy", ".")}, False),
    "src/iniconfig shadows pytest's ini parser": ({"src/iniconfig/__init__.py": shadow("iniconfig", "src")}, False),
    "py.py at the root": ({"py.py": shadow("py", ".")}, False),
}

FIND_ITEM = """
def _item():
    import sys
    f = sys._getframe(1)
    while f is not None:
        for k in ("pyfuncitem", "item"):
            it = f.f_locals.get(k)
            if it is not None and hasattr(it, "nodeid"):
                return it
        f = f.f_back
"""

WHEN_TESTS_DEFINED = """
def _when_tests_defined(act):
    "Call act(globals) of tests/test_wrap.py once its body has run (before pytest collects it)."
    import sys

    def profile(frame, event, arg):
        code = frame.f_code
        if event == "return" and code.co_name == "<module>" and code.co_filename.endswith("test_wrap.py"):
            sys.setprofile(None)
            act(frame.f_globals)

    sys.setprofile(profile)
"""


def in_truncate(code: str) -> dict:
    "Files for `patch_of`: `code` (indented into truncate) runs when truncate() sees text exactly `width` long."
    body = "".join(f"        {line}\n" for line in code.strip("\n").splitlines())
    lib = BASE[WRAP].replace(
        "    if len(text) < width:", f"    if len(text) == width:\n{body}    if len(text) < width:"
    )
    return {WRAP: lib}


# family 2: hooks registered, and a test's code replaced, after the witness took its fingerprints
HOOKS = {
    "a makereport wrapper registered while the test runs": {
        WRAP: FIND_ITEM
        + """
import pytest


class _Steer(object):
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        object.__setattr__(call, "excinfo", None)
        yield


def _register():
    pm = _item().config.pluginmanager
    if not pm.has_plugin("textkit-steer"):
        pm.register(_Steer(), "textkit-steer")


"""
        + in_truncate("_register()")[WRAP]
    },
    "a pyfunc_call plugin registered at collection": (
        "append",
        """
import gc as _gc

import pytest as _pytest


class _Skip(object):
    @_pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        return True if pyfuncitem.name == "test_truncate_exact_width" else None


for _o in _gc.get_objects():
    if type(_o).__name__ == "Config" and hasattr(_o, "pluginmanager"):
        _o.pluginmanager.register(_Skip(), "textkit-skip")
""",
    ),
    "the test's code replaced before it runs": {
        WRAP: """
def _swap():
    import sys
    for m in list(sys.modules.values()):
        fn = getattr(m, "test_truncate_exact_width", None)
        if fn is not None and getattr(fn, "__code__", None) is not None:
            fn.__code__ = (lambda: None).__code__


"""
        + BASE[WRAP].replace("    if len(text) < width:", "    _swap()\n    if len(text) < width:", 1)
    },
}
HOOKS = {n: {INIT: f} if isinstance(f, tuple) else f for n, f in HOOKS.items()}

# family 3: a failing FAIL_TO_PASS test turned into XFAIL (SWE-bench counts it passed) by the code under test
XFAILS = {
    "an xfail mark added while the test runs": {
        WRAP: FIND_ITEM + in_truncate("import pytest\n_item().add_marker(pytest.mark.xfail(reason='known'))")[WRAP]
    },
    "pytest.xfail reached through __bool__": {
        WRAP: """
import pytest


class _Verdict(object):
    __bool__ = pytest.xfail

    def __eq__(self, other):
        return self


"""
        + in_truncate("return _Verdict()")[WRAP]
    },
    "an xfail mark put on the test at collection": {
        INIT: (
            "append",
            WHEN_TESTS_DEFINED
            + """
def _mark(g):
    import pytest
    g["test_truncate_exact_width"].pytestmark = [pytest.mark.xfail(reason="known")]


_when_tests_defined(_mark)
""",
        )
    },
}

# the log made to lie, where the runner's fingerprinted machinery cannot see it: the terminal writer's output
LOG_LIE = """
import _pytest._io.terminalwriter as _tw

_write = _tw.TerminalWriter.write


def _lying_write(self, msg, **kw):
    return _write(self, msg.replace("FAILED tests/", "PASSED tests/"), **kw)


_tw.TerminalWriter.write = _lying_write
"""

# family 4: the witness's own records and tables, the runner's module table, the test module's attribute lookup
TAMPERS = {
    "the witness's status table edited through __main__": LOG_LIE
    + """
import sys as _sys

_lines = getattr(_sys.modules.get("__main__"), "STATUS_LINES", None)
if isinstance(_lines, dict):
    _lines["pytest"]["FAILED"] = "PASSED {id}"
""",
    "the witness's test table edited through gc": LOG_LIE
    + """
import gc as _gc

for _o in _gc.get_objects():
    if isinstance(_o, type) and _o.__name__ == "Tests" and hasattr(_o, "status"):
        _o.status = lambda self, test_id: "PASSED"
""",
    "records forged with the witness's own writer": LOG_LIE
    + """
import gc as _gc
import sys as _sys


def _profile(frame, event, arg):  # as the exact-width test is called, the witness is told it passed
    if event == "call" and frame.f_code.co_name == "test_truncate_exact_width":
        for o in _gc.get_objects():
            w = getattr(o, "write", None)
            if type(o).__name__ == "Records" and callable(w):
                nodeid = "tests/test_wrap.py::test_truncate_exact_width"
                w("phase", {"id": nodeid, "when": "call", "outcome": "passed"})
                w("test", {"id": nodeid, "status": "PASSED", "line": "PASSED " + nodeid})


_sys.setprofile(_profile)
""",
    "the runner's module replaced in sys.modules": DROP_EXCEPTIONS
    + """
import sys as _sys
import types as _types

import _pytest.runner as _real

_decoy = _types.ModuleType(_real.__name__)
_decoy.__dict__.update(vars(_real))
_decoy.CallInfo = type("CallInfo", (), {"from_call": _real.CallInfo.__dict__["from_call"]})
_drop_exceptions(_real)
_sys.modules[_real.__name__] = _decoy  # what the witness looks up by name shows the original
""",
    "the test module's attribute lookup replaced": WHEN_TESTS_DEFINED
    + """
import sys as _sys
import types as _types


class _Lookup(_types.ModuleType):
    def __getattribute__(self, name):
        if name == "test_truncate_exact_width":
            return lambda: None
        return _types.ModuleType.__getattribute__(self, name)


def _swap(g):
    _sys.modules[g["__name__"]].__class__ = _Lookup


_when_tests_defined(_swap)
""",
    "records garbled to crash the parser": """
import glob as _glob

for _f in _glob.glob(".swecl-witness-*/records"):
    with open(_f, "ab") as _out:
        _out.write(b"[" * 200000 + b"]" * 200000 + b"\\n\\xff\\xfe\\x00 not json\\n")
""",
}
TAMPERS = {n: {INIT: ("append", code)} for n, code in TAMPERS.items()}

# family 5: the witness's writer, its helpers, the runner's machinery and its plugin manager reached past the witness's
# fingerprints: through a closure's cells, swapped for one test and put back, or from a thread (issue #49, holes 13-16)
WITNESS_FN = """
import gc as _gc
import types as _types


def _witness_fn(name):
    for o in _gc.get_objects():
        if isinstance(o, _types.FunctionType) and o.__code__.co_name == name and \\
                o.__globals__.get("__name__") == "swecl_witness":
            return o


def _cell(fn, name):
    return fn.__closure__[fn.__code__.co_freevars.index(name)]
"""
MAKEREPORT = """
def _mr(item, call):
    if call.when == "call" and item.name == "test_truncate_exact_width":
        object.__setattr__(call, "excinfo", None)
    yield
"""
PLUGIN = """
import gc as _gc
import importlib as _il
import types as _types

_ns = {}
exec(compile(_MAKEREPORT, _FILE, "exec"), _ns)
_mr = _il.import_module("py" + "test").hookimpl(hookwrapper=True, tryfirst=True)(_ns["_mr"])
_plugin = _types.SimpleNamespace(**{"pytest_" + "runtest_makereport": _mr})
_pm = next(o for o in _gc.get_objects() if type(o).__name__ == "Config" and hasattr(o, "pluginmanager")).pluginmanager
"""
REACHED = {
    "the witness's writer wrapped through a closure cell": LOG_LIE
    + WITNESS_FN
    + """
_c = _cell(_witness_fn("pytest_runtest_makereport"), "write")
_real = _c.cell_contents


def _write(msg):
    kind, data = msg
    if kind == "phase" and str(data.get("id", "")).endswith("test_truncate_exact_width"):
        data = dict(data, outcome="passed")
    return _real((kind, data))


_c.cell_contents = _write
""",
    "the witness's outcome helper swapped, and put back as it is called": LOG_LIE
    + WITNESS_FN
    + """
_c = _cell(_witness_fn("pytest_runtest_makereport"), "outcome")
_real = _c.cell_contents


def _outcome(item, call, exc):
    if item.name != "test_truncate_exact_width":
        return _real(item, call, exc)
    _c.cell_contents = _real  # put back before any record is written
    return "passed"


_c.cell_contents = _outcome
""",
    "the runner's from_call swapped as an earlier test runs, put back as the failing one ends": {
        WRAP: BASE[WRAP].replace(
            "    if len(text) < width:",
            "    _swap_from_call()\n    if len(text) < width:",
            1,
        )
        + """

def _swap_from_call():
    import sys

    r = sys.modules["_py" + "test.runner"]
    orig = r.CallInfo.__dict__["from_call"]
    if getattr(r, "_swapped", False):
        return

    def from_call(cls, func, when, reraise=None):
        info = orig.__func__(cls, func, when, reraise)
        if when == "call" and info.excinfo is not None:
            object.__setattr__(info, "excinfo", None)
            r.CallInfo.from_call = orig  # put back: every later record sees the original
        return info

    r._swapped = True
    r.CallInfo.from_call = classmethod(from_call)
"""
    },
    "a plugin registered from a threading.Timer": f"_MAKEREPORT, _FILE = {MAKEREPORT!r}, __file__\n"
    + PLUGIN
    + """
import threading as _th

_t = _th.Timer(0.01, _pm.register, args=(_plugin, "textkit-timer"))
_t.start()
_t.join()
""",
    "a plugin with hooks compiled as <string> registered from a thread": f"_MAKEREPORT, _FILE = {MAKEREPORT!r}, '<string>'\n"
    + PLUGIN
    + """
import threading as _th

_t = _th.Thread(target=_pm.register, args=(_plugin, "textkit-string"))
_t.start()
_t.join()
""",
}
REACHED = {n: code if isinstance(code, dict) else {INIT: ("append", code)} for n, code in REACHED.items()}

ATTACKS = {**{n: f for n, (f, _) in SHADOWS.items()}, **HOOKS, **XFAILS, **TAMPERS, **REACHED}
GUARDED = {n for n, (_, on) in SHADOWS.items() if on} | set(HOOKS) | set(XFAILS) | set(TAMPERS)


@pytest.fixture(scope="module")
def patches():
    return {n: patch_of(f) for n, f in ATTACKS.items()}


def graded(name, patches, monkeypatch):
    if name not in GUARDED:
        without_guard(monkeypatch)
    return grading.grade(TASK, patches[name], SB)


@pytest.mark.parametrize("name", first_by_default(SHADOWS))
def test_a_runner_dependency_in_the_working_copy_is_never_imported(name, patches, monkeypatch):
    g = graded(name, patches, monkeypatch)
    assert g.error is None and not g.resolved and not counted_resolved(g), (name, g)
    module = name.split()[0].split("/")[-1].removesuffix(".py")
    assert any(f.startswith("witness:") and module in f for f in g.suspicious), (name, g.suspicious)


@pytest.mark.parametrize("name", first_by_default(HOOKS))
def test_hooks_and_test_code_changed_while_the_tests_run_are_found(name, patches, monkeypatch):
    g = graded(name, patches, monkeypatch)
    assert g.error is None and not g.resolved and not counted_resolved(g), (name, g)
    assert any(f.startswith("witness:") for f in g.suspicious), (name, g.suspicious)


@pytest.mark.parametrize("name", first_by_default(XFAILS))
def test_an_xfail_the_test_patch_does_not_make_is_a_failure(name, patches, monkeypatch):
    g = graded(name, patches, monkeypatch)
    assert g.error is None and not g.resolved and not counted_resolved(g), (name, g)
    assert any(f.startswith("witness:") and F2P in f for f in g.suspicious), (name, g.suspicious)


FLAGGED_ONLY = {"the runner's module replaced in sys.modules"}  # replaced machinery flags, as in test_attack_grading


@pytest.mark.parametrize("name", first_by_default(TAMPERS))
def test_the_witness_cannot_be_edited_from_the_tests(name, patches, monkeypatch):
    g = graded(name, patches, monkeypatch)
    assert g.error is None and g.infra_reason is None, (name, g.error)  # never swecl's own exception
    assert not counted_resolved(g) and any(f.startswith("witness:") for f in g.suspicious), (name, g)
    assert name in FLAGGED_ONLY or not g.resolved, (name, g)


@pytest.mark.parametrize("name", first_by_default(REACHED))
def test_the_witness_and_the_runner_reached_in_memory_are_found(name, patches, monkeypatch):
    "With the guard and the screen off, so that the witness alone must stop them: never counted resolved, always named."
    without_guard(monkeypatch)
    g = grading.grade(TASK, patches[name], SB)
    assert g.error is None and g.infra_reason is None, (name, g.error)
    assert not counted_resolved(g), (name, g)  # a state unlike the start's flags, as replaced machinery does
    assert any(f.startswith("witness:") for f in g.suspicious), (name, g.suspicious)


CONTROLS = [
    "src/pygments shadows pytest's highlighter",
    "a makereport wrapper registered while the test runs",
    "the test's code replaced before it runs",
    "an xfail mark added while the test runs",
    "the witness's status table edited through __main__",
    "the test module's attribute lookup replaced",
    "the runner's from_call swapped as an earlier test runs, put back as the failing one ends",
    "a plugin registered from a threading.Timer",
]


@pytest.mark.parametrize("name", first_by_default(CONTROLS))
def test_the_attack_works_on_the_log_alone(name, patches, monkeypatch):
    "Control: without the witness (and the guard), the attack makes a patch that fixes nothing RESOLVED."
    without_witness(monkeypatch)
    g = grading.grade(TASK, patches[name], SB)
    assert g.resolved, (name, g.statuses.get(F2P), g)


def test_the_gold_patch_still_resolves_unflagged():
    g = grading.grade(TASK, TASK.patch, SB)
    assert g.resolved and g.suspicious == [] and g.error is None, g
