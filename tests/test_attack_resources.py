"""Host resources outside the sandbox (issue 31, family 5): a file swecl reads (dataset, predictions, plan, attempts,
merge, eval_state) that is `/dev/zero`, a FIFO, a sparse giant or a "billion laughs" YAML is refused in one sentence
with exit status 2, at once; a model server that sends an endless body, asks to be retried in 100000 s, trickles a
byte a second or never answers is cut within the run's time budget (`--max-seconds`) as a labelled model error, never
a hang and never a 0. Every attack runs the real CLI as a subprocess; the subprocesses of a group start together (the
machine has two shared cores, and each start costs seconds), and each test then checks its own. Each attack has a
control showing the input really is what it claims."""

import http.server
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from swecl.base.core import MAX_INPUT_BYTES, yaml_nodes
from swecl.runs.plans import MAX_PLAN_BYTES

MINI_RUN = ["run", "--dataset", "mini", "--sequences", "textkit", "--conditions", "none", "--seeds", "0"]
MINI_RUN += ["--max-tasks", "1", "--schedule", "sequential"]
LAUGHS = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10)
)  # 10^9 "lol"s in 700 bytes


def start(*args, env=None) -> tuple:
    "`python -m swecl.cli ARGS` started as a subprocess: (process, start time)."
    env = os.environ | {"SWECL_DATA_DIR": os.environ.get("SWECL_DATA_DIR", "")} | (env or {})
    p = subprocess.Popen([sys.executable, "-m", "swecl.cli", *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)  # fmt: skip
    return p, time.monotonic()


def finish(started, timeout: float = 300) -> tuple:
    "(exit status, stdout, stderr, seconds) of a started command; a command still running after `timeout` is a hang."
    p, t0 = started
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"swecl {' '.join(p.args[3:])} still ran after {timeout} s: it hangs")
    return p.returncode, out, err, time.monotonic() - t0


def refused(result, *says: str) -> float:
    "Assert exit status 2 and one line on stderr naming the refusal, no traceback; the seconds it took."
    rc, out, err, secs = result
    assert rc == 2 and err.count("\n") == 1 and err.startswith("swecl") and "Traceback" not in err, (rc, err[-2000:])
    assert all(s in err for s in says), err
    return secs


def sparse(path: Path, size: int) -> Path:
    "A file of `size` bytes on paper and none on disk."
    with open(path, "wb") as f:
        f.truncate(size)
    return path


# --- files -------------------------------------------------------------------------------------------------------


BATCH = """import json, sys, time
from swecl.cli.app import COMMANDS
from swecl.cli.base import call
res = {}
for name, argv in json.loads(sys.argv[1]).items():
    t0 = time.monotonic()
    res[name] = [*call(COMMANDS, *argv), time.monotonic() - t0]
print(json.dumps(res))
"""  # several refusals through the CLI's own dispatcher in one interpreter: each timed alone, one start paid
SEPARATE = ("dataset-zero", "predictions-fifo", "plan-laughs")  # also as `python -m swecl.cli`, each its own process
CELL = "mini/swecl-mini_textkit_sequence__scripted__none__s0"  # the folder of MINI_RUN's one cell


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    "The hostile files, and every file attack started at once: (folder, name -> started process, the batch)."
    d = tmp_path_factory.mktemp("files")
    os.mkfifo(d / "predictions.jsonl")  # no writer ever comes
    os.mkfifo(d / "dataset.json")
    (d / "laughs.yaml").write_text(LAUGHS)
    sparse(d / "big-plan.yaml", MAX_PLAN_BYTES + 1)
    sparse(d / "big.jsonl", MAX_INPUT_BYTES + 1)
    (d / "preds.jsonl").write_text(json.dumps({"instance_id": "swecl-mini__textkit-1", "model_patch": ""}) + "\n")
    cell = d / "results" / CELL
    cell.mkdir(parents=True)
    (cell / "attempts.jsonl").symlink_to("/dev/zero")
    (cell / "predictions.jsonl").write_text((d / "preds.jsonl").read_text())  # what a run did before: kept
    mini = ["--dataset", "mini"]
    attacks = {
        "dataset-zero": ["list", "sequences", "--dataset", "/dev/zero"],
        "dataset-fifo": ["list", "sequences", "--dataset", d / "dataset.json"],
        "dataset-big": ["list", "sequences", "--dataset", d / "big.jsonl"],
        "predictions-zero": ["regrade", "--predictions", "/dev/zero", *mini],
        "predictions-fifo": ["regrade", "--predictions", d / "predictions.jsonl", *mini],
        "plan-zero": ["run", "--plan", "/dev/zero"],
        "plan-laughs": ["run", "--plan", d / "laughs.yaml"],
        "plan-big": ["run", "--plan", d / "big-plan.yaml"],
        "merge-zero": ["regrade", "--predictions", d / "preds.jsonl", *mini, "--merge", "/dev/zero"],
        "authors-zero": ["regrade", "--predictions", d / "preds.jsonl", *mini, "--authors", "/dev/zero"],
    }
    started = {k: start(*attacks[k]) for k in SEPARATE}
    started["attempts"] = start(*MINI_RUN, "--model", "scripted", "--out", d / "results")
    batch = {k: list(map(str, a)) for k, a in attacks.items()}
    env = os.environ | {"SWECL_DATA_DIR": os.environ.get("SWECL_DATA_DIR", "")}
    started["batch"] = (subprocess.Popen([sys.executable, "-c", BATCH, json.dumps(batch)], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT), time.monotonic())  # fmt: skip
    yield d, started
    for p, _ in started.values():
        p.kill() if p.poll() is None else None


