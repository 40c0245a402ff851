"""The agents researchers study, end to end against a real model with no key (issue #51): SmolLM2-135M on llama.cpp's
OpenAI-compatible server on 127.0.0.1 (the local-llm extra, `make local-llm`), mini-swe-agent installed from PyPI into
swecl's tools folder and run in the mini task's bubblewrap sandbox, its model reached only through swecl's forwarder.
Flagged llm and slow. A 135M model solves nothing: what is checked is that the model is called, commands run in the
sandbox, the trajectory and tokens are recorded, the diff is graded, and the memory's experience is in the prompt."""

import json
import sys

import pytest
from conftest import ROOT, run
from test_agents_mcp import AGENT_RUNS, tool_memory

from swecl.agent.agent import AgentConfig, read_trajectory
from swecl.agents.claude_code import CLAUDE_CODE, run_claude_code
from swecl.agents.codex import CODEX, run_codex
from swecl.agents.mini_swe_agent import run_mini_swe_agent
from swecl.agents.tool_service import SERVER_NAME
from swecl.grading.grading import grade
from swecl.models.local_llm import LocalServer, missing_packages
from swecl.models.models import make_model
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

# llama.cpp's grammar holds SmolLM2 to mini-swe-agent's reply format (one fenced command); the command it picks,
# and its thought, are the model's own
FORMAT = r'''root ::= "THOUGHT: " [a-zA-Z ,.]{3,60} "\n\n```mswea_bash_command\n" cmd "\n```"
cmd ::= "ls src/textkit" | "git status" | "cat src/textkit/wrap.py" | "grep -n def src/textkit/wrap.py" | "echo '# seen' >> src/textkit/wrap.py"'''
EXPERIENCE = "Experience from an earlier task of this repository: the fix compared the width with >= instead of >."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if missing_packages():
        pytest.fail(f"the local-llm extra is not installed (missing {missing_packages()}); run make local-llm once")
    # Claude Code's system prompt and tools are about 4700 tokens, and each step adds its output
    with LocalServer(port=0, log=tmp_path_factory.mktemp("llm") / "server.log", n_ctx=16384) as s:
        yield s


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("memory", [None, EXPERIENCE])
def test_mini_swe_agent_runs_in_the_sandbox_against_the_local_model(server, memory, tmp_path):
    mini = load_mini()
    task, sb = mini.task("swecl-mini__textkit-1"), LocalSandbox([mini.metadata["mirror"]])
    model = make_model(server.model)
    model.native_tools = False  # SmolLM2 makes no tool calls: mini-swe-agent's fenced-command configuration
    traj = tmp_path / "t.jsonl"
    with sb.open(task) as s:
        res = run_mini_swe_agent(task, s, model, AgentConfig(max_steps=3, max_seconds=600), memory, traj,
                                 model_kwargs={"grammar": FORMAT})  # fmt: skip
    recs = read_trajectory(traj)
    start, steps, end = recs[0], [r for r in recs if r["type"] == "step"], recs[-1]
    assert (start["agent"], start["agent_version"], end["type"]) == ("mini-swe-agent", "2.4.6", "end"), start
    prompt = start["prompt"][0]["text"]
    assert (
        task.problem_statement.strip()[:60] in prompt
        and ((memory or "") in prompt)
        and (memory is None) != (EXPERIENCE in prompt)
    )
    assert res.steps == len(steps) == 3 and res.exit_reason == "step_limit", (res, end.get("agent_log"))
    ran = [r for st in steps for r in st["results"] if r["tool"] == "bash"]
    assert ran and all("<returncode>0</returncode>" in r["output"] for r in ran), ran  # run in the sandbox, answered
    assert res.usage.input > 0 and res.usage.output > 0 and res.cost == 0.0  # a local server is free
    g = grade(task, res.patch, sb)  # graded as every attempt is
    assert g.error is None and g.f2p_total == len(task.FAIL_TO_PASS) and not g.resolved, g
    print(
        f"mini-swe-agent, memory={'yes' if memory else 'no'}: {res.steps} calls, {res.usage}, {res.seconds:.0f} s, "
        f"commands {[r['arguments']['command'] for r in ran]}, patch {len(res.patch)} bytes, resolved {g.resolved}"
    )


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("channel,memory", [("prompt", None), ("prompt", EXPERIENCE), ("claude-md", EXPERIENCE)])
def test_claude_code_runs_in_the_sandbox_against_the_local_model(server, channel, memory, tmp_path):
    "Claude Code through the forwarder and the Messages bridge: called, its Bash run in the sandbox, recorded, graded."
    mini = load_mini()
    task, sb = mini.task("swecl-mini__textkit-1"), LocalSandbox([mini.metadata["mirror"]])
    model, traj = make_model(server.model), tmp_path / "t.jsonl"
    with sb.open(task) as s:
        res = run_claude_code(task, s, model, AgentConfig(max_steps=3, max_seconds=900), memory, traj, channel=channel)
    recs = read_trajectory(traj)
    start, steps, end = recs[0], [r for r in recs if r["type"] == "step"], recs[-1]
    assert (start["agent"], start["agent_version"], end["type"]) == (CLAUDE_CODE.name, CLAUDE_CODE.version, "end")
    assert "Claude" in start["system"] and "Bash" in start["tools"], start  # its own system prompt and tools
    given = start["model_message"] or ""  # the first message as the model got it
    assert task.problem_statement.strip()[:60] in given, given[:2000]
    assert (EXPERIENCE in given) == (memory is not None), given[:2000]
    if channel == "claude-md":  # Claude Code read the file itself and showed it as project instructions
        assert "/swecl-memory/CLAUDE.md" in given and start["prompt"][0]["channel"] == "/swecl-memory/CLAUDE.md"
    assert res.steps == len(steps) == 3 and res.exit_reason == "step_limit", (res, end.get("agent_log"))
    ran = [r for st in steps for r in st["results"] if r["tool"] == "Bash"]
    assert ran and all(r["output"].strip() for r in ran), ran  # run in the sandbox, answered
    assert res.usage.input > 0 and res.usage.output > 0 and res.cost == 0.0
    g = grade(task, res.patch, sb)
    assert g.error is None and g.f2p_total == len(task.FAIL_TO_PASS) and not g.resolved, g
    print(
        f"claude-code, channel={channel}, memory={'yes' if memory else 'no'}: {res.steps} calls, {res.usage}, "
        f"{res.seconds:.0f} s, commands {[r['arguments'].get('command') for r in ran]}, patch {len(res.patch)} bytes"
    )


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("agent,package", [("mini-swe-agent", "pypi:mini-swe-agent==2.4.6"),
                                           ("claude-code", f"npm:{CLAUDE_CODE.name}=={CLAUDE_CODE.version}"),
                                           ("codex", f"npm:{CODEX.name}=={CODEX.version}")])  # fmt: skip
