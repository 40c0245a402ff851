#!/usr/bin/env python
"""Build the docs site into `_docs/` (`make docs`), offline.

nbdev_docs does two things: nbdev processes every notebook for the docs (it runs the exported cells and `show_doc`,
writing `_proc/`, with the folders of `nbs/`), then quarto renders `_proc/` into `_docs/`. quarto is a binary of its
own that cannot be installed offline (PyPI's quarto-cli downloads it from GitHub when it is built), so:

- with `quarto` on PATH, this runs nbdev_docs itself: the full nbdev site (sidebar, search);
- without it, it runs nbdev's processing step (`nbdev_proc_nbs`, minus the quarto install it would attempt first) and
  renders each processed notebook to HTML with nbconvert, which is pure Python and needs no pandoc for HTML: one page
  per notebook, in the notebook's folder and named as quarto names it (`nbs/grading/04c_evidence.ipynb` ->
  `grading/evidence.html`, `nbs/grading/index.ipynb` -> `grading/index.html`, `nbs/index.ipynb` -> `index.html`), and
  on each page a navigation list of every page, grouped by folder (the user guide, then the packages in the folder
  order of scripts/structure.py, then the notebooks of `nbs/` itself). Every link is relative, so the site works
  from any folder and from `file://`: nbdev's absolute doc links and links to `X.ipynb` become links to the page.

The math: quarto has pandoc mark TeX math (`$…$`, `$$…$$`) and MathJax render it in the browser. The nbconvert pages do
the same: the markdown renderer (nbconvert's mistune one) finds math by pandoc's rules (an opening `$` is followed by a
non-space, the closing `$` follows a non-space and is not followed by a digit, so `$3 / $15` stays text) and writes it
as pandoc does, `<span class="math inline">\\(…\\)</span>` and `<span class="math display">\\[…\\]</span>`, HTML-escaped
and untouched by the markdown; a page with math loads MathJax 2 from nbconvert's `HTMLExporter.mathjax_url` (a CDN, as
nbconvert's own full templates do), set to typeset only those spans. No pure-Python TeX renderer is installed, so
without the network the TeX source shows, between its delimiters.

It says which renderer it used and ends with one summary line: pages written and seconds.

Usage: python scripts/build_docs.py [--renderer auto|quarto|nbconvert] [--n-workers N]   (from the project root)
"""

import argparse
import html
import multiprocessing as mp
import os
import posixpath
import re
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import nbdev.quarto
import nbformat
import yaml
from jinja2 import pass_context
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath, MathInlineParser
from nbdev.config import get_config
from nbdev.doclinks import nbglob
from pygments.formatters import HtmlFormatter
from structure import FOLDERS  # scripts/structure.py: the packages' folder order