@pytest.fixture(scope="module")
def batch(files):
    "name -> (exit status, stdout, stderr, seconds) of every file attack run in the batch."
    rc, out, err, _ = finish(files[1]["batch"])
    assert rc == 0, err[-2000:]
    return {k: tuple(v) for k, v in json.loads(out.splitlines()[-1]).items()}


def test_controls_files_are_what_they_claim(files):
    d, _ = files
    with open("/dev/zero", "rb") as z:
        assert z.read(1 << 20) == bytes(1 << 20)  # endless zeros: a reader that reads to the end never ends
    assert stat.S_ISFIFO(os.stat(d / "predictions.jsonl").st_mode)
    st = os.stat(d / "big.jsonl")
    assert st.st_size > MAX_INPUT_BYTES and st.st_blocks * 512 < 1 << 20  # 2 GiB on paper, nothing on disk
    assert yaml_nodes(yaml.compose(LAUGHS)) > 10**9 and len((d / "laughs.yaml").read_bytes()) < 1000


REFUSALS = {
    "dataset-zero": ["/dev/zero is a character device, not a regular file", "dataset file"],
    "dataset-fifo": ["dataset.json is a FIFO (named pipe), not a regular file"],
    "dataset-big": ["big.jsonl is larger than the 2,147,483,648 bytes a dataset file may have"],
    "predictions-zero": ["/dev/zero is a character device"],
    "predictions-fifo": ["predictions.jsonl is a FIFO (named pipe)"],
    "plan-zero": ["/dev/zero is a character device", "plan"],
    "plan-laughs": ["laughs.yaml stands for more than 100,000 YAML values"],
    "plan-big": ["big-plan.yaml is larger than the 1,048,576 bytes a plan may have"],
    "merge-zero": ["/dev/zero is a character device", "regrade records file"],
    "authors-zero": ["/dev/zero is a character device", "eval_state.json"],
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_hostile_file_is_refused_at_once(batch, name):
    assert refused(batch[name], *REFUSALS[name]) < 10  # timed alone, in the CLI's dispatcher


@pytest.mark.parametrize("name", SEPARATE)
def test_hostile_file_is_refused_by_python_m_swecl_cli(files, name):
    refused(finish(files[1][name]), *REFUSALS[name])  # untimed: an interpreter's start on shared cores is not ours


def test_attempts_file_that_is_dev_zero(files):
    "A cell whose attempts.jsonl is a symlink to /dev/zero: the cell fails in one line, its predictions are kept."
    rc, out, err, _ = finish(files[1]["attempts"])
    assert rc == 1 and "Traceback" not in err + out, (rc, err[-2000:])
    assert "attempts.jsonl is a character device, not a regular file; give the JSON-lines file" in out, out
    kept = files[0] / "results" / CELL / "predictions.jsonl"
    assert kept.read_text() == (files[0] / "preds.jsonl").read_text()


# --- model servers -----------------------------------------------------------------------------------------------


class Hostile(http.server.BaseHTTPRequestHandler):
    "A model server that misbehaves as the first part of its path says: /endless, /rate-limited, /trickle, /silent."

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        mode = self.path.split("/")[1]
        if mode == "silent":  # holds the connection and never answers
            time.sleep(120)
            return
        self.send_response(429 if mode == "rate-limited" else 200)
        self.send_header("retry-after", "100000")
        self.send_header("content-length", "100000") if mode == "trickle" else None
        self.end_headers()
        try:
            for _ in range(10**6 if mode != "rate-limited" else 0):
                self.wfile.write(b" " * (65536 if mode == "endless" else 1))
                self.wfile.flush()
                time.sleep(1 if mode == "trickle" else 0)  # slowloris: a byte a second, never a silence to time out
        except OSError:  # the client hung up: what we want
            pass

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="module")
def runs(server, tmp_path_factory):
    "`swecl run` against each hostile server, all started at once, each with a time budget of 3 s per task."
    d = tmp_path_factory.mktemp("servers")
    started = {}
    for mode in ("endless", "rate-limited", "trickle", "silent"):
        model = f"openai:{server}/{mode}/v1:m"
        started[mode] = start(*MINI_RUN, "--model", model, "--max-seconds", 3, "--out", d / mode)
    yield d, started
    for p, _ in started.values():
        p.kill() if p.poll() is None else None


