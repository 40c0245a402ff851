# swecl's test witness: runs a task's test runner in this process and records, as they happen, each test's phases from
# the call itself into a stream of signed lines that the test log cannot forge. The runner and its dependencies are
# imported, and fingerprinted, before any path of the working copy is importable. Shipped as data (not exported from a
# notebook) because it runs inside the task's env, on Pythons back to 3.5: no f-strings, nothing outside the standard
# library. The harness side, which turns the records into statuses and findings, is swecl.grading.witness.
#
# Usage: python swecl_witness.py RECORDS (pytest | -m pytest | SCRIPT) ARGS...; the first key is the first line of
# standard input. What it stops and what it cannot stop is written in nbs/grading/04h_witness.ipynb.
#
# Nothing the witness keeps is looked up by name at run time: run as a script, this file executes itself again in a
# private namespace (rebinding a name in __main__ changes nothing it runs), its tables are tuples, and it keeps no
# table of outcomes at all: each record is written when its event happens, under a key used once and then replaced by
# its hash, so a test that reads the current key out of memory can neither sign an earlier record nor write one the
# harness cannot tell from a duplicate.
import hmac
import json
import os
import sys
import functools
import types

from hashlib import sha256
import builtins as BUILTINS
from os import write as os_write

dumps = json.dumps
hmac_new = hmac.new
MODULE_DICT = types.ModuleType.__dict__["__dict__"].__get__  # a module's own namespace, whatever its class says
TYPE_DICT = type.__dict__["__dict__"].__get__  # a class's own namespace, whatever its metaclass says
TYPE_MRO = type.__dict__["__mro__"].__get__
TYPE_BASES = type.__dict__["__bases__"].__get__
ModuleType = types.ModuleType
RATCHET = b"swecl-witness-ratchet"
__warningregistry__ = {}  # a warning whose stack level lands in the witness's frame adds it here, not a new name


def next_key(key):
    "The key after `key`: each record is signed with its own, and the harness derives them all from the first."
    return sha256(RATCHET + key).digest()


def signer(fd, path, key, token):
    """The record writer's state, in a generator's frame: its key, number and file are locals no attribute, closure cell
    or namespace of any object holds, and what it calls is bound here, before any project code runs. Each record is
    numbered JSON [body, mac], body the JSON text of [seq, kind, data], each key used once; data gains `state`, a digest
    of the witness's own code and of the runner's machinery as the record is written. A record asked for by code that
    is not the witness's own (a test that found the writer in memory, a wrapper put in its place) is written as
    'forged'; the message (None, id) only takes the digest, and records a 'state' if it differs from the start's."""
    seq, pid, codes, fns, cells, watched, ns, base, moved = 0, os.getpid(), frozenset(), (), (), (), None, None, False
    getpid, getframe, fstat, stat, open_, enc, mac, sha, out = os.getpid, sys._getframe, os.fstat, os.stat, os.open, \
        dumps, hmac_new, sha256, os_write
    look, idof, hashof, tup, strof, ga, isdict, ratchet = raw, id, hash, tuple, str, getattr, dict, RATCHET
    flags, st = os.O_WRONLY | os.O_CREAT | os.O_APPEND, fstat(fd)
    ino, size = st.st_ino, st.st_size
    while True:
        kind, data = yield
        if getpid() != pid:  # a forked child (multiprocessing) holds a copy of this state: it records nothing
            continue
        try:
            caller, via = getframe(2).f_code, getframe(1).f_code  # who called make_writer's `write`, which sent
            if kind is token and not fns:  # main's, once, before any project code: what each state covers
                codes, fns, cells, ns, watched = data
                continue
            if (codes and (idof(caller) not in codes or idof(via) not in codes)) or kind is token:
                kind, data = "forged", {"kind": strof(kind)[:40], "by": strof(caller.co_filename)}
            try:  # the file: still the one at `path`, and no line in it that the witness did not write
                st, at = fstat(fd), stat(path).st_ino
            except OSError:
                st, at = None, None
            if st is None or st.st_ino != ino or st.st_size != size or at != ino:
                moved, size = True, st.st_size if st is not None else size
                if at is not None and at != ino:  # replaced under its name: write on in what the harness reads
                    fd, ino = open_(path, flags, 0o600), at
                    size = fstat(fd).st_size
            parts = [moved]
            for f, c, dd, kd in fns:
                parts.append(f.__code__ is c and f.__defaults__ is dd and f.__kwdefaults__ is kd)
            for c, v in cells:
                try:
                    parts.append(c.cell_contents is v)
                except ValueError:
                    parts.append(None)
            for v in ns.values() if ns is not None else ():  # no comprehension: it would make its names cells
                parts.append(idof(v))
            for o, n in watched:
                v = look(o, n)
                parts += (idof(v), idof(ga(ga(v, "__func__", v), "__code__", None)))
            state = "%x" % (hashof(tup(parts)) & 0xFFFFFFFFFFFFFFFF)
            if kind is None:  # a look only: recorded if it differs from the start
                if base is None or state == base:
                    continue
                kind, data = "state", {"id": strof(data)}
            if kind == "runner":
                base = state
            if isdict(data):
                data["state"] = state
            body = enc([seq, kind, data], sort_keys=True, default=repr)
        except Exception as e:
            body = enc([seq, "unwritable", {"error": type(e).__name__}])
        line = (enc([body, mac(key, body.encode("utf-8"), sha).hexdigest()]) + "\n").encode("utf-8")
        out(fd, line)  # the signed text itself, verbatim
        key, seq, size = sha(ratchet + key).digest(), seq + 1, size + len(line)


def make_writer(path, key):
    "(write, token): write((kind, data)) appends a record; write((token, own_watch(...))) says, once, what it covers."
    import _thread

    token, lock = object(), _thread.RLock()  # threads of the tests report too: one record at a time
    gen = signer(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), path, key, token)
    next(gen)
    send = gen.send

    def write(message):
        with lock:
            return send(message)

    return write, token


def read_key():
    "The first line of standard input, read from the descriptor itself: no buffer keeps a copy of it."
    got = b""
    while not got.endswith(b"\n"):
        c = os.read(0, 1)
        if not c:
            break
        got += c
    return got.strip()


def raw(owner, name):
    "The value `owner` itself holds under `name` (a module's or a class's namespace, the class's bases in order)."
    if isinstance(owner, ModuleType):
        return MODULE_DICT(owner).get(name)
    if isinstance(owner, type):
        for k in TYPE_MRO(owner):
            d = TYPE_DICT(k)
            if name in d:
                return d[name]
    return getattr(owner, name, None)


CODE_HASHES = {}  # id -> (code, hash): the code is kept alive, so its id is never another's


def fingerprint(obj):
    "Identity of an object and of its code: replacing either (a monkeypatch, a new __code__) changes it."
    obj = getattr(obj, "__func__", obj)  # a bound method or a classmethod: its function
    code = getattr(obj, "__code__", None)
    if obj is None:
        return "-"
    if code is not None and id(code) not in CODE_HASHES:
        CODE_HASHES[id(code)] = (code, sha256(code.co_code).hexdigest()[:12])
    return "%x.%x.%s" % (id(obj), id(code), CODE_HASHES[id(code)][1] if code is not None else "")


