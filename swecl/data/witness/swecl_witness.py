# swecl's test witness: runs a task's test runner in this process and records each test's outcome from the call
# itself, before the project's code is imported, into a file of signed lines that the test log cannot forge.
# Shipped as data (not exported from a notebook) because it runs inside the task's env, on Pythons back to 3.5:
# no f-strings, nothing outside the standard library. The harness side is swecl.grading.witness.
#
# Usage: python swecl_witness.py RECORDS (pytest | -m pytest | SCRIPT) ARGS...; the signing key is the first line of
# standard input. What it stops and what it cannot stop is written in nbs/grading/04h_witness.ipynb.
import hashlib
import hmac
import json
import os
import sys

STATUS_LINES = {  # how each runner's own log spells a status, so the harness parses both with one parser
    "pytest": {"PASSED": "PASSED {id}", "FAILED": "FAILED {id}", "ERROR": "ERROR {id}", "SKIPPED": "SKIPPED {id}",
               "XFAIL": "XFAIL {id}", "XPASS": "XPASS {id}"},
    "unittest": {"PASSED": "{id} ... ok", "FAILED": "{id} ... FAIL", "ERROR": "{id} ... ERROR",
                 "SKIPPED": "{id} ... skipped ''", "XFAIL": "{id} ... expected failure",
                 "XPASS": "{id} ... unexpected success"},
    "sympy": {"PASSED": "{id} ok", "FAILED": "{id} F", "ERROR": "{id} E", "SKIPPED": "{id} s", "XFAIL": "{id} f",
              "XPASS": "{id} X"},
}


class Records(object):
    "Signed, numbered JSON lines appended to a file: [body, mac], body the JSON text of [seq, kind, data]."

    def __init__(self, path, key):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.key, self.seq = key, 0

    def write(self, kind, data):
        body = json.dumps([self.seq, kind, data], sort_keys=True)
        mac = hmac.new(self.key, body.encode("utf-8"), hashlib.sha256).hexdigest()
        os.write(self.fd, (json.dumps([body, mac]) + "\n").encode("utf-8"))  # the signed text itself, verbatim
        self.seq += 1


def attribute(path):
    "The object at a dotted path (module.attr.attr), or None."
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is not None:
            obj = mod
            for p in parts[i:]:
                obj = getattr(obj, p, None)
                if obj is None:  # a module this pytest lacks (_pytest.reports before 3.9): None, not None.__init__
                    return None
            return obj
    return None


def fingerprint(obj):
    "Identity of an object and of its code: replacing either (a monkeypatch, a new __code__) changes it."
    obj = getattr(obj, "__func__", obj)  # a bound or class method is made anew at each lookup: its function is not
    code = getattr(obj, "__code__", None)
    return (id(obj), id(code), getattr(code, "co_code", None))


MACHINERY = {  # what runs tests and reports outcomes; the code under test has no business replacing it
    "pytest": ["_pytest.runner.call_and_report", "_pytest.runner.runtestprotocol", "_pytest.runner.call_runtest_hook",
               "_pytest.runner.CallInfo.from_call", "_pytest.runner.pytest_runtest_makereport",
               "_pytest.reports.TestReport.from_item_and_call", "_pytest.reports.TestReport.__init__",
               "_pytest.python.pytest_pyfunc_call", "_pytest.python.Function.runtest",
               "_pytest.unittest.TestCaseFunction.runtest", "_pytest.skipping.pytest_runtest_makereport",
               "_pytest.terminal.TerminalReporter.pytest_runtest_logreport",
               "_pytest.terminal.TerminalReporter.short_test_summary", "_pytest.main.pytest_runtestloop",
               "_pytest.outcomes.fail", "_pytest.outcomes.skip", "_pytest.outcomes.xfail",
               "pluggy._callers._multicall", "pluggy.callers._multicall", "pluggy._hooks._HookCaller.__call__",
               "pluggy.hooks._HookCaller.__call__", "pluggy._manager.PluginManager._hookexec"],
    "unittest": ["unittest.case.TestCase.run", "unittest.case.TestCase.__call__", "unittest.case.TestCase.fail",
                 "unittest.case.TestCase.assertEqual", "unittest.case.TestCase.assertTrue",
                 "unittest.case.TestCase.assertFalse", "unittest.case.TestCase.assertRaises",
                 "unittest.case.TestCase.assertIn", "unittest.case.TestCase.assertIs",
                 "unittest.case.TestCase._baseAssertEqual", "unittest.case.TestCase.assertMultiLineEqual",
                 "unittest.result.TestResult.addSuccess", "unittest.result.TestResult.addFailure",
                 "unittest.result.TestResult.addError", "unittest.result.TestResult.addSkip",
                 "unittest.result.TestResult.wasSuccessful", "unittest.runner.TextTestRunner.run",
                 "unittest.suite.TestSuite.run"],
    "builtins": ["builtins.AssertionError", "builtins.Exception", "builtins.isinstance", "builtins.issubclass",
                 "builtins.print", "builtins.compile", "builtins.exec", "builtins.__import__",
                 "sys.exit", "os._exit"],
}


