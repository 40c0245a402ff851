"""Ctrl-C during `swecl run`: one line on stderr, exit status 130, every finished attempt kept whole, and the same
command resumes from there, redoing nothing that finished."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, first_by_default

SCRIPT = ROOT / "swecl" / "data" / "scripts" / "mini.yaml"


# a terminal's default for SIGINT: pytest-xdist's workers ignore it, and a child would inherit that
def default_signals():  # neither ignored nor blocked, whatever the runner above this test did with them
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def attempts(results: Path) -> list:
    "Every record of every cell's attempts.jsonl under `results` (each must parse: none cut in half)."
    return [json.loads(line) for f in sorted(results.rglob("attempts.jsonl")) for line in f.read_text().splitlines()]


# Under load this run once went on to exit 0: the interrupt landed in logging's fork-time lock handler, where Python
# swallows it. swecl.base.stop records the signal, and the run's checkpoints raise it again.
def test_ctrl_c_keeps_every_finished_attempt_and_exits_130(swecl_bin, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"experiment": "stop", "dataset": "mini", "models": [f"scripted:{SCRIPT}"],
                                    "sequences": ["swecl-mini_textkit_sequence"], "max_tasks": 5,
                                    "schedule": "full", "conditions": [{"memory": "none"}]}))  # fmt: skip
    cmd = [swecl_bin, "run", "--plan", str(plan), "--out", str(tmp_path / "res")]

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=default_signals)  # fmt: skip
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and p.poll() is None and len(attempts(tmp_path / "res")) < 2:
        time.sleep(0.2)
    assert p.poll() is None, "the run ended before it could be interrupted: " + p.stderr.read()[-2000:]
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole foreground group
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        "swecl run: interrupted; every finished attempt is kept, and the same command resumes from there."
    ), err[-2000:]
    kept = attempts(tmp_path / "res")
    assert 2 <= len(kept) < 15, len(kept)  # 5 first attempts + 10 re-tests in all
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    done = attempts(tmp_path / "res")
    assert len(done) == 15 and done[: len(kept)] == kept, (len(done), len(kept))  # nothing finished was redone


# every half second over the first 15 s of a run (start-up, imports, the env, the sandbox, forks, logging), by turns
# SIGINT and SIGTERM: the first moment in every make test, the rest under the thorough flag
MOMENTS = [(0.5 * k, signal.SIGINT if k % 2 else signal.SIGTERM) for k in range(1, 31)]


@pytest.mark.parametrize("moment", first_by_default(MOMENTS), ids=lambda m: f"{m[0]:.1f}s-{m[1].name}")
def test_a_signal_at_any_moment_stops_the_run_resumably(swecl_bin, tmp_path, moment):
    delay, sig = moment
    plan = tmp_path / "plan.yaml"
    plan.write_text(yaml.safe_dump({"experiment": "stop", "dataset": "mini", "models": [f"scripted:{SCRIPT}"],
                                    "sequences": ["swecl-mini_textkit_sequence"], "max_tasks": 3, "embedder": "hashing",
                                    "schedule": "final", "conditions": [{"memory": "none"}]}))  # fmt: skip
    cmd = [swecl_bin, "run", "--plan", str(plan), "--out", str(tmp_path / "res")]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=default_signals)  # fmt: skip
    time.sleep(delay)
    finished = p.poll() is not None
    if not finished:
        os.killpg(p.pid, sig)
    out, err = p.communicate(timeout=300)
    # a run the signal reached stops with the shell's status for it; one that had finished exits 0
    # (killed by the signal itself, before swecl set its handlers: the shell shows the same status, 128 + sig)
    assert p.returncode in ((0,) if finished else (128 + sig, -sig)), (delay, sig, p.returncode, err[-1500:])
    kept = attempts(tmp_path / "res") if (tmp_path / "res").exists() else []
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    done = attempts(tmp_path / "res")
    assert len(done) == 5 and done[: len(kept)] == kept, (len(done), len(kept))  # resumed, nothing finished redone
