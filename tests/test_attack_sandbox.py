"""Holding host memory past the caps from inside the sandbox (issue 31, family 5): memory no rlimit sees (a memfd,
/dev/shm, /tmp, a tmpfs of a nested user namespace), many processes each under the address-space rlimit, a fork bomb.
Each attack is a real command in a real local session with a 256 MB cap; each must be stopped or refused, the host
must get its memory back, and the session must answer afterwards. A control of half the cap shows the attack is what
is stopped. The memory cases need the per-command cgroup (the harness as root with writable memory and pids cgroups);
without it they are skipped and `cgroup_setup` says why."""

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from swecl.sandbox.isolation import Limits, cgroup_setup, command_argv, run_limited
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

MINI = load_mini()
MIRROR = MINI.metadata["mirror"]
TASK = MINI.task("swecl-mini__textkit-3")
CAP = 256  # MB
LIMITS = Limits(timeout=60, cpu_seconds=60, memory_mb=CAP, processes=64, tmp_mb=4 * CAP, shm_mb=4 * CAP)
CGROUPS, WHY = cgroup_setup()
needs_cgroup = pytest.mark.skipif(not CGROUPS, reason=f"no per-command cgroup here: {WHY}")


@pytest.fixture
def session():
    with LocalSandbox([MIRROR], limits=LIMITS).open(TASK) as s:
        yield s


