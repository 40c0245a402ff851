"""Adversarial cases for memory honesty (issue 49). A RESOLVED attempt the grading flagged must never come back from
memory as a success; a re-test must not be handed its own fix by the experiences of tasks learned after it, and every
attempt must say whether its memory held a line of its gold patch. Everything is real: the FAISS store and the hashing
embedder, the mini benchmark graded in the sandbox, the scripted agent of swecl/data/scripts/mini.yaml (on minicalc-2
it opens stats.py, whose base commit already holds minicalc-1's fix), and `swecl metrics` as a user runs it."""

import json
import subprocess

import pytest

faiss = pytest.importorskip("faiss")  # the memory extra

from swecl.base.core import package_file, read_jsonl  # noqa: E402
from swecl.memory.experience import experience_from_attempt  # noqa: E402
from swecl.memory.leakage import gold_lines  # noqa: E402
from swecl.memory.memory import HashingEmbedder, Memory, MemorySetting, MemoryStore  # noqa: E402
from swecl.runs.plans import Cell  # noqa: E402
from swecl.runs.runner import run_cell  # noqa: E402
from swecl.sandbox.sandbox import LocalSandbox  # noqa: E402
from swecl.tasks.mini import load_mini  # noqa: E402

SCRIPT = package_file("scripts", "mini.yaml")
MINICALC = "swecl-mini_minicalc_sequence"
FLAG = "conftest.py: the patch adds a conftest that makes every collected test pass"
MEAN_FIX = "raise ValueError('mean requires at least one data point')"  # minicalc-1's gold line


def minicalc() -> dict:
    return {t.instance_id.rsplit("-", 1)[1]: t for s in load_mini().sequences if s.id == MINICALC for t in s.tasks}


def record(task, resolved: bool, suspicious=()) -> dict:
    "A first attempt's record as the runner writes it: the fields an experience is made from."
    return {
        "instance_id": task.instance_id, "kind": "first", "j": 1, "resolved": resolved, "f2p_resolved": resolved,
        "patch": task.patch, "suspicious": list(suspicious), "tool_counts": {}, "usage": {}, "seconds": 1.0,
    }  # fmt: skip


def test_a_flagged_success_is_never_retrieved_or_shown_as_one(tmp_path):
    t = minicalc()
    store = MemoryStore(tmp_path / "m", HashingEmbedder())
    store.add([experience_from_attempt(t["1"], record(t["1"], True, [FLAG]), MINICALC, 1)])  # steered its tests
    store.add([experience_from_attempt(t["2"], record(t["2"], True), MINICALC, 2)])  # an honest success
    store = MemoryStore(tmp_path / "m", HashingEmbedder())  # what a resumed run reads back from disk
    asked = t["3"]  # mode([]): worded like mean([]), so the flagged one is the closer match
    ok_only = Memory(MemorySetting("auto", k=5, successful_only=True), store)
    assert [i for i, _ in ok_only.context_for(asked, (), MINICALC)[1]] == [t["2"].instance_id]
    found = Memory(MemorySetting("tool", successful_only=True), store).tool(asked).fn(query=asked.problem_statement)
    assert t["1"].instance_id not in found.output and t["2"].instance_id in found.output
    ctx, ids = Memory(MemorySetting("auto", k=5), store).context_for(asked, (), MINICALC)  # no filter: shown, flagged
    assert sorted(i for i, _ in ids) == [t["1"].instance_id, t["2"].instance_id], ids
    entry = next(e for e in ctx.split("### ")[1:] if e.startswith(t["1"].instance_id))
    assert entry.startswith(f"{t['1'].instance_id} (swecl-mini/minicalc) — FLAGGED"), entry
    assert "— RESOLVED" not in entry and "Final patch" not in entry and MEAN_FIX not in entry, entry
    assert "Outcome: flagged by the grading" in entry  # its summary does not call it resolved either


