"""End-to-end: the agent loop in a separate process, killed mid-task, leaves a readable trajectory."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from swecl.agent.agent import read_trajectory


def test_killed_agent_leaves_a_readable_trajectory(tmp_path):
    traj = tmp_path / "traj.jsonl"
    code = textwrap.dedent(f"""
        import time
        from swecl.tasks.mini import load_mini
        from swecl.sandbox.sandbox import LocalSandbox
        from swecl.models.models import ScriptedModel, Reply
        from swecl.agent.agent import run_agent
        mini = load_mini(); t = mini.task('swecl-mini__textkit-1')
        def hang(messages):
            time.sleep(600); return Reply('never')
        steps = [{{'tool': 'bash', 'args': {{'command': 'echo step1'}}}}, {{'tool': 'open', 'args': {{'path': 'src/textkit/wrap.py'}}}}, hang]
        with LocalSandbox([mini.metadata['mirror']]).open(t) as s:
            run_agent(t, s, ScriptedModel({{'*': steps}}), trajectory={str(traj)!r})
    """)
    p = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if traj.exists() and sum(1 for _ in traj.open()) >= 3:
                break
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    recs = read_trajectory(traj)
    assert [r["type"] for r in recs] == ["start", "step", "step"]  # up to the last completed step, no end record
    assert recs[1]["results"][0]["output"].strip() == "step1"
    assert recs[2]["results"][0]["output"].startswith("[File: src/textkit/wrap.py")
    with traj.open("a") as f:
        f.write('{"type": "step", "step": 3, "tor')  # a torn line from a crash mid-write
    assert len(read_trajectory(traj)) == 3