STDLIB = os.path.dirname(os.path.abspath(os.__file__))


def stdlib_code(obj):
    "Whether `obj`'s code (a function's or a method's) is the standard library's own, by the file it was compiled from."
    code = getattr(getattr(obj, "__func__", obj), "__code__", None)
    return code is None or os.path.abspath(code.co_filename).startswith(STDLIB + os.sep)


class Integrity(object):
    "Fingerprints of the runner's machinery at start; what differs at the end."

    def __init__(self, groups):
        self.names = [n for g in groups for n in MACHINERY[g]]
        self.before = dict((n, fingerprint(attribute(n))) for n in self.names)
        # unittest is imported by the tests, not by the witness (pytester's in-process runs drop modules imported
        # after their start, and a unittest module kept alive across them changes what later tests see): its
        # functions, found only at the end, must still be the standard library's
        self.later = set(n for n in self.names if n.startswith("unittest.") and attribute(n) is None)

    def changed(self):
        return [n for n in self.names
                if (not stdlib_code(attribute(n)) if n in self.later else fingerprint(attribute(n)) != self.before[n])]


class Tests(object):
    "Each test's phases as observed; its final status in SWE-bench's terms."

    def __init__(self):
        self.order, self.phases = [], {}

    def add(self, test_id, phase, outcome):
        if test_id not in self.phases:
            self.order.append(test_id)
            self.phases[test_id] = {}
        self.phases[test_id][phase] = outcome

    def status(self, test_id):
        p = self.phases[test_id]
        setup, call, teardown = p.get("setup", "passed"), p.get("call"), p.get("teardown", "passed")
        if setup == "skipped" or call == "skipped":
            return "SKIPPED"
        if setup != "passed" or teardown not in ("passed", "skipped"):
            return "ERROR"
        return {"passed": "PASSED", "xfail-marked": "XFAIL", "xpass-marked": "XPASS"}.get(call, "FAILED")


def reported_id(nodeid):
    "A node id as pytest's verbose lines spell it: before pytest 4 a class's tests sit under an instance node, '::()'."
    return nodeid.replace("::()", "")  # as pytest 3's TerminalReporter._locationline does


