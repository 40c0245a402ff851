"""Attacks on prepared testbeds (issue 33): a task's working copy is set up once in the testbed cache and every session
opens a view of it (an overlay mount as root, a copy elsewhere). Each attack is real: a command run as the sandbox
user in a real session, the harness's own calls, or a malicious patch through real grading. The prepared copy must
not change (owners, modes, times, links and contents compared), a later session must start clean, no mount may be
left behind (also when opening fails or the harness is killed), overlay options cannot be injected through paths, and
the harness never runs git in a view nor trusts what the sandbox can write."""

import dataclasses
import hashlib
import os
import select
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import first_by_default

from swecl.base.core import SandboxError
from swecl.envs.envs import mini_env
from swecl.grading.grading import grade, prepare_tests
from swecl.pool.edits import file_diff
from swecl.sandbox import testbeds  # not its names: pytest would collect `testbed_key` as a test
from swecl.sandbox.isolation import SANDBOX_UID, Limits
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")
LIMITS = Limits(timeout=60, cpu_seconds=60, memory_mb=1024, processes=64, disk_mb=256)
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="overlay views, tmpfs roots and the sandbox user need root")
CLEAN = "git status --porcelain --ignored --untracked-files=all; git log --all --format=%H; git stash list"
# every entry's name, kind, mode, owner and (a file's) size; git's index is rewritten by `diff` (its `add -A`)
LIST = r"-path ./.git/index -printf '%P\n' -o -type d -printf '%P d %m %u\n' -o -printf '%P %y %m %u %s\n'"
STATE = f"find . {LIST} | LC_ALL=C sort; cat .git/HEAD .git/config; ls -A .git/hooks .git/refs/*"


# --- helpers -----------------------------------------------------------------------------------------------------------


def snapshot(path: Path) -> dict:
    "Every entry under `path` (and `path` itself): mode, owner, size, mtime, links, and content or link target."
    out = {}
    for dirpath, dirs, files in os.walk(path):
        for f in [dirpath] + [os.path.join(dirpath, n) for n in dirs + files]:
            st = os.lstat(f)
            if stat.S_ISLNK(st.st_mode):
                body = os.readlink(f)
            elif stat.S_ISREG(st.st_mode):
                body = hashlib.sha256(Path(f).read_bytes()).hexdigest()
            else:
                body = None
            out[os.path.relpath(f, path)] = (
                st.st_mode,
                st.st_uid,
                st.st_gid,
                st.st_size,
                st.st_mtime_ns,
                st.st_nlink,
                body,
            )
    return out


def mounts_under(path) -> list:
    "Mount points at or under `path` (as /proc/self/mounts escapes a space)."
    p = str(path)
    targets = [line.split()[1].replace("\\040", " ") for line in Path("/proc/self/mounts").read_text().splitlines()]
    return [t for t in targets if t == p or t.startswith(p + "/")]


def prepared_of(task, env=None):
    "The prepared copy a session of `task` (opened with its install) views."
    p = testbeds.prepared(testbeds.testbed_key(task, env or mini_env(), True))
    assert p is not None and (p.testbed / ".git").is_dir()
    return p


def assert_clean(s, baseline: str | None = None) -> str:
    "The session starts as the prepared copy: no diff, a clean status, only the base commit, the same files and .git."
    assert s.diff() == ""
    assert s.run(CLEAN).output == s.base + "\n"
    state = s.run(STATE).output
    assert baseline is None or state == baseline
    return state


def env_with_install(tmp_path, install: str):
    "A copy of the mini env (its own name: its own testbeds) whose per-task install step is `install`."
    base = mini_env()
    path = tmp_path / "envs" / f"mini-install-{uuid.uuid4().hex[:8]}"
    path.parent.mkdir(parents=True)
    subprocess.run(["cp", "-a", str(base.path), str(path)], check=True)
    return dataclasses.replace(base, path=path, install=install)


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    "The mini env, with testbeds kept in a cache of this test's own (new keys do not pile up in the shared cache)."
    env = mini_env()
    monkeypatch.setenv("SWECL_CACHE_DIR", str(tmp_path / "cache"))
    return env


