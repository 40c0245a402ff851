"""Hostile commands against the sandbox's bounds (issue 16): patches stay whole or are refused with a label, disk and
/tmp are capped, command output is streamed within its cap, and the file tools neither block nor read huge files whole.
Each case asserts the outcome: a refusal, a label, a clear error, or an unchanged result."""

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from swecl.agent.tools import Toolbox
from swecl.base.core import SandboxError
from swecl.envs.envs import Env
from swecl.sandbox.isolation import Limits
from swecl.sandbox.sandbox import LocalSandbox, LocalSession, PatchTooLarge
from swecl.tasks.mini import load_mini
from swecl.tasks.repos import export_tree

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")
LIMITS = Limits(timeout=60, cpu_seconds=60, memory_mb=2048, processes=64)


@pytest.fixture
def session():
    with LocalSandbox([MIRROR], limits=LIMITS).open(TASK) as s:
        yield s


def python_rss(code: str, timeout=120) -> tuple[int, str]:
    "(peak RSS in MB, stdout) of a fresh Python running `code` (which may use the names of this module's setup)."
    setup = (
        "import resource\nfrom swecl.tasks.mini import load_mini\nfrom swecl.sandbox.sandbox import LocalSandbox\n"
        "from swecl.sandbox.isolation import Limits\nfrom swecl.agent.tools import Toolbox\n"
        "MINI = load_mini(); TASK = MINI.task('swecl-mini__textkit-3')\n"
    )
    # VmHWM is this process's own peak: ru_maxrss would also carry the parent's size at fork through exec, so a test
    # process that has loaded torch would make every child look large
    tail = (
        "\nprint('RSS', [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM')][0] // 1024)\n"
    )
    r = subprocess.run([sys.executable, "-c", setup + textwrap.dedent(code) + tail], capture_output=True, text=True,
                       timeout=timeout)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return int(r.stdout.split("RSS ")[-1]), r.stdout


# ---------------------------------------------------------------- patches stay whole


def test_patch_over_the_limit_is_refused_with_a_label_naming_the_junk(session):
    session.limits = dataclasses.replace(session.limits, max_patch_bytes=1 << 20)
    session.run(
        "echo '# fixed' >> src/textkit/wrap.py; mkdir -p build; seq 400000 > build/junk.log; seq 50 > notes.txt"
    )
    with pytest.raises(PatchTooLarge) as e:
        session.diff()
    err = e.value
    assert isinstance(err, SandboxError) and err.reason == "patch-too-large"
    assert err.nbytes > 1 << 20 and err.limit == 1 << 20
    assert [p for p, _ in err.largest[:2]] == ["build/junk.log", "notes.txt"], err.largest
    assert "largest files: build/junk.log (" in str(err) and "characters cut" not in str(err)


def test_patch_over_the_old_output_cap_comes_back_whole_and_applies(session):
    # 1.5 MB of diff: the command-output cap (1 MiB) used to cut it in the middle
    session.run("seq 200000 > data.txt; echo '# fixed' >> src/textkit/wrap.py")
    patch = session.diff()
    assert len(patch.encode()) > 1 << 20 and "characters cut" not in patch
    assert patch.count("\n+") == 200000 + 1 + 2  # every line of data.txt, the fix, two "+++ b/" headers
    with LocalSandbox([MIRROR], limits=LIMITS).open(TASK) as fresh:
        r = fresh.run("git apply --check -", input=patch)
        assert r.exit_code == 0, r.output


def test_patch_of_exactly_the_limit_is_whole(session):
    session.write_file("a.txt", "x" * 1000 + "\n")
    whole = session.diff()
    session.limits = dataclasses.replace(session.limits, max_patch_bytes=len(whole.encode()))
    assert session.diff() == whole
    session.limits = dataclasses.replace(session.limits, max_patch_bytes=len(whole.encode()) - 1)
    with pytest.raises(PatchTooLarge):
        session.diff()


# ---------------------------------------------------------------- bounded disk


def test_tmp_and_dev_shm_are_capped():
    with LocalSandbox([MIRROR], limits=dataclasses.replace(LIMITS, tmp_mb=16, shm_mb=4)).open(TASK) as s:
        r = s.run("head -c 100000000 /dev/zero > /tmp/fill; echo rc=$?; du -m /tmp/fill")
        assert "No space left on device" in r.output and "rc=1" in r.output and "16\t/tmp/fill" in r.output, r.output
        r = s.run("head -c 100000000 /dev/zero > /dev/shm/fill; echo rc=$?; du -m /dev/shm/fill")
        assert "No space left on device" in r.output and "4\t/dev/shm/fill" in r.output, r.output


