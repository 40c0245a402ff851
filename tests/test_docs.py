"""The docs site, built from a copy of the checkout as `make docs` builds it: a page per module, the landing page from
nbs/index.ipynb, and the hand-written README.md left as it is.

nbdev_docs has two steps: it processes every notebook (running the cells `show_doc` needs) into `_proc/`, then quarto
renders `_proc/` into `_docs/`. The first runs everywhere. quarto cannot be installed offline, so scripts/build_docs.py
(`make docs`) renders `_proc/` with nbconvert when quarto is not on PATH; with quarto (`pip install -e ".[docs]"`,
online) it runs nbdev_docs itself. Both are tested; the quarto one only where quarto is installed."""

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


def _page(nb: Path) -> str:
    "The page quarto (and build_docs.py) writes for a notebook, as nbdev links it: `03b_envs.ipynb` -> `envs.html`."
    return "index.html" if nb.stem == "index" else re.sub(r"^\d+[a-zA-Z0-9]*_", "", nb.stem.lower()) + ".html"


@pytest.fixture(scope="module")
def offline_site(tmp_path_factory):
    "The site as `make docs` builds it offline: nbdev's processing, then nbconvert (whether or not quarto is here)."
    src = _copy(tmp_path_factory.mktemp("docs"))
    r = _run([sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--renderer", "nbconvert"], src)
    return src, r.stdout


def test_notebooks_process_for_the_docs(offline_site):
    # nbdev runs every exported cell, and every other cell that imports something, to render the API docs: a test cell
    # that mixes imports with code it cannot run on its own (state from a cell that is not run) fails here.
    src, _ = offline_site
    assert sorted(p.name for p in (src / "_proc").glob("*.ipynb")) == _notebooks()
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()


def test_offline_docs_site_has_a_page_per_module(offline_site):
    src, out = offline_site
    assert "renderer nbconvert" in out, out
    site = src / "_docs"
    pages = {p.name for p in site.glob("*.html")}
    assert pages == {_page(ROOT / "nbs" / nb) for nb in _notebooks()}, pages
    assert re.search(rf"^build_docs: {len(pages)} pages written to .* in [\d.]+ s$", out, re.M), out
    index = (site / "index.html").read_text()
    assert "Two commands" in index and '<h1 class="title">swecl</h1>' in index
    for module, nb in _module_notebooks().items():
        page = site / _page(nb)
        assert page.exists(), f"no page {page.name} for {module}"
        text = page.read_text()
        assert all(f'href="{p}"' in text for p in pages), f"{page.name} does not list every page"
        assert f'<li class=current><a href="{page.name}">' in text
    # show_doc ran (nbdev's processing) and its markdown was rendered, without the cell that called it, with the
    # source link's pandoc attributes turned into HTML
    core = (site / "core.html").read_text()
    assert '<h3 id="package_file">' in core and "show_doc(package_file)" not in core
    assert re.search(r'<a href="https://github.com/swecl/swecl/blob/main/swecl/core.py#L\d+" style=', core)
    assert "{target=" not in core
    # nbdev's absolute doc links and the index's links to notebooks point at pages of this site
    linked = set(re.findall(r'href="([\w.-]+\.html)(?:#[^"]*)?"', index + core))
    assert linked <= pages and "envs.html" in linked and "core.html" in linked, linked - pages
    assert "swecl.github.io" not in index + core and not re.search(r'href="[^"]*\.ipynb', index)
    assert (site / "style.css").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    QUARTO is None,
    reason='quarto is not installed: pip install -e ".[docs]" (quarto-cli downloads the quarto binary when it is built)',
)
def test_docs_site_has_a_page_per_module(tmp_path):
    src = _copy(tmp_path)
    r = _run([sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--renderer", "quarto"], src)
    assert "renderer quarto" in r.stdout
    site = src / "_docs"
    assert (site / "index.html").exists() and "Two commands" in (site / "index.html").read_text()
    for module, nb in _module_notebooks().items():
        assert (site / _page(nb)).exists(), f"no page {_page(nb)} for {module}"
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