MACHINERY = (  # what runs tests and reports outcomes; the code under test has no business replacing it
    ("pytest", ("_pytest.runner.call_and_report", "_pytest.runner.runtestprotocol", "_pytest.runner.call_runtest_hook",
                "_pytest.runner.CallInfo", "_pytest.runner.CallInfo.from_call", "_pytest.runner.pytest_runtest_makereport",
                "_pytest.reports.TestReport", "_pytest.reports.TestReport.from_item_and_call",
                "_pytest.reports.TestReport.__init__", "_pytest.python.pytest_pyfunc_call", "_pytest.python.Function",
                "_pytest.python.Function.runtest", "_pytest.python.Function._getobj",
                "_pytest.unittest.TestCaseFunction.runtest", "_pytest.skipping.pytest_runtest_makereport",
                "_pytest.terminal.TerminalReporter.pytest_runtest_logreport",
                "_pytest.terminal.TerminalReporter.short_test_summary", "_pytest.main.pytest_runtestloop",
                "_pytest.outcomes.fail", "_pytest.outcomes.skip", "_pytest.outcomes.xfail",
                "pluggy._callers._multicall", "pluggy.callers._multicall", "pluggy._hooks._HookCaller.__call__",
                "pluggy.hooks._HookCaller.__call__", "pluggy._manager.PluginManager._hookexec",
                "pluggy._manager.PluginManager.register", "_pytest.config.PytestPluginManager.register")),
    ("unittest", ("unittest.case.TestCase.run", "unittest.case.TestCase.__call__", "unittest.case.TestCase.fail",
                  "unittest.case.TestCase.assertEqual", "unittest.case.TestCase.assertTrue",
                  "unittest.case.TestCase.assertFalse", "unittest.case.TestCase.assertRaises",
                  "unittest.case.TestCase.assertIn", "unittest.case.TestCase.assertIs",
                  "unittest.case.TestCase._baseAssertEqual", "unittest.case.TestCase.assertMultiLineEqual",
                  "unittest.result.TestResult.addSuccess", "unittest.result.TestResult.addFailure",
                  "unittest.result.TestResult.addError", "unittest.result.TestResult.addSkip",
                  "unittest.result.TestResult.wasSuccessful", "unittest.runner.TextTestRunner.run",
                  "unittest.suite.TestSuite.run", "unittest.case.TestCase._callTestMethod",
                  "unittest.case.TestCase._callSetUp", "unittest.case.TestCase._callTearDown",
                  "unittest.case.TestCase.subTest", "unittest.case._Outcome", "unittest.case._Outcome.testPartExecutor",
                  "unittest.result.TestResult.addExpectedFailure", "unittest.result.TestResult.addUnexpectedSuccess",
                  "unittest.result.TestResult.addSubTest", "unittest.runner.TextTestResult.addSuccess",
                  "unittest.runner.TextTestResult.addFailure", "unittest.runner.TextTestResult.addError",
                  "unittest.runner.TextTestResult.addSkip", "unittest.runner.TextTestResult.addExpectedFailure")),
    ("builtins", ("builtins.AssertionError", "builtins.Exception", "builtins.isinstance", "builtins.issubclass",
                  "builtins.print", "builtins.compile", "builtins.exec", "builtins.__import__",
                  "sys.exit", "os._exit", "os.write", "json.JSONEncoder.encode", "json.JSONEncoder.iterencode",
                  "hmac.HMAC.hexdigest", "hmac.HMAC.update")),
)

# what each record's state covers, as well as the witness itself: the runner's running and reporting. A test may mock a
# builtin or an assertion for its call and put it back in its teardown, after its record: those are compared at the end
PER_RECORD = ("_pytest.", "pluggy.", "unittest.case.TestCase.run", "unittest.case.TestCase.__call__", "unittest.result.",
              "unittest.runner.", "unittest.suite.", "unittest.case.TestCase._call", "unittest.case._Outcome",
              "unittest.case.TestCase.subTest")
STDLIB = os.path.dirname(os.path.abspath(os.__file__))


def stdlib_code(obj):
    "Whether `obj`'s code (a function's or a method's) is the standard library's own, by the file it was compiled from."
    code = getattr(getattr(obj, "__func__", obj), "__code__", None)
    return code is None or os.path.abspath(code.co_filename).startswith(STDLIB + os.sep)


def resolve(path):
    "(owner, name, module name) of a dotted path: the module or class that holds its last part, found now; or None."
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        owner = sys.modules.get(".".join(parts[:i]))
        if owner is not None:
            for p in parts[i:-1]:
                owner = raw(owner, p)
                if owner is None:  # a module this pytest lacks (_pytest.reports before 3.9)
                    return None
            return owner, parts[-1], ".".join(parts[:i])
    return None


class Integrity(object):
    "The machinery's owners, held from the start (not looked up again in sys.modules), and its fingerprints."

    def __init__(self, groups):
        names = [n for g, ns in MACHINERY if g in groups for n in ns]
        self.owners = tuple((n, resolve(n)) for n in names)
        runner = set(o[2] for n, o in self.owners if o is not None and n.startswith(("_pytest.", "pluggy.", "unittest.")))
        self.modules = tuple((m, sys.modules[m]) for m in sorted(runner))  # must stay in sys.modules as they are
        # unittest is imported by the tests, not by the witness under pytest (pytester's in-process runs drop modules
        # imported after their start, and a unittest module kept alive across them changes what later tests see): its
        # functions, found only at the end, must still be the standard library's
        self.later = tuple(n for n, o in self.owners if o is None and n.startswith("unittest."))
        self.per_record = tuple(o[:2] for n, o in self.owners if o is not None and n.startswith(PER_RECORD))

    def now(self):
        return dict((n, fingerprint(raw(o[0], o[1])) if o is not None else "-") for n, o in self.owners)

    def late_changes(self):
        found = [(n, resolve(n)) for n in self.later]
        out = [n for n, o in found if o is not None and not stdlib_code(raw(o[0], o[1]))]
        return out + ["sys.modules['%s']" % m for m, mod in self.modules if sys.modules.get(m) is not mod]


def own_watch(ns, more, integrity):
    """What each record's state covers of the witness itself, and who may ask for a record: (the ids of the witness's
    code objects, each function with its code and defaults, each closure cell with its content, its namespace, the
    runner's machinery). Taken before any project code runs, from the namespace, `more` and the machinery's own."""
    own_file, todo, seen, fns, cells, codes = ns["__file__"], list(more), set(), [], [], []
    for v in list(ns.values()) + [raw(o[0], o[1]) for n, o in integrity.owners if o is not None]:
        todo += list(TYPE_DICT(v).values()) if isinstance(v, type) and v.__module__ == ns["__name__"] else [v]
    while todo:
        f = todo.pop()
        f = getattr(f, "__func__", f)  # a method, a classmethod or staticmethod: its function
        if not isinstance(f, types.FunctionType) or id(f) in seen or f.__code__.co_filename != own_file:
            continue
        seen.add(id(f))
        fns.append((f, f.__code__, f.__defaults__, f.__kwdefaults__))
        for c in f.__closure__ or ():
            try:
                cells.append((c, c.cell_contents))
                todo.append(c.cell_contents)
            except ValueError:  # a name its function assigns later
                pass
    codes_todo = [f.__code__ for f, _, _, _ in fns]
    while codes_todo:
        c = codes_todo.pop()
        codes.append(c)
        codes_todo += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    KEEP.append(codes)  # alive for the run: an id is never another code's
    return frozenset(id(c) for c in codes), tuple(fns), tuple(cells), ns, integrity.per_record


