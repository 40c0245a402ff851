"""The package's structure rules, measured from the code by scripts/structure.py: role packages in one folder order
with a one-way import graph, no star imports, no private names across modules, imports at module top, package
`__init__`s that export their own modules' names only, and notebooks whose exported cells are short and followed by
tests."""

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
    assert FACTS["cycles"] == [] and FACTS["folder_cycles"] == []
    assert FACTS["against_folder_order"] == []
    assert FACTS["unfoldered"] == [] and FACTS["init_outside_folder"] == []
    assert set(structure.FOLDERS) == {p.name for p in structure.PKG.iterdir() if (p / "__init__.py").exists()} - {
        "data"
    }


def test_imports_are_explicit_and_public():
    assert FACTS["star_imports"] == []
    assert FACTS["private_cross_module"] == []
    assert FACTS["function_level_imports"] == []


def test_notebooks_read_as_documentation():
    assert SHAPE["mean_exported_cell_lines"] <= 10, SHAPE
    assert SHAPE["longest_exported_cell_lines"] <= 40, SHAPE
    assert SHAPE["test_lines_per_exported_line"] >= 0.6, SHAPE


def test_settings_are_parsed_in_one_place_and_labels_named():
    # a model string is parsed by `model_spec` only; a label is `Label.<NAME>`, never a bare string, where one is given
    assert FACTS["model_spec_parse_sites"] == ["models.model_base:" + FACTS["model_spec_parse_sites"][0].split(":")[1]]
    assert FACTS["bare_labels"] == []


def test_the_checker_sees_violations(tmp_path, monkeypatch):
    # the measure must be able to fail: a star import, an import inside a function, a relative import that climbs to
    # another folder, a cycle, and a folder importing one later in the order, in a throw-away package
    pkg = tmp_path / "swecl"
    for f in ("base", "cli"):
        (pkg / f).mkdir(parents=True)
        (pkg / f / "__init__.py").write_text("")
    (pkg / "base" / "a.py").write_text("from .b import *\nfrom ..cli import c\n")
    (pkg / "base" / "b.py").write_text("def f():\n    from swecl.base.a import x\n")
    (pkg / "cli" / "c.py").write_text('from ..base.b import _private\nmark_infra(g, "timeout", "too slow")\n')
    monkeypatch.setattr(structure, "PKG", pkg)
    edges = {structure.dotted(p): structure.internal_imports(p) for p in pkg.rglob("*.py")}
    assert edges["base.a"] == [("base.b", ["*"], False, True), ("cli.c", [], False, False)]
    assert edges["base.b"] == [("base.a", ["x"], True, False)]
    assert edges["cli.c"] == [("base.b", ["_private"], False, False)]
    assert structure.cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    monkeypatch.setattr(structure, "notebook_shape", lambda: ({}, {}))
    facts, _, _ = structure.measure()
    assert facts["against_folder_order"] == ["base.a (base) -> cli.c (cli)"]
    assert facts["folder_cycles"] == [["base", "cli"]] and facts["cycles"] == [["base.a", "base.b", "cli.c"]]
    assert facts["star_imports"] and facts["function_level_imports"] and facts["private_cross_module"]
    assert facts["bare_labels"] == ["cli.c:2 timeout"]