def shmem_mb() -> int:
    "The host's memory held by memfds and tmpfs files: what these attacks hold (MemAvailable moves with others' load)."
    return int(re.search(r"Shmem:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1)) >> 10


def left_cgroups() -> list:
    "This process's command cgroups still on the host (each is removed after its command)."
    return [d for p in set(CGROUPS.values()) for d in p.glob(f"swecl-{os.getpid()}-*")]


def assert_host_fine(session, before_mb: int):
    "The session answers, no cgroup is left, and the host has its memory back (within 64 MB of other load)."
    assert session.run("echo alive").output == "alive\n"
    assert left_cgroups() == []
    assert shmem_mb() < before_mb + 64, (shmem_mb(), before_mb)


def memfd(mb: int) -> str:
    "A Python that writes `mb` MB into a memfd (memory no process maps: the address-space rlimit does not see it)."
    fill = f"[os.write(fd, bytes(1 << 20)) for _ in range({mb})]"
    return f"python3 -c \"import os; fd = os.memfd_create('x'); {fill}; print('held')\""


@needs_cgroup
def test_memfd_past_the_cap_is_killed(session):
    before = shmem_mb()
    assert session.run(memfd(CAP // 2)).output == "held\n"  # the control: half the cap is held
    r = session.run(memfd(CAP * 3 // 2))
    assert (r.killed, "held" in r.output, r.output.endswith("[killed: memory]")) == ("memory", False, True), r.output
    assert r.exit_code == 128 + 9  # bash's child was SIGKILLed by the OOM killer
    assert_host_fine(session, before)


@needs_cgroup
@pytest.mark.parametrize("folder", ["/dev/shm", "/tmp"])
def test_filling_a_tmpfs_past_the_cap_is_killed(session, folder):
    # both are sized 4x the cap here: only the memory cap stands between them and the host
    before = shmem_mb()
    fill = f"head -c {{}}M /dev/zero > {folder}/fill && du -m {folder}/fill && echo filled"
    assert session.run(fill.format(CAP // 2)).output.endswith("filled\n")  # the control
    r = session.run(fill.format(CAP * 3 // 2))
    assert r.killed == "memory" and "filled" not in r.output, r.output
    assert_host_fine(session, before)


@needs_cgroup
def test_many_processes_each_under_the_rlimit_are_killed_together(session):
    # 4 x 100 MB: each process is under the 256 MB address-space rlimit, the sum is not under the cap
    hold = 'python3 -c \'import time; b = b"x" * (100 << 20); time.sleep(2); print("held")\''
    before = shmem_mb()
    ok = session.run(f"for i in 1 2; do {hold} & done; wait")
    assert ok.output == "held\nheld\n" and ok.killed is None, ok.output  # the control: 200 MB
    r = session.run(f"for i in 1 2 3 4; do {hold} & done; wait")
    assert r.killed == "memory" and r.output.splitlines().count("held") < 4, r.output
    assert_host_fine(session, before)


def test_one_big_anonymous_allocation_is_refused(session):
    before = shmem_mb()
    r = session.run(f"python3 -c \"b = b'x' * ({CAP * 3 // 2} << 20); print('allocated')\"")
    assert "MemoryError" in r.output and "allocated" not in r.output, r.output  # the rlimit, before the cgroup
    assert_host_fine(session, before)


NESTED = [
    "unshare -U true",
    "unshare -Ur id -u",
    f"unshare -Urm sh -c 'mount -t tmpfs none /tmp && head -c {CAP * 3 // 2}M /dev/zero > /tmp/f && echo filled'",
    # the raw system calls, in case a tool only tries unshare: clone(CLONE_NEWUSER | SIGCHLD) and clone3
    'python3 -c "import ctypes, os; r = ctypes.CDLL(None, use_errno=True).syscall(56, 0x10000000 | 17, 0, 0, 0, 0); '
    'r == 0 and os._exit(0); print(r, os.strerror(ctypes.get_errno())); exit(r != 0)"',
]


@pytest.mark.parametrize("cmd", NESTED, ids=["unshare", "unshare-root", "unshare-tmpfs", "clone"])
def test_a_nested_user_namespace_is_refused(session, cmd):
    before = shmem_mb()
    r = session.run(f"{cmd}; echo rc=$?")
    assert r.output.splitlines()[-1] == "rc=1" and "filled" not in r.output, r.output
    assert "Operation not permitted" in r.output, r.output
    assert_host_fine(session, before)


@pytest.mark.skipif(os.geteuid() != 0, reason="as a user, whether the host allows nested user namespaces varies")
def test_without_the_filter_the_nested_namespace_would_be_made(session):
    # the control of the test above: the same sandbox command line, but no seccomp filter
    e = session.env
    argv, env = command_argv("unshare -Ur id -u", session.testbed, e.path, e.binds, e.variables, limits=LIMITS)
    r = run_limited(argv, session.testbed, env, LIMITS, 30)
    assert (r.exit_code, r.output) == (0, "0\n"), r.output


def test_fork_bomb_is_contained(session):
    marker = f"swecl-bomb-{uuid.uuid4().hex}"
    r = session.run(f": {marker}; bomb() {{ bomb | bomb & }}; bomb; sleep 2; echo survived", timeout=15)
    assert r.seconds < 30
    assert session.run("echo alive").output == "alive\n"
    gone = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert gone == "", gone  # nothing of it left running on the host (other work runs as nobody too: not counted)
    if CGROUPS:
        assert left_cgroups() == []


# ---------------------------------------------------------------- the Docker sandbox: the engine's cgroup and seccomp


@pytest.fixture(scope="module")
def docker_session():
    from swecl.sandbox.docker_sandbox import DockerSandbox
    from swecl.sandbox.images import build_images

    recs = build_images([TASK], MINI)
    assert all(r["status"] in ("built", "current") for r in recs), recs
    with DockerSandbox(LIMITS).open(TASK) as s:
        yield s


@pytest.mark.docker
def test_docker_memfd_past_the_cap_is_killed(docker_session):
    assert docker_session.run(memfd(CAP // 2)).output == "held\n"  # the control
    r = docker_session.run(memfd(CAP * 3 // 2))
    assert r.exit_code == 128 + 9 and "held" not in r.output, r.output  # the container's OOM killer
    assert docker_session.run("echo alive").output == "alive\n"


@pytest.mark.docker
@pytest.mark.parametrize("cmd", NESTED, ids=["unshare", "unshare-root", "unshare-tmpfs", "clone"])
def test_docker_nested_user_namespace_is_refused(docker_session, cmd):
    r = docker_session.run(f"{cmd}; echo rc=$?")  # the engine's default seccomp profile, the command as nobody
    assert r.output.splitlines()[-1] == "rc=1" and "filled" not in r.output, r.output
    assert "Operation not permitted" in r.output, r.output