KEEP = []


def under(path, roots):
    a = os.path.abspath(path or os.curdir)
    return any(a == r or a.startswith(r + os.sep) for r in roots)


def origin(module):
    "A module's file, read from its own namespace (never through an attribute lookup it could replace)."
    f = MODULE_DICT(module).get("__file__") if isinstance(module, ModuleType) else None
    return os.path.abspath(f) if isinstance(f, str) else None


def is_stdlib(name):
    names = getattr(sys, "stdlib_module_names", None)
    if names is not None:
        return name in names
    return name in sys.builtin_module_names or os.path.exists(os.path.join(STDLIB, name)) or \
        os.path.exists(os.path.join(STDLIB, name + ".py"))


RUNNER_NAMES = ("pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "pygments", "exceptiongroup", "tomli",
                "toml", "attr", "more_itertools", "atomicwrites", "_distutils_hack", "pkg_resources")  # and what it imports
LAZY = ("tomllib", "tomli", "toml", "packaging.version", "exceptiongroup")  # what pytest imports as it reads its config
PROJECT_RUNNER = ("pytest", "_pytest", "py")  # pytest's own repository: its runner is the project


class Runner(object):
    "The runner and its dependencies imported with no path of the working copy on sys.path, and where each came from."

    def __init__(self, roots):
        self.roots, self.project_runner = roots, False
        self.found, self.modules, self.dirs = [], {}, []

    def bootstrap(self, names, lazy=()):
        import importlib

        before, saved = set(sys.modules), list(sys.path)
        project = [p for p in saved if under(p, self.roots)]
        sys.path[:] = [p for p in saved if p not in project]
        try:
            if find_spec(names[0]) is None:  # pytest's own repository: the runner is only there
                home = [p for p in project if find_spec(names[0], [p]) is not None]
                sys.path += home[:1]  # last: its dependencies still come from the env
            spec = find_spec(names[0])
            self.project_runner = names[0] == "pytest" and spec is not None and under(spec.origin or os.sep, self.roots)
            for name in tuple(names) + tuple(lazy):
                try:
                    importlib.import_module(name)
                except Exception:
                    pass  # older pytest: the module is not there, its names fingerprint as absent
        finally:
            sys.path[:] = saved
        self.survey(before, project)

    def survey(self, before, project):
        "Record each newly imported module's file and hash; name the runner's modules that come from the working copy."
        tops = set()
        for name in sorted(set(sys.modules) - before):
            f, top = origin(sys.modules[name]), name.split(".")[0]
            tops.add(top)  # its name, standard library's or not, is the runner's: the working copy must not hold it
            if f is None or f.startswith(STDLIB + os.sep) and "-packages" not in f:
                continue
            self.modules[name] = [f, file_hash(f)]
            self.dirs.append(os.path.dirname(f))
            if under(f, self.roots) and not (self.project_runner and top in PROJECT_RUNNER):
                self.found.append("the test runner's %s was imported from the working copy (%s)" % (name, f))
        for top in sorted(tops | set(RUNNER_NAMES)):
            spec = find_spec(top, project) if project and top != "test" else None
            if spec is not None and spec.origin not in (None, "namespace") and not (
                    self.project_runner and top in PROJECT_RUNNER):
                self.found.append("the working copy holds %s (%s), named like a module of the test runner" % (
                    top, spec.origin))

    def shadows_now(self):
        "Modules loaded from the working copy under a name of the runner or of the standard library, at the end."
        out, tops = [], self.tops()
        for name, mod in list(sys.modules.items()):
            top, f = name.split(".")[0], origin(mod)
            named = top in RUNNER_NAMES or top in tops or (top != "test" and is_stdlib(top))
            if f and named and under(f, self.roots) and not (self.project_runner and top in PROJECT_RUNNER):
                out.append("%s was loaded from the working copy (%s)" % (name, f))
        return sorted(out)

    def tops(self):
        return set(n.split(".")[0] for n in self.modules)


def find_spec(name, path=None):
    "Where `name` would be imported from (on `path` alone, if given), or None; never raises."
    import importlib.machinery
    import importlib.util

    try:
        return importlib.util.find_spec(name) if path is None else importlib.machinery.PathFinder.find_spec(name, path)
    except (ImportError, ValueError, AttributeError):
        return None


def file_hash(path):
    try:
        with open(path, "rb") as f:
            return sha256(f.read()).hexdigest()[:16]
    except (IOError, OSError):
        return None


def startup_findings(roots):
    "Modules the interpreter imported from the working copy before the witness started (sitecustomize, a .pth's)."
    return ["%s was imported from the working copy at interpreter start (%s)" % (n, origin(m))
            for n, m in sorted(sys.modules.items()) if n != "__main__" and under(origin(m) or os.sep, roots)]


def reported_id(nodeid):
    "A node id as pytest's verbose lines spell it: before pytest 4 a class's tests sit under an instance node, '::()'."
    return nodeid.replace("::()", "")  # as pytest 3's TerminalReporter._locationline does


def innermost(fn):
    "The function under its decorators (functools.wraps' __wrapped__ chain), unbound."
    fn = getattr(fn, "__func__", fn)
    for _ in range(64):
        try:
            inner = MODULE_DICT(fn).get("__wrapped__") if isinstance(fn, ModuleType) else fn.__dict__.get("__wrapped__")
        except AttributeError:
            break
        if inner is None:
            break
        fn = getattr(inner, "__func__", inner)
    return fn


def code_file(fn):
    code = getattr(fn, "__code__", None)
    return os.path.abspath(code.co_filename) if code is not None and not code.co_filename.startswith("<") else None


RUNTEST_HOOKS = ("pytest_runtest_protocol", "pytest_runtest_logstart", "pytest_runtest_setup", "pytest_runtest_call",
                 "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_runtest_logreport",
                 "pytest_runtest_logfinish", "pytest_pyfunc_call", "pytest_report_teststatus")


def hook_impls(caller):
    if caller is None:
        return []
    get = getattr(caller, "get_hookimpls", None)
    if get is not None:
        return get()
    return list(getattr(caller, "_nonwrappers", [])) + list(getattr(caller, "_wrappers", []))  # pluggy < 0.6


def impl_fp(impl):
    flags = "".join(c for c, a in (("h", "hookwrapper"), ("w", "wrapper"), ("f", "tryfirst"), ("l", "trylast"))
                    if getattr(impl, a, False) is True)
    return "%s|%s|%s" % (getattr(impl, "plugin_name", "?"), fingerprint(getattr(impl, "function", None)), flags)


def hook_table(pm, names=None):
    "Each hook's implementations: plugin name, function and code identity, ordering flags."
    relay = pm.hook
    if names is None:
        names = sorted(n for n in vars(relay) if n.startswith("pytest_"))
    return dict((n, [impl_fp(i) for i in hook_impls(getattr(relay, n))]) for n in names if hasattr(relay, n))