# pandoc's link attributes, which show_doc writes after its [source](...) link: `{target="_blank" style="..."}`
_LINK_ATTRS = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)\{((?:\s*[\w-]+=\"[^\"]*\")+)\s*\}")
_DIRECTIVE = re.compile(r"^#\|\s*([\w-]+):?\s*(.*)$")
GUIDE = "guide"  # nbs/guide/: the user guide, listed first
NOTEBOOKS = "notebooks"  # the label of the notebooks in nbs/ itself (drivers and tools, no module)
_CSS = """
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: #212529; display: flex; }
nav.site { position: sticky; top: 0; height: 100vh; overflow-y: auto; flex: 0 0 15rem; padding: 1rem;
  background: #f8f9fa; border-right: 1px solid #dee2e6; font-size: 0.9rem; box-sizing: border-box; }
nav.site .brand { font-weight: 600; font-size: 1.2rem; text-decoration: none; color: inherit; }
nav.site ul { list-style: none; padding: 0; margin: 0.75rem 0 0; }
nav.site ul ul { margin: 0.1rem 0 0.4rem 0.8rem; }
nav.site li { margin: 0.2rem 0; }
nav.site li.group > a, nav.site li.group > span { font-weight: 600; text-transform: uppercase; font-size: 0.8rem;
  letter-spacing: 0.03em; }
nav.site li.group > span { color: #6c757d; }
nav.site a { color: #0d6efd; text-decoration: none; }
nav.site li.current > a { font-weight: 600; color: #212529; }
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
.math.display { display: block; overflow-x: auto; margin: 0.5rem 0; }
"""
# MathJax 2 (the version nbconvert's templates load), typesetting only pandoc's math spans: the page is `tex2jax_ignore`,
# the spans are `math`, and their only delimiters are `\(…\)` and `\[…\]`, so a `$` in text or code is never math.
_MATHJAX = """<script type="text/x-mathjax-config">
MathJax.Hub.Config({tex2jax: {inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]],
  processEscapes: false, processEnvironments: true, ignoreClass: "tex2jax_ignore", processClass: "math"},
  messageStyle: "none"});
</script>
<script src="%s" async></script>
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


class _PandocMathInline(MathInlineParser):
    "nbconvert's math parser with pandoc's rule for `$…$`: no space inside either `$`, no digit after the closing one."

    INLINE_MATH_TEX = r"(?s:(?<![$\\])\$(?![\s$])(?P<math_inline_tex>(?:\\.|[^$\\])+?)(?<!\s)\$(?!\d))"
    SPECIFICATION = {**MathInlineParser.SPECIFICATION, "inline_math_tex": INLINE_MATH_TEX}


class _PandocMathRenderer(IPythonRenderer):
    "nbconvert's renderer writing math as pandoc's HTML writer does with MathJax: a `math` span around `\\(…\\)`."

    def inline_math(self, body: str) -> str:
        return f'<span class="math inline">\\({self.escape_html(body)}\\)</span>'

    def block_math(self, body: str) -> str:
        return f'<span class="math display">\\[{self.escape_html(body)}\\]</span>'

    def latex_environment(self, name: str, body: str) -> str:
        name, body = self.escape_html(name), self.escape_html(body)
        return f'<span class="math display">\\begin{{{name}}}{body}\\end{{{name}}}</span>'


class _Exporter(HTMLExporter):
    "nbconvert's HTML exporter whose markdown (cells, and show_doc's outputs) marks math as pandoc does."

    @pass_context
    def markdown2html(self, context, source):
        renderer = _PandocMathRenderer(  # as HTMLExporter.markdown2html makes its renderer
            escape=False,
            attachments=context.get("cell", {}).get("attachments", {}),
            embed_images=self.embed_images,
            path=context.get("resources", {}).get("metadata", {}).get("path", ""),
            anchor_link_text=self.anchor_link_text,
            exclude_anchor_links=self.exclude_anchor_links,
            **self.lexer_options,
        )
        return MarkdownWithMath(renderer=renderer, inline=_PandocMathInline(hard_wrap=False)).render(source)


@dataclass
class Doc:
    "One page: its notebook and its page, both relative (`grading/04c_evidence.ipynb`, `grading/evidence.html`)."

    notebook: str
    page: str
    title: str
    description: str
    nb: object = None

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.notebook)


def _html_name(notebook: str) -> str:
    "The page quarto writes for a notebook nbdev processed: its name without the number prefix (`00_core` -> `core`)."
    if notebook.startswith("index."):
        return "index.html"
    return re.sub(r"^\d+[a-zA-Z0-9]*_", "", Path(notebook).stem.lower()) + ".html"


def page_path(notebook: str, output_file: str | None = None) -> str:
    "The page of a notebook (a path relative to nbs/), in the notebook's folder: `grading/04c_evidence.ipynb` -> ..."
    p = PurePosixPath(notebook)
    return str(p.with_name(output_file or _html_name(p.name)))


def _rel(target: str, page: str) -> str:
    "`target` (a path from the site's root) as a link from `page`: `../agent/agent.html` from `grading/evidence.html`."
    return posixpath.relpath(target, posixpath.dirname(page) or ".")


def groups(docs: list) -> list:
    """The navigation: (label, head, pages) per group, in order: the landing page alone, the user guide, the packages
    in the folder order, any other folder, then the notebooks of nbs/ itself. A folder's head is its index page."""
    by_folder = {}
    for d in sorted(docs, key=lambda d: d.notebook):
        by_folder.setdefault(d.folder, []).append(d)
    root = by_folder.pop("", [])
    out = [("", d, []) for d in root if d.page == "index.html"]
    order = [GUIDE, *FOLDERS]
    for folder in order + sorted(set(by_folder) - set(order)):
        if folder in by_folder:
            head = next((d for d in by_folder[folder] if posixpath.basename(d.page) == "index.html"), None)
            out.append((folder, head, [d for d in by_folder[folder] if d is not head]))
    rest = [d for d in root if d.page != "index.html"]
    return out + ([(NOTEBOOKS, None, rest)] if rest else [])


def _nav(nav: list, page: str) -> str:
    "The navigation list as seen from `page`: every link relative to it, the current page marked."

    def item(d, cls="", children=""):
        cls = " ".join(c for c in (cls, "current" if d.page == page else "") if c)
        attr = f' class="{cls}"' if cls else ""
        return f'<li{attr}><a href="{_rel(d.page, page)}">{html.escape(d.title)}</a>{children}</li>'

    lines = []
    for label, head, docs in nav:
        if not label:  # the landing page
            lines.append(item(head))
            continue
        children = "<ul>\n" + "\n".join(item(d) for d in docs) + "\n</ul>" if docs else ""
        if head:
            lines.append(item(Doc(head.notebook, head.page, label, ""), "group", children))
        else:
            lines.append(f'<li class="group"><span>{html.escape(label)}</span>{children}</li>')
    return "\n".join(lines)


def _page(doc: Doc, body: str, nav: list, site: str, mathjax_url: str) -> str:
    desc = f'<p class="description">{html.escape(doc.description)}</p>' if doc.description else ""
    math = _MATHJAX % mathjax_url if 'class="math ' in body else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(doc.title)} – {html.escape(site)}</title>
<link rel="stylesheet" href="{_rel("style.css", doc.page)}">
{math}</head>
<body class="tex2jax_ignore">
<nav class="site"><a class="brand" href="{_rel("index.html", doc.page)}">{html.escape(site)}</a>
<ul>
{_nav(nav, doc.page)}
</ul>
</nav>
<main>
<header><h1 class="title">{html.escape(doc.title)}</h1>{desc}</header>
{body}
</main>
</body>
</html>
"""


def _offline_html(body: str, doc: Doc, pages: dict, site_url: str) -> str:
    """Links made to work offline, as quarto's: nbdev's absolute doc links (`https://host/base/agent/agent.html#x`) and
    links to notebooks (`../grading/04c_evidence.ipynb`, relative to the notebook) become relative links to pages."""
    if site_url:
        # nbdev links a backticked name in a code comment as markdown, which a code block shows as text: keep the name
        body = re.sub(rf"\[(`[^`\]]+`)\]\({re.escape(site_url.rstrip('/'))}[^)\s]*\)", r"\1", body)

        def local(m):
            target = m.group(1) or ""
            return f'href="{_rel(target + "index.html" if not target or target.endswith("/") else target, doc.page)}'

        body = re.sub(rf'href="{re.escape(site_url.rstrip("/"))}(?:/([^"#]*))?(?=[#"])', local, body)

    def notebook(m):
        nb = posixpath.normpath(posixpath.join(doc.folder, m.group(1)))
        return f'href="{_rel(pages.get(nb) or page_path(nb), doc.page)}{m.group(2) or ""}"'

    body = re.sub(r'href="([^":#?]+\.ipynb)(#[^"]*)?"', notebook, body)
    # a `\|` in a table cell is a pipe that does not end the cell; pandoc drops the backslash, even in code
    body = re.sub(r"<t([dh])([^>]*)>(.*?)</t\1>", lambda m: m.group(0).replace("\\|", "|"), body, flags=re.S)
    # heading anchors as pandoc makes them (`InfraError` -> `#infraerror`), which nbdev's doc links point at
    return re.sub(r'(id="|href="#)([^"]+)"', lambda m: f'{m.group(1)}{m.group(2).lower()}"', body)


@dataclass
class _Site:
    "What every page's render needs, shared by the render workers."

    docs: list
    nav: list
    pages: dict
    site: str
    site_url: str
    out: Path


_SITE: _Site | None = None  # set before the render workers fork, so each inherits it instead of receiving it


_EXPORTERS: dict = {}  # one exporter per process (pid -> exporter): making one costs about as much as a page


def _render_page(i: int) -> None:
    doc, site = _SITE.docs[i], _SITE
    exporter = _EXPORTERS.get(os.getpid())
    if exporter is None:
        exporter = _EXPORTERS[os.getpid()] = _Exporter(
            template_name="basic", exclude_input_prompt=True, exclude_output_prompt=True
        )
    body, _ = exporter.from_notebook_node(_prepare(doc.nb))
    text = _page(doc, _offline_html(body, doc, site.pages, site.site_url), site.nav, site.site, exporter.mathjax_url)
    (site.out / doc.page).parent.mkdir(parents=True, exist_ok=True)
    (site.out / doc.page).write_text(text)


def render_nbconvert(cfg, notebooks: list, proc: Path, out: Path, n_workers: int = 1) -> int:
    "Each processed notebook (a path relative to `proc`) to its page under `out`, with the navigation; returns pages."
    global _SITE
    docs = []
    for name in notebooks:
        nb = nbformat.read(proc / name, as_version=4)
        fm = _frontmatter(nb)
        title = str(fm.get("title") or Path(name).stem)
        docs.append(Doc(name, page_path(name, fm.get("output-file")), title, str(fm.get("description") or ""), nb))
    clash = {d.page for d in docs if sum(e.page == d.page for e in docs) > 1}
    if clash:
        sys.exit(f"build_docs: several notebooks would write {sorted(clash)}")
    site_url = f"{cfg.get('doc_host', '')}{cfg.get('doc_baseurl', '')}"
    site = cfg.get("title", cfg.lib_name)
    _SITE = _Site(docs, groups(docs), {d.notebook: d.page for d in docs}, site, site_url, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "style.css").write_text(_CSS + HtmlFormatter().get_style_defs(".highlight"))
    if n_workers > 1:  # pages are independent: forked workers, each with the whole site inherited
        with ProcessPoolExecutor(n_workers, mp_context=mp.get_context("fork")) as ex:
            list(ex.map(_render_page, range(len(docs)), chunksize=8))
    else:
        for i in range(len(docs)):
            _render_page(i)
    return len(docs)


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
        return len([p for p in out.rglob("*.html") if "site_libs" not in p.relative_to(out).parts])
    why = "asked for" if quarto else 'quarto is not on PATH; pip install -e ".[docs]" gives the quarto site, online'
    print(f"build_docs: renderer nbconvert ({why})", flush=True)
    # nbdev_proc_nbs first makes sure quarto is installed, by downloading it with sudo; here it is not needed.
    nbdev.quarto._ensure_quarto = lambda: None
    nbdev.quarto.nbdev_proc_nbs.__wrapped__(n_workers=n_workers)
    # the notebooks nbdev processed (recursively when settings.ini says `recursive = True`), relative to nbs/
    notebooks = sorted(p.relative_to(cfg.nbs_path).as_posix() for p in nbglob(cfg.nbs_path, func=Path))
    shutil.rmtree(out, ignore_errors=True)
    return render_nbconvert(cfg, notebooks, cfg.config_path / "_proc", out, n_workers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--renderer", choices=["auto", "quarto", "nbconvert"], default="auto")
    ap.add_argument("--n-workers", type=int, default=2, help="notebooks processed (and pages rendered) at once")
    args = ap.parse_args()
    t0 = time.time()
    n = build(args.renderer, args.n_workers)
    out = get_config().doc_path
    print(f"build_docs: {n} pages written to {out} in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
