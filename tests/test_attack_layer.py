"""Attacks on the session's own layer of the env (`LocalSession.open_env_layer`, `env_writes`, `drop_written_bytecode`,
`grading.layer`): grading re-runs the task's install step over the patched tree, so the patch's setup.py runs with
/testenv writable. Each attack is a real patch graded by `grade` in a real sandbox, over a copy of the mini env whose
install step runs setup.py (as `pip install -e .` does). Every attack must buy nothing: the grade is not counted
resolved (`counted_verdict` False, never None: an exception of swecl's once the patch applied is the patch's failure on
a gradable task), what it wrote into the env is named where it changes how the tests start, the env folder stays byte
for byte as it was, no mount or folder is left, and later gradings (the empty patch, the gold patch) grade as before.

A test marked `xfail(raises=HoleOpen, strict=True)` documents an attack that works today: its last check raises
`HoleOpen` when the attack bought something. Once the hole is closed it passes, strict xfail fails, and the marker
must go. Its controls are plain asserts, so an attack that no longer runs at all fails loudly instead of hiding."""

import dataclasses
import os
import shutil
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from conftest import first_by_default
from test_attack_testbeds import mounts_under
from test_attack_testbeds import snapshot as digest  # every entry's mode, owner, size, mtime, links and bytes

from swecl.base.labels import counted_verdict
from swecl.envs import venvs
from swecl.envs.envs import mini_env
from swecl.grading import grading as grading_module
from swecl.grading.grading import grade
from swecl.grading.guard import restore_raw, text_at
from swecl.grading.layer import base_names, env_finding, pth_problem
from swecl.pool.edits import file_diff
from swecl.sandbox import sandbox as sandbox_module
from swecl.sandbox.isolation import Limits
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")  # truncate() with a tiny width; FAIL_TO_PASS test_truncate_tiny_width
OTHER = MINI.task("swecl-mini__textkit-2")  # another task on the same env: what one grading leaves must not reach it
LIMITS = Limits(timeout=120, cpu_seconds=120, memory_mb=2048, processes=64, disk_mb=256)
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="overlay layers, tmpfs roots and the sandbox user need root")
thorough = pytest.mark.thorough

# the install step of a SWE-bench spec like `pip install -e .`: it runs the patched tree's setup.py, env writable
INSTALL = "if [ -f setup.py ]; then python setup.py; fi && python -c pass"
SITE = "import os, sys, sysconfig\nsite = sysconfig.get_paths()['purelib']\n"  # the head of every setup.py below
PT = "'pyt' + 'est11'"  # the group name as an expression: the guard flags a setup.py that spells it (and it should)

# the fix of TASK, applied by the attacker's setup.py to a copy of wrap.py (the patched source stays unfixed)
FIXED_WRAP = """
src = open('/testbed/src/textkit/wrap.py').read()
fixed = src.replace("    return text[:width - len(ellipsis)] + ellipsis",
                    "    if width <= len(ellipsis):\\n        return ellipsis[:width]\\n    return text[:width - len(ellipsis)] + ellipsis")
assert fixed != src
"""
# Python that fixes TASK in the running process (the payload of a plugin or shadow module)
FIX_IN_PROCESS = """
from textkit import wrap as _w
def _fixed(text, width, ellipsis='...'):
    if len(text) <= width:
        return text
    if width <= len(ellipsis):
        return ellipsis[:width]
    return text[:width - len(ellipsis)] + ellipsis
_w.truncate.__code__ = _fixed.__code__
"""
# bytecode of the fixed wrap.py, unchecked-hash: Python loads it without looking at the (unfixed) source
PLANT_WRAP_PYC = (
    FIXED_WRAP
    + """
import importlib.util, py_compile
open('/tmp/fixed_wrap.py', 'w').write(fixed)
PYC = importlib.util.cache_from_source('/testbed/src/textkit/wrap.py')
py_compile.compile('/tmp/fixed_wrap.py', cfile=PYC, dfile='/testbed/src/textkit/wrap.py',
                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
"""
)


class HoleOpen(AssertionError):
    "The attack bought something: raised only by a hole test's final check (its controls are plain asserts)."


def hole(reason: str):
    return pytest.mark.xfail(raises=HoleOpen, strict=True, reason=f"HOLE: {reason}")


def gained(cond: bool, what: str):
    if cond:
        raise HoleOpen(what)


# --- helpers -----------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Bench:
    "A copy of the mini env with `INSTALL`, a sandbox on it, and the env's digest once prepared."

    env: object
    sb: LocalSandbox
    work: Path
    logs: Path
    before: dict = None

    def grade(self, patch: str, task=TASK):
        return grade(task, patch, self.sb, log_dir=self.logs)

    def log(self, g) -> str:
        return Path(g.log_path).read_text(errors="replace")

    def assert_unharmed(self):
        "The env folder byte for byte as prepared, no session folder or mount left."
        after = digest(self.env.path)
        assert after == self.before, sorted(
            k for k in set(after) | set(self.before) if after.get(k) != self.before.get(k)
        )[:10]
        assert os.listdir(self.work) == [] and mounts_under(self.work) == []


def env_copy(where: Path, prepare=None):
    "A copy of the mini env (its own name: its own testbeds) whose install step is `INSTALL`; `prepare(site)` adds files."
    base = mini_env()
    path = where / f"mini-layer-{uuid.uuid4().hex[:8]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(base.path), str(path)], check=True)
    if prepare:
        prepare(next(path.glob("lib/python*/site-packages")))
    return dataclasses.replace(base, path=path, install=INSTALL)