def runtest_digest(pm):
    "A digest of the implementations of the hooks that run a test (their plugins, functions, code), cheap to take."
    relay, parts = pm.hook, []
    for n in RUNTEST_HOOKS:
        parts.append(n)
        for i in hook_impls(getattr(relay, n, None)):
            fn = getattr(i, "function", None)
            parts += (id(fn), id(getattr(fn, "__code__", None)))  # a bound method's __code__ is its function's
    return "%x" % (hash(tuple(parts)) & 0xFFFFFFFFFFFFFFFF)


CALLS = ("CALL", "CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL_KW")
_open = open


def calls_at(code, offset):
    "Whether the instruction at `offset` of `code` is a call (not a truth test, an attribute or a comparison)."
    import dis

    return any(i.offset == offset and i.opname in CALLS for i in dis.get_instructions(code))


def source_line(path, lineno):
    try:
        with _open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        return lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    except (IOError, OSError):
        return ""


def own_xfail(item, excinfo, xfail_code):
    "Whether the test function itself calls pytest.xfail(): its frame calls it, on a line of its file that says so."
    code, tb = getattr(innermost(getattr(item, "obj", None)), "__code__", None), getattr(excinfo, "tb", None)
    while tb is not None and code is not None:
        if tb.tb_frame.f_code is code:
            nxt = tb.tb_next  # an object's __bool__ or __getattr__ set to pytest.xfail is reached from a non-call
            return (nxt is not None and nxt.tb_frame.f_code is xfail_code and calls_at(code, tb.tb_lasti)
                    and "xfail" in source_line(code.co_filename, tb.tb_lineno))
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
            marked = has_marker(item, "xfail")
    fn = getattr(item, "obj", None)
    return marked or getattr(fn, "__unittest_expecting_failure__", False) is True


def has_marker(item, name):
    get = getattr(item, "get_closest_marker", None) or getattr(item, "get_marker", lambda name: None)
    return get(name) is not None


NOT_HELD = object()


def held(item, module):
    "The object the test's class (or module) itself holds under the test's name, or NOT_HELD."
    name = getattr(item, "originalname", None) or item.name.split("[")[0]
    cls = getattr(item, "cls", None)
    if isinstance(cls, type):
        value = raw(cls, name)
        return NOT_HELD if value is None else value
    return MODULE_DICT(module).get(name, NOT_HELD) if isinstance(module, ModuleType) else NOT_HELD


def oddities(item, fn, roots):
    "What is wrong with a collected test's function: its module's class, its namespace, its code's file."
    module, out = getattr(item, "module", None), []
    if module is not None and type(module) is not ModuleType:
        out.append("its module's class was replaced (%s)" % type(module).__name__)
    value = held(item, module)
    if fn is not None and value is not NOT_HELD and getattr(fn, "__func__", fn) is not getattr(value, "__func__", value):
        out.append("pytest runs an object its test module does not hold under that name")
    core, mf = innermost(fn), origin(module) if module is not None else None
    cf = code_file(core)
    if mf and cf and under(cf, roots) and getattr(core, "__globals__", None) is MODULE_DICT(module) and \
            os.path.realpath(cf) != os.path.realpath(mf):
        out.append("its code was compiled from %s" % cf)
    return out


def item_obj(item):
    try:
        return getattr(item, "obj", None)
    except Exception:  # an item type without a Python object (a doctest, a YAML test)
        return None


def test_entry(item, roots):
    fn = item_obj(item)
    return [reported_id(item.nodeid), fingerprint(fn), fingerprint(innermost(fn)), has_marker(item, "xfail"),
            oddities(item, fn, roots) if fn is not None else []]


LOADERS = ("import_plugin", "_importconftest", "consider_conftest", "consider_module", "consider_env",
           "consider_preparse", "consider_pluginarg", "_import_plugin_specs", "load_setuptools_entrypoints",
           "_try_load_conftest", "_getconftestmodules", "pytest_load_initial_conftests")  # pytest loading its plugins


def registrar(frame, roots, runner_dirs, own):
    """Who registered a plugin, from the stack of the hook it calls: (the first file of the working copy on it, or None;
    whether pytest's own loading of a conftest, an entry point or a `-p` made it; whether what called `register` is
    installed code that calls a `register` itself, not a thread's start, a callback or a frame of the working copy)."""
    while frame is not None and frame.f_code.co_name != "register":  # up through pluggy to the registration
        frame = frame.f_back
    while frame is not None and frame.f_code.co_name == "register":  # pytest's register calls pluggy's
        frame = frame.f_back
    caller = frame.f_code if frame is not None else None
    cf = caller.co_filename if caller is not None else "<none>"
    trusted = "register" in caller.co_names and not cf.startswith("<") and (
        not under(cf, roots) or in_runner(os.path.abspath(cf), runner_dirs)) if caller is not None else False
    while frame is not None:
        f = frame.f_code.co_filename
        a = os.path.abspath(f) if not f.startswith("<") else None
        if a and a != own and under(a, roots) and not in_runner(a, runner_dirs):
            return a, False, trusted
        if frame.f_code.co_name in LOADERS and (a is None or not under(a, roots) or in_runner(a, runner_dirs)):
            return None, True, trusted
        frame = frame.f_back
    return None, False, trusted


def in_runner(path, runner_dirs):
    return any(path.startswith(d + os.sep) for d in runner_dirs)


def hook_files(plugin, names, roots, runner_dirs, own):
    "The files of the working copy (not the runner's, not the witness's) that hold the code of a plugin's hooks."
    out = set()
    for n in names:
        try:
            f = code_file(innermost(getattr(plugin, n, None)))
        except Exception:
            f = None
        if f and f != own and under(f, roots) and not in_runner(f, runner_dirs):
            out.add(f)
    return sorted(out)


