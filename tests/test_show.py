"""End-to-end: `swecl run`'s progress (plain lines in a log, a bar in a terminal), `swecl show` on an attempt it wrote,
and `swecl report` linking every attempt's HTML page."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from pathlib import Path

import pytest
from conftest import ROOT, run

SCRIPT = str(ROOT / "swecl" / "data" / "scripts" / "mini.yaml")
RUN = ["run", "--model", f"scripted:{SCRIPT}", "--dataset", "mini", "--sequences", "textkit", "--conditions", "none"]
RUN += ["--seeds", "0", "--max-tasks", "2", "--schedule", "sequential"]


@pytest.fixture(scope="module")
def results(swecl_bin, tmp_path_factory):
    "A run's results folder and its stderr (not a terminal)."
    out = tmp_path_factory.mktemp("show") / "results"
    r = run(swecl_bin, *RUN, "--out", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    return out, r.stderr


def test_progress_in_a_log_is_plain_lines(results):
    _, err = results
    assert "\r" not in err  # no bar redrawn into a log
    lines = [line for line in err.splitlines() if "__none__s0: " in line]
    assert lines[0].endswith("first-i2-j2-s0 swecl-mini__textkit-2 failed: no patch"), lines
    assert re.search(r"__none__s0: 2/2 attempts, 1 resolved, cost \$0\.00, ETA ", lines[1]), lines
    assert len(lines) == 2, lines


def test_progress_in_a_terminal_is_a_bar(swecl_bin, tmp_path):
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a terminal 160 columns wide
    p = subprocess.Popen([swecl_bin, *RUN, "--out", str(tmp_path)], stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    chunks = []

    def drain():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # the terminal closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = p.communicate(timeout=600)
    reader.join(10)
    os.close(master)
    err = b"".join(chunks).decode(errors="replace")
    assert p.returncode == 0, err[-2000:]
    assert "\r" in err and "2/2" in err and "1 resolved, cost $0.00" in err, err[-2000:]
    assert "first-i2-j2-s0 swecl-mini__textkit-2 failed: no patch" in err


def test_show_an_attempt(swecl_bin, results):
    out, _ = results
    r = run(swecl_bin, "show", str(out), "first-i2-j2-s0")
    assert r.returncode == 0, r.stderr
    assert "NOT RESOLVED: no patch" in r.stdout and "(no patch)" in r.stdout and "tokens and cost by kind" in r.stdout
    traj = next(out.rglob("trajectories/first-i1-j1-s0.jsonl"))
    r = run(swecl_bin, "show", str(traj))
    assert r.returncode == 0 and "RESOLVED" in r.stdout and "final diff" in r.stdout, r.stderr
    bad = run(swecl_bin, "show", str(out), "first-i3-j3-s0")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "no attempt matches it" in bad.stderr


def test_report_links_every_attempt_page(swecl_bin, results, tmp_path):
    out, _ = results
    rep = tmp_path / "reports"
    r = run(swecl_bin, "report", "--results", str(out), "--out", str(rep))
    assert r.returncode == 0, r.stderr[-2000:]
    readme = (rep / "README.md").read_text()
    assert "## Trajectories" in readme and "(./trajectories/index.html)" in readme
    index = (rep / "trajectories" / "index.html").read_text()
    back, *pages = re.findall(r'href="([^"]+\.html)"', index)  # back to the report's index.html, then the pages
    assert (rep / "trajectories" / back).resolve() == (rep / "index.html").resolve() and (rep / "index.html").is_file()
    assert sorted(Path(p).name for p in pages) == ["first-i1-j1-s0.html", "first-i2-j2-s0.html"]
    for p in pages:
        html = (rep / "trajectories" / p).read_text()
        assert "<script" not in html and "swecl-mini__textkit-" in html