def prepared_bench(env, work: Path, logs: Path, limits=LIMITS) -> Bench:
    work.mkdir()
    sb = LocalSandbox([MIRROR], limits=limits, workdir=work)
    sb.env_for = lambda task: env
    b = Bench(env, sb, work, logs)
    sb.open(TASK).close()  # the testbed prepared and the env installed into by the base commit's tree (trusted)
    b.before = digest(env.path)
    return b


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    "One env copy and testbed cache for the module's benches: each test must leave it as it found it (`assert_unharmed`)."
    root = tmp_path_factory.mktemp("layer")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("SWECL_CACHE_DIR", str(root / "cache"))
        env = env_copy(root / "envs")
        yield env, prepared_bench(env, root / "first", root / "logs").before


@pytest.fixture
def bench(tmp_path, shared):
    "`make(folder='plain', prepare=None, limits=LIMITS)`: a sandbox on the shared env, or on an env of its own (`prepare`)."
    env, before = shared

    def make(folder="plain", prepare=None, limits=LIMITS):
        if prepare is not None:
            return prepared_bench(env_copy(tmp_path / "envs", prepare), tmp_path / folder, tmp_path / "logs", limits)
        assert digest(env.path) == before  # what an earlier test did is gone
        work = tmp_path / folder
        work.mkdir()
        sb = LocalSandbox([MIRROR], limits=limits, workdir=work)
        sb.env_for = lambda task: env
        return Bench(env, sb, work, tmp_path / "logs", before)

    return make


def attack(setup_body: str, fix: bool = False, extra: str = "") -> str:
    "A patch: TASK's gold fix (when `fix`), a new setup.py of `SITE` + `setup_body`, and `extra` (more diffs)."
    body = SITE + textwrap.dedent(setup_body)
    assert "pytest11" not in body  # the guard refuses a setup.py that names the plugin group (a control of its own)
    return (TASK.patch if fix else "") + file_diff("setup.py", None, body) + extra


def counted(g) -> bool | None:
    return counted_verdict(g.record())


def named(g) -> list:
    "The findings on what the patch and its install step did (the layer's, the env probe's and the tree guard's)."
    return [f for f in g.suspicious if not f.startswith("witness:")]


def run_part(log: str) -> str:
    "The log from the test patch on: what the test run printed (the install step's own output comes before)."
    assert "$ apply test patch" in log, log[-2000:]
    return log.split("$ apply test patch", 1)[1]


@pytest.fixture(scope="module", autouse=True)
def real_env_untouched():
    "No attack here writes the mini benchmark's own env (the sandboxes above use copies of it)."
    real = Path(mini_env().path)
    before = digest(real)
    yield
    assert digest(real) == before


# --- controls ------------------------------------------------------------------------------------------------------------


@needs_root
def test_the_gold_patch_with_a_harmless_install_resolves_unflagged_and_the_empty_patch_does_not(bench):
    b = bench()
    g = b.grade(attack("print('building', site)\n", fix=True))
    assert g.resolved and g.suspicious == [] and counted(g) is True, g
    e = b.grade(attack("print('building', site)\n"))
    assert counted(e) is False and e.suspicious == [] and e.infra_reason is None, e
    b.assert_unharmed()


# --- what the install writes into its layer of the env is named ----------------------------------------------------------

# the env's python swapped for a wrapper that leaves a mark where it runs, and the bytecode stamp removed: the host runs
# `<env>/bin/python -m compileall` whenever the stamp is missing (`venvs.compile_bytecode`), as root
HOST_MARK = f"/tmp/swecl-layer-host-ran-{uuid.uuid4().hex[:12]}"
PY_SWAP = f"""
real = os.path.realpath(sys.executable)
for name in ('python', 'python3', 'python3.11'):
    p = '/testenv/bin/' + name
    os.remove(p)
    open(p, 'w').write('#!/bin/sh\\necho ran > {HOST_MARK}\\nexec ' + real + ' "$@"\\n')
    os.chmod(p, 0o755)
os.remove('/testenv/.swecl-bytecode')
"""


def dist_info(entry_points: str) -> str:
    "A setup.py body writing a dist-info named like the project, whose entry_points.txt is `entry_points` (an expression)."
    return f"""
d = site + '/textkit-0.1.dist-info'
os.makedirs(d, exist_ok=True)
open(d + '/METADATA', 'w').write('Metadata-Version: 2.1\\nName: textkit\\nVersion: 0.1\\n')
open(d + '/entry_points.txt', 'w').write({entry_points} + '\\nevil = textkit.evilplug\\n')
"""


def finder(mapping: str) -> str:
    "A setup.py body writing pip's editable finder for the project with MAPPING = `mapping` and its .pth."
    text = f"MAPPING = {mapping}\ndef install():\n    pass\n"
    line = "import __editable___textkit_0_1_finder; __editable___textkit_0_1_finder.install()\n"
    return f"open(site + '/__editable___textkit_0_1_finder.py', 'w').write({text!r})\n" + (
        f"open(site + '/__editable__.textkit-0.1.pth', 'w').write({line!r})\n"
    )


def pth(line: str) -> str:
    return f"open(site + '/zz-evil.pth', 'w').write({line!r} + '\\n')\n"


EVIL_PLUGIN = file_diff(
    "src/textkit/evilplug.py", None, "import sys\nsys.stderr.write('EVILPLUG-LOADED\\n')\n" + FIX_IN_PROCESS
)
SHADOW_PLUGGY = "import sys\nsys.stderr.write('SHADOW-RAN\\n')\n"