def pytest_plugin(pytest, write, roots, runner_dirs, own):
    "A plugin that records collection, each test's call and phases, plugins registered by the code under test, the end."
    skip_exc = getattr(getattr(pytest, "skip", None), "Exception", None)
    xfail_exc = getattr(getattr(pytest, "xfail", None), "Exception", None)
    xfail = getattr(pytest, "xfail", None)  # pytest's own, taken before project code: a function, or (pytest 8) a callable
    xfail_code = getattr(xfail, "__code__", None) or getattr(getattr(type(xfail), "__call__", None), "__code__", None)
    state = {"pm": None, "items": ()}  # never trusted: the records already hold what was seen
    import _thread

    get_ident, main_thread, getframe = _thread.get_ident, _thread.get_ident(), sys._getframe

    def outcome(item, call, exc):
        marked = marked_xfail(item)
        if exc is None:
            return "xpass-marked" if marked and call.when == "call" else "passed"
        if skip_exc is not None and exc.errisinstance(skip_exc):
            return "skipped"
        if xfail_exc is not None and exc.errisinstance(xfail_exc):
            if marked or own_xfail(item, exc, xfail_code):  # marked xfail, or the test's own call: SWE-bench's XFAIL
                return "xfail-marked"
            return "xfail-imperative"  # pytest.xfail() from the code under test: a failure
        return "xfail-marked" if marked and call.when == "call" else "failed"

    def runtest_hooks(pm):
        return runtest_digest(pm) if pm is not None else None

    def pytest_plugin_registered(plugin, manager):
        "Every registration pytest's loading did not make, from a thread, by the working copy or after collection."
        thread, late = get_ident() != main_thread, state["pm"] is not None
        by, loading, trusted = registrar(getframe(1), roots, runner_dirs, own)
        hooks = sorted(n for n in dir(plugin) if n.startswith("pytest_"))
        files = hook_files(plugin, hooks, roots, runner_dirs, own)
        if thread or late or not loading and (by is not None or files or not trusted):
            write(("plugin", {"name": str(manager.get_name(plugin)), "by": by, "late": late, "hooks": hooks,
                              "thread": thread, "files": files, "trusted": trusted}))

    def pytest_collection_finish(session):
        pm, items = session.config.pluginmanager, tuple(session.items)
        has = getattr(pm, "hasplugin", None) or getattr(pm, "has_plugin", lambda n: False)
        write(("collected", {"tests": [test_entry(i, roots) for i in items], "hooks": hook_table(pm),
                             "runtest": runtest_hooks(pm), "reruns": bool(has("rerunfailures"))}))
        state["pm"], state["items"] = pm, items

    def pytest_pyfunc_call(pyfuncitem):
        fn = pyfuncitem.obj  # what pytest is about to call, as it calls it
        wrapper = code_file(getattr(fn, "__func__", fn))
        write(("calling", {"id": reported_id(pyfuncitem.nodeid), "outer": fingerprint(fn),
                           "core": fingerprint(innermost(fn)), "wrapped_here": under(wrapper or os.sep, roots)}))
        yield

    def pytest_runtest_makereport(item, call):
        raised = call.excinfo  # as the call left it
        yield
        write((None, item.nodeid))  # the state, before any of the witness's own helpers runs: none was replaced
        # unittest's plugin moves a TestCase's failure into call.excinfo inside the hook; an exception is never removed
        got = outcome(item, call, raised if raised is not None else call.excinfo)
        if call.when == "call" or got != "passed":  # a setup or teardown that passed is what the harness assumes
            hooks = runtest_hooks(state["pm"])
            write(("phase", {"id": reported_id(item.nodeid), "when": call.when, "outcome": got, "hooks": hooks}))

    def pytest_sessionfinish(session):
        if state["pm"] is not None:
            objs = [(i, item_obj(i)) for i in state["items"]]
            tests = [[fingerprint(innermost(fn)), oddities(i, fn, roots) if fn is not None else []] for i, fn in objs]
            write(("finish", {"tests": tests, "hooks": hook_table(state["pm"])}))

    return make_plugin(pytest, pytest_plugin_registered, pytest_collection_finish, pytest_pyfunc_call,
                       pytest_runtest_makereport, pytest_sessionfinish)


def make_plugin(pytest, registered, collected, pyfunc_call, makereport, sessionfinish):
    "The plugin object; the wrappers run first and outermost of the witness's own registration."
    impl = getattr(pytest, "hookimpl", None)

    def mark(fn, **opts):
        if impl is not None:
            return impl(**opts)(fn)
        for k, v in opts.items():
            setattr(fn, k, v)
        return fn

    class Plugin(object):
        pass

    plugin = Plugin()
    plugin.pytest_plugin_registered = registered
    plugin.pytest_collection_finish = mark(collected, trylast=True)
    plugin.pytest_pyfunc_call = mark(pyfunc_call, hookwrapper=True, tryfirst=True)
    plugin.pytest_runtest_makereport = mark(makereport, hookwrapper=True, tryfirst=True)
    plugin.pytest_sessionfinish = mark(sessionfinish, tryfirst=True)
    return plugin


def watch_unittest(write, describe, roots):
    """Wrap TestResult's add* methods, which every result reaches, TestCase.run and TestCase.subTest. As each run begins
    a 'method' record names the test's own function (the fingerprint of a private copy made then, which is what is
    called) and its expected-failure mark; then the function called, whether it returned or raised, a failure passing
    through a subtest, a stand-in on the test object, a rename, a trace or profile hook set as it ran, a run of the
    same test inside its own, and a run that reported nothing to its result. The harness counts a pass only when these
    agree. A report to the run's own result is recorded under the id the test had as its run began; one made to another
    result inside a test's run (the test's own use of unittest) is not a report of it. Returns ((wrapper, original),...)."""
    outcomes = {"addSuccess": "passed", "addFailure": "failed", "addError": "failed", "addSkip": "skipped",
                "addExpectedFailure": "xfail-marked", "addUnexpectedSuccess": "xpass-marked"}
    import unittest  # here, not at the top: a pytest run must not find unittest imported before the tests import it

    base, case, wrapped = unittest.result.TestResult, unittest.case.TestCase, []
    running = {}  # id(test) -> [test, its id as its run began, the result the run reports to, whether it reported]
    skip = unittest.case.SkipTest

    def current(test, result):
        r = running.get(id(test))
        return r if r is not None and r[0] is test and (r[2] is None or result is r[2]) else None

    def wrap(name, outcome):
        method = TYPE_DICT(base)[name]

        def recorded(self, test, *args, **kw):
            r = running.get(id(test))
            if r is not None and r[0] is test:
                if r[2] is None or self is r[2]:
                    t = describe(self, test, outcome)
                    if t != r[1]:
                        write(("method", {"id": r[1], "event": "renamed", "fp": t[:200]}))
                    if outcome in ("passed", "xfail-marked") and not from_run(sys._getframe(1), test, reporters):
                        write(("method", {"id": r[1], "event": "reported elsewhere", "fp": ""}))
                    write(("phase", {"id": r[1], "when": "call", "outcome": outcome}))
                    r[3] = True
            elif not running:  # outside every run: a class's or a module's setup failing, or a replayed report
                write(("phase", {"id": describe(self, test, outcome), "when": "call", "outcome": outcome,
                                 "outside": True}))
            return method(self, test, *args, **kw)

        setattr(base, name, recorded)
        wrapped.append((recorded, method))

    for name, outcome in outcomes.items():
        wrap(name, outcome)
    add_sub_test = TYPE_DICT(base)["addSubTest"]

    def recorded_subtest(self, test, subtest, err):
        r = current(test, self)
        if err is not None and r is not None:
            write(("method", {"id": r[1], "event": "subtest failed", "fp": ""}))
            r[3] = True  # its failure reached the result: the test is reported, as failed
        return add_sub_test(self, test, subtest, err)

    setattr(base, "addSubTest", recorded_subtest)
    wrapped.append((recorded_subtest, add_sub_test))
    sub_test = TYPE_DICT(case)["subTest"]

    def watched_subtest(self, *a, **kw):
        return SubTestWatch(sub_test(self, *a, **kw), write, running.get(id(self)), self, skip)

    setattr(case, "subTest", watched_subtest)
    wrapped.append((watched_subtest, sub_test))
    run = TYPE_DICT(case)["run"]
    reporters = tuple(c for c in (getattr(run, "__code__", None),
                                  getattr(TYPE_DICT(case).get("_addExpectedFailure"), "__code__", None)) if c is not None)
    init = TYPE_DICT(case)["__init__"]

    def watched_init(self, *a, **kw):
        init(self, *a, **kw)
        try:  # the function each test has as it is loaded: every run of it must begin with that one
            name, cls = object.__getattribute__(self, "_testMethodName"), type(self)
            fn = raw(cls, name)
            if fn is not None:
                get = getattr(type(fn), "__get__", None)
                own = underlying(get(fn, self, cls) if get is not None else fn)
                marked = getattr(own, "__unittest_expecting_failure__", False) is True or \
                    getattr(cls, "__unittest_expecting_failure__", False) is True
                write(("method", {"id": describe(None, self), "event": "loaded-marked" if marked else "loaded",
                                  "fp": "", "own": fingerprint(own)}))
        except Exception:
            pass

    setattr(case, "__init__", watched_init)
    wrapped.append((watched_init, init))
    for module, name in HOOK_SETTERS:
        owner = getattr(sys, "monitoring", None) if module == "sys.monitoring" else sys.modules.get(module)
        if owner is not None:
            wrapped_hook(owner, name, write, running)

    def watched_run(self, result=None):
        try:
            name = object.__getattribute__(self, "_testMethodName")
            mine = object.__getattribute__(self, "__dict__")
            cls = type(self)
            fn = raw(cls, name)
            if fn is None:  # no method of that name (unittest's _FailedTest answers by __getattr__): its own run, unwatched
                raise LookupError(name)
            get = getattr(type(fn), "__get__", None)
            bound = get(fn, self, cls) if get is not None else fn
            own = underlying(bound)
            copy = private_copy(own)  # what is called: the function as it was when the run began
            target = types.MethodType(copy, bound.__self__) if isinstance(bound, types.MethodType) and \
                bound.__func__ is own else copy if bound is own else bound  # a partial's stays as it is
            marked = getattr(own, "__unittest_expecting_failure__", False) is True or \
                getattr(cls, "__unittest_expecting_failure__", False) is True
            t = describe(None, self)
            had, before = name in mine, mine.get(name)
            if had and async_to_sync_of(before, own, roots):
                target = before  # Django runs an async test through asgiref's AsyncToSync, put on the test object
            planned = underlying(target)
            marks = dict(getattr(own, "__dict__", {}))
        except Exception:
            return run(self, result)
        write(("method", {"id": t, "event": "start-marked" if marked else "start", "fp": fingerprint(planned),
                          "own": fingerprint(own)}))
        if had and target is not before:
            write(("method", {"id": t, "event": "replaced", "fp": fingerprint(before)}))
        if any(r[1] == t for r in list(running.values())):
            write(("method", {"id": t, "event": "nested", "fp": ""}))
        hooks = hooks_now()
        if any(h is not None for h in hooks):  # set before the run began, by code under test imported earlier
            write(("method", {"id": t, "event": "hooked", "fp": ""}))
        if inspect_coroutine(own) and hasattr(cls, "_callMaybeAsync"):  # an async case awaits what it is given
            called = async_called(write, t, target, hooks)
        else:
            def called(*a, **kw):
                write(("method", {"id": t, "event": "call", "fp": fingerprint(underlying(target))}))
                try:
                    got = target(*a, **kw)
                except BaseException:
                    write(("method", {"id": t, "event": hooked(hooks) or "raised", "fp": ""}))
                    raise
                write(("method", {"id": t, "event": hooked(hooks) or "returned", "fp": ""}))
                return got
        try:
            called.__dict__.update(marks)  # its skip and expected-failure marks
            called.__name__, called.__qualname__ = name, getattr(own, "__qualname__", name)
            called.__doc__ = getattr(own, "__doc__", None)
        except Exception:
            pass
        entry, outer = [self, t, result, False], running.get(id(self))
        mine[name], running[id(self)] = called, entry
        try:
            return run(self, result)
        finally:
            if not entry[3]:
                write(("method", {"id": t, "event": "unreported", "fp": ""}))
            if outer is None:
                running.pop(id(self), None)
            else:
                running[id(self)] = outer
            if mine.get(name) is called and had:
                mine[name] = before
            elif mine.get(name) is called:
                del mine[name]

    setattr(case, "run", watched_run)
    wrapped.append((watched_run, run))
    return tuple(wrapped)


