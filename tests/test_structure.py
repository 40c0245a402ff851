"""The package's structure rules, measured from the code by scripts/structure.py: a one-way import graph in the
designed layer order, no star imports, no private names across modules, imports at module top, small modules, and
notebooks whose exported cells are short and followed by tests."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
structure = importlib.util.module_from_spec(spec)
sys.modules["structure"] = structure
spec.loader.exec_module(structure)

FACTS, SHAPE, PER_NB = structure.measure()


def test_import_graph_is_one_way():
    assert FACTS["cycles"] == []
    assert FACTS["against_layers"] == []
    assert FACTS["unlayered"] == []


def test_imports_are_explicit_and_public():
    assert FACTS["star_imports"] == []
    assert FACTS["private_cross_module"] == []
    assert FACTS["function_level_imports"] == []


def test_modules_are_small():
    assert FACTS["over_400_lines"] == []


def test_notebooks_read_as_documentation():
    assert SHAPE["mean_exported_cell_lines"] < 15, SHAPE
    assert SHAPE["test_lines_per_exported_line"] >= 0.6, SHAPE


def test_the_checker_sees_violations(tmp_path):
    # the measure must be able to fail: a cycle and a star import in a throw-away package
    (tmp_path / "a.py").write_text("from .b import *\n")
    (tmp_path / "b.py").write_text("def f():\n    from .a import x\n")
    edges = {p.stem: structure.internal_imports(p) for p in tmp_path.glob("*.py")}
    assert edges["a"] == [("b", ["*"], False, True)]
    assert edges["b"] == [("a", ["x"], True, False)]
    assert structure.cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
