#!/usr/bin/env python
"""Structure facts of the package, measured from the code: the folder order of the role packages and the import graph
(cycles, imports against the folder order, star imports, private names taken across modules, imports made inside
functions), the arrows between folders, the notebooks' shape (mean and longest exported cell, notebook test lines per
exported line), and where settings are parsed (`ModelSpec.parse` call sites outside tests).

Usage: python scripts/structure.py [--json PATH] [--per-notebook]   (exit 1 when a rule is broken)
"""

import argparse
import ast
import json
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "swecl"
# The folder order (bottom first): a module may import from its own folder and from folders before it, never after.
FOLDERS = [
    "base",  # paths, caches, atomic writes; the task record
    "models",  # model backends, prices, the local LLM server
    "metrics",  # attempt records and the metrics computed from them
    "pool",  # SWE-ContextBench's experience pool rebuilt from its sessions
    "tasks",  # datasets, curriculum, links, spec versions, similarity, mirrors
    "envs",  # Python environments for a task's repository
    "sandbox",  # isolation, bubblewrap and Docker sandboxes
    "grading",  # patch to verdict, validation, re-grading
    "agent",  # tools, replies, the agent loop, single shot
    "memory",  # experiences, embeddings, the FAISS store, retrieval
    "agents",  # the agents researchers study, installed and run in the sandbox
    "runs",  # plans, the runner, studies, transfer, poisoning, estimates
    "report",  # report sections and trajectory pages
    "cli",  # the command line
]
# Each rule is a list of violations; the structure holds when all are empty.
RULES = (
    "cycles",
    "folder_cycles",
    "against_folder_order",
    "unfoldered",
    "init_outside_folder",
    "star_imports",
    "private_cross_module",
    "function_level_imports",
)


def modules():
    "Every module of the package as `folder.module` (a package's `__init__` as `folder.__init__`)."
    skip = {PKG / "__init__.py", PKG / "_modidx.py"}  # the version, and nbdev's index
    return sorted(p for p in PKG.rglob("*.py") if p.relative_to(PKG).parts[0] != "data" and p not in skip)