# name: (setup.py body, the gold fix too, named, more of the patch); each graded not counted resolved
LAYER_WRITES = {
    "the env's python replaced and its bytecode stamp removed": (PY_SWAP, True, True, ""),
    "pyvenv.cfg opened to the system's packages": (
        "open('/testenv/pyvenv.cfg', 'a').write('include-system-site-packages = true\\n')\n",
        True,
        True,
        "",
    ),
    "a start-up module": ("open(site + '/sitecustomize.py', 'w').write('import sys\\n')\n", True, True, ""),
    "a plugin group the probe's configparser misreads ([[pytest11]])": (
        dist_info(f"'[[' + {PT} + ']]'"),
        True,
        True,
        EVIL_PLUGIN,
    ),
    "an upper-case plugin group": (dist_info(f"'[' + {PT}.upper() + ']'"), True, True, EVIL_PLUGIN),
    "a spaced plugin group": (dist_info(f"'[ ' + {PT} + ' ]'"), True, True, EVIL_PLUGIN),
    "an editable finder mapping a runner module": (
        finder("{'textkit': '/testbed/src/textkit', 'pluggy': '/testbed/shadow/pluggy'}"),
        True,
        True,
        "",
    ),
    "an editable finder with keys that are no strings": (
        finder("{1: '/x', ('textkit',): '/y', b'textkit': '/z'}"),
        True,
        True,
        "",
    ),
    "an editable .pth importing a finder planted in the working copy": (
        "open('/testbed/src/__editable___zz_finder.py', 'w').write('import sys\\ndef install():\\n    pass\\n')\n"
        + pth("import __editable___zz_finder; __editable___zz_finder.install()"),
        True,
        True,
        "",
    ),
    "a .pth adding a working-copy folder that holds a shadow pluggy": (
        "os.makedirs('/testbed/shadow', exist_ok=True)\n"
        f"open('/testbed/shadow/pluggy.py', 'w').write({SHADOW_PLUGGY!r})\n" + pth("/testbed/shadow"),
        True,
        True,
        "",
    ),
    "a .pth climbing out of /testbed": (pth("/testbed/../usr/lib/python3/dist-packages"), True, True, ""),
    "the runner's own code edited": (
        "open(site + '/_pytest/runner.py', 'a').write('\\n# steered\\n')\n",
        True,
        True,
        "",
    ),
    # admitted (the project's own name), and pytest never loads a conftest from site-packages: the empty patch fails
    "a conftest.py in the project's own package in site-packages": (
        "os.makedirs(site + '/textkit', exist_ok=True)\n"
        f"open(site + '/textkit/conftest.py', 'w').write({FIX_IN_PROCESS!r})\n",
        False,
        False,
        "",
    ),
    "an editable finder whose MAPPING is no mapping": (finder("None"), True, True, ""),
    "an editable finder whose MAPPING has unhashable keys": (finder("{['textkit']: '/x'}"), True, True, ""),
}


@needs_root
@pytest.mark.parametrize("name", first_by_default(list(LAYER_WRITES)))
def test_what_the_install_writes_into_its_env_layer_buys_nothing(bench, name):
    body, fix, must_be_named, extra = LAYER_WRITES[name]
    b = bench()
    g = b.grade(attack(body, fix, extra))
    assert g.patch_applied, g
    assert counted(g) is False, g  # not resolved and not excused
    assert not must_be_named or named(g), g
    b.assert_unharmed()
    if name.startswith("the env's python replaced"):  # what the host runs on the env is the env's own python
        assert venvs.compile_bytecode(b.env.path) is False  # the stamp is there: nothing runs
        assert not os.path.exists(HOST_MARK)


@needs_root
@thorough
def test_symlinks_and_hard_links_in_the_layer_make_the_host_read_or_remove_nothing(bench, tmp_path):
    secret = tmp_path / "host-secret"
    secret.write_text(f"HOST-SECRET-{uuid.uuid4().hex}\n")
    os.chmod(secret, 0o600)
    secret_dir = tmp_path / "host-dir"
    secret_dir.mkdir()
    (secret_dir / "keep.cpython-311.pyc").write_text("keep\n")
    before = (secret.read_text(), secret.stat().st_mode, sorted(os.listdir(secret_dir)))
    b = bench()
    body = f"""
S, D = {str(secret)!r}, {str(secret_dir)!r}
os.makedirs(site + '/textkit-0.1.dist-info', exist_ok=True)
os.makedirs(site + '/textkit', exist_ok=True)
links = {{
    site + '/zz-link.pth': S,
    site + '/textkit-0.1.dist-info/entry_points.txt': S,
    site + '/__editable___textkit_0_1_finder.py': S,
    site + '/textkit/victim.cpython-311.pyc': S,
    site + '/textkit/__pycache__': D,
    site + '/zz-dir.dist-info': D,
    '/testenv/include/victim': S,
    '/testbed/src/textkit/__pycache__': D,
}}
for link, target in links.items():
    os.symlink(target, link)
for target, link in (('/etc/hostname', '/testenv/hard1'), ('/testbed/src/textkit/wrap.py', site + '/hard2.py')):
    try:
        os.link(target, link)
        print('HARD-LINKED', link)
    except OSError as e:
        print('no hard link:', e)
"""
    g = b.grade(attack(body, fix=True))
    log = b.log(g)
    assert "no hard link" in log and "HARD-LINKED" not in log, log  # links across mounts are refused
    assert counted(g) is False and named(g), g
    assert secret.read_text() not in "\n".join(g.suspicious + g.notes) + log
    assert (secret.read_text(), secret.stat().st_mode, sorted(os.listdir(secret_dir))) == before
    b.assert_unharmed()


# a sourceless package `_pytest/runner/` shadows `_pytest/runner.py` (a package wins over a module): the layer admits it
# as bytecode, and only `drop_written_bytecode` keeps it from running
SOURCELESS_RUNNER = """
import marshal, importlib.util
real = site + '/_pytest/runner.py'
code = compile("import sys\\nsys.stderr.write('PYC-RAN\\\\n')\\n__file__ = %r\\n__package__ = '_pytest'\\nexec(compile(open(__file__).read(), __file__, 'exec'))\\n" % real, real, 'exec')
os.makedirs(site + '/_pytest/runner', exist_ok=True)
with open(site + '/_pytest/runner/__init__.pyc', 'wb') as f:
    f.write(importlib.util.MAGIC_NUMBER + b'\\x01\\x00\\x00\\x00' + b'\\x00' * 8 + marshal.dumps(code))
"""


