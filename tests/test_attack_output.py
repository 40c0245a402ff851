"""Safe output (issue 31, family 6): ids, names and trajectory text from files anyone can write reach the report's
markdown and HTML escaped and the terminal without control characters; links are relative paths, never a folder name
read as a URL; `report` and `show` never follow a symlink out of the folder they read, nor write through a symlinked
`--out`; and the machine's limits (a full device, an allocation too large, a hard `ulimit -v`) end in one sentence
and exit status 2, never a traceback. Every test runs the real CLI as a subprocess."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPT = str(ROOT / "swecl" / "data" / "scripts" / "mini.yaml")
RUN = ["run", "--model", f"scripted:{SCRIPT}", "--dataset", "mini", "--sequences", "textkit", "--conditions", "none"]
RUN += ["--seeds", "0", "--max-tasks", "2", "--schedule", "sequential"]
EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)"> [x](javascript:alert(3)) \x1b[2J\x1b]8;;https://evil\x1b\\ok'
EVIL_FOLDER = "javascript:alert(1)"
ESCAPES = ("\x1b", "\x9b", "\x07")


def swecl(*args, timeout=300, env=None):
    "`python -m swecl.cli ARGS` as a subprocess: (exit status, stdout, stderr)."
    env = os.environ | {"SWECL_DATA_DIR": os.environ.get("SWECL_DATA_DIR", "")} | (env or {})
    r = subprocess.run([sys.executable, "-m", "swecl.cli", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=ROOT)  # fmt: skip
    return r.returncode, r.stdout, r.stderr


def one_sentence(err: str) -> bool:
    "A single line naming the command, with no traceback."
    return err.count("\n") == 1 and err.startswith("swecl") and "Traceback" not in err


def rewrite_jsonl(path: Path, change) -> None:
    "Every record of a JSON-lines file through `change` (which edits it in place)."
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in recs:
        change(r)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    "A scripted run's results folder on two mini tasks."
    out = tmp_path_factory.mktemp("attack") / "results"
    rc, _, err = swecl(*RUN, "--out", out)
    assert rc == 0, err[-2000:]
    return out


@pytest.fixture(scope="module")
def hostile(results, tmp_path_factory):
    "The run with hostile text everywhere: cell folder `javascript:alert(1)`, instance ids, experiment, step text, a note."
    res = tmp_path_factory.mktemp("hostile") / "results"
    shutil.copytree(results, res)
    cell = next(res.glob("*/*/attempts.jsonl")).parent
    cell = cell.rename(cell.parent / EVIL_FOLDER)
    rewrite_jsonl(cell / "attempts.jsonl", lambda r: r.update(instance_id=r["instance_id"] + EVIL))
    m = json.loads((cell / "manifest.json").read_text())
    m["config"]["experiment"] = EVIL
    (cell / "manifest.json").write_text(json.dumps(m))
    rewrite_jsonl(cell / "trajectories" / "first-i1-j1-s0.jsonl", lambda r: r.get("reply", {}).update(text=EVIL))
    (cell.parent / "no_model.txt").write_text(EVIL + "\n")
    return res


@pytest.fixture(scope="module")
def report(hostile, tmp_path_factory):
    "The report of the hostile results: (exit status, stderr, report folder)."
    out = tmp_path_factory.mktemp("report") / "reports"
    rc, _, err = swecl("report", "--results", hostile, "--out", out)
    return rc, err, out


def test_control_the_hostile_results_really_hold_the_dangerous_bytes(hostile):
    raw = "".join(p.read_text() for p in hostile.rglob("*.json*")) + next(hostile.rglob("no_model.txt")).read_text()
    assert "<script>" in raw and "\\u001b[2J" in raw and "](javascript:" in raw and "\x1b" in raw
    assert (hostile / "mini" / EVIL_FOLDER / "attempts.jsonl").is_file()


def test_report_markdown_has_no_raw_html(report):
    rc, err, out = report
    assert rc == 0, err[-2000:]
    md = (out / "README.md").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md  # the note and the experiment are shown, escaped
    assert "<script" not in md and "<img" not in md


def test_report_markdown_has_no_terminal_escapes(report):
    _, _, out = report
    for f in out.rglob("*.md"):
        text = f.read_text()
        assert not any(c in text for c in ESCAPES), f


def test_report_markdown_has_no_injected_link(report):
    _, _, out = report
    md = (out / "README.md").read_text()
    assert not re.search(r"(?<!\\)\]\(javascript:", md)  # `](` from the text is escaped: no link is closed
    targets = re.findall(r"(?<!\\)\]\(([^)\s]*)\)", md)
    assert targets and not [t for t in targets if re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)], targets  # no scheme
    assert "](./trajectories/index.html)" in md


def test_trajectory_pages_escape_ids_and_text(report):
    _, _, out = report
    pages = list((out / "trajectories").rglob("*.html"))
    assert len(pages) == 3  # the index and two attempts
    for p in pages:
        html = p.read_text()
        assert "<script" not in html and "<img" not in html and not any(c in html for c in ESCAPES), p
    first = next(p for p in pages if p.name == "first-i1-j1-s0.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in first  # the step's text and the id, shown as text


def test_a_folder_named_javascript_is_a_relative_link(report):
    _, _, out = report
    index = (out / "trajectories" / "index.html").read_text()
    back, *hrefs = re.findall(r'href="([^"]*)"', index)  # the link back to the report, then one per page
    assert back == "../index.html" and (out / "index.html").is_file(), back
    assert len(hrefs) == 2 and all(h.startswith("./mini/javascript%3Aalert%281%29/") for h in hrefs), hrefs
    assert not any(h.lower().startswith("javascript:") for h in hrefs)
    md = (out / "README.md").read_text()
    assert "(./trajectories/index.html#mini%2Fjavascript%3Aalert%281%29)" in md


def test_report_refuses_a_symlink_out_of_the_results(results, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN\n")
    res = tmp_path / "results"
    shutil.copytree(results, res)
    (res / "mini" / "no_model.txt").symlink_to(secret)
    rc, out, err = swecl("report", "--results", res, "--out", tmp_path / "rep")
    assert rc == 2 and out == "" and one_sentence(err), err
    assert "no_model.txt is a symlink to" in err and "outside the results folder" in err
    assert not (tmp_path / "rep").exists()


def test_show_refuses_a_symlink_out_of_the_results(results, tmp_path):
    res = tmp_path / "results"
    shutil.copytree(results, res)
    traj = next(res.rglob("trajectories"))
    shutil.move(traj, tmp_path / "outside")
    traj.symlink_to(tmp_path / "outside")  # the steps now live outside the results folder
    for args in (["first-i1-j1-s0"], ["--list"]):
        rc, out, err = swecl("show", res, *args)
        assert rc == 2 and out == "" and one_sentence(err), (args, err)
        assert "trajectories is a symlink to" in err


def test_report_refuses_a_symlinked_out(results, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "out").symlink_to(target)
    rc, out, err = swecl("report", "--results", results, "--out", tmp_path / "out")
    assert rc == 2 and out == "" and one_sentence(err), err
    assert "is a symlink" in err and list(target.iterdir()) == []  # nothing written through it


def test_report_out_dev_null(results):
    rc, out, err = swecl("report", "--results", results, "--out", "/dev/null")
    assert rc == 2 and out == "" and one_sentence(err), err
    assert "--out /dev/null is not a folder" in err


def test_show_strips_escapes_from_ids_and_text(hostile):
    rc, out, err = swecl("show", hostile, "first-i1-j1-s0")
    assert rc == 0, err
    assert not any(c in out for c in ESCAPES) and "[x](javascript:alert(3))" in out  # the text, minus the escapes
    rc, out, err = swecl("show", hostile, "--list")
    assert rc == 0 and "javascript:alert(1)" in out and not any(c in out for c in ESCAPES), err


def test_list_instances_strips_control_characters(tmp_path):
    row = dict(repo="swecl-mini/textkit", base_commit="0" * 40, created_at="2024-01-01T00:00:00Z")
    row |= dict(problem_statement="p", patch="diff", test_patch="diff", FAIL_TO_PASS=["t"], PASS_TO_PASS=[])
    ids = ["evil\x1b[2J\x1b]8;;https://x\x1b\\id", "bell\x07\x9b31m\rid"]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(row | {"instance_id": i}) + "\n" for i in ids))
    assert "\\u001b" in (tmp_path / "d.jsonl").read_text()  # the control: the file holds the escapes
    rc, out, err = swecl("list", "instances", "--dataset", tmp_path / "d.jsonl")
    assert rc == 0, err
    assert not any(c in out for c in (*ESCAPES, "\r")) and out.split() == [
        "evilid",
        "swecl-mini/textkit",
        "bell31mid",
        "swecl-mini/textkit",
    ]


def test_solve_trajectory_on_a_full_device():
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    rc, out, err = swecl("solve", "--instance", "swecl-mini__textkit-1", "--trajectory", "/dev/full")
    assert rc == 2 and one_sentence(err), err
    assert "No space left on device" in err


def test_bench_memory_with_an_absurd_size():
    rc, out, err = swecl("bench", "memory", "--sizes", "100000000000", timeout=120)
    assert rc == 2 and out == "" and one_sentence(err), err
    assert "is above 1,000,000 vectors" in err


def test_a_hard_memory_limit_ends_in_no_traceback():
    cmd = f"ulimit -v 3000000; exec {sys.executable} -m swecl.cli solve --instance swecl-mini__textkit-1"
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.returncode in (0, 2), r.stderr[-2000:]
    if r.returncode == 2:  # e.g. the sandbox cannot start its commands under the limit
        assert one_sentence(r.stderr), r.stderr
