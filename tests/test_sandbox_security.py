"""Escape attempts from inside a LocalSandbox session: each must be contained, and the host must be unharmed."""

import os
import re
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from swecl.base.core import cache_dir
from swecl.sandbox.isolation import SANDBOX_UID, Limits, nproc_of, sandbox_uid
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")


@pytest.fixture
def session():
    with LocalSandbox([MIRROR], limits=Limits(timeout=60, cpu_seconds=30, memory_mb=1024, processes=64)).open(
        TASK
    ) as s:
        yield s


def test_no_network(session):
    r = session.run("python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"; echo rc=$?")
    assert "rc=1" in r.output and ("unreachable" in r.output.lower() or "errno" in r.output.lower()), r.output
    r = session.run("tail -n +3 /proc/net/dev | cut -d: -f1")
    assert r.output.split() == ["lo"], r.output  # only the namespace's own loopback device


def test_writes_outside_the_working_copy_fail(session, tmp_path):
    home_file = Path.home() / f".swecl-sentinel-{os.getpid()}"
    home_file.write_text("host")
    cache_file = cache_dir() / f"sentinel-{os.getpid()}"
    cache_file.write_text("host")
    try:
        cmd = " ; ".join(
            f"echo x > {p} 2>/dev/null && echo WROTE {p}"
            for p in [
                "/usr/swecl-x",
                "/etc/swecl-x",
                str(home_file),
                str(cache_file),
                f"{Path.home()}/new-file",
                f"{MIRROR}/swecl-x",
                str(tmp_path / "x"),
            ]
        )
        r = session.run(cmd)
        assert "WROTE" not in r.output, r.output
        assert home_file.read_text() == "host" and cache_file.read_text() == "host"
        assert not (Path.home() / "new-file").exists() and not (tmp_path / "x").exists()
        assert session.run("echo ok > /testbed/inside.txt && cat inside.txt").output == "ok\n"
    finally:
        home_file.unlink()
        cache_file.unlink()


def test_secrets_of_the_parent_are_not_visible(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_very_secret")
    with LocalSandbox([MIRROR]).open(TASK) as s:
        s.env.variables = dict(s.env.variables, OPENAI_API_KEY="sk-passed-explicitly")  # even asked for, it is dropped
        r = s.run('env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; ls -a ~')
    assert "secret" not in r.output and "sk-" not in r.output, r.output
    assert "HOME=/tmp/home" in r.output


def marked_processes(marker: str, uid: int) -> int:
    "How many processes of `uid` carry `marker` in their command line: one sandboxed command's shell and its forks."
    n = 0
    for p in Path("/proc").iterdir():
        try:
            n += p.name.isdigit() and p.stat().st_uid == uid and marker.encode() in (p / "cmdline").read_bytes()
        except OSError:
            pass  # the process ended while we looked
    return n


def test_fork_bomb_is_contained():
    # Only this bomb's processes are counted (a unique marker in the command line, which every fork of the shell
    # keeps), so other sandboxes running as the same user on the machine do not disturb the count.
    marker = f"swecl-bomb-{uuid.uuid4().hex}"
    lim = Limits(timeout=20, processes=64, cpu_seconds=30)
    peak, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], marked_processes(marker, sandbox_uid()))
            time.sleep(0.05)

    with LocalSandbox([MIRROR], limits=lim).open(TASK) as s:
        others = nproc_of(sandbox_uid())  # the limit is per user: what the user runs already is added to it
        watcher = threading.Thread(target=watch)
        watcher.start()
        t0 = time.time()
        try:
            s.run(f": {marker}; bomb() {{ bomb | bomb & }}; bomb; sleep 2; echo survived", timeout=20)
        finally:
            done.set()
            watcher.join()
        assert time.time() - t0 < 25
    assert peak[0] > 8, peak  # the bomb ran, and its processes were seen
    assert peak[0] <= others + lim.processes + 8, (peak, others)  # the process limit held
    time.sleep(1)
    assert marked_processes(marker, sandbox_uid()) == 0  # nothing of it left running on the host
    assert subprocess.run(["true"]).returncode == 0  # the host can still start processes


def test_memory_limit():
    with LocalSandbox([MIRROR], limits=Limits(memory_mb=512)).open(TASK) as s:
        r = s.run("python -c \"b = bytearray(2 << 30); print('allocated')\"")
    assert r.exit_code != 0 and "allocated" not in r.output and "MemoryError" in r.output, r.output


def test_cpu_and_file_size_limits():
    with LocalSandbox([MIRROR], limits=Limits(cpu_seconds=2, file_size_mb=5)).open(TASK) as s:
        t0 = time.time()
        r = s.run('python -c "while True: pass"', timeout=30)
        assert r.exit_code == 152 and not r.timed_out and time.time() - t0 < 15  # SIGXCPU (128 + 24): grading labels it
        r = s.run("head -c 20000000 /dev/zero > big.bin; echo rc=$?; stat -c %s big.bin")
        assert "rc=0" not in r.output and int(r.output.split()[-1]) <= 5 << 20, r.output


