"""Package data names no folder of the machine it was made on (the gradable sets, the re-gradings, the pool's
outcomes): evidence copied from logs goes through `swecl.base.portable.machine_free` before it is kept."""

import json
import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "swecl" / "data"
MACHINE_PATH = re.compile(r"(?<![\w.$~])/(?:work|root|home|Users|check|tmp)/[\w.+-]+")
KEPT = sorted(p for p in DATA.rglob("*") if p.suffix in (".json", ".yaml", ".jsonl") and p.is_file())


def test_there_is_package_data_to_check():
    assert any(p.parent.name == "gradable" for p in KEPT) and any(p.parent.name == "regrade" for p in KEPT)


def without_statuses(value):
    "`value` without its `statuses` tables: their keys are the dataset's own test ids, never a folder of this machine."
    if isinstance(value, dict):
        return {k: without_statuses(v) for k, v in value.items() if k != "statuses"}
    return [without_statuses(v) for v in value] if isinstance(value, list) else value


def kept_text(path: Path) -> str:
    "The text of a package file as the check reads it (a JSON file without its tests' status tables)."
    text = path.read_text(errors="replace")
    return json.dumps(without_statuses(json.loads(text))) if path.suffix == ".json" else text


@pytest.mark.parametrize("path", KEPT, ids=lambda p: str(p.relative_to(DATA)))
def test_package_data_names_no_machine_folder(path):
    found = sorted(set(MACHINE_PATH.findall(kept_text(path))))
    assert not found, f"{path.relative_to(DATA)} names this machine's folders: {found[:5]}"


def test_the_pattern_finds_what_it_should():
    # the control: each of these was once in package data
    once = ("not in /work/.mirror/swe-bench+django__django/repo", 'File "/root/.pyenv/versions/3.9.18/x.py"')
    for text in (*once, "Installing --no-deps /tmp/tmph2sqqdgc failed"):
        assert MACHINE_PATH.search(text), text
    for text in (
        "not in $SWECL_REPO_MIRROR/django/repo",
        'File "~/.pyenv/x.py"',
        "django/core/work/x.py",
        "$TMPDIR/tmph2sqqdgc",
    ):
        assert not MACHINE_PATH.search(text), text


def test_only_test_ids_are_left_out(tmp_path):
    # pytest's own tests are parametrised with folders (`[/tmp/pycs-d:/projects/src/foo.py-c:/tmp/pycs/]`): a test id
    # is the dataset's, so the status table is not read; a folder in the evidence beside it still is
    rec = {"statuses": {"t.py::test_cache[/tmp/pycs-d:/projects/src/foo.py]": "PASSED"}, "evidence": "in /tmp/tmpab12"}
    (tmp_path / "r.json").write_text(json.dumps({"records": [rec]}))
    test_id, evidence = "/tmp/pycs-d", "/tmp/tmpab12"
    text = kept_text(tmp_path / "r.json")
    assert MACHINE_PATH.search(evidence) and MACHINE_PATH.search(test_id) and evidence in text and test_id not in text
