#!/usr/bin/env python
"""Record real replies of the local smoke model (SmolLM2-135M on llama.cpp's server, swecl.models.local_llm) into
swecl/data/local_llm/smollm2_responses.jsonl: the raw chat-completion bodies (or error bodies) the server sent, one per
line with the case it shows and how it was asked. The agent notebooks replay them (swecl.agent.replies, nbs/07_agent).

Usage: python scripts/record_local_llm.py [--url http://127.0.0.1:PORT/v1]   (without --url a server is started)
Needs the local-llm extra (make local-llm). At temperature 0 the same server build answers the same way."""

import argparse
import json
import sys
from pathlib import Path

import httpx

from swecl.agent.agent import AgentConfig, run_agent
from swecl.models.local_llm import LocalServer
from swecl.models.models import make_model
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

OUT = Path(__file__).resolve().parent.parent / "swecl" / "data" / "local_llm" / "smollm2_responses.jsonl"
TASK = "swecl-mini__minicalc-1"


def agent_run(base_url: str) -> list:
    "The raw bodies of an 8-step agent run on TASK (native tools, tool_choice auto: the smoke model's settings)."
    m, bodies = make_model(f"openai:{base_url}:smollm2"), []
    m.http = httpx.Client(timeout=600, event_hooks={"response": [lambda r: (r.read(), bodies.append(r.json()))]})
    mini = load_mini()
    task = mini.task(TASK)
    with LocalSandbox([mini.metadata["mirror"]]).open(task) as s:
        run_agent(task, s, m, AgentConfig(max_steps=8, max_consecutive_errors=100, max_repeats=100))
    how = f"agent step {{}} on {TASK}: native tools, tool_choice auto, max_tokens 512 (the smoke model's settings)"
    return [{"case": "agent_step", "how": how.format(i), "status": 200, "body": b} for i, b in enumerate(bodies, 1)]


def ask(base_url: str, case: str, how: str, messages: list, **kw) -> dict:
    body = {"model": "smollm2", "messages": messages, "max_tokens": 512, "temperature": 0.0} | kw
    r = httpx.post(f"{base_url}/chat/completions", json=body, timeout=600)
    return {"case": case, "how": how, "status": r.status_code, "body": r.json()}


def direct(base_url: str) -> list:
    "Single requests that show what the agent loop must survive."
    user = [{"role": "user", "content": "List the files in the repository."}]
    return [
        ask(base_url, "prose", "no tools offered: the model answers in prose with a code block", user),
        ask(
            base_url,
            "overlong",
            "no tools, max_tokens 40: the reply is cut (finish_reason length)",
            user,
            max_tokens=40,
        ),
        ask(
            base_url,
            "empty",
            'no tools, stop ["```"]: the reply starts with a fence, so nothing is left',
            user,
            stop=["```"],
        ),
        ask(
            base_url,
            "context_full",
            "a prompt longer than the 4096-token context: the server's 400",
            [{"role": "user", "content": "word " * 9000}],
        ),  # fmt: skip
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", help="a running server's base URL (default: start one)")
    a = p.parse_args()
    if a.url:
        rows = agent_run(a.url) + direct(a.url)
    else:
        with LocalServer() as srv:
            rows = agent_run(srv.base_url) + direct(srv.base_url)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    print(f"{len(rows)} responses -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
