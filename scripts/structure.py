#!/usr/bin/env python
"""Structure facts of the package, measured from the code: the internal import graph (cycles, imports against the layer
order, star imports, private names taken across modules, imports made inside functions), module sizes, and the notebooks'
shape (mean exported-cell length, notebook test lines per exported line).

Usage: python scripts/structure.py [--json PATH]   (exit 1 when a rule is broken)
"""

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "swecl"
# The layer order (bottom first): a module may import only from strictly lower layers.
LAYERS = [
    ["core"],
    [
        "schema",
        "repos",
        "model_base",
        "isolation",
        "compat_shim",
        "venvs",
        "attempts",
        "shellparse",
        "pool_edits",
        "pool_outcomes",
        "embcache",
    ],
    [
        "models",
        "links",
        "metrics",
        "tools",
        "mini",
        "curriculum",
        "experience",
        "requirements",
        "pins",
        "specversion",
        "compat",
        "similarity",
        "guard",
        "evidence",
        "condaenv",
        "builds",
        "pool_bash",
        "pool_session",
        "testids",
        "directives",
        "progress",
        "local_llm",
    ],
    ["project", "pool_effects", "replies", "envpython"],
    ["datasets", "envs", "memory", "pool_replay"],
    ["envcache", "sandbox", "retrieval", "plans", "pool_check"],
    ["grading", "docker_sandbox"],
    ["sandboxes", "bench"],
    ["gradecache"],
    ["validation", "regrade", "agent", "single_shot", "images"],
    ["studies"],
    ["poisoning", "runner"],
    ["transfer"],
    ["report_parts", "estimate", "trajectory"],
    ["report_results", "trajectory_html"],
    ["report_transfer", "report_pipeline", "report_contextbench"],
    ["report"],
    ["cli_base"],
    ["cli_data", "cli_tasks", "cli_runs"],
    ["cli_regrade", "cli_images", "cli_bench"],
    ["cli"],
]
# swecl imports must sit at module top; lazy imports of optional heavy dependencies are not internal, so not counted.
MAX_MODULE_LINES = 400
# Each rule is a list of violations; the structure holds when all are empty.
RULES = (
    "cycles",
    "against_layers",
    "star_imports",
    "private_cross_module",
    "function_level_imports",
    "over_400_lines",
    "unlayered",
)


def modules():
    return sorted(p for p in PKG.glob("*.py") if not p.name.startswith("_"))


def internal_imports(path):
    "(target module, names, inside_function, star) for each import of a swecl module."
    tree = ast.parse(path.read_text())
    out = []

    def visit(node, in_fn):
        for ch in ast.iter_child_nodes(node):
            fn = in_fn or isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(ch, ast.ImportFrom):
                mod = ch.module or ""
                if ch.level == 1 or mod == "swecl" or mod.startswith("swecl."):
                    base = mod[len("swecl.") :] if mod.startswith("swecl.") else ("" if mod == "swecl" else mod)
                    names = [a.name for a in ch.names]
                    if base == "":
                        for n in names:
                            if n != "__version__":
                                out.append((n, [], in_fn, False))
                    else:
                        out.append((base.split(".")[0], names, in_fn, names == ["*"]))
            elif isinstance(ch, ast.Import):
                for a in ch.names:
                    if a.name.startswith("swecl."):
                        out.append((a.name.split(".")[1], [], in_fn, False))
            visit(ch, fn)

    visit(tree, False)
    return out


def layer_of(name):
    for i, layer in enumerate(LAYERS):
        if name in layer:
            return i
    return None


def cycles(graph):
    "Strongly connected components with more than one module (Tarjan)."
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


def notebook_shape():
    exported = cells = tests = 0
    per_nb = {}
    for nb_path in sorted((ROOT / "nbs").glob("[0-9]*.ipynb")):
        nb = json.loads(nb_path.read_text())
        e = c = t = 0
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            lines = [l for l in "".join(cell["source"]).split("\n") if l.strip()]
            directives = [l for l in lines if l.startswith("#|")]
            body = [l for l in lines if not l.startswith("#|")]
            if any(d.split()[1:2] in (["export"], ["exports"]) for d in directives):
                e += len(body)
                c += 1
            elif not any("default_exp" in d or d.strip() == "#| hide" for d in directives):
                t += len(body)
        per_nb[nb_path.stem] = {
            "exported_lines": e,
            "exported_cells": c,
            "test_lines": t,
            "mean_cell": round(e / c, 1) if c else 0,
            "test_ratio": round(t / e, 2) if e else 0,
        }
        exported += e
        cells += c
        tests += t
    return {
        "mean_exported_cell_lines": round(exported / max(cells, 1), 1),
        "test_lines_per_exported_line": round(tests / max(exported, 1), 2),
        "exported_lines": exported,
        "exported_cells": cells,
        "test_lines": tests,
    }, per_nb


def measure():
    graph, facts = (
        {},
        {
            "star_imports": [],
            "private_cross_module": [],
            "function_level_imports": [],
            "against_layers": [],
            "unlayered": [],
            "over_400_lines": [],
        },
    )
    for p in modules():
        m = p.stem
        graph.setdefault(m, set())
        n_lines = len(p.read_text().splitlines())
        if n_lines > MAX_MODULE_LINES:
            facts["over_400_lines"].append(f"{m} ({n_lines})")
        if layer_of(m) is None:
            facts["unlayered"].append(m)
        for target, names, in_fn, star in internal_imports(p):
            if target == m:
                continue
            graph[m].add(target)
            if star:
                facts["star_imports"].append(f"{m} <- {target}")
            for nm in names:
                if nm.startswith("_"):
                    facts["private_cross_module"].append(f"{m} <- {target}.{nm}")
            if in_fn:
                facts["function_level_imports"].append(f"{m} <- {target}")
            lm, lt = layer_of(m), layer_of(target)
            if lm is not None and lt is not None and lt >= lm:
                facts["against_layers"].append(f"{m} (layer {lm}) -> {target} (layer {lt})")
    facts["cycles"] = cycles(graph)
    facts["modules"] = len(graph)
    facts["internal_imports"] = sum(len(v) for v in graph.values())
    shape, per_nb = notebook_shape()
    return facts, shape, per_nb


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json")
    ap.add_argument("--per-notebook", action="store_true")
    a = ap.parse_args()
    facts, shape, per_nb = measure()
    for k in RULES:
        v = facts[k]
        print(f"{k}: {len(v)}" + (f"  ({'; '.join(map(str, v))})" if v else ""))
    print(f"modules: {facts['modules']}, internal import edges: {facts['internal_imports']}")
    print(
        f"notebooks: mean exported cell {shape['mean_exported_cell_lines']} lines, "
        f"test lines per exported line {shape['test_lines_per_exported_line']}"
    )
    if a.per_notebook:
        for k, v in per_nb.items():
            print(f"  {k:24} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps({"facts": facts, "notebooks": shape, "per_notebook": per_nb}, indent=1))
    return 1 if any(facts[k] for k in RULES) else 0


if __name__ == "__main__":
    sys.exit(main())
