"""The layering the design fixes, pinned: data flows one way, and so do the imports.

parsers/ is the lowest layer (it holds the tables' contract); replay/ stands alone; inside
forensics/ the stages import only the stages before them. Function-level imports count: a
lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("forensics", "parsers", "replay")

FOUNDATION = {"forensics", "forensics.schema", "forensics.errors", "forensics._malloc"}
"""What every forensics stage may import: the public names, the error hierarchy, the allocator."""
STAGES_MAY_IMPORT: dict[str, set[str]] = {
    "forensics.ingestion": {"parsers"},
    "forensics.mining": {"parsers"},
    "forensics.shards": {"parsers", "forensics.ingestion", "forensics.mining"},
    "forensics.diagnosis": {"parsers", "forensics.ingestion", "forensics.mining", "forensics.shards"},
    "forensics.report": {"forensics.diagnosis", "forensics.mining"},
    "forensics.replay_bridge": {"forensics._bundled", "forensics.ingestion"},
}
"""Each stage of forensics/ and the stages (or layers) it may import besides `FOUNDATION`;
the CLI may import anything."""


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


MODULES = _modules()


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(name: str) -> set[str]:
    """The project modules `name` imports, at any depth of its code, resolved to modules."""
    tree = ast.parse(MODULES[name].read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.add(sub if sub in MODULES else node.module)
    return out - {name}


IMPORTS = {name: _imports(name) for name in MODULES}


def _within(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


@pytest.mark.parametrize("lower, upper", [("parsers", "forensics"), ("parsers", "replay"), ("replay", "forensics")])
def test_a_lower_layer_never_imports_a_higher_one(lower, upper):
    bad = sorted(
        f"{m} -> {dep}" for m, deps in IMPORTS.items() if _within(m, lower) for dep in deps if _within(dep, upper)
    )
    assert not bad, f"{lower}/ must not import {upper}/: " + ", ".join(bad)


def test_replay_does_not_read_log_formats():
    bad = sorted(
        f"{m} -> {d}" for m, deps in IMPORTS.items() if _within(m, "replay") for d in deps if _within(d, "parsers")
    )
    assert not bad, ", ".join(bad)


def test_each_forensics_stage_imports_only_the_stages_before_it():
    bad = []
    for m, deps in IMPORTS.items():
        stage = next((st for st in STAGES_MAY_IMPORT if _within(m, st)), None)
        if stage is None:
            continue
        allowed = STAGES_MAY_IMPORT[stage] | FOUNDATION | {stage}
        bad += [f"{m} -> {d}" for d in sorted(deps) if not any(d == a or _within(d, a) for a in allowed)]
    assert not bad, "imports against the pipeline's direction: " + ", ".join(bad)


def test_no_module_reaches_into_another_packages_private_module():
    # `_name` is private to the package that holds it: `parsers._compiled.*` to `parsers`,
    # `forensics.diagnosis._format` to `forensics.diagnosis`.
    bad = []
    for m, deps in IMPORTS.items():
        for d in deps:
            parts = d.split(".")
            private = next((i for i, p in enumerate(parts) if p.startswith("_")), None)
            if private is not None and not _within(m, ".".join(parts[:private])):
                bad.append(f"{m} -> {d}")
    assert not bad, ", ".join(sorted(bad))


def test_there_are_no_import_cycles():
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(IMPORTS.get(m, ())):
            if d not in MODULES or d.split(".")[0] not in PACKAGES:
                continue
            if state.get(d) == 1:
                cycles.append(path[path.index(d) :] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    # A package's facade imports its own modules; its modules import each other, never the
    # facade, so edges into a facade from inside its package would be the cycle to catch.
    for m in sorted(MODULES):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_forensics_reaches_replay_only_through_the_bundle_resolver():
    """The wheel ships replay/ as forensics._replay (an unrelated `replay` is on the public
    index): an `import replay` in forensics/ would find the wrong one, or none, once installed."""
    offenders = sorted(
        name
        for name, deps in IMPORTS.items()
        if name.startswith("forensics") and any(_within(d, "replay") for d in deps)
    )
    assert offenders == []