@needs_root
@thorough
def test_bytecode_planted_in_the_env_layer_never_runs(bench, monkeypatch):
    b = bench()
    with monkeypatch.context() as m:  # the control: without the drop the planted bytecode runs as pytest's runner
        m.setattr(sandbox_module.LocalSession, "drop_written_bytecode", lambda self: 0)
        g = b.grade(attack(SOURCELESS_RUNNER, fix=True))
        assert "PYC-RAN" in b.log(g), b.log(g)[-2000:]
    g = b.grade(attack(SOURCELESS_RUNNER, fix=True))
    assert g.resolved and "PYC-RAN" not in b.log(g), g
    b.assert_unharmed()


# a trusted pytest plugin in the env (its dist-info with a pytest11 entry point and its module)
def with_plugin(site: Path):
    (site / "zzplug.py").write_text("def pytest_configure(config):\n    config.zzplug = True\n")
    d = site / "zzplug-1.0.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: zzplug\nVersion: 1.0\n")
    (d / "entry_points.txt").write_text("[pytest11]\nzz = zzplug\n")
    (d / "RECORD").write_text("")


PLUGIN_REMOVALS = {
    "its dist-info removed": "import shutil\nshutil.rmtree(site + '/zzplug-1.0.dist-info')\n",
    "its dist-info emptied (an opaque folder in the overlay)": (
        "import shutil\nshutil.rmtree(site + '/zzplug-1.0.dist-info')\nos.mkdir(site + '/zzplug-1.0.dist-info')\n"
    ),
    "its module removed": "os.remove(site + '/zzplug.py')\n",
}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(PLUGIN_REMOVALS))
def test_removing_a_pytest_plugin_of_the_env_is_named(bench, name):
    b = bench(prepare=with_plugin)
    control = b.grade(TASK.patch)
    assert control.resolved and control.suspicious == [], control
    g = b.grade(attack(PLUGIN_REMOVALS[name], fix=True))
    assert counted(g) is False and named(g), g
    b.assert_unharmed()


# --- what the install writes into the working copy -------------------------------------------------------------------------

# pytest's own rewritten bytecode for the test module, its header guessing the test file's size and (a second on) mtime
TEST_MODULE_PYC = """
import importlib.util, importlib.metadata, marshal, time
src = open('tests/test_wrap.py').read() + "\\n\\ndef test_truncate_tiny_width():\\n    assert truncate('hello world', 2) == '..'\\n    assert truncate('hello world', 0) == ''\\n"
code = compile("\\n".join("def %s():\\n    pass" % n for n in ('test_truncate_long', 'test_truncate_short', 'test_wrap_words',
               'test_truncate_exact_width', 'test_truncate_tiny_width')), '/testbed/tests/test_wrap.py', 'exec')
tag = '%s-pytest-%s.pyc' % (sys.implementation.cache_tag, importlib.metadata.version('pytest'))
os.makedirs('tests/__pycache__', exist_ok=True)
head = importlib.util.MAGIC_NUMBER + b'\\x00' * 4 + (int(time.time()) + 1).to_bytes(4, 'little') + len(src.encode()).to_bytes(4, 'little')
open('tests/__pycache__/test_wrap.' + tag, 'wb').write(head + marshal.dumps(code))
"""

# name: (setup.py body, the gold fix too, named, more of the patch)
TREE_WRITES = {
    "a conftest.py": ("open('/testbed/conftest.py', 'w').write('import sys\\n')\n", True, True, ""),
    "a shadow pluggy.py on PYTHONPATH": (
        f"open('/testbed/src/pluggy.py', 'w').write({SHADOW_PLUGGY!r})\n",
        True,
        True,
        "",
    ),
    "a plugin entry point in an egg-info on PYTHONPATH": (
        "os.makedirs('/testbed/src/textkit.egg-info', exist_ok=True)\n"
        f"open('/testbed/src/textkit.egg-info/entry_points.txt', 'w').write('[' + {PT} + ']\\nevil = textkit.evilplug\\n')\n",
        True,
        True,
        EVIL_PLUGIN,
    ),
    # overlay view: the planted bytecode is dropped, the unfixed source runs
    "bytecode of a fixed module (overlay view)": (PLANT_WRAP_PYC, False, False, ""),
    "pytest's rewritten bytecode of the test module (overlay view)": (TEST_MODULE_PYC, False, False, ""),
}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(TREE_WRITES))
def test_what_the_install_writes_into_the_working_copy_buys_nothing(bench, name):
    body, fix, must_be_named, extra = TREE_WRITES[name]
    b = bench()
    g = b.grade(attack(body, fix, extra))
    assert g.patch_applied and counted(g) is False, g
    assert not must_be_named or named(g), g
    assert "SHADOW-RAN" not in run_part(b.log(g)) and "EVILPLUG-LOADED" not in b.log(g)
    b.assert_unharmed()


# a compiled module named pluggy in a PYTHONPATH folder: the tree guard names only .py shadows; the witness imports the
# runner before any working-copy path is importable, so it never runs in pytest's place (it would fix TASK if it ran)
SHADOW_SO = r'''
import subprocess
payload = "import sys\nsys.stderr.write('SHADOW-RAN\\n')\n" + FIX
c = r"""
#include <Python.h>
static int run(PyObject *m) { return PyRun_SimpleString(PAYLOAD) ? -1 : 0; }
static PyModuleDef_Slot slots[] = {{Py_mod_exec, run}, {0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "pluggy", NULL, 0, NULL, slots};
PyMODINIT_FUNC PyInit_pluggy(void) { return PyModuleDef_Init(&def); }
"""
lit = '"' + payload.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'
open('/tmp/shadow.c', 'w').write(c.replace('PAYLOAD', lit))
out = '/testbed/src/pluggy' + sysconfig.get_config_var('EXT_SUFFIX')
r = subprocess.run(['gcc', '-shared', '-fPIC', '-I', sysconfig.get_paths()['include'], '/tmp/shadow.c', '-o', out])
print('compiled', r.returncode, os.path.exists(out))
'''