def sandbox_with(env, **kw) -> LocalSandbox:
    sb = LocalSandbox([MIRROR], limits=LIMITS, **kw)
    sb.env_for = lambda task: env
    return sb


# the sandbox user's attack on its view: delete, rename, chmod, hard links, symlinks to the prepared copy's host path,
# .git (config, hooks, index, refs, commits, tags, stash), odd names, a FIFO, an xattr, times
ATTACK = r"""
set +e
P={lower}
git -c user.name=a -c user.email=a@b commit -qam evil --allow-empty --no-verify
echo change >> src/textkit/wrap.py; git -c user.name=a -c user.email=a@b stash -q
git tag evil-tag; git branch evil-branch; git update-ref refs/evil HEAD
git config core.fsmonitor 'touch /tmp/pwned'; git config core.hooksPath /tmp
printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/post-checkout; chmod +x .git/hooks/post-checkout
echo exclude-all > .git/info/exclude; echo junk > .git/index; echo 0000 > .git/refs/heads/main
ln src/textkit/wrap.py hard.py && echo evil >> hard.py
ln .git/config cfg-hard && echo '[alias] x = !touch /tmp/pwned' >> cfg-hard
ln -s $P/src/textkit/wrap.py abs-link; echo evil > abs-link
ln -s ../../../../../../../../..$P/src/textkit/case.py rel-link; echo evil > rel-link
ln -s $P dir-link; echo evil > dir-link/new.py
echo evil >> src/textkit/__init__.py; rm -f src/textkit/case.py; mv tests tests-moved
chmod 777 src/textkit/wrap.py; touch -d 2001-01-01 .git/HEAD
touch $'new\nline' 'back\\slash' 'com,ma' 'co:lon' 'eq=ual' -- -dash "$(printf 'x%.0s' $(seq 255))" $'\xff\xfe'
mkfifo fifo; setfattr -n user.evil -v 1 .git/config 2>/dev/null; mkdir -p deep/a/b/c; echo x > deep/a/b/c/f
ls -A
"""


def attack(s, lower: Path):
    "Run `ATTACK` in `s` and check it changed the view (the control: the attack did what it could)."
    out = s.run(ATTACK.format(lower=lower)).output
    assert "hard.py" in out and "tests-moved" in out and "com,ma" in out, out
    assert "tests" not in out.split(), out
    config = s.run("cat .git/config .git/hooks/post-checkout").output
    assert "fsmonitor" in config and "pwned" in config and "[alias]" in config, config
    assert s.run("chmod 000 src .git && ls src").exit_code != 0  # and what is left unreadable


def view_params():
    "The two kinds of view: the overlay, and the copy (a comma in the working folder makes the overlay unsafe)."
    return [pytest.param("plain", "overlay", id="overlay"), pytest.param("with,comma", "copy", id="copy")]


# --- 1 and 2: the prepared copy never changes; a later session starts clean -----------------------------------------------


@needs_root
@pytest.mark.parametrize("folder,view", view_params())
def test_sandbox_user_cannot_change_the_prepared_copy_and_the_next_session_is_clean(tmp_path, folder, view):
    work = tmp_path / folder
    work.mkdir()
    sb = LocalSandbox([MIRROR], limits=LIMITS, workdir=work)
    with sb.open(TASK) as s:
        p = prepared_of(TASK)
        before = snapshot(p.testbed)
        assert s.view == view and s.base == p.meta["base"]
        baseline = assert_clean(s)
        attack(s, p.testbed)
        # the harness's own writes: through the sandbox's symlinks refused, into the view (and .git) allowed
        for link in ("abs-link", "rel-link", "dir-link/new.py"):
            with pytest.raises(SandboxError):
                s.write_file(link, "harness write")
        s.write_file("src2/textkit/wrap.py", "harness write\n")
        s.write_file(".git/description", "harness write\n")
        assert s.run("cat src2/textkit/wrap.py").output == "harness write\n"
        root = s.root
    assert mounts_under(root) == [] and not root.exists()
    assert snapshot(p.testbed) == before
    with sb.open(TASK) as s2:
        assert s2.view == view and s2.base == p.meta["base"]
        assert_clean(s2, baseline)
    assert os.listdir(work) == []


