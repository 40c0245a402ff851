"""The report: `swecl report` renders it in plain Python, and the papermill driver `nbs/aggregate.ipynb` renders the same."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, run


def _render(swecl_bin, tmp_path, out):
    (tmp_path / "results").mkdir(exist_ok=True)  # an empty results folder: the report without a model's results
    r = run(
        swecl_bin,
        "report",
        "--results",
        str(tmp_path / "results"),
        "--out",
        str(out),
        "--quick",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def _body(index: Path) -> list:
    "The index without its 'Generated <time>' line."
    return [l for l in index.read_text().splitlines() if not l.startswith("Generated ")]


def test_report_renders(swecl_bin, data_dir, tmp_path):
    out = tmp_path / "reports"
    r = _render(swecl_bin, tmp_path, out)
    assert r.stdout == f"report written: {out / 'README.md'}\n"
    index = (out / "README.md").read_text()
    assert "Dataset statistics (Table 1)" in index and "Patch similarity" in index
    for link in ["table1_dataset_stats.md", "similarity_authors_pairs.png", "similarity_sampled_pairs.csv"]:
        assert link in index and (out / link).exists(), link
    assert (out / "similarity_authors_pairs.png").read_bytes()[:4] == b"\x89PNG"
    j = json.loads((tmp_path / "r.json").read_text())
    assert j["index"] == str(out / "README.md")
    assert j["files"] == sorted(p.name for p in out.iterdir())
    assert not list(out.glob("*.ipynb"))  # no notebook is run


def test_aggregate_notebook_renders_the_same(swecl_bin, data_dir, tmp_path):
    import papermill as pm  # the driver notebook's runner

    _render(swecl_bin, tmp_path, tmp_path / "reports")
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
