"""Adversarial cases for the runner (issue 16): a model that cannot be used is never a verdict, append-only files are
repaired without loss, resume refuses changed inputs, workers die with their parent, and plans cannot escape --out or
crash with a traceback. Real parts only: real local TCP ports and HTTP servers, the real OpenAI-compatible client, real
git repos and the local sandbox, real `swecl` processes."""

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run
from filelock import FileLock

from swecl.base.core import read_jsonl
from swecl.cli.app import main
from swecl.memory.memory import HashingEmbedder, MemoryStore
from swecl.models.model_base import ScriptedModel
from swecl.models.models import make_model
from swecl.runs.plans import Cell, RunError
from swecl.runs.runner import run_cell
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

SCRIPT = ROOT / "swecl" / "data" / "scripts" / "mini.yaml"
SEQ = "swecl-mini_textkit_sequence"


@pytest.fixture(scope="module")
def mini():
    return load_mini()


@pytest.fixture(scope="module")
def sb(mini):
    return LocalSandbox([mini.metadata["mirror"]])


def closed_port() -> int:
    "A local TCP port where nothing listens (connections are refused)."
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SUBMIT = {
    "choices": [
        {
            "message": {
                "content": "",
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "submit", "arguments": "{}"}}],
            },
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 2},
}


class Server:
    "A real OpenAI-compatible HTTP server on a local port; `answer(n)` gives (status, body) of the n-th request (1-based)."

    def __init__(self, answer):
        outer, self.n = self, 0

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.n += 1
                status, body = answer(outer.n)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def cell(out_model: str, **kw) -> Cell:
    return Cell(**({"experiment": "adv", "dataset": "mini", "sequence_id": SEQ, "model": out_model, "max_tasks": 3,
                    "schedule": "sequential"} | kw))  # fmt: skip


# --- Infrastructure is never a verdict ---------------------------------------------------------------------------------

ERR = {"error": {"message": "nope"}}


@pytest.mark.parametrize(
    "kind, answer, shows",
    [
        ("refused", None, "ConnectError"),
        ("auth", lambda n: (401, ERR), "HTTP 401"),
        ("quota", lambda n: (429, ERR), "HTTP 429"),
        ("5xx", lambda n: (503, ERR), "HTTP 503"),
    ],
)
def test_unusable_model_stops_the_cell(kind, answer, shows, tmp_path, mini, sb):
    srv = Server(answer) if answer else None
    url = srv.url if srv else f"http://127.0.0.1:{closed_port()}/v1"
    try:
        c = cell(f"openai:{url}:m", memory="auto")
        model = make_model(c.spec, retries=1, backoff=0.01)
        with pytest.raises(RunError) as e:
            run_cell(c, tmp_path, False, model, sb, mini)
    finally:
        if srv:
            srv.close()
    msg = str(e.value)
    assert f"stopped after 3 attempts in a row could not use the model openai:{url}:m" in msg and shows in msg
    assert msg.count("\n") == 0
    folder = tmp_path / "adv" / c.id
    rows = read_jsonl(folder / "attempts.jsonl")
    assert [(r["exit_reason"], r["infra_reason"]) for r in rows] == [("model_error", "model-error")] * 3
    assert read_jsonl(folder / "predictions.jsonl") == []  # no verdict reached, so no prediction
    assert len(MemoryStore(folder / "memory", HashingEmbedder()).records) == 0  # and no experience


def test_isolated_model_errors_do_not_stop_and_are_redone(tmp_path, mini, sb):
    # requests 1, 2 and 4, 5 fail (503), the others submit: at most 2 model errors in a row, so the cell runs through
    srv = Server(lambda n: (503, ERR) if n in (1, 2, 4, 5) else (200, SUBMIT))
    try:
        c = cell(f"openai:{srv.url}:m", max_tasks=5)
        s = run_cell(c, tmp_path, False, make_model(c.spec, retries=0), sb, mini)
    finally:
        srv.close()
    assert (s["attempts"], s["model_errors"], s["new"]) == (1, 4, 5)
    rows = read_jsonl(Path(s["dir"]) / "attempts.jsonl")
    assert [r["infra_reason"] for r in rows] == ["model-error", "model-error", None, "model-error", "model-error"]
    preds = read_jsonl(Path(s["dir"]) / "predictions.jsonl")
    assert [p["instance_id"] for p in preds] == ["swecl-mini__textkit-3"]
    # the server is back (here: a scripted model): a resume redoes exactly the four model errors
    again = run_cell(c, tmp_path, False, ScriptedModel(yaml.safe_load(SCRIPT.read_text())), sb, mini)
    assert (again["new"], again["attempts"], again["model_errors"]) == (4, 5, 4)
    preds = read_jsonl(Path(s["dir"]) / "predictions.jsonl")
    assert sorted(p["instance_id"] for p in preds) == [f"swecl-mini__textkit-{i}" for i in range(1, 6)]