def from_run(frame, test, reporters):
    """Whether a report of `test` comes from unittest's own run of it: up the stack, the standard library's own
    TestCase.run (or _addExpectedFailure) of `test`, with no frame of the test's own methods (its setUp, tearDown, a
    cleanup, its test method) or of unittest's other code (which calls them) in between."""
    for _ in range(40):
        if frame is None:
            return False
        code, local = frame.f_code, frame.f_locals
        if any(code is c for c in reporters):
            return local.get("self") is test
        if local.get("self") is test or any(v is test for v in local.values()) and code.co_filename == CASE_FILE:
            return False
        frame = frame.f_back
    return False


CASE_FILE = os.path.join(STDLIB, "unittest", "case.py")
HOOK_SETTERS = (("sys", "settrace"), ("sys", "setprofile"), ("sys", "_settraceallthreads"),
                ("sys", "_setprofileallthreads"), ("threading", "settrace"), ("threading", "setprofile"),
                ("threading", "settrace_all_threads"), ("threading", "setprofile_all_threads"),
                ("sys.monitoring", "use_tool_id"), ("sys.monitoring", "register_callback"),
                ("sys.monitoring", "set_events"), ("sys.monitoring", "set_local_events"))


def hooks_now():
    "The trace and profile functions set now, and the sys.monitoring tools in use (3.12 on)."
    mon = getattr(sys, "monitoring", None)
    tools = tuple(mon.get_tool(i) for i in range(6)) if mon is not None else ()
    return (sys.gettrace(), sys.getprofile()) + tools


def wrapped_hook(owner, name, write, running):
    "sys.settrace and its kin, wrapped: each test running as a trace or profile function is set is recorded 'hooked'."
    original = getattr(owner, name, None)
    if original is None:
        return

    current = getattr(owner, name.replace("set", "get", 1), None) if name in ("settrace", "setprofile") else None

    def set_hook(*a, **kw):
        if a and current is not None and a[0] is current():  # put back as it was (doctest does): no new hook
            return original(*a, **kw)
        for r in list(running.values()):
            write(("method", {"id": r[1], "event": "hooked", "fp": ""}))
        return original(*a, **kw)

    setattr(owner, name, set_hook)


def hooked(hooks):
    "'hooked' if a trace or profile function other than the run's first is set now (it can rewrite an assertion's locals)."
    return "hooked" if hooks_now() != hooks else None


def private_copy(fn):
    "A copy of a plain function (its code, globals, defaults, closure, marks), so that swapping the original's code after this changes nothing called."
    if type(fn) is not FunctionType:
        return fn
    copy = FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__, copy.__qualname__, copy.__module__ = fn.__kwdefaults__, fn.__qualname__, fn.__module__
    copy.__dict__.update(fn.__dict__)
    return copy


class SubTestWatch(object):
    "subTest's context manager, watched: a failure passing out of the block is recorded before unittest can drop it."

    def __init__(self, cm, write, entry, test, skip):
        self.cm, self.write, self.entry, self.test, self.skip = cm, write, entry, test, skip

    def __enter__(self):
        return self.cm.__enter__()

    def __exit__(self, kind, value, tb):
        e = self.entry
        if kind is not None and not issubclass(kind, self.skip) and e is not None and e[0] is self.test:
            self.write(("method", {"id": e[1], "event": "subtest failed", "fp": ""}))
        return self.cm.__exit__(kind, value, tb)


def inspect_coroutine(fn):
    import inspect

    return inspect.iscoroutinefunction(fn)


