import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLAGS = set(os.environ.get("SWECL_TEST_FLAGS", "").split())
_SETTINGS = configparser.ConfigParser(delimiters=["="])
_SETTINGS.read(ROOT / "settings.ini")
# the notebooks' flags (thorough among them), and docs: the docs site built as `make docs` builds it (CI runs both)
FLAG_NAMES = (*_SETTINGS["DEFAULT"]["tst_flags"].split(), "docs")


def first_by_default(values):
    "Parameters for a family of attack variants: the first runs in every `make test`, the rest under the thorough flag."
    return [v if i == 0 else pytest.param(v, marks=pytest.mark.thorough) for i, v in enumerate(values)]


def pytest_collection_modifyitems(config, items):
    # Same flags as the notebooks: marked tests run only when their flag is forced.
    for item in items:
        for flag in FLAG_NAMES:
            if flag in item.keywords and flag not in FLAGS:
                item.add_marker(pytest.mark.skip(reason=f"flag {flag!r} not requested (run with --flags {flag})"))


def pytest_configure(config):
    for flag in FLAG_NAMES:
        config.addinivalue_line("markers", f"{flag}: skipped unless the {flag} test flag is given")


@pytest.fixture(scope="session")
def swecl_bin():
    exe = Path(sys.executable).parent / "swecl"
    assert exe.exists(), "the swecl console script is not installed in this environment; run make test"
    return str(exe)


@pytest.fixture(scope="session")
def data_dir():
    d = os.environ.get("SWECL_DATA_DIR")
    if not d or not Path(d, "swe-bench-verified.jsonl").exists():
        pytest.skip("SWECL_DATA_DIR with the offline datasets is not set")
    return Path(d)


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)
