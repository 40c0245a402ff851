"""The local sandbox's escape attempts (tests/test_sandbox_security.py, tests/test_adversarial_sandbox.py), through
DockerSandbox on a real engine: each must be contained, and the host must be unharmed. Needs an engine
(scripts/docker-engine.sh start) and the mini benchmark's images (built here when missing)."""

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from swecl.base.core import SandboxError, cache_dir
from swecl.grading.grading import grade
from swecl.sandbox.isolation import SANDBOX_UID, Limits
from swecl.tasks.mini import load_mini

pytestmark = pytest.mark.docker

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")
OTHER = MINI.task("swecl-mini__minicalc-1")


@pytest.fixture(scope="module")
def sandbox():
    from swecl.sandbox.docker_sandbox import DockerSandbox
    from swecl.sandbox.images import build_images

    sb = DockerSandbox(Limits(timeout=60, cpu_seconds=30, memory_mb=1024, processes=64))
    recs = build_images([TASK, OTHER], MINI)
    assert all(r["status"] in ("built", "current") for r in recs), recs
    return sb


@pytest.fixture
def session(sandbox):
    with sandbox.open(TASK) as s:
        yield s


def ours(client) -> list:
    "This process's containers."
    return client.containers.list(all=True, filters={"label": f"swecl.pid={os.getpid()}"})


def host_pgrep(pattern: str) -> str:
    "Container processes are host processes: pgrep on the host sees them."
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.strip()


def unique_sleep(seconds: int) -> str:
    return f"{seconds}.{uuid.uuid4().int % 10**6:06d}"


def test_no_network(session):
    r = session.run("python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\"; echo rc=$?")
    assert "rc=1" in r.output and ("unreachable" in r.output.lower() or "errno" in r.output.lower()), r.output
    r = session.run("tail -n +3 /proc/net/dev | cut -d: -f1")
    assert r.output.split() == ["lo"], r.output


def test_writes_outside_the_working_copy_fail(session):
    home_file = Path.home() / f".swecl-sentinel-{os.getpid()}"
    home_file.write_text("host")
    try:
        paths = ["/usr/swecl-x", "/etc/swecl-x", "/testenv/swecl-x", "/root/swecl-x", str(home_file), str(cache_dir())]
        r = session.run(" ; ".join(f"echo x > {p} 2>/dev/null && echo WROTE {p}" for p in paths))
        assert "WROTE" not in r.output, r.output
        assert home_file.read_text() == "host"
        assert session.run("echo ok > /testbed/inside.txt && cat inside.txt").output == "ok\n"
    finally:
        home_file.unlink()


