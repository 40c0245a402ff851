"""The docs site, built from a copy of the checkout as `make docs` builds it: a page per notebook (every module, every
package's index, the user guide) in the notebook's folder, the landing page from nbs/index.ipynb, and the hand-written
README.md left as it is.

nbdev_docs has two steps: it processes every notebook (running the cells `show_doc` needs) into `_proc/`, then quarto
renders `_proc/` into `_docs/`. The first runs everywhere. quarto cannot be installed offline, so scripts/build_docs.py
(`make docs`) renders `_proc/` with nbconvert when quarto is not on PATH; with quarto (`pip install -e ".[docs]"`,
online) it runs nbdev_docs itself. Both are tested; the quarto one only where quarto is installed. Building the site runs
every notebook's exported cells again (about 90 s), so those tests carry the `docs` flag: `.ci/run` gives it, and
`make test TEST_FLAGS=docs` runs them by hand."""

import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from conftest import ROOT

BIN = Path(sys.executable).parent
PATH = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
QUARTO = shutil.which("quarto", path=PATH)
GENERATED = ("_docs", "_proc", "_quarto.yml", "nbdev.yml", "sidebar.yml", "__pycache__", ".ipynb_checkpoints")
NBS = ROOT / "nbs"
GUIDE = ("01_quick_start", "02_concepts", "03_plans", "04_labels", "05_troubleshooting")


def _copy(tmp_path) -> Path:
    "What the docs are built from; nbdev_docs writes _docs/, _proc/ and nbs/*.yml beside settings.ini."
    for f in ("settings.ini", "README.md"):
        shutil.copy(ROOT / f, tmp_path / f)
    for d in ("nbs", "swecl"):
        shutil.copytree(ROOT / d, tmp_path / d, ignore=shutil.ignore_patterns(*GENERATED))
    return tmp_path


def _notebooks(nbs: Path = NBS) -> list:
    "Every notebook nbdev processes, relative to nbs/ (it skips names and folders starting with `_` or `.`)."
    return sorted(
        p.relative_to(nbs).as_posix()
        for p in nbs.rglob("*.ipynb")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(nbs).parts)
    )


def _module_notebooks(nbs: Path = NBS) -> dict:
    "module (`grading.evidence`, a package's `grading.__init__`) -> its notebook, from each notebook's `#| default_exp`."
    out = {}
    for p in nbs.rglob("*.ipynb"):
        m = re.search(r"#\|\s*default_exp\s+([\w.]+)", p.read_text())
        if m:
            out[m.group(1)] = p
    return out


def _run(cmd: list, cwd: Path):
    # the copy's own swecl first (before the editable install's), so show_doc's links come from the code being built
    env = dict(os.environ, PATH=PATH, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join([str(cwd), *_pythonpath()]))
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    return r


def _pythonpath() -> list:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def test_every_module_has_a_notebook():
    pkg = ROOT / "swecl"
    modules = {
        ".".join(p.relative_to(pkg).with_suffix("").parts)
        for p in pkg.rglob("*.py")
        if p.relative_to(pkg).parts[0] != "data" and p.parent != pkg  # not swecl/__init__.py, _modidx.py, data
    }
    assert modules == set(_module_notebooks()), modules ^ set(_module_notebooks())
    packages = {m.split(".")[0] for m in modules}
    assert {m for m in _module_notebooks() if m.endswith(".__init__")} == {f"{p}.__init__" for p in packages}
    assert all(_module_notebooks()[f"{p}.__init__"] == NBS / p / "index.ipynb" for p in packages)


def _page(nb: str) -> str:
    """The page quarto (and build_docs.py) writes for a notebook (relative to nbs/), as nbdev links it, in the
    notebook's folder: `envs/03b_envs.ipynb` -> `envs/envs.html`, `envs/index.ipynb` -> `envs/index.html`."""
    nb = PurePosixPath(nb)
    name = "index.html" if nb.stem == "index" else re.sub(r"^\d+[a-zA-Z0-9]*_", "", nb.stem.lower()) + ".html"
    return str(nb.with_name(name))


