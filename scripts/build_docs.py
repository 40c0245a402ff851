#!/usr/bin/env python
"""Build the docs site into `_docs/` (`make docs`), offline.

nbdev_docs does two things: nbdev processes every notebook for the docs (it runs the exported cells and `show_doc`,
writing `_proc/`), then quarto renders `_proc/` into `_docs/`. quarto is a binary of its own that cannot be installed
offline (PyPI's quarto-cli downloads it from GitHub when it is built), so:

- with `quarto` on PATH, this runs nbdev_docs itself: the full nbdev site (sidebar, search);
- without it, it runs nbdev's processing step (`nbdev_proc_nbs`, minus the quarto install it would attempt first) and
  renders each processed notebook to HTML with nbconvert, which is pure Python and needs no pandoc for HTML: one page
  per notebook, named as quarto names it (`00_core.ipynb` -> `core.html`), `index.html` from `nbs/index.ipynb`, and a
  navigation list of every page on each page.

It says which renderer it used and ends with one summary line: pages written and seconds.

Usage: python scripts/build_docs.py [--renderer auto|quarto|nbconvert] [--n-workers N]   (from the project root)
"""

import argparse
import html
import re
import shutil
import sys
import time
from pathlib import Path

import nbdev.quarto
import nbformat
import yaml
from nbconvert import HTMLExporter
from nbdev.config import get_config
from nbdev.doclinks import nbglob
from pygments.formatters import HtmlFormatter