def test_swecl_run_with_a_down_server_is_refused_before_the_estimate(swecl_bin, tmp_path):
    # a server that is down at the start: one sentence and exit 2, before the estimate and before any folder
    plan = tmp_path / "p.yaml"
    plan.write_text(yaml.safe_dump({"experiment": "down", "dataset": "mini", "models": ["configured"],
                                    "sequences": [SEQ], "max_tasks": 3, "schedule": "sequential"}))  # fmt: skip
    env = os.environ | {"SWECL_MODEL": f"openai:http://127.0.0.1:{closed_port()}/v1:m"}
    env.pop("ANTHROPIC_API_KEY", None)
    r = run(swecl_bin, "run", "--plan", str(plan), "--out", str(tmp_path / "res"), env=env)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stdout == "" and "does not answer at http://127.0.0.1:" in r.stderr, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "res").exists(), r.stderr


# --- Append-only files are repaired without loss -----------------------------------------------------------------------


def scripted_run(tmp_path, mini, sb, max_tasks=5):
    c = cell("scripted", max_tasks=max_tasks)
    return c, run_cell(c, tmp_path, False, ScriptedModel(yaml.safe_load(SCRIPT.read_text())), sb, mini)


def test_corrupt_middle_attempt_line_keeps_every_valid_record(tmp_path, mini, sb):
    c, s = scripted_run(tmp_path, mini, sb)
    folder = Path(s["dir"])
    lines = (folder / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 5
    lines[1] = lines[1][: len(lines[1]) // 2]  # the second of five records is corrupt
    (folder / "attempts.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.warns(UserWarning, match="line\\(s\\) 2 were corrupt"):
        again = run_cell(c, tmp_path, False, ScriptedModel(yaml.safe_load(SCRIPT.read_text())), sb, mini)
    assert (again["new"], again["attempts"]) == (1, 5)  # only the lost attempt was redone
    rows = read_jsonl(folder / "attempts.jsonl")
    assert [r["j"] for r in rows] == [1, 3, 4, 5, 2]  # the 3 records after the bad line are all kept
    preds = read_jsonl(folder / "predictions.jsonl")
    assert sorted(p["instance_id"] for p in preds) == [f"swecl-mini__textkit-{i}" for i in range(1, 6)]  # no duplicate
    assert {p["instance_id"]: p["model_patch"] for p in preds} == {r["instance_id"]: r["patch"] for r in rows}


def test_corrupt_or_missing_predictions_are_rebuilt_from_the_attempts(tmp_path, mini, sb):
    c, s = scripted_run(tmp_path, mini, sb, max_tasks=3)
    folder = Path(s["dir"])
    good = (folder / "predictions.jsonl").read_text()
    (folder / "predictions.jsonl").write_text(good.splitlines()[0] + "\n" + '{"instance_id": "swecl-mini__tex\n')
    with pytest.warns(UserWarning):
        again = run_cell(c, tmp_path, False, ScriptedModel({}), sb, mini)
    assert again["new"] == 0 and (folder / "predictions.jsonl").read_text() == good
    assert "swecl-mini__tex" in (folder / "predictions.jsonl.quarantine").read_text()  # the bad line is kept aside
    (folder / "predictions.jsonl").unlink()  # a crash between the attempt and its prediction
    with pytest.warns(UserWarning, match="rebuilt from the attempts: 3 predictions"):
        run_cell(c, tmp_path, False, ScriptedModel({}), sb, mini)
    assert (folder / "predictions.jsonl").read_text() == good


def test_resume_refuses_an_edited_scripted_file(tmp_path, mini, sb):
    script = tmp_path / "agent.yaml"
    script.write_text(SCRIPT.read_text())
    c = cell(f"scripted:{script}", max_tasks=1)
    s = run_cell(c, tmp_path / "res", False, None, sb, mini)
    before = (Path(s["dir"]) / "attempts.jsonl").read_text()
    script.write_text(SCRIPT.read_text().replace("def truncate", "def wrap"))
    with pytest.raises(RunError, match="was run with a model file of sha256 .*, but the model file is now"):
        run_cell(c, tmp_path / "res", False, None, sb, mini)
    assert (Path(s["dir"]) / "attempts.jsonl").read_text() == before
    script.write_text(SCRIPT.read_text())  # restored: resumes
    assert run_cell(c, tmp_path / "res", False, None, sb, mini)["new"] == 0


def test_resume_refuses_an_edited_replay_file(tmp_path, mini, sb):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "swecl-mini__textkit-1", "model_patch": ""}) + "\n")
    c = cell(f"replay:{preds}", max_tasks=1)
    run_cell(c, tmp_path / "res", False, None, sb, mini)
    preds.write_text(json.dumps({"instance_id": "swecl-mini__textkit-1", "model_patch": "diff --git a/x b/x\n"}) + "\n")
    with pytest.raises(RunError, match="model file of sha256"):
        run_cell(c, tmp_path / "res", False, None, sb, mini)