@needs_root
def test_filling_the_view_stops_at_its_cap_and_the_prepared_copy_is_unharmed(tmp_path):
    limits = dataclasses.replace(LIMITS, disk_mb=48)
    with LocalSandbox([MIRROR], limits=limits, workdir=tmp_path).open(TASK) as s:
        p = prepared_of(TASK)
        before = snapshot(p.testbed)
        assert s.view == "overlay" and s.disk_cap == "tmpfs"
        assert s.run("head -c 16M /dev/zero > small && echo ok").output == "ok\n"  # the control: under the cap
        r = s.run("head -c 200M /dev/zero > big; cat /dev/zero >> src/textkit/wrap.py; echo done")
        assert "No space left" in r.output and r.output.endswith("done\n"), r.output
        assert s.run("rm -f big small; git checkout -q -- src && git status --porcelain").output == ""
    assert snapshot(p.testbed) == before


@needs_root
def test_no_process_or_open_file_outlives_the_session(tmp_path):
    mark = f"swecl-held-{uuid.uuid4().hex[:12]}"
    with LocalSandbox([MIRROR], limits=LIMITS, workdir=tmp_path).open(TASK) as s:
        hold = f"exec 3</testbed/src/textkit/wrap.py 4>/testbed/held; exec -a {mark} sleep 300"
        r = s.run(
            f"(setsid bash -c '{hold}' </dev/null >/dev/null 2>&1 &); nohup bash -c '{hold}' >/dev/null 2>&1 & echo go"
        )
        assert r.output == "go\n"
        time.sleep(0.3)
        assert subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout == ""
        root = s.root
        assert len(mounts_under(root)) == 2  # the control: the session's tmpfs and its overlay
    assert mounts_under(root) == [] and not root.exists()
    held = []
    for f in Path("/proc/self/fd").iterdir():
        try:
            held.append(os.readlink(f))
        except OSError:
            pass  # the listing's own descriptor, closed
    assert not [h for h in held if h.startswith(str(root))], held


# --- 3: no mount left behind -----------------------------------------------------------------------------------------


@needs_root
def test_a_view_that_fails_to_open_leaves_no_mount(tmp_path, own_cache):
    env = env_with_install(tmp_path, "test ! -e /testenv/fail-now")
    sb, work = sandbox_with(env, workdir=tmp_path / "work"), tmp_path / "work"
    work.mkdir()
    with sb.open(TASK) as s:  # prepares the testbed (the install passes) and is a view
        assert s.view == "overlay" and len(mounts_under(work)) == 2  # the control
    testbeds.mark_installed(env, None)  # another task's install since: the next view installs again, and that fails
    (env.path / "fail-now").write_text("")
    with pytest.raises(SandboxError, match="install step"):
        sb.open(TASK)
    assert mounts_under(work) == [] and os.listdir(work) == []


HARNESS = """
import sys, time
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini
mini = load_mini()
s = LocalSandbox([mini.metadata["mirror"]], workdir=sys.argv[1]).open(mini.task("swecl-mini__textkit-3"))
s.run("echo x > held && cat src/textkit/wrap.py >/dev/null")
print(s.root, s.view, flush=True)
time.sleep(600)
"""


