"""Inside the sandbox, with the tools folder's Python: mini-swe-agent's DefaultAgent on one task, as swecl asks.

Reads one JSON object on standard input: task, model, api_base, native_tools, config (a file of mini-swe-agent's
config/benchmarks), step_limit, wall_time, bash_timeout, output. The trajectory is mini-swe-agent's own, saved after
every step to `output`; swecl converts it. The model's key is the forwarder's business: the agent holds a placeholder."""

import json
import os
import sys
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no fetch of litellm's price table: there is no network
os.environ["MSWEA_COST_TRACKING"] = "ignore_errors"  # swecl prices the tokens itself

cfg = json.load(sys.stdin)

import yaml  # noqa: E402
from minisweagent import package_dir  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.models.litellm_model import LitellmModel  # noqa: E402
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel  # noqa: E402

conf = yaml.safe_load((Path(package_dir) / "config" / "benchmarks" / cfg["config"]).read_text())
agent_conf = conf["agent"] | {
    "step_limit": cfg["step_limit"],
    "cost_limit": 0,  # cost is swecl's to count
    "wall_time_limit_seconds": int(cfg["wall_time"]),
    "output_path": Path(cfg["output"]),
}
env_conf = {k: v for k, v in conf["environment"].items() if k in ("cwd", "env")} | {"timeout": int(cfg["bash_timeout"])}
model_cls = LitellmModel if cfg["native_tools"] else LitellmTextbasedModel
model_conf = {k: v for k, v in (conf.get("model") or {}).items() if k not in ("model_name", "model_class", "model_kwargs")}
model_kwargs = {"api_base": cfg["api_base"], "api_key": "swecl-forwarded"} | cfg.get("model_kwargs", {})
model = model_cls(model_name=f"openai/{cfg['model']}", model_kwargs=model_kwargs, cost_tracking="ignore_errors", **model_conf)
agent = DefaultAgent(model, LocalEnvironment(**env_conf), **agent_conf)
try:
    agent.run(cfg["task"])
except Exception as e:  # the trajectory holds it (handle_uncaught_exception); swecl reads the exit there
    print(f"mini-swe-agent ended with {type(e).__name__}: {str(e)[:500]}", file=sys.stderr)
