"""The tool memory condition end to end, with a model that is sure to use it: Claude Code and Codex (installed from npm)
in the mini task's bubblewrap sandbox, their model a scripted chat-completions server on the host that asks for
swecl's search_memory once, then ends its turn. Checked: the agent starts swecl's MCP server inside the sandbox, the
call reaches the host's memory, the experience comes back to the model as the tool's result (in the next request the
model gets), and the memory recorded exactly that call, so the attempt's `retrieved` and the leak check see it. Flagged
network (npm, once into swecl's tools folder) and slow."""

import http.server
import json
import threading

import pytest

from swecl.agent.agent import AgentConfig, read_trajectory
from swecl.agents.claude_code import run_claude_code
from swecl.agents.codex import run_codex
from swecl.base.schema import Experience
from swecl.memory.memory import HashingEmbedder, Memory, MemorySetting, MemoryStore
from swecl.models.models import make_model
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

EXPERIENCE = "Experience from an earlier task of this repository: the fix compared the width with >= instead of >."


class ScriptedChat(http.server.BaseHTTPRequestHandler):
    "A chat-completions server: asks for the offered search_memory tool until a tool's result is in the messages, then ends."

    requests = []

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ScriptedChat.requests.append(req)
        tools = [t["function"]["name"] for t in req.get("tools") or [] if t.get("type") == "function"]
        search = next((t for t in tools if t.endswith("search_memory")), None)
        answered = any(m.get("role") == "tool" for m in req["messages"])
        if search and not answered:
            call = {"id": "call_1", "type": "function", "function": {"name": search, "arguments": '{"query": "width"}'}}
            choice = {
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": "", "tool_calls": [call]},
            }
        else:
            choice = {"finish_reason": "stop", "message": {"role": "assistant", "content": "Done."}}
        body = json.dumps({"id": "c", "object": "chat.completion", "model": req.get("model"), "choices": [choice],
                           "usage": {"prompt_tokens": 100, "completion_tokens": 5}}).encode()  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


AGENT_RUNS = {"claude-code": run_claude_code, "codex": run_codex}  # the agents that take swecl's tools by MCP


def tool_memory(task, text: str = EXPERIENCE) -> Memory:
    "A tool-condition memory holding one experience of `task`'s repository (`text`), to be searched by the agent."
    store = MemoryStore(None, HashingEmbedder())
    store.add([Experience("old-1", task.repo, "wrap breaks a long word", summary=text, success=True)])
    return Memory(MemorySetting("tool"), store)


@pytest.fixture
def scripted():
    ScriptedChat.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"openai:http://127.0.0.1:{server.server_port}/v1:scripted-chat"
    server.shutdown()
    server.server_close()


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_an_external_agent_searches_swecl_memory_by_mcp(scripted, agent, tmp_path):
    mini = load_mini()
    task, sb = mini.task("swecl-mini__textkit-1"), LocalSandbox([mini.metadata["mirror"]])
    mem, traj, run = tool_memory(task), tmp_path / "t.jsonl", AGENT_RUNS[agent]
    with sb.open(task) as s:
        res = run(
            task, s, make_model(scripted), AgentConfig(max_steps=4, max_seconds=600), None, traj, [mem.tool(task)]
        )
    reqs = ScriptedChat.requests
    assert reqs and not any(EXPERIENCE in json.dumps(r["messages"][:2]) for r in reqs), "not in the prompt"
    results = [m for r in reqs for m in r["messages"] if m.get("role") == "tool"]
    assert results and EXPERIENCE in json.dumps(results[-1]), [m.get("content") for m in results]  # back to the model
    assert [[t for t, _ in hits] for hits in mem.tool_hits] == [["old-1"]], mem.tool_hits  # that call, recorded
    assert EXPERIENCE in mem.tool_texts[0]
    steps = [r for r in read_trajectory(traj) if r["type"] == "step"]
    called = [r for st in steps for r in st["results"] if r["tool"].endswith("search_memory")]
    assert len(called) == 1 and res.exit_reason in ("submitted", "step_limit"), (called, res.exit_reason, res.error)
    print(f"{agent}: {len(reqs)} model requests, search_memory called as {called[0]['tool']!r}, {res.exit_reason}")