@needs_root
@thorough
@pytest.mark.skipif(not shutil.which("gcc"), reason="needs a C compiler")
def test_a_compiled_shadow_of_the_runner_never_runs(bench):
    b = bench()
    g = b.grade(attack(f"FIX = {FIX_IN_PROCESS!r}\n" + SHADOW_SO))
    log = b.log(g)
    assert "compiled 0 True" in log, log  # the control: the install built it into the working copy
    assert counted(g) is False and "SHADOW-RAN" not in log, g
    b.assert_unharmed()


# --- holes: attacks that work today -------------------------------------------------------------------------------------------

# The install rewrites the working copy's .git: a replace ref swaps the base commit for one whose test file redefines
# truncate() fixed. Every harness git call after it (base_names, tree_changes, restore_raw of the test files, text_at)
# runs inside the sandbox and honours refs/replace, so the tests reset "to the base" get the attacker's file and the
# test patch applies on top of it (at an offset). The empty patch resolves, unflagged.
GIT_REPLACE_SH = r"""
touch .git/swecl-probe || true
set -e
B=$(git rev-parse HEAD)
python - <<'PY'
p = 'tests/test_wrap.py'
s = open(p).read()
s = s.replace("from textkit import truncate, wrap_words\n", "from textkit import truncate as _t, wrap_words\n"
              "def truncate(text, width, ellipsis='...'):\n"
              "    return ellipsis[:width] if len(text) > width and width <= len(ellipsis) else _t(text, width, ellipsis)\n", 1)
open(p, 'w').write(s)
PY
export GIT_INDEX_FILE=/tmp/index
git read-tree $B && git update-index --add tests/test_wrap.py
T=$(git write-tree)
unset GIT_INDEX_FILE
C=$(git -c user.name=a -c user.email=a@b commit-tree $T -m base)
git replace -f $B $C
git checkout -q $B -- tests/test_wrap.py
echo REPLACED
"""
GIT_REPLACE = f"""
import subprocess
r = subprocess.run({GIT_REPLACE_SH!r}, shell=True, executable='/bin/bash', capture_output=True, text=True)
print(r.stdout, r.stderr)
"""


# the same replace ref written with plain file writes (no git binary): a loose commit object and the ref file
GIT_REPLACE_RAW = r"""
import hashlib, subprocess, zlib
git = lambda *a: subprocess.run(['git', *a], capture_output=True, text=True).stdout.strip()
base, tree = git('rev-parse', 'HEAD'), git('rev-parse', 'HEAD^{tree}')
body = ('tree %s\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nfake\n' % tree).encode()
obj = b'commit %d\0' % len(body) + body
sha = hashlib.sha1(obj).hexdigest()
try:
    os.makedirs('.git/objects/' + sha[:2], exist_ok=True)
    open('.git/objects/%s/%s' % (sha[:2], sha[2:]), 'wb').write(zlib.compress(obj))
    os.makedirs('.git/refs/replace', exist_ok=True)
    open('.git/refs/replace/' + base, 'w').write(sha + '\n')
    print('REPLACED')
except OSError as e:
    print('REFUSED', e)
"""


GIT_WRITES = {"with git": GIT_REPLACE, "with plain writes": GIT_REPLACE_RAW}


@needs_root
@pytest.mark.parametrize("name", first_by_default(list(GIT_WRITES)))
def test_an_install_cannot_swap_the_base_commit_under_the_harness(bench, name):
    b = bench()
    g = b.grade(attack(GIT_WRITES[name]))
    assert "Read-only file system" in b.log(g), b.log(g)  # the control: it tried, and .git was read-only to it
    assert "REPLACED" not in b.log(g) and counted(g) is False, g
    b.assert_unharmed()


@needs_root
@thorough
def test_a_replace_ref_in_the_working_copy_fools_none_of_swecls_git(bench):
    # made by a command that may write .git (a patch's install may not): swecl's git reads the base commit's objects
    b = bench()
    with b.sb.open(TASK) as s:
        test_file, names = text_at(s, "tests/test_wrap.py", base=True), base_names(s)
        r = s.run(GIT_REPLACE_SH)
        assert "REPLACED" in r.output and "def truncate" in s.run("git show HEAD:tests/test_wrap.py").output, r.output
        assert text_at(s, "tests/test_wrap.py", base=True) == test_file and base_names(s) == names
        s.run("echo broken > tests/test_wrap.py")
        restore_raw(s, "tests/test_wrap.py")
        assert s.read_file("tests/test_wrap.py") == test_file
    b.assert_unharmed()


# the same bytecode written into a folder of its own, which is then renamed into place as __pycache__
PLANT_RENAMED = PLANT_WRAP_PYC.replace("cfile=PYC", "cfile='/testbed/src/textkit/cache/' + os.path.basename(PYC)") + (
    "import shutil\nshutil.rmtree('/testbed/src/textkit/__pycache__', ignore_errors=True)\n"
    "os.rename('/testbed/src/textkit/cache', '/testbed/src/textkit/__pycache__')\n"
)
PLANTS = {"in place": PLANT_WRAP_PYC, "in a folder renamed into place": PLANT_RENAMED, "in the env": SOURCELESS_RUNNER}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(PLANTS))
def test_bytecode_the_install_plants_in_a_copied_view_never_runs(bench, monkeypatch, name):
    # a comma makes the overlay unsafe: the view and the env layer are copies, as they always are without root
    b = bench(folder="with,comma")
    fix = name == "in the env"  # the sourceless runner only reports itself: the fix makes the control visible
    # the attack's setup.py names _pytest's files, which the screen flags: off, so the drop alone is what is tested
    monkeypatch.setattr(grading_module.screen, "screen_session", lambda *a, **k: [])
    if name == "in a folder renamed into place":  # the control: without the drop it resolves the empty patch
        with monkeypatch.context() as m:
            m.setattr(sandbox_module.LocalSession, "drop_written_bytecode", lambda self: 0)
            assert counted(b.grade(attack(PLANTS[name]))) is True
    g = b.grade(attack(PLANTS[name], fix=fix))
    assert counted(g) is fix and "PYC-RAN" not in b.log(g), g
    b.assert_unharmed()