def async_called(write, t, target, hooks):
    "The async twin of watched_run's `called`, for IsolatedAsyncioTestCase (3.8 on), which awaits its test method."
    async def called():
        write(("method", {"id": t, "event": "call", "fp": fingerprint(underlying(target))}))
        try:
            got = await target()
        except BaseException:
            write(("method", {"id": t, "event": hooked(hooks) or "raised", "fp": ""}))
            raise
        write(("method", {"id": t, "event": hooked(hooks) or "returned", "fp": ""}))
        return got

    return called


def async_to_sync_of(obj, fn, roots):
    "Whether `obj` is asgiref's AsyncToSync, installed (not the working copy's), of the test's own function `fn`."
    kind = type(obj)
    call = getattr(TYPE_DICT(kind).get("__call__"), "__code__", None)
    return TYPE_DICT(kind).get("__module__") == "asgiref.sync" and kind.__name__ == "AsyncToSync" and \
        call is not None and "asgiref" in call.co_filename and not under(call.co_filename, roots) and underlying(obj) is fn


def underlying(obj):
    "The function a bound method, a partial (partialmethod's), or an AsyncToSync of one, calls (else `obj`)."
    for _ in range(4):
        inner = getattr(obj, "__func__", None) if isinstance(obj, types.MethodType) else getattr(obj, "awaitable", None) \
            if type(obj).__name__ == "AsyncToSync" else obj.func if isinstance(obj, functools.partial) else None
        if inner is None:
            return obj
        obj = inner
    return obj


UNITTEST_FILES = ("__init__", "case", "result", "runner", "suite", "loader", "main", "util", "signals", "async_case")
SIMPLE = (type(None), bool, int, float, str, bytes)
CLASS_FIXED = ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__")
FunctionType, CodeType = types.FunctionType, types.CodeType


def shipped(name, path):
    "The namespace the standard library's own file makes as module `name`, executed afresh (its imports: live modules)."
    with open(path, "rb") as f:
        source = f.read()
    ns = {"__name__": name, "__package__": "unittest", "__file__": path, "__builtins__": BUILTINS}
    exec(compile(source, path, "exec"), ns)
    return ns


class Shipped(object):
    """Compares unittest's live modules, and the classes of the tests that ran, with what the standard library's files
    make afresh: the same code under the same names, defaults and closure contents, no method added or removed. The
    witness's own wrappers stand for the functions they wrap."""

    def __init__(self, own):
        self.own = dict((id(w), o) for w, o in own)
        self.keep = own  # alive for the run: an id is never another's

    def changes(self, modules):
        out = []
        for short in UNITTEST_FILES:
            name = "unittest" if short == "__init__" else "unittest." + short
            live = modules.get(name)
            if not isinstance(live, ModuleType):
                continue
            try:
                out += self.module_changes(name, MODULE_DICT(live), shipped(name, os.path.join(STDLIB, "unittest",
                                                                                               short + ".py")))
            except Exception as e:
                out.append("%s (it could not be compared with the standard library's: %s)" % (name, type(e).__name__))
        return out

    def module_changes(self, name, live, ns):
        out = []
        for k, fresh in ns.items():
            if k.startswith("__") and k.endswith("__") and k not in ("__getattr__", "__dir__"):
                continue
            if not (isinstance(fresh, (FunctionType, type))):
                continue
            if k not in live:
                out.append("%s.%s (removed)" % (name, k))
            elif isinstance(fresh, type) and TYPE_DICT(fresh).get("__module__") == name and isinstance(live[k], type):
                out += self.class_changes("%s.%s" % (name, k), live[k], fresh, ns, live)
            elif self.unlike(live[k], fresh, ns, live, set()):
                out.append("%s.%s" % (name, k))
        shadows = [k for k in live if k not in ns and k in MODULE_DICT(BUILTINS) and not k.startswith("__")]
        return out + ["%s.%s (a builtin's name)" % (name, k) for k in sorted(shadows)]

    def class_changes(self, where, live, fresh, ns, mod, seen=None):
        seen = set() if seen is None else seen
        seen.add((id(live), id(fresh)))
        if type(live) is not type(fresh) or live.__qualname__ != fresh.__qualname__ or \
                TYPE_DICT(live).get("__module__") != TYPE_DICT(fresh).get("__module__"):
            return [where]
        lb, fb = TYPE_BASES(live), TYPE_BASES(fresh)
        if len(lb) != len(fb) or any(self.unlike(a, b, ns, mod, seen) for a, b in zip(lb, fb)):
            return [where + " (its bases)"]
        ld, fd, out = TYPE_DICT(live), TYPE_DICT(fresh), []
        for k, v in fd.items():
            if k in CLASS_FIXED:
                continue
            if k not in ld:
                out.append("%s.%s (removed)" % (where, k))
            elif self.unlike(ld[k], v, ns, mod, seen):
                out.append("%s.%s" % (where, k))
        return out + ["%s.%s (added)" % (where, k) for k in ld if k not in fd and callable(ld[k])]

    def unlike(self, live, fresh, ns, mod, seen):
        "Whether `live` is not what `fresh`, made by the shipped source (`ns`), is; `mod` the live module's namespace."
        live = self.own.get(id(live), live)
        key = (id(live), id(fresh))
        if key in seen:
            return False  # being compared further up
        seen.add(key)
        kind = type(fresh)
        if kind in (staticmethod, classmethod):
            return type(live) is not kind or self.unlike(live.__func__, fresh.__func__, ns, mod, seen)
        if kind is property:
            return type(live) is not property or any(
                self.unlike(getattr(live, a), getattr(fresh, a), ns, mod, seen) for a in ("fget", "fset", "fdel"))
        if kind is FunctionType:
            if live is fresh:  # imported from another module, where it is compared
                return False
            if type(live) is not FunctionType or type(live.__code__) is not CodeType or live.__code__ != fresh.__code__:
                return True
            if fresh.__globals__ is ns and live.__globals__ is not mod:
                return True
            if fresh.__globals__ is not ns and not globals_alike(live.__globals__, fresh.__globals__):
                return True  # made here by another module's code (a decorator's wrapper, a namedtuple's method)
            return self.values_unlike(live.__defaults__, fresh.__defaults__, ns, mod, seen) or \
                self.values_unlike(tuple(sorted((live.__kwdefaults__ or {}).items())),
                                   tuple(sorted((fresh.__kwdefaults__ or {}).items())), ns, mod, seen) or \
                self.values_unlike(cells(live), cells(fresh), ns, mod, seen)
        if isinstance(fresh, type):
            if TYPE_DICT(fresh).get("__module__") != ns["__name__"]:
                return live is not fresh
            if fresh.__qualname__ == fresh.__name__:  # one of the module's own classes, compared under its name there
                return live is not mod.get(fresh.__name__)
            return not isinstance(live, type) or bool(self.class_changes("", live, fresh, ns, mod, seen))
        if fresh is None or kind in SIMPLE or kind is tuple:
            return False  # a setting or a constant: no code of the runner
        return False  # another object (a sentinel, a registry): state, not code

    def values_unlike(self, a, b, ns, mod, seen):
        if (a is None) != (b is None):
            return True
        if a is None:
            return False
        if len(a) != len(b):
            return True
        for x, y in zip(a, b):
            if type(y) in SIMPLE:
                if type(x) is not type(y) or x != y:
                    return True
            elif type(y) is tuple:
                if type(x) is not tuple or self.values_unlike(x, y, ns, mod, seen):
                    return True
            elif isinstance(y, (FunctionType, type, staticmethod, classmethod, property)):
                if self.unlike(x, y, ns, mod, seen):
                    return True
        return False