def pytest_plugin(pytest, tests):
    "A plugin object whose hookwrapper sees every phase's call before any other plugin reports it."
    skip_exc = getattr(getattr(pytest, "skip", None), "Exception", None)
    xfail_exc = getattr(getattr(pytest, "xfail", None), "Exception", None)
    xfail = getattr(pytest, "xfail", None)  # pytest's own, taken before project code: a function, or (pytest 8) a callable
    xfail_code = getattr(xfail, "__code__", None) or getattr(getattr(type(xfail), "__call__", None), "__code__", None)

    def own_xfail(item, excinfo):
        "Whether the test function itself called pytest.xfail() (its frame's direct callee is pytest's xfail)."
        fn = getattr(item, "obj", None)
        while hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        code, tb = getattr(fn, "__code__", None), getattr(excinfo, "tb", None)
        while tb is not None and code is not None:
            if tb.tb_frame.f_code is code:
                return tb.tb_next is not None and tb.tb_next.tb_frame.f_code is xfail_code
            tb = tb.tb_next
        return False

    def marked_xfail(item):
        "Whether pytest itself holds the test to be an expected failure (its xfail marks, conditions evaluated)."
        try:
            from _pytest.skipping import evaluate_xfail_marks  # pytest >= 6

            marked = evaluate_xfail_marks(item) is not None
        except ImportError:
            try:
                from _pytest.skipping import MarkEvaluator  # older pytest

                marked = MarkEvaluator(item, "xfail").istrue()
            except Exception:
                get = getattr(item, "get_closest_marker", None) or getattr(item, "get_marker", lambda name: None)
                marked = get("xfail") is not None
        fn = getattr(item, "obj", None)
        return marked or getattr(fn, "__unittest_expecting_failure__", False) is True

    def outcome(item, call, exc):
        marked = marked_xfail(item)
        if exc is None:
            return "xpass-marked" if marked and call.when == "call" else "passed"
        if skip_exc is not None and exc.errisinstance(skip_exc):
            return "skipped"
        if xfail_exc is not None and exc.errisinstance(xfail_exc):
            if marked or own_xfail(item, exc):  # marked xfail, or the test's own call: SWE-bench's XFAIL
                return "xfail-marked"
            return "xfail-imperative"  # pytest.xfail() from the code under test: a failure
        return "xfail-marked" if marked and call.when == "call" else "failed"

    def pytest_runtest_makereport(item, call):
        raised = call.excinfo  # as the call left it
        yield
        # unittest's plugin moves a TestCase's failure into call.excinfo inside the hook; an exception is never removed
        tests.add(reported_id(item.nodeid), call.when, outcome(item, call, raised if raised is not None else call.excinfo))

    if hasattr(pytest, "hookimpl"):
        pytest_runtest_makereport = pytest.hookimpl(hookwrapper=True, tryfirst=True)(pytest_runtest_makereport)
    else:
        pytest_runtest_makereport.hookwrapper = True
        pytest_runtest_makereport.tryfirst = True

    class Plugin(object):
        pass

    plugin = Plugin()
    plugin.pytest_runtest_makereport = pytest_runtest_makereport
    return plugin


def watch_unittest(tests, describe):
    "Wrap TestResult's add* methods, which every result reaches (Django's parallel runner replays onto one, too)."
    outcomes = {"addSuccess": "passed", "addFailure": "failed", "addError": "failed", "addSkip": "skipped",
                "addExpectedFailure": "xfail-marked", "addUnexpectedSuccess": "xpass-marked"}
    import unittest  # here, not at the top: a pytest run must not find unittest imported before the tests import it

    base = unittest.result.TestResult

    def wrap(name, outcome):
        method = getattr(base, name)

        def recorded(self, test, *args, **kw):
            tests.add(describe(self, test), "call", outcome)
            return method(self, test, *args, **kw)

        setattr(base, name, recorded)

    for name, outcome in outcomes.items():
        wrap(name, outcome)


def unittest_description(result, test):
    "What TextTestResult prints for `test` in verbose mode (Django's log)."
    get = getattr(result, "getDescription", None)
    return get(test) if get is not None else str(test)


SYMPY_RUNNERS = ("sympy.testing.runtests", "sympy.utilities.runtests")
SYMPY_OUTCOMES = {"test_pass": "passed", "test_fail": "failed", "test_exception": "failed", "test_skip": "skipped",
                  "test_xfail": "xfail-marked", "test_xpass": "xpass-marked"}


