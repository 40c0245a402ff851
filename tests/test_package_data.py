"""Package data names no folder of the machine it was made on (the gradable sets, the re-gradings, the pool's
outcomes): evidence copied from logs goes through `swecl.base.portable.machine_free` before it is kept."""

import re
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "swecl" / "data"
MACHINE_PATH = re.compile(r"(?<![\w.$~])/(?:work|root|home|Users|check|tmp)/[\w.+-]+")
KEPT = sorted(p for p in DATA.rglob("*") if p.suffix in (".json", ".yaml", ".jsonl") and p.is_file())


def test_there_is_package_data_to_check():
    assert any(p.parent.name == "gradable" for p in KEPT) and any(p.parent.name == "regrade" for p in KEPT)


@pytest.mark.parametrize("path", KEPT, ids=lambda p: str(p.relative_to(DATA)))
def test_package_data_names_no_machine_folder(path):
    found = sorted(set(MACHINE_PATH.findall(path.read_text(errors="replace"))))
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