def attempt_of(runs, mode: str, exit_reason: str = "time_limit") -> dict:
    "The one attempt the run against server `mode` recorded, after checking the run ended without a traceback."
    rc, out, err, secs = finish(runs[1][mode])
    assert rc == 0 and "Traceback" not in err + out, (rc, err[-2000:])
    (f,) = (runs[0] / mode).glob("*/*/attempts.jsonl")
    (a,) = [json.loads(line) for line in f.read_text().splitlines()]
    # a call cut by --max-seconds ends the agent's run at its time limit (graded as it stands, no label), and so does a
    # reply too large to read (reply_too_large, the attempt's own); a provider still refusing when no time is left to
    # retry is a model that could not be used: model-error, infrastructure
    label = "model-error" if exit_reason == "model_error" else None
    assert (a["exit_reason"], a["infra_reason"], a["resolved"]) == (exit_reason, label, False), a
    return a


def test_controls_servers_misbehave(server):
    import httpx

    with httpx.Client(timeout=10) as c:
        r = c.post(f"{server}/rate-limited/v1/chat/completions", json={})
        assert (r.status_code, r.headers["retry-after"]) == (429, "100000")
        with c.stream("POST", f"{server}/endless/v1/chat/completions", json={}) as r:
            n = 0
            for chunk in r.iter_raw():
                n += len(chunk)
                if n > 32 << 20:
                    break
            assert n > 32 << 20  # more than twice the cap, and still sending
        t0 = time.monotonic()
        with c.stream("POST", f"{server}/trickle/v1/chat/completions", json={}) as r:
            got = b""
            for chunk in r.iter_raw():
                got += chunk
                if len(got) >= 3:
                    break
        assert time.monotonic() - t0 >= 1.5  # a byte a second
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /silent/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}")
        s.settimeout(2)
        with pytest.raises(TimeoutError):
            s.recv(1)  # connected, and no answer


def test_endless_body_is_cut_at_the_cap(runs):
    a = attempt_of(runs, "endless", "reply_too_large")
    assert "sent more than 16,777,216 bytes in one response" in a["error"] and a["agent_seconds"] < 30, a


def test_retry_after_100000_is_not_obeyed(runs):
    a = attempt_of(runs, "rate-limited", "model_error")
    assert "HTTP 429" in a["error"] and "time budget ends before a retry" in a["error"], a
    assert a["agent_seconds"] < 20, a  # not a day, and not even the capped 60 s: the budget is 3 s


def test_slowloris_is_cut_at_the_time_budget(runs):
    a = attempt_of(runs, "trickle")
    assert "was cut at the task's time budget" in a["error"] and a["agent_seconds"] < 20, a  # budget 3 s


def test_silent_server_is_cut_at_max_seconds(runs):
    a = attempt_of(runs, "silent")
    assert "was cut at the task's time budget" in a["error"] and a["agent_seconds"] < 20, a  # budget 3 s