UNDECODABLE = "open(b'/testbed/src/textkit/__pycache__/\\xff.pyc', 'wb').close()\n"
READ_ONLY_CACHE = (
    "os.chmod('/testbed/src/textkit/__pycache__', 0o555)\n"  # the sandbox user cannot remove what it holds
)


@needs_root
@thorough
@pytest.mark.parametrize(
    "folder,extra", [("plain", UNDECODABLE), ("with,comma", UNDECODABLE), ("plain", UNDECODABLE + READ_ONLY_CACHE)]
)
def test_one_undecodable_bytecode_name_does_not_keep_the_rest(bench, folder, extra):
    # a short clock: a drop that waited for its command would take all of it
    b = bench(folder=folder, limits=dataclasses.replace(LIMITS, timeout=20))
    t0 = time.time()
    g = b.grade(attack(PLANT_WRAP_PYC + extra))
    assert counted(g) is False and time.time() - t0 < 20, (g, time.time() - t0)
    if extra == UNDECODABLE:  # removed, so the tests ran the unfixed source
        assert g.error is None or "bytecode" not in g.error, g
    else:  # what stays is swecl's error, counted against the patch
        assert "could not be removed" in (g.error or ""), g
    b.assert_unharmed()


# an entry_points.txt in the working copy's egg-info (PYTHONPATH), its plugin group in the middle of 6 MB of comments:
# the tree guard reads it through `text_at` (cut to its first and last 2 MB), and the env probe's configparser reads
# [[pytest11]] as a section named '[pytest11]', while importlib.metadata strips the brackets: pytest loads the plugin
def big_entry_points(folder: str, header: str, pad_lines: int = 30000) -> str:
    "A setup.py body writing `folder`/entry_points.txt: `header` (an expression) amid `pad_lines` lines of comments."
    return f"""
d = {folder}
os.makedirs(d, exist_ok=True)
open(d + '/PKG-INFO', 'w').write('Metadata-Version: 2.1\\nName: textkit\\nVersion: 0.1\\n')
pad = ('#' + 'x' * 99 + '\\n') * {pad_lines}
open(d + '/entry_points.txt', 'w').write(pad + {header} + '\\nevil = textkit.evilplug\\n' + pad)
"""


EGG = "'/testbed/src/textkit.egg-info'"
BIG_EGG_INFO = big_entry_points(EGG, f"'[[' + {PT} + ']]'")
BIG_ENTRY_POINTS = {
    "[[pytest11]] in a 6 MB egg-info on PYTHONPATH": BIG_EGG_INFO,
    "a spaced, upper-case header in a 6 MB egg-info": big_entry_points(EGG, f"' [ \\t' + {PT}.upper() + ' ] '"),
    "[[pytest11]] in a 2 MB dist-info in the env layer": big_entry_points(
        "site + '/textkit-0.1.dist-info'", f"'[[' + {PT} + ']]'", 10000
    ),
    "[[pytest11]] in a 100 kB egg-info (read whole)": big_entry_points(EGG, f"'[[' + {PT} + ']]'", 500),
}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(BIG_ENTRY_POINTS))
def test_a_plugin_entry_point_hidden_in_a_large_egg_info_is_named(bench, monkeypatch, name):
    b = bench()
    if name == list(BIG_ENTRY_POINTS)[0]:  # the control: unjudged, pytest loads it and the empty patch resolves
        with monkeypatch.context() as m:
            m.setattr(grading_module, "install_findings", lambda *a: [])
            control = b.grade(attack(BIG_EGG_INFO, extra=EVIL_PLUGIN))
            assert "EVILPLUG-LOADED" in b.log(control) and counted(control) is True, control
    g = b.grade(attack(BIG_ENTRY_POINTS[name], extra=EVIL_PLUGIN))
    assert counted(g) is False and any("entry_points.txt" in f or "pytest11" in f for f in named(g)), g
    assert "EVILPLUG-LOADED" not in b.log(g) or "env layer" in name  # the working copy's is undone, not only named
    b.assert_unharmed()


def emptied(folder: str, refill: str = "") -> str:
    "A setup.py body emptying site-packages/`folder` in place (rm -rf, mkdir: an opaque folder of the overlay)."
    return f"import shutil\nshutil.rmtree(site + '/{folder}')\nos.mkdir(site + '/{folder}')\n{refill}"


EMPTIED = {  # name: (setup.py body, a file of the env it removes)
    "a package": (emptied("pygments"), "pygments/lexer.py"),
    "a folder two deep in a package": (emptied("pygments/lexers"), "pygments/lexers/python.py"),
    "a package refilled with one module": (
        emptied("pygments", "open(site + '/pygments/__init__.py', 'w').write('')\n"),
        "pygments/lexer.py",
    ),
    "a module replaced by a folder": (
        "os.remove(site + '/pygments/lexer.py')\nos.mkdir(site + '/pygments/lexer.py')\n"
        "open(site + '/pygments/lexer.py/x', 'w').close()\n",
        "pygments/lexer.py",
    ),
}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(EMPTIED))
def test_emptying_a_package_of_the_env_is_named(bench, name):
    body, gone = EMPTIED[name]
    b = bench()
    with b.sb.open(TASK) as s:  # the session's own view of what its layer changed
        s.write_file("setup.py", SITE + body)
        assert s.install(pre=False).exit_code == 0
        site = "lib/python3.11/site-packages/"
        assert s.run(f"test -f /testenv/{site}{gone}").exit_code == 1  # the control: it is gone
        writes = s.env_writes()
    assert writes.get(site + gone) == "removed", writes
    g = b.grade(attack(body, fix=True))
    assert counted(g) is False and named(g), g
    b.assert_unharmed()