class SympyRunner(object):
    "Wraps sympy's reporter as its module is first executed; `changed` names what was replaced after that."

    def __init__(self, tests):
        self.tests, self.wrappers, self.machinery = tests, {}, {}

    def find_spec(self, name, path=None, target=None):
        if name not in SYMPY_RUNNERS:
            return None
        import importlib.util

        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                self.watch(module)

            spec.loader.exec_module = exec_module
        return spec

    def watch(self, module):
        reporter, tests = getattr(module, "PyTestReporter", None), getattr(module, "SymPyTests", None)
        if reporter is None or tests is None:
            return
        enter = reporter.entering_test
        recorder = self.tests

        def entering_test(rep, f):
            rep._swecl_test = getattr(f, "__name__", str(f))
            return enter(rep, f)

        self.wrappers[(reporter, "entering_test")] = entering_test
        reporter.entering_test = entering_test
        for name, outcome in SYMPY_OUTCOMES.items():
            if hasattr(reporter, name):
                self.wrappers[(reporter, name)] = self.wrap(reporter, name, outcome, recorder)
        for name in ("test_file", "test", "_timeout", "_enhance_asserts"):
            if name in vars(tests):
                self.machinery[(tests, name)] = fingerprint(vars(tests)[name])

    @staticmethod
    def wrap(reporter, name, outcome, recorder):
        method = getattr(reporter, name)

        def recorded(rep, *a, **kw):
            recorder.add(getattr(rep, "_swecl_test", "?"), "call", outcome)
            return method(rep, *a, **kw)

        setattr(reporter, name, recorded)
        return recorded

    def changed(self):
        out = [c.__module__ + "." + c.__name__ + "." + n for (c, n), w in self.wrappers.items() if vars(c).get(n) is not w]
        out += [c.__module__ + "." + c.__name__ + "." + n for (c, n), f in self.machinery.items()
                if fingerprint(vars(c).get(n)) != f]
        return out + ([] if self.wrappers else ["sympy's test reporter was never seen"])


def runner_kind(argv):
    "pytest, sympy (its bin/test) or unittest (a script such as Django's tests/runtests.py), from the command line."
    if argv[0] in ("pytest", "py.test") or argv[:2] == ["-m", "pytest"]:
        return "pytest"
    return "sympy" if argv[0].replace("\\", "/").endswith("bin/test") else "unittest"


def first_path(argv, kind):
    "sys.path[0] as the runner's own start would set it: the console script's folder, the cwd for -m, the script's."
    if kind == "pytest" and argv[0] == "-m":
        return os.getcwd()
    if kind == "pytest":
        import shutil

        found = shutil.which(argv[0]) if hasattr(shutil, "which") else None
        return os.path.dirname(found) if found else sys.path[0]
    return os.path.dirname(os.path.abspath(argv[0]))


def run_pytest(argv, tests):
    import pytest

    args = argv[2:] if argv[0] == "-m" else argv[1:]
    sys.argv = [argv[0]] + args
    return pytest.main(args, plugins=[pytest_plugin(pytest, tests)])


def run_script(argv):
    import runpy

    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0


def import_machinery():
    import importlib

    for name in ("pytest", "_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.unittest",
                 "_pytest.skipping", "_pytest.terminal", "_pytest.main", "_pytest.outcomes"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # older pytest: the module is not there, its names fingerprint as None


def main():
    records_path, argv = sys.argv[1], sys.argv[2:]
    key = sys.stdin.readline().strip().encode("ascii")
    records = Records(records_path, key)
    kind = runner_kind(argv)
    sys.path[0] = first_path(argv, kind)  # before any import the runner would resolve differently
    tests = Tests()
    records.write("start", {"python": sys.version.split()[0], "runner": kind, "argv": argv})
    code = 1
    if kind == "pytest":
        import_machinery()  # so it is fingerprinted before any project code runs
    groups = ["pytest", "unittest", "builtins"] if kind == "pytest" else ["unittest", "builtins"]
    if kind == "unittest":
        watch_unittest(tests, unittest_description)
    sympy = SympyRunner(tests) if kind == "sympy" else None
    if sympy is not None:
        sys.meta_path.insert(0, sympy)
    integrity = Integrity(groups)
    try:
        if kind == "pytest":
            code = run_pytest(argv, tests)
        else:
            code = run_script(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        lines = STATUS_LINES[kind]
        for test_id in tests.order:
            status = tests.status(test_id)
            records.write("test", {"id": test_id, "status": status, "line": lines[status].format(id=test_id)})
        changed = integrity.changed() + (sympy.changed() if sympy is not None else [])
        records.write("end", {"tests": len(tests.order), "exit": code, "changed": changed})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)  # no atexit hook of the code under test runs after the records


if __name__ == "__main__":
    main()