def unique_sleep(seconds: int) -> str:
    "A sleep duration no other process on the machine uses (e.g. `300.123456`), to find this test's sleeps by."
    return f"{seconds}.{uuid.uuid4().int % 10**6:06d}"


def test_runaway_command_is_killed_with_its_process_group(session):
    d = unique_sleep(300)
    t0 = time.time()
    r = session.run(f"sleep {d} & sleep {d}", timeout=2)
    assert r.timed_out and time.time() - t0 < 10
    time.sleep(0.5)
    ps = subprocess.run(["pgrep", "-f", f"sleep {d}"], capture_output=True, text=True)
    assert ps.stdout.strip() == "", "a sandboxed process survived its timeout"


def test_background_process_does_not_outlive_the_command(session):
    d1, d2 = unique_sleep(301), unique_sleep(302)
    r = session.run(f"(setsid sleep {d1} &) ; nohup sleep {d2} >/dev/null 2>&1 & echo started")
    assert "started" in r.output and r.seconds < 10
    time.sleep(0.5)
    ps = subprocess.run(["pgrep", "-f", f"sleep ({d1}|{d2})"], capture_output=True, text=True)
    assert ps.stdout.strip() == "", "a background process outlived its command"


def test_dataset_results_and_other_tasks_are_unreachable(session):
    other = LocalSandbox([MIRROR]).open(MINI.task("swecl-mini__minicalc-1"))
    try:
        data = os.environ.get("SWECL_DATA_DIR", "/nonexistent-data")
        r = session.run(
            f"ls {data} {MIRROR} {other.testbed} {cache_dir()} {Path.cwd()} 2>&1; echo @@SEP@@; ps -e -o pid,args"
        )
        listing, ps = r.output.split("@@SEP@@\n", 1)
        assert listing.count("No such file") == 5, listing
        procs = [l.split(None, 1)[1] for l in ps.strip().splitlines()[1:]]
        # the host's processes are invisible: only the sandbox's init (bwrap), the shell and ps itself
        assert len(procs) <= 3 and all(
            p.split()[0].rsplit("/", 1)[-1] in ("bwrap", "bash", "ps", "setpriv") for p in procs
        ), procs
    finally:
        other.close()


def test_no_commit_after_base_is_reachable(session):
    later = MINI.task("swecl-mini__textkit-5")
    fix_blobs = re.findall(
        r"^index [0-9a-f]+\.\.([0-9a-f]+)", later.patch + TASK.patch, re.M
    )  # post-image blobs of the fixes
    r = session.run(
        "git log --all --format=%H; git reflog | wc -l; git cat-file --batch-all-objects --batch-check; git fsck --lost-found 2>&1 | tail -2"
    )
    assert len(r.output.split("\n")[0]) == 40 and r.output.split("\n")[1] == "1"
    for sha in [later.base_commit, TASK.base_commit] + fix_blobs:
        assert sha not in r.output, sha
        assert "rc=128" in session.run(f"git show {sha} >/dev/null 2>&1; echo rc=$?").output


# Where a copy of the gold patch or the test patch could be in the sandbox's view: everything swecl binds or makes
# (the working copy, the env, Python's home, /tmp, /etc, /var) and /usr/local, where data may be installed. The rest
# of the host's /usr (6 GB of system packages here: 35 s of grep) is read under the thorough flag.
VIEW_OUTSIDE_SYSTEM = "$(find / -mindepth 1 -maxdepth 1 -type d ! -name usr ! -name proc ! -name sys) /usr/local"


@pytest.mark.parametrize(
    "where", [VIEW_OUTSIDE_SYSTEM, pytest.param("/", marks=pytest.mark.thorough)], ids=["view", "whole-filesystem"]
)
def test_no_copy_of_a_later_fix_in_the_view(session, where):
    # bytes, not characters (LC_ALL=C): the same matches, without decoding every file as UTF-8. TeX Live's read-only
    # data (/usr/share/texlive, /var/lib/texmf: half a GB, for matplotlib's specs) holds nothing of a repository
    # (links such as /lib → /usr/lib are left out of the view's list: grep follows a link it is given)
    r = session.run(
        "echo test_truncate_tiny_width > /tmp/canary; LC_ALL=C grep -rlF --exclude-dir=proc --exclude-dir=sys "
        f"--exclude-dir=texlive --exclude-dir=texmf 'test_truncate_tiny_width' {where} 2>/dev/null | head -3",
        timeout=300,
    )
    assert r.output.split() == ["/tmp/canary"], r.output  # only the canary: the search reaches what it names


def test_commands_run_unprivileged(session):
    uid = session.run("id -u").output.strip()
    assert uid == str(SANDBOX_UID if os.geteuid() == 0 else os.getuid())
    r = session.run("grep CapEff /proc/self/status")
    assert r.output.split()[-1] == "0000000000000000", r.output