def prompt_text(cell_dir, attempt: dict) -> str:
    "The first user message the agent was given (memory context and task), from the attempt's trajectory."
    start = next(r for r in read_jsonl(cell_dir / attempt["trajectory"], "tail") if r["type"] == "start")
    return "\n".join(p["text"] for p in start["prompt"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    "All five minicalc tasks, `final` re-tests, trajectories as the memory: one cell per re-test policy."
    out, mini = tmp_path_factory.mktemp("results"), load_mini()
    sandbox, cells = LocalSandbox([mini.metadata["mirror"]]), {}
    for policy in ("leak-free", "strip", "paper"):
        more = {} if policy == "leak-free" else {"retest_memory": policy}  # the default is what a plan gets
        c = Cell("honest", "mini", MINICALC, f"scripted:{SCRIPT}", "auto", "trajectory", **more)
        summary = run_cell(c, out, progress=False, sandbox=sandbox, bench=mini)
        cells[policy] = (c, out / "honest" / c.id, read_jsonl(out / "honest" / c.id / "attempts.jsonl"))
        assert summary["attempts"] == 9, summary  # 5 first attempts, 4 re-tests after the last
    return out, cells


def held(task, text: str) -> list:
    "The non-trivial lines the task's gold patch adds that `text` holds (white space runs as one space)."
    flat = " ".join(text.split())
    return [x for x in gold_lines(task.patch) if " ".join(x.split()) in flat]


def test_b_default_retests_never_see_their_fix(runs):
    _, cells = runs
    c, folder, rows = cells["leak-free"]
    tasks = {t.instance_id: t for t in minicalc().values()}
    later = {k: {f"swecl-mini__minicalc-{n}" for n in range(k + 1, 6)} for k in range(1, 6)}
    retests = [r for r in rows if r["kind"] == "retest"]
    assert [r["j"] for r in retests] == [1, 2, 3, 4]
    for r in retests:
        assert held(tasks[r["instance_id"]], prompt_text(folder, r)) == [], r["instance_id"]  # the prompt itself
        assert not {i for i, _ in r["retrieved"]} & later[r["j"]], r["retrieved"]
        assert r["memory_leak"]["lines"] == 0 and r["retest_memory"] == "leak-free", r
    assert all(isinstance(r["memory_leak"], dict) for r in rows)  # every attempt is checked, first ones too
    assert c.id.endswith("__s0")


def test_b_paper_retests_leak_and_are_counted(runs):
    _, cells = runs
    c, folder, rows = cells["paper"]
    assert c.id.endswith("__retest-paper")  # named as the leaking policy wherever the cell appears
    r1 = next(r for r in rows if r["kind"] == "retest" and r["j"] == 1)
    assert "swecl-mini__minicalc-2" in [i for i, _ in r1["retrieved"]]
    assert held(minicalc()["1"], prompt_text(folder, r1)) == [MEAN_FIX]  # minicalc-2's view of stats.py
    assert r1["memory_leak"] == {"lines": 1, "of": 1, "example": MEAN_FIX}
    assert sum(r["memory_leak"]["lines"] > 0 for r in rows if r["kind"] == "retest") >= 1
    _, sfolder, srows = cells["strip"]
    s1 = next(r for r in srows if r["kind"] == "retest" and r["j"] == 1)
    assert "swecl-mini__minicalc-2" in [i for i, _ in s1["retrieved"]]  # shown, without its file views
    assert held(minicalc()["1"], prompt_text(sfolder, s1)) == [] and s1["memory_leak"]["lines"] == 0
    first = lambda rs: [(r["j"], r["resolved"], r["retrieved"], r["memory_leak"]) for r in rs if r["kind"] == "first"]
    assert first(rows) == first(cells["leak-free"][2]) == first(srows)  # the policy is the re-tests' only


def test_b_swecl_metrics_counts_leaked_retests(runs, tmp_path, swecl_bin):
    out, cells = runs
    js = tmp_path / "m.json"
    r = subprocess.run(
        [swecl_bin, "metrics", "--attempts", str(out / "honest"), "--n-resamples", "50", "--json", str(js)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "retests_leaked" in r.stdout and "F_leak_free" in r.stdout
    rows = {(x["cell"], x["metric"]): x for x in json.loads(js.read_text())["rows"]}
    paper, default = cells["paper"][0].id, cells["leak-free"][0].id
    assert rows[paper, "retests_leaked"]["estimate"] >= 1 and rows[paper, "retests_leaked"]["n"] == 4
    assert (rows[default, "retests_leaked"]["estimate"], rows[default, "retests_leaked"]["n"]) == (0, 4)
    leaked = int(rows[paper, "retests_leaked"]["estimate"])
    assert rows[paper, "F_leak_free"]["n"] == 4 - leaked and rows[default, "F_leak_free"]["n"] == 4
    assert rows[default, "F_leak_free"]["estimate"] == rows[default, "F"]["estimate"]  # nothing left out