def dotted(path: Path) -> str:
    return ".".join(path.relative_to(PKG).with_suffix("").parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str | None:
    "The swecl module an import names, as `folder.module`, or None when it is not swecl's."
    mod = node.module or ""
    if node.level:
        base = path.relative_to(PKG).parent.parts
        base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
        return ".".join([*base, *([mod] if mod else [])])
    if mod == "swecl" or mod.startswith("swecl."):
        return mod[len("swecl.") :] if mod != "swecl" else ""
    return None


def internal_imports(path: Path):
    "(target module, names, inside_function, star) for each import of a swecl module; `from pkg import mod` names mod."
    tree = ast.parse(path.read_text())
    out = []

    def visit(node, in_fn):
        for ch in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(ch, ast.ImportFrom):
                target = _resolve(path, ch)
                if target is not None:
                    names = [a.name for a in ch.names]
                    subs = [n for n in names if (PKG / Path(*target.split(".")) / f"{n}.py").exists()] if target else []
                    for n in subs:
                        out.append((f"{target}.{n}" if target else n, [], in_fn, False))
                    rest = [n for n in names if n not in subs and n != "__version__"]
                    if rest and target:
                        out.append((target, rest, in_fn, names == ["*"]))
            elif isinstance(ch, ast.Import):
                for a in ch.names:
                    if a.name.startswith("swecl."):
                        out.append((a.name[len("swecl.") :], [], in_fn, False))
            visit(ch, fn)

    visit(tree, False)
    return out


def folder_of(module: str) -> str:
    return module.split(".")[0]


def cycles(graph):
    "Strongly connected components with more than one node (Tarjan)."
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def _cell_lines(cell) -> tuple[list, list]:
    lines = [l for l in "".join(cell["source"]).split("\n") if l.strip()]
    return [l for l in lines if l.startswith("#|")], [l for l in lines if not l.startswith("#|")]


def notebook_shape():
    "Exported-cell lengths and test lines, over every notebook that exports a module."
    sizes, tests, per_nb = [], 0, {}
    for nb_path in sorted((ROOT / "nbs").rglob("*.ipynb")):
        nb = json.loads(nb_path.read_text())
        code = [_cell_lines(c) for c in nb["cells"] if c["cell_type"] == "code"]
        if not any("default_exp" in d for ds, _ in code for d in ds):
            continue
        exp = [len(b) for ds, b in code if any(d.split()[1:2] in (["export"], ["exports"]) for d in ds)]
        t = sum(
            len(b)
            for ds, b in code
            if not ds
            or not any(
                d.split()[1:2] in (["export"], ["exports"]) or "default_exp" in d or d.strip() == "#| hide" for d in ds
            )
        )
        name = nb_path.relative_to(ROOT / "nbs").as_posix()
        per_nb[name] = {
            "exported_lines": sum(exp),
            "exported_cells": len(exp),
            "longest_cell": max(exp, default=0),
            "test_lines": t,
            "mean_cell": round(sum(exp) / len(exp), 1) if exp else 0,
        }
        sizes += exp
        tests += t
    return {
        "mean_exported_cell_lines": round(sum(sizes) / max(len(sizes), 1), 1),
        "longest_exported_cell_lines": max(sizes, default=0),
        "exported_cells_over_25_lines": sum(s > 25 for s in sizes),
        "test_lines_per_exported_line": round(tests / max(sum(sizes), 1), 2),
        "exported_lines": sum(sizes),
        "exported_cells": len(sizes),
        "test_lines": tests,
    }, per_nb


def call_sites(attr: str, owner: str) -> list:
    "Where `owner.attr(...)` is called in the package's code (tests are notebook cells, not exported, so not here)."
    out = []
    for p in modules():
        for node in ast.walk(ast.parse(p.read_text())):
            f = getattr(node, "func", None)
            if isinstance(f, ast.Attribute) and f.attr == attr and getattr(f.value, "id", None) == owner:
                out.append(f"{dotted(p)}:{node.lineno}")
    return out


LABEL_KEYS = ("infra_reason", "reason", "label")


def _label_place(node) -> bool:
    'Whether `node` is where a label is read: `.infra_reason`, `.reason`, `.label`, `["infra_reason"]`, `.get("label")`.'
    if isinstance(node, ast.Attribute):
        return node.attr in LABEL_KEYS
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in LABEL_KEYS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        return isinstance(node.args[0], ast.Constant) and node.args[0].value in LABEL_KEYS
    return False


def _strings(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _strings(e)


def _label_slots(n):
    "The expressions of `n` that hold a label: a labelling call's label argument, a comparison with a label, a default."
    if isinstance(n, ast.Call):
        name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
        if (name == "mark_infra" or name.endswith("Error")) and len(n.args) > 1:
            yield n.args[1]
        yield from (k.value for k in n.keywords if k.arg in LABEL_KEYS)
    elif isinstance(n, ast.Compare) and any(_label_place(x) for x in [n.left, *n.comparators]):
        yield from [n.left, *n.comparators]
    elif isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "default_reason" for t in n.targets):
        yield n.value
    elif isinstance(n, ast.Dict):
        yield from (v for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and k.value in LABEL_KEYS)


def bare_labels() -> list:
    "Label names written as string literals where a label is given or compared: each should be `Label.<NAME>`."
    names = {r["name"] for r in yaml.safe_load((ROOT / "swecl" / "data" / "labels.yaml").read_text())}
    out = []
    for p in modules():
        for n in ast.walk(ast.parse(p.read_text())):
            for slot in _label_slots(n):
                out += [f"{dotted(p)}:{s.lineno} {s.value}" for s in _strings(slot) if s.value in names]
    return sorted(set(out))


def measure():
    facts = {k: [] for k in RULES}
    graph, arrows = {}, Counter()
    for p in modules():
        m = dotted(p)
        graph.setdefault(m, set())
        fm = folder_of(m)
        if len(p.relative_to(PKG).parts) != 2 or fm not in FOLDERS:
            facts["unfoldered"].append(m)
        for target, names, in_fn, star in internal_imports(p):
            if target == m or target == fm:
                continue
            graph[m].add(target)
            ft = folder_of(target)
            if star and p.stem != "__init__":  # a package takes in its own modules' names
                facts["star_imports"].append(f"{m} <- {target}")
            for nm in names:
                if nm.startswith("_"):
                    facts["private_cross_module"].append(f"{m} <- {target}.{nm}")
            if in_fn:
                facts["function_level_imports"].append(f"{m} <- {target}")
            if p.stem == "__init__" and ft != fm and target != "base.lazy":  # the lazy lookup is machinery
                facts["init_outside_folder"].append(f"{m} -> {target}")
            if ft != fm:
                arrows[(fm, ft)] += 1
                if fm in FOLDERS and ft in FOLDERS and FOLDERS.index(ft) > FOLDERS.index(fm):
                    facts["against_folder_order"].append(f"{m} ({fm}) -> {target} ({ft})")
    facts["cycles"] = cycles(graph)
    folder_graph = {}
    for a, b in arrows:
        folder_graph.setdefault(a, set()).add(b)
    facts["folder_cycles"] = cycles(folder_graph)
    facts["modules"] = sum(1 for m in graph if not m.endswith("__init__"))
    facts["folders"] = len({folder_of(m) for m in graph})
    facts["internal_imports"] = sum(len(v) for v in graph.values())
    facts["folder_arrows"] = {f"{a} -> {b}": n for (a, b), n in sorted(arrows.items())}
    facts["model_spec_parse_sites"] = call_sites("parse", "ModelSpec")
    facts["bare_labels"] = bare_labels()
    shape, per_nb = notebook_shape()
    return facts, shape, per_nb


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json")
    ap.add_argument("--per-notebook", action="store_true")
    ap.add_argument("--arrows", action="store_true", help="print the import count between each pair of folders")
    a = ap.parse_args()
    facts, shape, per_nb = measure()
    print("folder order (bottom first): " + " < ".join(FOLDERS))
    for k in RULES:
        v = facts[k]
        print(f"{k}: {len(v)}" + (f"  ({'; '.join(map(str, v))})" if v else ""))
    print(
        f"folders: {facts['folders']}, modules: {facts['modules']}, internal import edges: {facts['internal_imports']}, "
        f"arrows between folders: {len(facts['folder_arrows'])} pairs, {sum(facts['folder_arrows'].values())} imports"
    )
    if a.arrows:
        for k, n in facts["folder_arrows"].items():
            print(f"  {k}: {n}")
    sites = facts["model_spec_parse_sites"]
    print(f"ModelSpec.parse call sites: {len(sites)}" + (f"  ({', '.join(sites)})" if sites else ""))
    bare = facts["bare_labels"]
    print(f"bare label strings outside the label table: {len(bare)}" + (f"  ({'; '.join(bare)})" if bare else ""))
    print(
        f"notebooks: mean exported cell {shape['mean_exported_cell_lines']} lines, longest "
        f"{shape['longest_exported_cell_lines']}, {shape['exported_cells_over_25_lines']} over 25 lines, "
        f"test lines per exported line {shape['test_lines_per_exported_line']}"
    )
    if a.per_notebook:
        for k, v in per_nb.items():
            print(f"  {k:36} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps({"facts": facts, "notebooks": shape, "per_notebook": per_nb}, indent=1))
    return 1 if any(facts[k] for k in RULES) else 0


if __name__ == "__main__":
    sys.exit(main())