# pandoc's link attributes, which show_doc writes after its [source](...) link: `{target="_blank" style="..."}`
_LINK_ATTRS = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)\{((?:\s*[\w-]+=\"[^\"]*\")+)\s*\}")
_DIRECTIVE = re.compile(r"^#\|\s*([\w-]+):?\s*(.*)$")
_CSS = """
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #212529; display: flex; }
nav.site { position: sticky; top: 0; height: 100vh; overflow-y: auto; flex: 0 0 15rem; padding: 1rem;
  background: #f8f9fa; border-right: 1px solid #dee2e6; font-size: 0.9rem; box-sizing: border-box; }
nav.site .brand { font-weight: 600; font-size: 1.2rem; text-decoration: none; color: inherit; }
nav.site ul { list-style: none; padding: 0; margin: 0.75rem 0 0; }
nav.site li { margin: 0.2rem 0; }
nav.site a { color: #0d6efd; text-decoration: none; }
nav.site li.current a { font-weight: 600; color: #212529; }
main { flex: 1; min-width: 0; max-width: 60rem; padding: 1rem 2rem 4rem; }
header .description { color: #6c757d; font-size: 1.1rem; }
pre { background: #f6f8fa; padding: 0.6rem 0.8rem; overflow-x: auto; border-radius: 4px; font-size: 0.85rem; }
code { font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid #dee2e6; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
.cell { margin: 0.5rem 0; }
.output_area pre { background: #fff; border-left: 3px solid #dee2e6; }
.anchor-link { visibility: hidden; margin-left: 0.3rem; text-decoration: none; }
h2:hover .anchor-link, h3:hover .anchor-link, h4:hover .anchor-link { visibility: visible; }
"""


def _frontmatter(nb) -> dict:
    "The YAML front matter nbdev puts in the first raw cell of a processed notebook (title, description, output-file)."
    if nb.cells and nb.cells[0].cell_type == "raw" and nb.cells[0].source.lstrip().startswith("---"):
        fm = yaml.safe_load(nb.cells[0].source.strip().strip("-")) or {}
        del nb.cells[0]
        return fm
    return {}


def _directives(src: str) -> tuple[dict, str]:
    "The `#| key: value` lines at the top of a cell, and the source without them."
    lines, dirs = src.splitlines(), {}
    while lines and (m := _DIRECTIVE.match(lines[0])):
        dirs[m.group(1)] = m.group(2).strip()
        lines.pop(0)
    return dirs, "\n".join(lines).strip("\n")


def _markdown(text: str) -> str:
    "Markdown as mistune renders it: pandoc's link attributes become HTML, quarto's `:::` fences go."
    text = _LINK_ATTRS.sub(lambda m: f'<a href="{m.group(2)}" {m.group(3).strip()}>{m.group(1)}</a>', text)
    return "\n".join(l for l in text.splitlines() if not l.startswith(":::"))


def _prepare(nb):
    "Do what quarto does with a processed notebook's cells: hide `echo: false` inputs, drop emptied cells."
    cells = []
    for c in nb.cells:
        if c.cell_type == "markdown":
            c.source = _markdown(c.source)
        elif c.cell_type == "code":
            dirs, c.source = _directives(c.get("source", ""))
            if dirs.get("echo") == "false" or dirs.get("include") == "false":
                c.metadata["transient"] = {"remove_source": True}
            if dirs.get("include") == "false":
                continue
            for o in c.get("outputs", []):
                if "text/markdown" in o.get("data", {}):
                    o.data["text/markdown"] = _markdown(o.data["text/markdown"])
            if (not c.source or c.metadata.get("transient")) and not c.get("outputs"):
                continue
        elif c.cell_type == "raw":
            continue
        cells.append(c)
    nb.cells = cells
    return nb


def _page(title: str, description: str, body: str, nav: list, current: str, site: str) -> str:
    items = "\n".join(
        f'<li{" class=current" if f == current else ""}><a href="{f}">{html.escape(t)}</a></li>' for f, t in nav
    )
    desc = f'<p class="description">{html.escape(description)}</p>' if description else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} – {html.escape(site)}</title>
<link rel="stylesheet" href="style.css">
</head>
<body>
<nav class="site"><a class="brand" href="index.html">{html.escape(site)}</a>
<ul>
{items}
</ul>
</nav>
<main>
<header><h1 class="title">{html.escape(title)}</h1>{desc}</header>
{body}
</main>
</body>
</html>
"""


def _html_name(notebook: str) -> str:
    "The page quarto writes for a notebook nbdev processed: its name without the number prefix (`00_core` -> `core`)."
    if notebook.startswith("index."):
        return "index.html"
    return re.sub(r"^\d+[a-zA-Z0-9]*_", "", Path(notebook).stem.lower()) + ".html"


def _offline_html(body: str, pages: dict, site_url: str) -> str:
    "Links made to work offline, as quarto's: nbdev's absolute doc links and `X.ipynb` links to the page, relative."
    if site_url:
        body = body.replace(f'href="{site_url.rstrip("/")}/', 'href="')
    body = re.sub(
        r'href="([\w.-]+\.ipynb)(#[^"]*)?"',
        lambda m: f'href="{pages.get(m.group(1)) or _html_name(m.group(1))}{m.group(2) or ""}"',
        body,
    )
    # a `\|` in a table cell is a pipe that does not end the cell; pandoc drops the backslash, even in code
    body = re.sub(r"<t([dh])([^>]*)>(.*?)</t\1>", lambda m: m.group(0).replace("\\|", "|"), body, flags=re.S)
    # heading anchors as pandoc makes them (`InfraError` -> `#infraerror`), which nbdev's doc links point at
    return re.sub(r'(id="|href="#)([^"]+)"', lambda m: f'{m.group(1)}{m.group(2).lower()}"', body)


def render_nbconvert(cfg, notebooks: list, proc: Path, out: Path) -> int:
    "Each processed notebook to `out/<output-file>`, with the navigation list; returns the number of pages."
    read = []
    for name in notebooks:
        nb = nbformat.read(proc / name, as_version=4)
        fm = _frontmatter(nb)
        page = fm.get("output-file") or _html_name(name)
        read.append((name, page, str(fm.get("title") or Path(name).stem), str(fm.get("description") or ""), nb))
    read.sort(key=lambda r: (r[1] != "index.html", r[0]))
    nav = [(page, title) for _, page, title, _, _ in read]
    pages = {name: page for name, page, *_ in read}
    exporter = HTMLExporter(template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True)
    site_url = f"{cfg.get('doc_host', '')}{cfg.get('doc_baseurl', '')}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "style.css").write_text(_CSS + HtmlFormatter().get_style_defs(".highlight"))
    for name, page, title, desc, nb in read:
        body, _ = exporter.from_notebook_node(_prepare(nb))
        html_text = _page(title, desc, _offline_html(body, pages, site_url), nav, page, cfg.get("title", cfg.lib_name))
        (out / page).write_text(html_text)
    return len(read)


def build(renderer: str = "auto", n_workers: int = 2) -> int:
    cfg = get_config()
    quarto = shutil.which("quarto")
    if renderer == "auto":
        renderer = "quarto" if quarto else "nbconvert"
    if renderer == "quarto" and not quarto:
        sys.exit('build_docs: quarto is not on PATH (pip install -e ".[docs]" installs it, online)')
    out = cfg.config_path / cfg.doc_path.name
    if renderer == "quarto":
        print(f"build_docs: renderer quarto ({quarto}), through nbdev_docs", flush=True)
        nbdev.quarto.nbdev_docs.__wrapped__(n_workers=n_workers)
        return len(list(out.glob("*.html")))
    why = "asked for" if quarto else 'quarto is not on PATH; pip install -e ".[docs]" gives the quarto site, online'
    print(f"build_docs: renderer nbconvert ({why})", flush=True)
    # nbdev_proc_nbs first makes sure quarto is installed, by downloading it with sudo; here it is not needed.
    nbdev.quarto._ensure_quarto = lambda: None
    nbdev.quarto.nbdev_proc_nbs.__wrapped__(n_workers=n_workers)
    notebooks = sorted(p.name for p in nbglob(cfg.nbs_path, func=Path))
    shutil.rmtree(out, ignore_errors=True)
    return render_nbconvert(cfg, notebooks, cfg.config_path / "_proc", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--renderer", choices=["auto", "quarto", "nbconvert"], default="auto")
    ap.add_argument("--n-workers", type=int, default=2, help="notebooks processed at once")
    args = ap.parse_args()
    t0 = time.time()
    n = build(args.renderer, args.n_workers)
    out = get_config().doc_path
    print(f"build_docs: {n} pages written to {out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