def test_resume_refuses_a_changed_dataset(tmp_path, mini, sb):
    c, s = scripted_run(tmp_path, mini, sb, max_tasks=1)
    changed = copy.copy(mini)
    changed.sha256 = "0" * 64
    with pytest.raises(
        RunError, match=f"a dataset of sha256 {mini.sha256[:12]}…, but the dataset is now 000000000000…"
    ):
        run_cell(c, tmp_path, False, ScriptedModel({}), sb, changed)
    assert len(read_jsonl(Path(s["dir"]) / "attempts.jsonl")) == 1


# --- Workers die with their parent -------------------------------------------------------------------------------------


def proc_children() -> dict:
    "pid -> (ppid, state, cmdline) of every process."
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text().rsplit(")", 1)[1].split()
                out[int(p.name)] = (int(stat[1]), stat[0], (p / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return out


def alive(pid: int) -> bool:
    "Whether any thread of `pid` is still running (a zombie leader may wait for its other threads to exit)."
    states = []
    for t in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            states.append(t.read_text().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread exited between the listing and the read
            pass
    return any(st not in ("Z", "X") for st in states)


def descendants(root: int) -> set:
    procs, found, frontier = proc_children(), set(), {root}
    while frontier:
        frontier = {pid for pid, (ppid, _, _) in procs.items() if ppid in frontier} - found
        found |= frontier
    return found


def kill_and_wait(parent: subprocess.Popen, children: list) -> float:
    "Kill `parent` with -9; the seconds until every one of `children` is gone (10 at most, then still alive)."
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    t1 = time.time()
    while time.time() - t1 < 10 and any(alive(w) for w in children):
        time.sleep(0.1)
    return time.time() - t1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_grading_workers_die_with_a_killed_validate(swecl_bin, tmp_path):
    "`swecl validate --workers 2` killed with -9: its worker processes (and their queue's manager) go with it."
    parent = subprocess.Popen([swecl_bin, "validate", "--dataset", "mini", "--workers", "2", "--no-cache", "--logs", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    leftovers = set()
    try:
        t0, spawned = time.time(), []
        while time.time() - t0 < 120 and len(spawned) < 3 and parent.poll() is None:
            procs = proc_children()
            leftovers = descendants(parent.pid)
            spawned = [p for p in leftovers if "spawn_main" in procs.get(p, (0, "", ""))[2]]
            time.sleep(0.1)
        assert len(spawned) == 3, "the two workers and the manager did not start"
        took = kill_and_wait(parent, spawned)
        assert not any(alive(w) for w in spawned), "grading workers outlived their parent"
        assert took < 5
    finally:
        for pid in descendants(parent.pid) | leftovers | {parent.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(swecl_bin, tmp_path):
    slow = [{"tool": "bash", "args": {"command": "sleep 20"}}, {"tool": "submit", "args": {}}]
    script = tmp_path / "slow.yaml"
    script.write_text(yaml.safe_dump({"swecl-mini__textkit-1": slow, "swecl-mini__minicalc-1": slow}))
    plan = tmp_path / "p.yaml"
    plan.write_text(yaml.safe_dump({"experiment": "kill", "dataset": "mini", "models": [f"scripted:{script}"],
                                    "max_tasks": 1, "schedule": "sequential"}))  # fmt: skip
    out = tmp_path / "res"
    parent = subprocess.Popen([swecl_bin, "run", "--plan", str(plan), "--out", str(out), "--workers", "2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    leftovers = set()
    try:
        t0 = time.time()
        while time.time() - t0 < 180 and len(list(out.glob("kill/*/trajectories/first-i1-j1-s0.jsonl"))) < 2:
            time.sleep(0.2)
        time.sleep(1)  # both workers are inside their first attempt (the sleep), holding their cells' locks
        cells = sorted(p.parent.parent for p in out.glob("kill/*/trajectories/first-i1-j1-s0.jsonl"))
        assert len(cells) == 2, "the workers did not start"
        procs = proc_children()
        leftovers = descendants(parent.pid)
        workers = [p for p in leftovers if "spawn_main" in procs.get(p, (0, "", ""))[2]]
        assert len(workers) == 2
        took = kill_and_wait(parent, workers)
        assert not any(alive(w) for w in workers), "workers outlived their parent"
        assert took < 5
        for d in cells:
            lock = FileLock(str(d / ".lock"))
            lock.acquire(timeout=5)  # free within seconds: no orphan holds it
            lock.release()
            assert not (d / "attempts.jsonl").exists() or read_jsonl(d / "attempts.jsonl") == []
    finally:
        for pid in leftovers | {parent.pid}:  # the processes this test started (the sandboxed sleeps among them)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --- Safe paths and plan validation ------------------------------------------------------------------------------------

BASE = {"experiment": "ok", "dataset": "mini", "models": ["scripted"]}
BAD_PLANS = {
    "escape": (BASE | {"experiment": "../../.."}, "experiment '../../..' cannot be a folder name"),
    "nested": (BASE | {"experiment": "a/b"}, "cannot be a folder name"),
    "absolute": (BASE | {"experiment": "/tmp/x"}, "cannot be a folder name"),
    "too long": (BASE | {"experiment": "x" * 300}, "cannot be a folder name"),
    "top-level list": ([BASE], "must be a mapping of keys to values, not a list"),
    "models: 5": (BASE | {"models": 5}, "models must be a non-empty list of model strings, not 5"),
    "unknown condition": (BASE | {"conditions": [{"memory": "magic"}]}, "Unknown memory setting 'magic'"),
    "condition string": (BASE | {"conditions": ["auto"]}, "mappings like {memory: auto"),
    "seeds: abc": (BASE | {"seeds": "abc"}, "seeds must be a non-empty list of integers ≥ 0, not 'abc'"),
    "negative steps": (BASE | {"budget": {"max_steps": -1}}, "budget.max_steps must be an integer ≥ 1, not -1"),
    "negative cost": (BASE | {"budget": {"max_cost": -1.0}}, "budget.max_cost must be a number > 0, not -1.0"),
    "negative seconds": (BASE | {"budget": {"max_seconds": -5}}, "budget.max_seconds must be a number > 0"),
    "n_samples 0": (BASE | {"n_samples": 0}, "n_samples must be an integer ≥ 1, not 0"),
    "bad schedule": (BASE | {"schedule": "weekly"}, "Unknown schedule 'weekly'"),
    "bad model": (BASE | {"models": ["gpt4"]}, "Unknown model 'gpt4'"),
}


@pytest.mark.parametrize("name", list(BAD_PLANS))
def test_bad_plan_is_one_sentence_and_exit_2(name, tmp_path, capsys):
    plan, msg = BAD_PLANS[name]
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(plan))
    code = main(["run", "--plan", str(p), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and err.strip().count("\n") == 0, err
    assert not (tmp_path / "out").exists()  # refused before anything is written
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.yaml"]


def test_malformed_yaml_through_the_real_binary(swecl_bin, tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("experiment: [x\ndataset: mini\n")
    r = run(swecl_bin, "run", "--plan", str(p), "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"swecl run: Plan {p} is not valid YAML (line 2): expected ',' or ']', but got ':'."
