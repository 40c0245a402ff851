"""The docs site, built from a copy of the checkout as `make docs` builds it: a page per module, the landing page from
nbs/index.ipynb, and the hand-written README.md left as it is.

nbdev_docs has two steps: it processes every notebook (running the cells `show_doc` needs) into `_proc/`, then quarto
renders `_proc/` into `_docs/`. The first runs everywhere; the second needs quarto (`pip install -e ".[docs]"`)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

BIN = Path(sys.executable).parent
PATH = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
QUARTO = shutil.which("quarto", path=PATH)
GENERATED = ("_docs", "_proc", "_quarto.yml", "nbdev.yml", "sidebar.yml", "__pycache__", ".ipynb_checkpoints")


def _copy(tmp_path) -> Path:
    "What the docs are built from; nbdev_docs writes _docs/, _proc/ and nbs/*.yml beside settings.ini."
    for f in ("settings.ini", "README.md"):
        shutil.copy(ROOT / f, tmp_path / f)
    for d in ("nbs", "swecl"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns(*GENERATED))
    return tmp_path


def _notebooks() -> list:
    return sorted(p.name for p in (ROOT / "nbs").glob("*.ipynb") if not p.name.startswith("_"))


def _module_notebooks() -> dict:
    "module -> its notebook, from each notebook's `#| default_exp`."
    out = {}
    for p in (ROOT / "nbs").glob("[0-9]*.ipynb"):
        m = re.search(r"#\|\s*default_exp\s+(\w+)", p.read_text())
        if m:
            out[m.group(1)] = p
    return out


def _run(cmd: list, cwd: Path):
    env = dict(os.environ, PATH=PATH, MPLBACKEND="Agg")
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    return r


def test_every_module_has_a_notebook():
    modules = {p.stem for p in (ROOT / "swecl").glob("*.py") if not p.name.startswith("_")}
    assert modules == set(_module_notebooks()), modules ^ set(_module_notebooks())


def test_notebooks_process_for_the_docs(tmp_path):
    # nbdev runs every exported cell, and every other cell that imports something, to render the API docs: a test cell
    # that mixes imports with code it cannot run on its own (state from a cell that is not run) fails here.
    src = _copy(tmp_path)
    _run([sys.executable, "-c", "from nbdev.serve import proc_nbs; proc_nbs(n_workers=2)"], src)
    assert sorted(p.name for p in (src / "_proc").glob("*.ipynb")) == _notebooks()
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()


@pytest.mark.slow
@pytest.mark.skipif(
    QUARTO is None,
    reason='quarto is not installed: pip install -e ".[docs]" (quarto-cli downloads the quarto binary when it is built)',
)
def test_docs_site_has_a_page_per_module(tmp_path):
    src = _copy(tmp_path)
    _run([str(BIN / "nbdev_docs")], src)
    site = src / "_docs"
    assert (site / "index.html").exists() and "Two commands" in (site / "index.html").read_text()
    for module, nb in _module_notebooks().items():
        page = re.sub(r"^\d+[a-zA-Z0-9]*_", "", nb.stem.lower()) + ".html"  # as nbdev links it
        assert (site / page).exists(), f"no page {page} for {module}"
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