def test_swecl_run_with_an_external_agent(tmp_path, swecl_bin, agent, package):
    "The runner's path: `swecl run --agent AGENT` on the mini task, both memory conditions, recorded and graded."
    if missing_packages():
        pytest.fail(f"the local-llm extra is not installed (missing {missing_packages()}); run make local-llm once")
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "swecl.models.local_llm", "run", "--port", "0", "--log", str(tmp_path / "s.log"),
           "--n-ctx", "16384", "--", swecl_bin, "run", "--model", "{model}", "--agent", agent, "--dataset", "mini", "--sequences",
           "textkit", "--max-tasks", "2", "--conditions", "none,auto-summary", "--seeds", "0", "--schedule", "sequential",
           "--max-steps", "3", "--out", str(out)]  # fmt: skip
    p = run(*cmd, cwd=ROOT, timeout=2400)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    cells = sorted(out.glob("*/*/attempts.jsonl"))
    assert [c.parent.name.split("__")[1].split(".")[0] for c in cells] == [agent] * 2, cells
    for att in cells:
        recs = [json.loads(line) for line in att.read_text().splitlines() if line.strip()]
        assert len(recs) == 2 and {r["agent"] for r in recs} == {agent}
        for r in recs:  # the model answered: a verdict on the agent, with tokens, graded
            assert r["infra_reason"] is None and r["steps"] >= 1 and r["usage"]["input"] > 0, r
            assert r["f2p_total"] > 0 and r["resolved"] is False, r
        manifest = json.loads((att.parent / "manifest.json").read_text())
        assert manifest["agent_package"] == package, manifest


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("channel,memory", [("prompt", None), ("agents-md", EXPERIENCE)])
def test_codex_runs_in_the_sandbox_against_the_local_model(server, channel, memory, tmp_path):
    "Codex through the forwarder and the Responses bridge: called, its commands run in the sandbox, recorded, graded."
    mini = load_mini()
    task, sb = mini.task("swecl-mini__textkit-1"), LocalSandbox([mini.metadata["mirror"]])
    model, traj = make_model(server.model), tmp_path / "t.jsonl"
    with sb.open(task) as s:
        res = run_codex(task, s, model, AgentConfig(max_steps=3, max_seconds=900), memory, traj, channel=channel)
    recs = read_trajectory(traj)
    start, end = recs[0], recs[-1]
    assert (start["agent"], start["agent_version"], end["type"]) == (CODEX.name, CODEX.version, "end")
    assert "Codex" in start["system"], start["system"][:500]  # its own instructions
    given = start["model_message"] or ""  # the user messages of its first request, as the model got them
    assert task.problem_statement.strip()[:60] in given, given[:2000]
    assert (EXPERIENCE in given) == (memory is not None), given[:3000]
    # the host's count: three answered calls, then the forwarder refuses and Codex fails its turn; or it answered sooner
    assert (res.exit_reason, res.steps) == ("step_limit", 3) or (res.exit_reason == "submitted" and 1 <= res.steps <= 3), (
        res, end.get("agent_log"))  # fmt: skip
    assert res.usage.input > 0 and res.usage.output > 0 and res.cost == 0.0
    g = grade(task, res.patch, sb)
    assert g.error is None and g.f2p_total == len(task.FAIL_TO_PASS) and not g.resolved, g
    ran = [r for st in recs if st["type"] == "step" for r in st["results"]]
    print(
        f"codex, channel={channel}, memory={'yes' if memory else 'no'}: {res.exit_reason}, {res.steps} calls, "
        f"{res.usage}, {res.seconds:.0f} s, ran {[r['arguments'].get('command') for r in ran]}, patch {len(res.patch)} bytes"
    )


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_the_memory_tool_reaches_an_external_agent_by_mcp(server, agent, tmp_path):
    """The tool condition: the agent starts swecl's MCP server in the sandbox, the model is offered search_memory, the
    experience is not in the prompt, and every call the agent made is one the memory recorded."""
    mini = load_mini()
    task, sb = mini.task("swecl-mini__textkit-1"), LocalSandbox([mini.metadata["mirror"]])
    mem, traj, run_agent_ = tool_memory(task, EXPERIENCE), tmp_path / "t.jsonl", AGENT_RUNS[agent]
    with sb.open(task) as s:
        res = run_agent_(task, s, make_model(server.model), AgentConfig(max_steps=3, max_seconds=900), None, traj,
                         [mem.tool(task)])  # fmt: skip
    recs = read_trajectory(traj)
    start, steps = recs[0], [r for r in recs if r["type"] == "step"]
    offered = [t for t in start["tools"] or [] if t.endswith("search_memory")]  # Claude's init line; Codex's request
    assert offered and SERVER_NAME in offered[0], start["tools"]
    assert EXPERIENCE not in (start["model_message"] or "") and res.usage.input > 0, start["model_message"]
    called = [r for st in steps for r in st["results"] if r["tool"].endswith("search_memory")]
    assert len(called) == len(mem.tool_hits), (called, mem.tool_hits)  # each call the agent made, recorded
    g = grade(task, res.patch, sb)
    assert g.error is None and not g.resolved, g
    print(f"{agent}, memory tool: offered {offered}, {len(called)} calls of it, {res.exit_reason}, {res.steps} model "
          f"calls, {res.usage}, {res.seconds:.0f} s")  # fmt: skip
