"""The two reports: `swecl report --results R` (only what is computed from R) and `swecl report --reproductions` render
them in plain Python, each README linking the other; the papermill driver `nbs/aggregate.ipynb` (`make run`) renders both."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, run


def _render(swecl_bin, tmp_path, out, *flags):
    "`swecl report` into `out` with `flags` (default: the report of an empty results folder); its run."
    (tmp_path / "results").mkdir(exist_ok=True)  # an empty results folder: the report without a model's results
    flags = flags or ("--results", str(tmp_path / "results"))
    r = run(swecl_bin, "report", *flags, "--out", str(out), "--json", str(tmp_path / "r.json"))
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def _render_both(swecl_bin, tmp_path, out):
    "The two reports as `make run` lays them out: the reproductions in `out/reproductions`, then the results report."
    _render(swecl_bin, tmp_path, out / "reproductions", "--reproductions", "--quick")
    return _render(swecl_bin, tmp_path, out)


def _body(index: Path) -> list:
    "The index without its 'Generated <time>' line."
    return [l for l in index.read_text().splitlines() if not l.startswith("Generated ")]


PAPERS = ["Dataset statistics (Table 1)", "Patch similarity (Section 4.1)", "SWE-ContextBench"]
KEPT = ["Recorded runs kept with swecl", "Published prompt-poisoning drift (Figure 2)"]


def test_report_holds_only_the_results(swecl_bin, data_dir, tmp_path):
    out = tmp_path / "reports"
    r = _render(swecl_bin, tmp_path, out)
    assert r.stdout == f"report written: {out / 'README.md'}\n"
    index = (out / "README.md").read_text()
    assert "## Agent results" in index and not [h for h in PAPERS + KEPT if f"## {h}" in index], index
    assert "Gemini 2.0 Flash" not in index and "table1_dataset_stats.md" not in index
    assert "`swecl report --reproductions --out <this folder>/reproductions` writes it" in index  # no link: none there
    j = json.loads((tmp_path / "r.json").read_text())
    assert j["index"] == str(out / "README.md")
    assert j["files"] == sorted(p.name for p in out.iterdir())
    assert not list(out.glob("*.ipynb"))  # no notebook is run


def test_reproductions_render_and_the_readmes_link_each_other(swecl_bin, data_dir, tmp_path):
    out = tmp_path / "reports"
    rep = out / "reproductions"
    r = _render(swecl_bin, tmp_path, rep, "--reproductions", "--quick")  # no results folder read
    assert r.stdout == f"report written: {rep / 'README.md'}\n"
    index = (rep / "README.md").read_text()
    assert index.startswith("# swecl reproductions\n") and "reproduces the papers' published figures" in index
    assert [l[3:] for l in index.splitlines() if l.startswith("## ")] == PAPERS + KEPT + ["Files"]
    assert "## Agent results" not in index and "Gemini 2.0 Flash, memory disabled" in index
    for link in ["table1_dataset_stats.md", "similarity_authors_pairs.png", "similarity_sampled_pairs.csv"]:
        assert link in index and (rep / link).exists(), link
    assert (rep / "similarity_authors_pairs.png").read_bytes()[:4] == b"\x89PNG"
    assert not (rep / "similarity_all_pairs.csv").exists()  # --quick
    assert "`swecl report --results R` writes it" in index  # the results report is not there yet
    _render(swecl_bin, tmp_path, out)
    assert "[reproductions/README.md](./reproductions/README.md)" in (out / "README.md").read_text()
    assert not [f for f in json.loads((tmp_path / "r.json").read_text())["files"] if f.startswith("reproductions")]
    _render(swecl_bin, tmp_path, rep, "--reproductions", "--quick")
    assert "The report of the results folder is [../README.md](./../README.md)." in (rep / "README.md").read_text()


def test_aggregate_notebook_renders_the_same(swecl_bin, data_dir, tmp_path):
    import papermill as pm  # the driver notebook's runner

    _render_both(swecl_bin, tmp_path, tmp_path / "reports")
    out = tmp_path / "pm"
    out.mkdir()
    pm.execute_notebook(
        str(ROOT / "nbs" / "aggregate.ipynb"),
        str(out / "aggregate.ipynb"),
        kernel_name="python3",
        progress_bar=False,
        parameters=dict(results=str(tmp_path / "results"), out=str(out), all_pairs=False),
        cwd=str(tmp_path),
    )
    assert (out / "aggregate.ipynb").exists()  # the executed notebook is kept beside the report
    assert _body(out / "README.md") == _body(tmp_path / "reports" / "README.md")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [p.name for p in (tmp_path / "reports").iterdir()] + ["aggregate.ipynb"]
    )
    # the reproductions the same, but that the driver links the results report it renders next (the CLI's came first)
    link = "The report of the results folder is [../README.md](./../README.md)."
    assert link in _body(out / "reproductions" / "README.md")
    other = lambda index: [l for l in _body(index) if not l.startswith("The report of ")]
    assert other(out / "reproductions" / "README.md") == other(tmp_path / "reports" / "reproductions" / "README.md")
    assert sorted(p.name for p in (out / "reproductions").iterdir()) == sorted(
        p.name for p in (tmp_path / "reports" / "reproductions").iterdir()
    )


# a click on the second column's header, then another: the rows' times in order each time, as the page's title
CLICKS = (
    '<script>var t = document.querySelector("table"), th = t.tHead.rows[0].cells[1];'
    'var col = () => [...t.tBodies[0].rows].map((r) => r.cells[1].textContent).join(",");'
    'th.click(); var up = col() + " " + th.getAttribute("aria-sort"); th.click();'
    'document.title = up + "|" + col() + " " + th.getAttribute("aria-sort");</script>'
)


def test_report_page_sorts_its_tables_in_a_browser(tmp_path):
    "In headless Chromium, a click on a header of the report page sorts its table by that column, times by their units; a second reverses it."
    chromium = shutil.which("chromium")
    if not chromium:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    from swecl.report.parts import Section
    from swecl.report.report import write_html, write_index

    rows = "".join(f"| {c} | {t} |\n" for c, t in zip("abcd", ["4.5 min", "12 s", "?", "2.3 h"]))
    page = write_html(write_index(tmp_path, [Section("Times", "| cell | time |\n|---|---|\n" + rows)]))
    head, tail = page.read_text().rsplit("</body>", 1)
    probe = tmp_path / "probe.html"
    probe.write_text(head + CLICKS + "</body>" + tail)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    r = subprocess.run(
        [chromium, *flags, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    title = re.search(r"<title>(.*?)</title>", r.stdout)
    assert title, r.stderr[-2000:]
    assert title.group(1) == "12 s,4.5 min,2.3 h,? ascending|2.3 h,4.5 min,12 s,? descending"
