#!/usr/bin/env python
"""What a session's own layer of the env costs a grading: the median milliseconds an install over a patched tree takes
in the session's layer (mount, the install, `env_writes`, the layer's findings, dropping written bytecode, unmount)
beyond the same install written straight into the env, as every grading's install was before (#49).

Usage: python scripts/bench_env_layer.py [--repeat 10]
The env is a copy of the mini benchmark's venv; its install step writes an editable install's files (a .pth, a finder,
dist-info metadata, bytecode) into site-packages, as `pip install -e .` does, so the layer has real writes to judge.
"""

import argparse
import dataclasses
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from swecl.envs.envs import mini_env
from swecl.grading.layer import base_names, layer_findings, read_judged
from swecl.sandbox.isolation import Limits
from swecl.sandbox.sandbox import LocalSandbox
from swecl.tasks.mini import load_mini

EDITABLE = (  # what `pip install -e .` leaves in site-packages, written by Python inside the sandbox
    "python - <<'PY'\nimport site, os, py_compile\nsp = site.getsitepackages()[0]\n"
    "open(f'{sp}/__editable__.textkit-0.1.pth', 'w').write('/testbed/src\\n')\n"
    "os.makedirs(f'{sp}/textkit-0.1.dist-info', exist_ok=True)\n"
    "for n in ('METADATA', 'RECORD', 'INSTALLER', 'direct_url.json'):\n"
    "    open(f'{sp}/textkit-0.1.dist-info/{n}', 'w').write(n + ' textkit 0.1\\n')\n"
    "open(f'{sp}/__editable___textkit_finder.py', 'w').write(\"MAPPING = {'textkit': '/testbed/src/textkit'}\\n\")\n"
    "py_compile.compile(f'{sp}/__editable___textkit_finder.py')\nPY"
)


def main(repeat: int):
    mini = load_mini()
    task = mini.task("swecl-mini__textkit-3")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "env"
        subprocess.run(["cp", "-a", str(mini_env().path), str(path)], check=True)
        env = dataclasses.replace(mini_env(), path=path, install=EDITABLE)
        sb = LocalSandbox([mini.metadata["mirror"]], limits=Limits(timeout=120), workdir=d)
        sb.env_for = lambda t: env
        direct, layered, kinds = [], [], set()
        for _ in range(repeat):
            with sb.open(task) as s:
                t0 = time.perf_counter()
                assert s.install(pre=False, trusted=True).exit_code == 0  # straight into the env, as before
                direct.append(time.perf_counter() - t0)
            with sb.open(task) as s:
                t0 = time.perf_counter()
                assert s.install(pre=False).exit_code == 0
                found = layer_findings(s.env_writes(), base_names(s), read_judged(s.env_root))
                s.drop_written_bytecode()
                s.close()
                layered.append(time.perf_counter() - t0)
                kinds.add(s.env_layer)
                assert found == [], found
    med = lambda xs: statistics.median(xs) * 1000
    print(f"layer: {'/'.join(sorted(kinds))}; {repeat} installs each")
    print(f"install into the env: median {med(direct):.0f} ms")
    print(f"install into the session's layer, judged, unmounted: median {med(layered):.0f} ms")
    print(f"added per grading with an install step: {med(layered) - med(direct):.0f} ms")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10)
    main(p.parse_args().repeat)