def _hrefs(text: str) -> list:
    "The links of a page to other files (not anchors on the page, not other sites), without their anchors."
    links = re.findall(r'<(?:a|link|img|script)\s[^>]*?(?:href|src)="([^"]+)"', text)  # in tags, not in code
    return [h.split("#")[0] for h in links if not re.match(r"#|[a-z]+:", h)]


def test_the_landing_page_links_every_package_and_the_guide():
    # nbs/index.ipynb's links to notebooks are relative to it: each names a notebook that exists
    text = "".join("".join(c["source"]) for c in json.loads((NBS / "index.ipynb").read_text())["cells"])
    links = {h.split("#")[0] for h in re.findall(r"\]\(([^)\s]+\.ipynb)(?:#[^)]*)?\)", text)}
    assert {h for h in links if not (NBS / h).is_file()} == set()
    packages = {p.parent.name for p in NBS.glob("*/index.ipynb")}
    assert {f"{p}/index.ipynb" for p in packages} <= links
    assert {f"guide/{g}.ipynb" for g in GUIDE} <= links


def test_guide_is_markdown_with_a_title():
    for name in GUIDE:
        nb = json.loads((NBS / "guide" / f"{name}.ipynb").read_text())
        first = "".join(nb["cells"][0]["source"]).splitlines()
        assert first[0].startswith("# ") and first[1].startswith("> "), (name, first[:2])
        assert {c["cell_type"] for c in nb["cells"]} == {"markdown"}, name


def _guide_text(name: str) -> str:
    return "\n".join("".join(c["source"]) for c in json.loads((NBS / "guide" / f"{name}.ipynb").read_text())["cells"])


def test_guide_tables_are_the_declared_ones():
    # the copies of declared tables, as their declarations write them: labels.yaml's in the guide, and the plan keys'
    # in the guide and the README
    from swecl.base.labels import labels_markdown
    from swecl.runs.plan_keys import plan_markdown

    assert labels_markdown().strip() in _guide_text("04_labels")
    assert plan_markdown().strip() in _guide_text("03_plans")
    assert plan_markdown().strip() in (ROOT / "README.md").read_text()


def test_guide_modes_table_is_the_declared_one():
    # the memory conditions' copy in the concepts guide, as the table of modes and contents writes it
    from swecl.base.conditions import modes_markdown

    assert modes_markdown().strip() in _guide_text("02_concepts")


def test_model_strings_are_the_backend_table():
    # the table of model strings in the README and the quick start, as the backend table writes it (a new backend's
    # row shows here); the other copies (plan keys, help texts, errors) are made from the table when imported
    from swecl.models.backends import forms_markdown

    assert forms_markdown().strip() in _guide_text("01_quick_start")
    assert forms_markdown().strip() in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def offline_site(tmp_path_factory):
    "The site as `make docs` builds it offline: nbdev's processing, then nbconvert (whether or not quarto is here)."
    src = _copy(tmp_path_factory.mktemp("docs"))
    r = _run([sys.executable, str(ROOT / "scripts" / "build_docs.py"), "--renderer", "nbconvert"], src)
    return src, r.stdout


@pytest.mark.docs
def test_notebooks_process_for_the_docs(offline_site):
    # nbdev runs every exported cell, and every other cell that imports something, to render the API docs: a test cell
    # that mixes imports with code it cannot run on its own (state from a cell that is not run) fails here.
    src, _ = offline_site
    proc = src / "_proc"
    assert sorted(p.relative_to(proc).as_posix() for p in proc.rglob("*.ipynb")) == _notebooks(src / "nbs")
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()