EMPTY = ("<empty cell>",)


def globals_alike(a, b):
    "Whether two functions' globals are one namespace, or two alike that a module function made (namedtuple's)."
    if a is b:
        return True
    if type(a) is not dict or type(b) is not dict or set(a) != set(b) or b.get("__name__") in (None, "unittest"):
        return False
    made = str(b.get("__name__")).startswith("namedtuple_")  # namedtuple's own: it holds the class (3.6), or __new__
    for k, y in b.items():
        x = a[k]
        if not (x is y or type(y) in SIMPLE and type(x) is type(y) and x == y or
                type(y) is dict and type(x) is dict and not x and not y or
                made and isinstance(y, type) and isinstance(x, type) and x.__qualname__ == y.__qualname__ or
                made and type(y) is FunctionType and type(x) is FunctionType and x.__code__ == y.__code__):
            return False
    return True


def cells(fn):
    "A function's closure contents, in order (an empty cell as EMPTY)."
    out = []
    for c in fn.__closure__ or ():
        try:
            out.append(c.cell_contents)
        except ValueError:
            out.append(EMPTY)
    return tuple(out)


def unittest_description(result, test, outcome="passed"):
    """The id of `test` as unittest's own __str__ spells it (`name (module.Class)`, from Python 3.11 on
    `name (module.Class.name)`), read from the test object and its class, never from its description: the code under
    test writes shortDescription, __str__ and getDescription, and could spell a failing test `... ok`. A test object of
    another kind (a setUpClass error's holder) is named by its own description when it fails, never when it passes."""
    cls = type(test)
    try:
        name = object.__getattribute__(test, "_testMethodName")
        module, qual = type.__getattribute__(cls, "__module__"), type.__getattribute__(cls, "__qualname__")
    except AttributeError:
        name = module = qual = None
    if all(isinstance(x, str) for x in (name, module, qual)):
        tail = ".%s" % name if sys.version_info >= (3, 11) else ""
        return "%s (%s.%s%s)" % (name, module, qual, tail)
    if outcome == "passed":
        return "<a passing test object that is no TestCase: %s>" % type.__getattribute__(cls, "__name__")
    described = getattr(test, "description", None)
    return described if isinstance(described, str) else "<%s>" % type.__getattribute__(cls, "__name__")


SYMPY_RUNNERS = ("sympy.testing.runtests", "sympy.utilities.runtests")
SYMPY_OUTCOMES = (("test_pass", "passed"), ("test_fail", "failed"), ("test_exception", "failed"),
                  ("test_skip", "skipped"), ("test_xfail", "xfail-marked"), ("test_xpass", "xpass-marked"))


class SympyRunner(object):
    "Wraps sympy's reporter as its module is first executed; `changed` names what was replaced after that."

    def __init__(self, records):
        self.records, self.wrappers, self.machinery = records, {}, {}

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

        def entering_test(rep, f):
            rep._swecl_test = getattr(f, "__name__", str(f))
            return enter(rep, f)

        self.wrappers[(reporter, "entering_test")] = entering_test
        reporter.entering_test = entering_test
        for name, outcome in SYMPY_OUTCOMES:
            if hasattr(reporter, name):
                self.wrappers[(reporter, name)] = self.wrap(reporter, name, outcome, self.records)
        for name in ("test_file", "test", "_timeout", "_enhance_asserts"):
            if name in vars(tests):
                self.machinery[(tests, name)] = fingerprint(vars(tests)[name])

    @staticmethod
    def wrap(reporter, name, outcome, records):
        method = getattr(reporter, name)

        def recorded(rep, *a, **kw):
            records(("phase", {"id": getattr(rep, "_swecl_test", "?"), "when": "call", "outcome": outcome}))
            return method(rep, *a, **kw)

        setattr(reporter, name, recorded)
        return recorded

    def changed(self):
        name = lambda c, n: c.__module__ + "." + c.__name__ + "." + n
        out = [name(c, n) for (c, n), w in self.wrappers.items() if TYPE_DICT(c).get(n) is not w]
        out += [name(c, n) for (c, n), f in self.machinery.items() if fingerprint(TYPE_DICT(c).get(n)) != f]
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


PYTEST_MODULES = ("pytest", "_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.unittest",
                  "_pytest.skipping", "_pytest.terminal", "_pytest.main", "_pytest.outcomes", "_pytest.config")


def run_pytest(argv, plugin):
    import pytest

    args = argv[2:] if argv[0] == "-m" else argv[1:]
    sys.argv = [argv[0]] + args
    return pytest.main(args, plugins=[plugin])


def run_script(argv):
    import runpy

    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")
    return 0


def main():
    records_path, argv = sys.argv[1], sys.argv[2:]
    write, token = make_writer(records_path, read_key())
    kind, own = runner_kind(argv), os.path.abspath(__file__)
    sys.path[0] = first_path(argv, kind)  # before any import the runner would resolve differently
    roots = tuple(sorted(set([os.path.dirname(os.path.dirname(own)), os.getcwd()])))  # the working copy
    start = {"python": sys.version.split()[0], "runner": kind, "argv": argv, "roots": roots,
             "found": startup_findings(roots)}
    runner = Runner(roots)
    if kind != "sympy":  # sympy's runner is the project's own code, put back as at the base commit by the guard
        runner.bootstrap(PYTEST_MODULES, LAZY) if kind == "pytest" else runner.bootstrap(("unittest",))
    groups = ("pytest", "unittest", "builtins") if kind == "pytest" else ("unittest", "builtins")
    shipped_unittest = Shipped(watch_unittest(write, unittest_description, roots) if kind == "unittest" else ())
    sympy = SympyRunner(write) if kind == "sympy" else None
    if sympy is not None:
        sys.meta_path.insert(0, sympy)
    integrity, code, plugin = Integrity(groups), 1, None
    if kind == "pytest":
        import pytest

        plugin = pytest_plugin(pytest, write, roots, tuple(sorted(set(runner.dirs))), own)
    write((token, own_watch(globals(), list(vars(plugin).values()) if plugin is not None else [], integrity)))
    write(("start", start))
    write(("runner", {"modules": runner.modules, "found": runner.found, "project_runner": runner.project_runner,
                      "machinery": integrity.now()}))
    try:
        code = run_pytest(argv, plugin) if kind == "pytest" else run_script(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        late = integrity.late_changes() + shipped_unittest.changes(sys.modules)
        late = list(dict.fromkeys(late + (sympy.changed() if sympy is not None else [])))
        sys.stdout.flush()
        sys.stderr.flush()
        write(("end", {"exit": code if isinstance(code, int) else 1, "machinery": integrity.now(), "late": late,
                       "found": runner.shadows_now()}))
    os._exit(code if isinstance(code, int) else 1)  # no atexit hook of the code under test runs after the records


if __name__ == "__main__":
    with open(__file__) as _f:  # the witness runs from a namespace of its own: rebinding a name in __main__ is inert
        _ns = {"__name__": "swecl_witness", "__file__": os.path.abspath(__file__), "__builtins__": __builtins__}
        _code = compile(_f.read(), _ns["__file__"], "exec")
    exec(_code, _ns)
    _ns["main"]()