def test_secrets_of_the_parent_are_not_visible(sandbox, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_very_secret")
    with sandbox.open(TASK) as s:
        s.env.variables = dict(s.env.variables, OPENAI_API_KEY="sk-passed-explicitly")  # even asked for, dropped
        r = s.run('env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"; ls -a ~')
    assert "secret" not in r.output and "sk-" not in r.output, r.output
    assert "HOME=/tmp/home" in r.output


def test_fork_bomb_is_contained(sandbox):
    marker = f"swecl-bomb-{uuid.uuid4().hex}"
    with sandbox.open(TASK) as s:
        t0 = time.time()
        r = s.run(f": {marker}; bomb() {{ bomb | bomb & }}; bomb; sleep 2; echo survived", timeout=20)
        assert time.time() - t0 < 40, r.seconds
        stats = s.container.stats(stream=False)
        assert stats["pids_stats"].get("limit") == 64, stats["pids_stats"]  # the cgroup's pids limit held it
        alive = ""
        for _ in range(30):  # the bomb's last processes are reaped after the command; under load that takes a moment
            if (alive := s.run("echo alive").output) == "alive\n":
                break
            time.sleep(0.5)
        assert alive == "alive\n", alive  # the container still starts processes
    time.sleep(1)
    assert host_pgrep(marker) == ""  # nothing of it left running on the host
    assert subprocess.run(["true"]).returncode == 0


def test_memory_limit(sandbox):
    with sandbox.open(TASK) as s:
        r = s.run("python -c \"b = bytearray(2 << 30); print('allocated')\"")
    assert r.exit_code != 0 and "allocated" not in r.output, r.output  # the cgroup's OOM killer (1024 MB)


def test_cpu_and_file_size_limits(sandbox):
    from swecl.sandbox.docker_sandbox import DockerSandbox

    sb = DockerSandbox(Limits(cpu_seconds=2, file_size_mb=5), client=sandbox.client)
    with sb.open(TASK) as s:
        t0 = time.time()
        r = s.run('python -c "while True: pass"', timeout=30)
        assert r.exit_code != 0 and not r.timed_out and time.time() - t0 < 15
        r = s.run("head -c 20000000 /dev/zero > big.bin; echo rc=$?; stat -c %s big.bin")
        assert "rc=0" not in r.output and int(r.output.split()[-1]) <= 5 << 20, r.output


def test_runaway_command_is_killed_with_its_process_group(session):
    d = unique_sleep(300)
    t0 = time.time()
    r = session.run(f"sleep {d} & sleep {d}", timeout=2)
    assert r.timed_out and r.exit_code == 137 and time.time() - t0 < 10
    time.sleep(0.5)
    assert host_pgrep(f"sleep {d}") == "", "a sandboxed process survived its timeout"


def test_background_process_does_not_outlive_the_command(session):
    d1, d2 = unique_sleep(301), unique_sleep(302)
    r = session.run(f"(setsid sleep {d1} &) ; nohup sleep {d2} >/dev/null 2>&1 & echo started")
    assert "started" in r.output and r.seconds < 10
    time.sleep(0.5)
    assert host_pgrep(f"sleep ({d1}|{d2})") == "", "a background process outlived its command"


def test_the_command_cannot_kill_its_timeout(session):
    t0 = time.time()
    r = session.run("kill -9 $PPID 2>/dev/null; pkill -9 timeout; sleep 30", timeout=2)
    assert r.timed_out and time.time() - t0 < 10, r  # timeout runs as root: nobody cannot signal it


def test_dataset_results_and_other_tasks_are_unreachable(sandbox, session):
    with sandbox.open(OTHER):
        data = os.environ.get("SWECL_DATA_DIR", "/nonexistent-data")
        r = session.run(f"ls {data} {MIRROR} {cache_dir()} {Path.cwd()} 2>&1; ls /; echo @@SEP@@; ps -e -o pid,args")
        listing, ps = r.output.split("@@SEP@@\n", 1)
        assert listing.count("No such file") == 4, listing
        procs = [l.split(None, 1)[1] for l in ps.strip().splitlines()[1:]]
        # the host's and the other container's processes are invisible: init, its idle sleep, this command (timeout)
        assert all(
            p.split()[0].rsplit("/", 1)[-1] in ("docker-init", "sleep", "timeout", "bash", "ps") for p in procs
        ), procs
        assert len(procs) <= 5, procs


def test_no_commit_after_base_is_reachable(session):
    later = MINI.task("swecl-mini__textkit-5")
    fix_blobs = re.findall(r"^index [0-9a-f]+\.\.([0-9a-f]+)", later.patch + TASK.patch, re.M)
    r = session.run(
        "git log --all --format=%H; git reflog | wc -l; git cat-file --batch-all-objects --batch-check; git fsck --lost-found 2>&1 | tail -2"
    )
    for sha in [later.base_commit, TASK.base_commit] + fix_blobs:
        assert sha not in r.output, sha
        assert "rc=128" in session.run(f"git show {sha} >/dev/null 2>&1; echo rc=$?").output
    r = session.run("grep -rl --exclude-dir=proc --exclude-dir=sys 'test_truncate_tiny_width' / 2>/dev/null | head -3")
    assert r.output.strip() == "", r.output


def test_commands_run_unprivileged(session):
    assert session.run("id -u").output.strip() == str(SANDBOX_UID)
    r = session.run("grep CapEff /proc/self/status")
    assert r.output.split()[-1] == "0000000000000000", r.output


def test_tmp_and_dev_shm_are_capped(sandbox):
    from swecl.sandbox.docker_sandbox import DockerSandbox

    sb = DockerSandbox(Limits(tmp_mb=8, shm_mb=4), client=sandbox.client)
    with sb.open(TASK) as s:
        r = s.run(
            "head -c 20000000 /dev/zero > /tmp/f; echo rc=$?; head -c 20000000 /dev/zero > /dev/shm/f; echo rc=$?"
        )
    assert r.output.count("rc=1") == 2, r.output


def test_huge_output_is_streamed_within_the_cap(session):
    r = session.run("head -c 50000000 /dev/zero | tr '\\0' 'x'", max_output=1000)
    assert r.nbytes == 50_000_000 and len(r.output) < 2000, (r.nbytes, len(r.output))


def test_patch_input_with_any_text_arrives_whole(session):
    text = "line 'one'\nSWECL_EOF_7391\n$(touch /testbed/pwned)\n" * 3
    assert session.run("cat", input=text).output == text
    assert session.run("ls pwned 2>&1 || echo none").output.strip().endswith("none")


def test_files_are_confined_to_the_working_copy(session):
    session.run("ln -s /etc/passwd link; mkfifo fifo")
    for p in ("../etc/passwd", "/etc/passwd", "link", "fifo"):
        with pytest.raises(SandboxError):
            session.read_file(p)
    with pytest.raises(SandboxError):
        session.write_file("/etc/x", "no")


def test_grading_agrees_with_the_local_sandbox(sandbox):
    from swecl.sandbox.sandbox import LocalSandbox

    local = LocalSandbox([MIRROR])
    for patch in (TASK.patch, ""):
        d, loc = grade(TASK, patch, sandbox), grade(TASK, patch, local)
        assert (d.resolved, d.infra_reason, d.f2p_passed, d.p2p_passed) == (
            loc.resolved,
            loc.infra_reason,
            loc.f2p_passed,
            loc.p2p_passed,
        ), (d, loc)


def test_no_container_is_left_at_close_on_exceptions_and_on_sigterm(sandbox):
    with pytest.raises(RuntimeError):
        with sandbox.open(TASK):
            raise RuntimeError("boom")
    assert ours(sandbox.client) == []
    # a harness killed with SIGTERM in the middle of a command removes its container on the way out
    code = (
        "import os, signal, threading\n"
        "from swecl.sandbox.docker_sandbox import DockerSandbox\n"
        "from swecl.tasks.mini import load_mini\n"
        "s = DockerSandbox().open(load_mini().task('swecl-mini__textkit-3'))\n"
        "print(s.container.id, flush=True)\n"
        "threading.Timer(1, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()\n"
        "s.run('sleep 60')\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    cid = p.stdout.readline().strip()
    assert p.wait(timeout=120) == 143
    assert cid and sandbox.client.containers.list(all=True, filters={"id": cid}) == []
    # a harness killed with SIGKILL leaves one; the next DockerSandbox removes it
    p = subprocess.Popen([sys.executable, "-c", code.replace("SIGTERM", "SIGKILL")], stdout=subprocess.PIPE, text=True)
    cid = p.stdout.readline().strip()
    assert p.wait(timeout=120) == -signal.SIGKILL
    assert len(sandbox.client.containers.list(all=True, filters={"id": cid})) == 1
    from swecl.sandbox.docker_sandbox import DockerSandbox

    DockerSandbox(client=sandbox.client)
    assert sandbox.client.containers.list(all=True, filters={"id": cid}) == []