@pytest.mark.docs
def test_offline_docs_site_has_a_page_per_notebook(offline_site):
    src, out = offline_site
    assert "renderer nbconvert" in out, out
    site = src / "_docs"
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    expected = {_page(nb) for nb in _notebooks(src / "nbs")}  # the notebooks of the copy the site was built from
    assert pages == expected, pages ^ expected
    assert re.search(rf"^build_docs: {len(pages)} pages written to .* in [\d.]+ s$", out, re.M), out
    assert {f"guide/{re.sub(r'^[0-9]+_', '', g)}.html" for g in GUIDE} <= pages
    index = (site / "index.html").read_text()
    assert "Two commands" in index and '<h1 class="title">swecl</h1>' in index
    for module, nb in _module_notebooks(src / "nbs").items():
        assert _page(nb.relative_to(src / "nbs").as_posix()) in pages, f"no page for {module}"
    for page in sorted(pages):
        text = (site / page).read_text()
        # every page lists every page, each link relative to the page, and marks itself
        listed = {posixpath.normpath(posixpath.join(posixpath.dirname(page), h)) for h in _hrefs(text)}
        assert pages <= listed, f"{page} does not list {sorted(pages - listed)[:5]}"
        assert f'current"><a href="{posixpath.basename(page)}">' in text, page
        # every link to a file of the site resolves from the page (style.css included) to a file that exists
        broken = {h for h in _hrefs(text) if not (site / posixpath.dirname(page) / h).is_file()}
        assert broken == set(), f"{page}: {sorted(broken)[:5]}"
        assert "swecl.github.io" not in text and not re.search(r'href="[^":]*\.ipynb', text), page
    # a page one folder down: its style sheet, the landing page and another package's page, relative to it
    evidence = (site / "grading" / "evidence.html").read_text()
    assert 'href="../style.css"' in evidence and 'href="../index.html"' in evidence
    assert 'href="../base/core.html"' in evidence and 'href="index.html"' in evidence
    # show_doc ran (nbdev's processing) and its markdown was rendered, without the cell that called it, with the
    # source link's pandoc attributes turned into HTML
    core = (site / "base" / "core.html").read_text()
    assert '<h3 id="package_file">' in core and "show_doc(package_file)" not in core
    assert re.search(r'<a href="https://github.com/swecl/swecl/blob/main/swecl/base/core.py#L\d+" style=', core)
    assert "{target=" not in core
    # the landing page's links to notebooks, and nbdev's absolute doc links (a page one folder down), point at pages
    index_links = set(_hrefs(index.split("<main>", 1)[1]))
    assert {"envs/envs.html", "base/core.html", "grading/index.html", "guide/quick_start.html"} <= index_links
    metrics = (site / "metrics" / "metrics.html").read_text().split("<main>", 1)[1]
    doc_links = {posixpath.normpath(posixpath.join("metrics", h)) for h in _hrefs(metrics)}
    assert {"base/core.html", "metrics/metrics.html"} <= doc_links <= pages, doc_links
    assert 'href="../base/core.html#bootstrap_ci"' in metrics


@pytest.mark.docs
def test_offline_docs_render_math(offline_site):
    # TeX math is marked as pandoc marks it and typeset by MathJax in the browser; a `$` of a price stays text
    src, _ = offline_site
    site = src / "_docs"
    metrics = (site / "metrics" / "metrics.html").read_text()
    assert '<span class="math inline">\\(\\frac1N\\sum_{j=1}^N a_{N,j}\\)</span>' in metrics
    assert "MathJax.Hub.Config" in metrics and re.search(r'<script src="https://[^"]*mathjax[^"]*" async>', metrics)
    assert "$\\frac1N" not in metrics
    # pandoc's rule: no space inside the `$`s, so a price range is text (and a page without math loads no MathJax)
    poisoning = (site / "runs" / "poisoning.html").read_text()
    assert "$3 / $15 per" in poisoning and 'class="math' not in poisoning and "MathJax" not in poisoning


@pytest.mark.docs
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
    for module, nb in _module_notebooks(src / "nbs").items():
        assert (site / _page(nb.relative_to(src / "nbs").as_posix())).exists(), f"no page for {module}"
    assert (src / "README.md").read_bytes() == (ROOT / "README.md").read_bytes()