@needs_root
def test_the_mounts_of_a_killed_harness_are_cleared_by_the_next_sandbox(tmp_path):
    work = tmp_path / "work dir"  # a space: /proc/self/mounts shows it escaped
    work.mkdir()
    p = subprocess.Popen([sys.executable, "-c", HARNESS, str(work)], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready, "the harness did not open its session"
        root, view = p.stdout.readline().split()[-2:]
        root = str(work / Path(root).name)
        assert view == "overlay" and len(mounts_under(root)) == 2
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    assert len(mounts_under(root)) == 2  # the control: killed, it left both mounts
    LocalSandbox([MIRROR])
    assert mounts_under(root) == [] and os.listdir(work) == []


# --- 4: overlay options cannot be injected through paths --------------------------------------------------------------


@needs_root
@pytest.mark.parametrize("suffix", ["", ",userxattr", ",index=on", ":x", "=x", " space"])
def test_overlay_options_cannot_be_injected_through_the_instance_id(tmp_path, own_cache, suffix):
    task, work = dataclasses.replace(TASK, instance_id=TASK.instance_id + suffix), tmp_path / "work"
    work.mkdir()
    with sandbox_with(own_cache, workdir=work).open(task) as s:
        lines = [l for l in Path("/proc/self/mounts").read_text().splitlines() if " overlay " in l]
        mine = [l for l in lines if f" {work}/" in l]
        if suffix in ("", " space"):  # the controls: an id the options cannot mistake is mounted
            assert s.view == "overlay" and len(mine) == 1, mine
        else:
            assert s.view == "copy" and mine == [], mine
        assert s.run("id -u; " + CLEAN).output == f"{SANDBOX_UID}\n{s.base}\n"
        root = s.root
    assert mounts_under(root) == [] and os.listdir(work) == []


@needs_root
def test_an_unsafe_cache_path_makes_a_copy(tmp_path, monkeypatch):
    env = mini_env()
    monkeypatch.setenv("SWECL_CACHE_DIR", str(tmp_path / "cache,lowerdir=:x"))
    with sandbox_with(env, workdir=tmp_path).open(TASK) as s:
        assert s.view == "copy" and [m for m in mounts_under(tmp_path) if m.endswith("testbed")] == []
        assert s.run(CLEAN).output == s.base + "\n"


# --- 5: the harness runs no git in a view and reads nothing there ----------------------------------------------------------

EVENTS, RECORDING = [], []


def _audit(event, args):
    if RECORDING and event == "subprocess.Popen":
        EVENTS.append(("run", list(args[1]) if isinstance(args[1], (list, tuple)) else [args[1]]))
    elif RECORDING and event == "open" and isinstance(args[0], str):
        EVENTS.append(("open", args[0]))


sys.addaudithook(_audit)


def recorded(fn):
    "(what `fn` started and opened, its result): from Python's audit hooks, not a mock."
    EVENTS.clear()
    RECORDING.append(1)
    try:
        out = fn()
    finally:
        RECORDING.clear()
    return list(EVENTS), out


@needs_root
def test_the_harness_runs_no_git_in_a_view_and_keeps_the_recorded_base(tmp_path):
    sb = LocalSandbox([MIRROR], limits=LIMITS, workdir=tmp_path)
    events, s = recorded(lambda: sb.open(TASK))
    with s:
        p = prepared_of(TASK)
        # the sandbox user moves HEAD to its own commit and plants config that a git on the host would obey
        r = s.run(
            "echo fix >> src/textkit/wrap.py && git -c user.name=a -c user.email=b commit -qam hide && "
            "git config core.fsmonitor 'touch /testbed/pwned' && git config core.hooksPath .git && "
            "printf '#!/bin/sh\\ntouch /testbed/pwned\\n' > .git/post-index-change && chmod +x .git/post-index-change"
            " && git rev-parse HEAD"
        )
        assert r.exit_code == 0 and r.output.strip() != p.meta["base"], r.output
        more, diff = recorded(s.diff)
        events += more
        assert s.base == p.meta["base"]
        assert "+fix" in diff and "src/textkit/wrap.py" in diff  # the committed change is still the session's diff
        runs = [a for kind, a in events if kind == "run"]
        assert runs and all(Path(a[0]).name == "bwrap" for a in runs), runs
        opened = [a for kind, a in events if kind == "open" and a.startswith(str(s.root))]
        assert opened == [], opened
    # the control: the old path runs git on the host (the hook sees it)
    old, s = recorded(lambda: LocalSandbox([MIRROR], limits=LIMITS, workdir=tmp_path, testbeds=False).open(TASK))
    s.close()
    assert any(Path(a[0]).name == "git" for kind, a in old if kind == "run")


# --- a malicious patch through real grading ------------------------------------------------------------------------------

EVIL_INIT = """
import os, subprocess, warnings
P, wrote = {lower!r}, []
r = subprocess.run(
    "git -c user.name=a -c user.email=b commit -qam evil; git tag evil; git config core.hooksPath /tmp; "
    "ln -s " + P + " lower; echo x > lower/x; ln src/textkit/wrap.py hard; echo evil >> hard; "
    "touch $'odd\\\\nname' 'c,o:m=ma'; (setsid sleep 321 >/dev/null 2>&1 &); git log --oneline | wc -l; "
    "chmod -R 000 .git/objects",
    shell=True, cwd="/testbed", executable="/bin/bash", capture_output=True, text=True,
)
for target in (P + "/src/textkit/wrap.py", P + "/.git/config", "/testbed/.git/config"):
    try:
        open(target, "a").write("evil")
        wrote.append(target)
    except OSError:
        pass
warnings.warn("SWECL-PAYLOAD wrote=%s commits=%s" % (wrote, r.stdout.split()[-1:]))
"""


@needs_root
def test_a_malicious_patch_graded_leaves_the_prepared_copy_and_the_next_session_clean(tmp_path):
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    sb = LocalSandbox([MIRROR], limits=LIMITS, workdir=work)
    with sb.open(TASK) as s:
        p = prepared_of(TASK)
        before, baseline = snapshot(p.testbed), assert_clean(s)
        s.run(f"cat >> src/textkit/__init__.py <<'EOF'\n{EVIL_INIT.format(lower=str(p.testbed))}\nEOF")
        s.run(f"ln -s {p.testbed}/src planted-link; touch 'we,ird:na=me'")
        patch = TASK.patch + s.diff()
    assert "planted-link" in patch and "subprocess" in patch
    g = grade(TASK, patch, sb, log_dir=logs)
    assert g.patch_applied and g.statuses, (g.notes, g.infra_reason)
    log = Path(g.log_path).read_text()
    # the control: the payload ran in the test run; it could write its own view's .git and commit there, no more
    assert "SWECL-PAYLOAD wrote=['/testbed/.git/config'] commits=['2']" in log, log[-2000:]
    assert snapshot(p.testbed) == before
    assert os.listdir(work) == [] and mounts_under(work) == []
    assert subprocess.run(["pgrep", "-f", "sleep 321"], capture_output=True, text=True).stdout == ""
    with sb.open(TASK) as s2:
        assert_clean(s2, baseline)


# --- defects: the env's install mark is a file the sandbox writes ------------------------------------------------------------

# an install step like `pip install -e .`: runs the tree's setup.py (with the env writable), and a python
INSTALL = (
    "if [ -f setup.py ]; then python setup.py; fi && python -c pass"
    " && mkdir -p /testenv/share && cp src/textkit/wrap.py /testenv/share/installed.py"  # share/: a data file
)


# where the install mark once lived, inside the env the sandbox can write during an install; the mark now lives beside
# the env (`testbeds.installed_mark`), so what a patch plants here must change nothing
PLANTED = ".swecl-installed"


def test_the_install_mark_is_out_of_the_sandboxes_reach(tmp_path):
    env = env_with_install(tmp_path, INSTALL)
    assert not testbeds.installed_mark(env).resolve().is_relative_to(env.path.resolve())


def patched_install(sb, env, setup_py: str, wrap: str | None = None):
    "Grading's install over a patched tree (`prepare_tests`, the env writable) with `setup_py` and `wrap` in the patch."
    with sb.open(TASK) as s:
        s.write_file("setup.py", textwrap.dedent(setup_py))
        if wrap is not None:
            s.write_file("src/textkit/wrap.py", wrap)
        assert prepare_tests(s, []) == 0


@needs_root
def test_the_install_mark_is_not_written_through_a_sandbox_symlink(tmp_path, own_cache):
    victim = tmp_path / "host-file"
    victim.write_text("precious\n")
    os.chmod(victim, 0o600)
    env = env_with_install(tmp_path, INSTALL)
    sb = sandbox_with(env, workdir=tmp_path)
    sb.open(TASK).close()  # prepared, and the env marked
    # the patch's setup.py leaves a .pth in the env: every later python there plants the symlink again
    mark = f"/testenv/{PLANTED}"
    plant = f"try:\n os.path.lexists({mark!r}) or os.symlink({str(victim)!r}, {mark!r})\nexcept OSError:\n pass\n"
    pth = f"import os; exec({plant!r})\n"
    patched_install(
        sb, env, f"import sysconfig\nopen(sysconfig.get_paths()['purelib'] + '/zz.pth', 'w').write({pth!r})\n"
    )
    assert not os.path.lexists(env.path / PLANTED)  # the patch's install wrote only its session's layer of the env
    os.symlink(victim, env.path / PLANTED)  # as a patch could before that layer: the host must still not follow it
    with sb.open(TASK):  # the next session of the task installs again (the mark is not its key), as grading left it
        pass
    assert victim.read_text() == "precious\n"


@needs_root
def test_a_fifo_install_mark_does_not_hang_the_harness(tmp_path, own_cache):
    env = env_with_install(tmp_path, INSTALL)
    sb = sandbox_with(env, workdir=tmp_path)
    sb.open(TASK).close()
    patched_install(sb, env, f"import os\nos.mkfifo('/testenv/{PLANTED}')\n")
    fifo = env.path / PLANTED
    assert not os.path.lexists(fifo)  # the patch's install wrote only its session's layer of the env
    os.mkfifo(fifo)  # as a patch could before that layer: the harness must still not block on it
    done = []
    t = threading.Thread(target=lambda: done.append(sb.open(TASK).close()), daemon=True)
    t.start()
    t.join(5)
    hung = t.is_alive()
    for _ in range(200):  # release the harness (a writer that closes at once: the reader sees the end)
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            break
        except OSError:
            if not t.is_alive():
                break
            time.sleep(0.05)
    t.join(30)
    assert not hung, "opening a session blocked on the FIFO"


@needs_root
def test_a_patched_install_cannot_forge_the_mark_and_skip_the_next_install(tmp_path, own_cache):
    env = env_with_install(tmp_path, INSTALL)
    sb = sandbox_with(env, workdir=tmp_path)
    with sb.open(TASK) as s:
        base_wrap = s.run("cat /testenv/share/installed.py").output
    key = testbeds.testbed_key(TASK, env, True)
    # the control: a patched install without the forgery; the next session installs the base again
    patched_install(sb, env, "pass\n", wrap="EVIL = 1\n")
    with sb.open(TASK) as s:
        assert s.run("cat /testenv/share/installed.py").output == base_wrap
    # the forgery: the patch's setup.py writes the task's key (computable from public data) into the mark
    patched_install(sb, env, f"open('/testenv/{PLANTED}', 'w').write({key!r})\n", "EVIL = 1\n")
    with sb.open(TASK) as s:
        assert s.run("cat /testenv/share/installed.py").output == base_wrap


# --- what a patched install writes into the env's site-packages is named ------------------------------------------------

# setup.py bodies (run by the install step with the env writable): each leaves something the test run would start with
SITE_WRITES = {
    "a .pth file": "open(site + '/zz.pth', 'w').write('import os\\n')",
    "the runner's own code": "open(site + '/_pytest/runner.py', 'a').write('\\n# steered\\n')",
    "a start-up module": "open(site + '/sitecustomize.py', 'w').write('\\n')",
}


@needs_root
@pytest.mark.parametrize("name", first_by_default(list(SITE_WRITES)))
def test_what_a_patched_install_writes_into_site_packages_is_named(tmp_path, own_cache, name):
    "The env is a venv: the probe must find its site-packages although it runs without `site` (until stop 51 it did not)."
    env = env_with_install(tmp_path, INSTALL)
    sb = sandbox_with(env, workdir=tmp_path)
    setup_py = "import sysconfig\nsite = sysconfig.get_paths()['purelib']\n" + SITE_WRITES[name] + "\n"
    control = grade(
        TASK, TASK.patch + file_diff("setup.py", None, "import sysconfig\n"), sb
    )  # an install that writes nothing
    assert control.resolved and control.suspicious == [], control
    g = grade(TASK, TASK.patch + file_diff("setup.py", None, setup_py), sb)
    assert not g.resolved and any("by the install step" in f and "site-packages" in f for f in g.suspicious), g