@pytest.mark.skipif(os.geteuid() != 0, reason="the tmpfs working copy is made as root")
def test_working_copy_is_capped_in_total_as_root():
    free = shutil.disk_usage(tempfile.gettempdir()).free
    with LocalSandbox([MIRROR], limits=dataclasses.replace(LIMITS, disk_mb=64)).open(TASK) as s:
        assert s.disk_cap == "tmpfs"
        t0 = time.time()
        r = s.run("for i in $(seq 50); do head -c 30000000 /dev/zero > junk$i || break; done; ls junk* | wc -l")
        assert "No space left on device" in r.output and time.time() - t0 < 30, r.output
        assert sum(f.stat().st_size for f in s.testbed.glob("junk*")) <= 64 << 20
        assert s.run("echo still > works.txt && cat works.txt").output != ""  # the session is still usable
    assert free - shutil.disk_usage(tempfile.gettempdir()).free < 200 << 20  # the host disk got none of it


def test_working_copy_watchdog_kills_a_disk_filler(tmp_path):
    # the mechanism without root (no mount): a real working copy on disk, the watchdog of the session
    export_tree(Path(MIRROR) / "swecl-mini+textkit", TASK.base_commit, tmp_path / "testbed")
    (tmp_path / "env").mkdir()
    with LocalSession(tmp_path, Env(tmp_path / "env", "3"), dataclasses.replace(LIMITS, disk_mb=32)) as s:
        assert s.disk_cap == "watch" and s.watch is not None
        r = s.run("for i in $(seq 300); do head -c 2000000 /dev/urandom > junk$i; done; echo finished")
        assert r.killed == "disk" and r.exit_code == -9 and "finished" not in r.output
        assert r.output.endswith("[killed: disk]")
        written = sum(f.stat().st_size for f in s.testbed.glob("junk*"))
        assert 32 << 20 < written < 200 << 20, written  # stopped soon after the cap, far from the 600 MB


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become an unprivileged user")
def test_disk_cap_holds_for_an_unprivileged_harness():
    tmp_path = Path(tempfile.mkdtemp())  # pytest's own tmp_path sits under a folder only root may enter
    tmp_path.chmod(0o777)
    # the harness as nobody: no mount allowed, so the session is on disk under the watchdog (the environment here is an
    # empty folder: the harness's interpreter lives under /root, out of nobody's reach, and the commands need none)
    code = f"""
        from pathlib import Path
        from swecl.envs.envs import Env
        from swecl.sandbox.isolation import Limits
        from swecl.tasks.mini import load_mini
        from swecl.tasks.repos import export_tree
        from swecl.sandbox.sandbox import LocalSession, disk_cap
        m, root = load_mini(), Path("{tmp_path}") / "session"
        root.mkdir()
        cap = disk_cap(root, 32)
        task = m.task("swecl-mini__textkit-3")
        export_tree(Path(m.metadata["mirror"]) / "swecl-mini+textkit", task.base_commit, root / "testbed")
        (root / "env").mkdir()
        with LocalSession(root, Env(root / "env", "3"), Limits(disk_mb=32, tmp_mb=16), task=task, disk_cap=cap) as s:
            r = s.run("for i in $(seq 300); do head -c 2000000 /dev/urandom > junk$i; done; echo finished")
            s.run("rm junk*")
            t = s.run("head -c 100000000 /dev/zero > /tmp/f; du -m /tmp/f; id -u")
            print(s.disk_cap, r.killed, "finished" in r.output, "No space left" in t.output, t.output.split()[-3:])
    """
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "SWECL_CACHE_DIR": str(tmp_path / "cache")}
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
    probe = subprocess.run(
        [*as_nobody, "import swecl.sandbox.sandbox"], capture_output=True, text=True, env=env, timeout=120
    )
    if probe.returncode:  # e.g. a checkout under a 0700 folder (mktemp -d): nobody cannot import the harness at all
        shutil.rmtree(tmp_path, ignore_errors=True)
        pytest.skip(f"the harness is not readable by nobody here: {probe.stderr.strip()[-200:]}")
    try:
        r = subprocess.run([*as_nobody, textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    if "Permission denied" in r.stderr and r.returncode:
        pytest.skip(f"the environment is not readable by nobody: {r.stderr[-200:]}")
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "watch disk False True ['16', '/tmp/f', '65534']", r.stdout


# ---------------------------------------------------------------- streamed output


def test_huge_output_is_streamed_within_the_cap():
    rss, out = python_rss("""
        with LocalSandbox([MINI.metadata["mirror"]]).open(TASK) as s:
            r = s.run("head -c 500000000 /dev/zero | tr '\\\\0' x; echo; echo THE-END", max_output=1 << 20)
        print(r.nbytes, len(r.output), r.output.endswith("THE-END\\n"), "characters cut" in r.output)
    """)
    nbytes, length, ends, noted = out.split()[:4]
    assert (nbytes, ends, noted) == ("500000009", "True", "True"), out  # all counted, the tail kept, the cut said
    assert (1 << 20) < int(length) < (1 << 20) + 100, out
    assert rss < 300, f"{rss} MB for 500 MB of output"


def test_output_of_a_command_that_ignores_its_input_does_not_block(session):
    t0 = time.time()
    r = session.run("echo done", input="x" * 5_000_000)
    assert r.output == "done\n" and r.exit_code == 0 and time.time() - t0 < 20


# ---------------------------------------------------------------- file tools


def test_fifo_is_refused_at_once_by_every_file_tool(session):
    session.run("mkfifo pipe; ln -s /dev/zero zero")
    tb = Toolbox(session, window=10)
    t0 = time.time()
    assert tb.open("pipe").error and "not a regular file" in tb.open("pipe").output
    assert tb.search_file("x", "pipe").output == "pipe is not a regular file."
    with pytest.raises(SandboxError, match="pipe is not a regular file"):
        session.read_file("pipe")
    assert tb.call("open", {"path": "zero"}).error  # a symlink out of the working copy: refused
    tb.open("src/textkit/wrap.py")
    session.run("rm src/textkit/wrap.py && mkfifo src/textkit/wrap.py")  # the open file becomes a FIFO
    for r in [tb.call("scroll_down", {}), tb.call("edit", {"start_line": 1, "end_line": 1, "replacement": "x"})]:
        assert r.error and "not a regular file" in r.output, r.output
    assert time.time() - t0 < 20  # nothing blocked until a timeout
    assert "No matches" in tb.search_dir("anything", "pipe").output  # recursive search skips it


def test_huge_file_with_a_huge_line_is_paged_not_read_whole():
    rss, out = python_rss("""
        with LocalSandbox([MINI.metadata["mirror"]]).open(TASK) as s:
            s.run("seq 5 > big.txt; head -c 300000000 /dev/zero | tr '\\\\0' y >> big.txt; echo >> big.txt; seq 9 >> big.txt")
            tb = Toolbox(s, window=10)
            v = tb.open("big.txt", line_number=6).output
            e = tb.call("edit", {"start_line": 1, "end_line": 1, "replacement": "z"})
            print(v.splitlines()[0], "|", [l for l in v.splitlines() if l.startswith("6:")][0][-40:], "|", e.error, e.output[:90])
    """)
    head, line6, edit = [p.strip() for p in out.split("RSS")[0].split("|")]
    assert head == "[File: big.txt (16 lines total)]", out
    assert line6.endswith("y [... 299998000 characters cut]"), line6
    assert edit.startswith("True") and "over the 16777216 read whole" in edit, edit
    assert rss < 300, f"{rss} MB to view a 300 MB file"


def test_folder_is_refused_by_the_viewer_and_reader(session):
    tb = Toolbox(session)
    r = tb.open("src")
    assert r.error and r.output == "src is not a regular file."
    with pytest.raises(SandboxError, match="src is not a regular file"):
        session.read_file("src")


def test_normal_files_view_unchanged(session):
    tb = Toolbox(session, window=5)
    text = session.read_file("src/textkit/wrap.py")
    lines = text.split("\n")
    v = tb.open("src/textkit/wrap.py").output.split("\n")
    assert v[0] == f"[File: src/textkit/wrap.py ({len(lines)} lines total)]"
    assert v[1:6] == [f"{i}:{lines[i - 1]}" for i in range(1, 6)]