FILLS = {
    "three 64 MB files at once": (
        "for i in range(3):\n    open('/testenv/include/fill%d' % i, 'wb').write(b'\\0' * (64 << 20))\nprint('FILLED')\n"
    ),
    "a module of the env grown 1 MB at a time": (
        "import time\nfor i in range(192):\n    open(site + '/pygments/lexer.py', 'ab').write(b'#' * (1 << 20))\n"
        "    time.sleep(0.005)\nprint('FILLED')\n"
    ),
}


@needs_root
@thorough
@pytest.mark.parametrize("folder", ["with,comma", "plain"])  # the env layer a copy, an overlay
@pytest.mark.parametrize("name", list(FILLS))
def test_an_install_cannot_fill_the_disk_through_its_env_layer(bench, monkeypatch, folder, name):
    monkeypatch.setattr(sandbox_module, "disk_cap", lambda root, mb: "watch")  # as without root
    b = bench(folder=folder, limits=dataclasses.replace(LIMITS, disk_mb=64))
    g = b.grade(attack(FILLS[name], fix=True))
    assert "FILLED" not in b.log(g) and counted(g) is False, g
    assert "[killed: disk]" in b.log(g), b.log(g)[-1000:]
    b.assert_unharmed()


def deep(folder: str) -> str:
    return f"os.makedirs({folder}, exist_ok=True)\nos.chdir({folder})\nfor _ in range(3000):\n    os.mkdir('d')\n    os.chdir('d')\n"


DEEP = deep("site + '/textkit'")


@needs_root
@thorough
def test_a_deep_tree_in_the_env_layer_is_the_patchs_failure_and_leaves_nothing(bench):
    b = bench()
    g = b.grade(attack(DEEP, fix=True))
    assert g.patch_applied and counted(g) is False, g
    assert any("nested too deep" in f for f in named(g)), g  # named, though in the project's own folder
    b.assert_unharmed()


@needs_root
@thorough
@pytest.mark.parametrize(
    "folder,where", [("plain", "env"), ("with,comma", "env"), ("plain", "tree"), ("with,comma", "tree")]
)
def test_a_deep_tree_in_the_env_layer_leaves_no_folder_without_a_tmpfs(bench, monkeypatch, folder, where):
    monkeypatch.setattr(sandbox_module, "disk_cap", lambda root, mb: "watch")
    b = bench(folder=folder)
    g = b.grade(attack(DEEP if where == "env" else deep("'/testbed/src/textkit'"), fix=True))
    assert g.patch_applied and counted(g) is False, g
    assert digest(b.env.path) == b.before
    left = os.listdir(b.work)
    subprocess.run(["rm", "-rf", "--", *[str(b.work / n) for n in left]])  # rm copes with the depth
    assert left == [], f"left behind: {left}"


# --- processes, sizes, names -----------------------------------------------------------------------------------------------

DAEMON_MARK = f"swecl-layer-daemon-{uuid.uuid4().hex[:12]}"
DAEMON_WRITES = "import sys\nsys.stderr.write('DAEMON-WROTE\\n')\n"
# it waits until the install step has returned (setup.py returns at once), then writes for 30 s: what the layer, the
# probe and the tree guard judged is then no longer what the tests start with, unless the process is gone
LOOP = f"""import sys, time
site = sys.argv[1]
time.sleep(1)
for _ in range(600):
    try:
        open(site + '/sitecustomize.py', 'w').write({DAEMON_WRITES!r})
        open('/testbed/conftest.py', 'w').write({DAEMON_WRITES + FIX_IN_PROCESS!r})
    except OSError:
        pass
    time.sleep(0.05)
"""
DAEMON = f"""
import subprocess
open('/tmp/loop.py', 'w').write({LOOP!r})
subprocess.Popen(['setsid', 'python', '/tmp/loop.py', site, {DAEMON_MARK!r}], stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
os.system('(nohup python /tmp/loop.py ' + site + ' {DAEMON_MARK} >/dev/null 2>&1 &)')
print('DAEMONS STARTED')
"""


@needs_root
@thorough
def test_a_process_left_running_by_the_install_writes_nothing_later(bench):
    b = bench()
    g = b.grade(attack(DAEMON))
    log = b.log(g)
    assert "DAEMONS STARTED" in log, log  # the control: setup.py started them
    assert counted(g) is False and "DAEMON-WROTE" not in log, g
    time.sleep(0.5)
    assert subprocess.run(["pgrep", "-f", DAEMON_MARK], capture_output=True, text=True).stdout == ""
    b.assert_unharmed()


@needs_root
@thorough
def test_fifty_thousand_files_in_the_layer_are_named_in_bounded_time(bench):
    b = bench()
    body = """
for i in range(50000):
    d = site + '/textkit/many/%d' % (i // 1000)
    if i % 1000 == 0:
        os.makedirs(d)
    open(d + '/f%d' % i, 'w').close()
os.makedirs(site + '/zzforeign')
for i in range(5000):
    open(site + '/zzforeign/f%d' % i, 'w').close()
"""
    t0 = time.time()
    g = b.grade(attack(body, fix=True))
    assert counted(g) is False and len(g.suspicious) <= 60 and "more writes" in g.suspicious[-1], g.suspicious[-3:]
    assert time.time() - t0 < 120, g.seconds
    b.assert_unharmed()


@needs_root
@thorough
def test_odd_names_in_the_layer_are_named_and_crash_nothing(bench):
    b = bench()
    body = """
os.makedirs(site + '/textkit', exist_ok=True)
for name in (b'/\\xff\\nodd.py', b'/new\\nline.pth', b'/textkit/\\xfe.py', b'/-rf', b'/ space .py'):
    open(os.fsencode(site) + name, 'w').write('import os\\n')
"""
    g = b.grade(attack(body, fix=True))
    assert counted(g) is False and named(g), g
    b.assert_unharmed()


# --- swecl's own failures once the patch applied count against the patch -------------------------------------------------------

CASE_PY = "import re\n"  # the first line of src/textkit/case.py at the base commit
NOISE = (  # undecodable bytes, NULs, bare status words, and PASSED lines for every expected test, at import
    "import os\nos.write(1, b'\\xff\\xfe\\x00PASSED\\nPASSED \\x00\\nFAILED\\nERROR\\n' + b'\\x80' * 4096 + b'\\n' + "
    + repr("".join(f"PASSED {t}\n" for t in TASK.FAIL_TO_PASS + TASK.PASS_TO_PASS).encode())
    + ")\n"
)
CRASHES = {
    "a deeply nested pyproject.toml the guard parses": file_diff(
        "pyproject.toml", None, "a = " + "[" * 50000 + "]" * 50000 + "\n"
    ),
    "an editable finder whose MAPPING is a number": file_diff("setup.py", None, SITE + finder("1e400")),
    "a test log of undecodable bytes, NULs, bare status words and forged PASSED lines": (
        "diff --git a/src/textkit/case.py b/src/textkit/case.py\n--- a/src/textkit/case.py\n+++ b/src/textkit/case.py\n"
        f"@@ -1 +1,{1 + NOISE.count(chr(10))} @@\n"
        + "".join("+" + l + "\n" for l in NOISE.splitlines())
        + " import re\n"
    ),
}


@needs_root
@thorough
@pytest.mark.parametrize("name", list(CRASHES))
def test_what_makes_grading_fail_after_the_patch_applied_is_not_excused(bench, name):
    b = bench()
    g = b.grade(CRASHES[name])
    assert g.patch_applied, (g.notes, b.log(g)[-1500:])
    assert counted(g) is False, g  # False, not None: a gradable task's attempt that made swecl fail is counted
    b.assert_unharmed()


# --- what one grading leaves reaches no later one -------------------------------------------------------------------------------

SHIMS = f"""
lines = ''.join('PASSED %s\\n' % t for t in {OTHER.FAIL_TO_PASS + OTHER.PASS_TO_PASS + TASK.FAIL_TO_PASS + TASK.PASS_TO_PASS!r})
open(site + '/zz-shim.pth', 'w').write('import sys; sys.stdout.write(%r)\\n' % lines)
open(site + '/sitecustomize.py', 'w').write('import atexit, sys\\natexit.register(sys.stdout.write, %r)\\n' % lines)
open('/testenv/bin/pytest', 'w').write('#!/bin/sh\\nprintf %s\\n' % repr(lines))
"""
BREAK_ENV = "import shutil\nshutil.rmtree(site)\nos.remove('/testenv/pyvenv.cfg')\n"


@needs_root
@thorough
@pytest.mark.parametrize("name,body", [("shims printing PASSED lines", SHIMS), ("the env broken", BREAK_ENV)])
def test_later_gradings_grade_as_if_the_attack_never_ran(bench, name, body):
    b = bench()
    g = b.grade(attack(body, fix=True))
    assert counted(g) is False and named(g), g
    for task in (OTHER, TASK):
        empty = b.grade("", task)
        assert counted(empty) is False and empty.suspicious == [] and empty.infra_reason is None, empty
        gold = b.grade(task.patch, task)
        assert counted(gold) is True and gold.suspicious == [], gold
    b.assert_unharmed()


# --- the layer's rules, without a sandbox ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "/testbed/../usr/lib/python3/dist-packages",
        "/testbed/src/../../usr/lib/python3/dist-packages",
        "/testbed/./../usr",
        "../../../../usr/lib/python3/dist-packages",  # relative: joined to the site folder, as site.py does
        " /testbed/src",  # site.py keeps the leading blank: a folder of site-packages named so
        "/testbed/..",
    ],
)
def test_a_pth_line_that_climbs_out_of_the_working_copy_is_a_finding(line):
    for ok in (
        "/testbed/src",
        "/testbed",
        "/testbed/src/../lib",
        "/testbed/src/",
    ):  # what an editable install may write
        assert pth_problem(ok + "\n") is None, ok
    assert pth_problem("/usr/lib/python3/dist-packages\n")
    assert pth_problem(line + "\n"), f"admitted: {line}"


def test_the_layers_rules_name_what_the_probe_misreads():
    own = {"src", "tests", "textkit"}
    ep = "lib/python3.11/site-packages/textkit-0.1.dist-info/entry_points.txt"
    for text in ("[[pytest11]]\nx = y\n", "[PYTEST11]\nx = y\n", "[ pytest11 ]\n", "# " + "x" * 100 + "\n[pytest11]\n"):
        assert env_finding(ep, "written", own, lambda p, t=text: t), text
    assert env_finding(ep, "written", own, lambda p: None)  # a link or a file too large to read: a finding
    assert env_finding(ep, "written", own, lambda p: "[console_scripts]\nx = y:z\n") is None  # the control
    for path in (
        "bin/python",
        "pyvenv.cfg",
        "lib/python3.11/site-packages/sitecustomize.py",
        "lib/python3.11/site-packages/_pytest/runner.py",
        "lib64",
        "lib/python3.11/site-packages",
    ):
        assert env_finding(path, "written", own, lambda p: ""), path
