"""The layout shows the data path: no import cycle between pymc_dp's folders and top-level
modules (imports inside functions included), and no package code uses a moved module's
re-export."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pymc_dp"
SHIMS = {"conjugacy", "private_model", "release", "likelihood_bounds", "tempered"}
"""Moved modules kept as re-exports for one release: nothing in the package imports them."""


def _unit(module: str) -> str | None:
    """pymc_dp.a.b → "a" (the folder or top-level module); None outside the package."""
    parts = module.split(".")
    if parts[0] != "pymc_dp" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> set[str]:
    """Every pymc_dp module ``path`` imports, anywhere in the file (lazy imports too)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; use absolute pymc_dp imports")
    return found


def _graph() -> dict[str, set[str]]:
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts == ("__init__.py",):
            continue  # the package's public face imports everything
        source = rel.parts[0].removesuffix(".py")
        for module in _imports(path):
            target = _unit(module)
            if target in units and target != source:
                edges.setdefault(source, set()).add(target)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(edges.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                succ = stack.pop()
                on_stack.discard(succ)
                component.append(succ)
                if succ == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(set(edges) | {t for ts in edges.values() for t in ts}):
        if node not in index:
            visit(node)
    return components


def test_no_import_cycle_between_folders_and_top_level_modules():
    assert _cycles(_graph()) == []


def test_the_cycle_checker_finds_a_cycle():
    # control: the checker is not vacuous
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_package_code_does_not_use_moved_modules():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0].removesuffix(".py") in SHIMS or rel.parts == ("__init__.py",):
            continue
        used = {_unit(m) for m in _imports(path)} & SHIMS
        if used:
            offenders.append((str(rel), sorted(used)))
    assert offenders == []


def test_sample_dispatches_through_the_one_route_table(monkeypatch):
    import numpy as np
    import pymc as pm
    import xarray as xr

    import pymc_dp
    from pymc_dp import routes
    from pymc_dp.analysis import MODEL_KINDS

    assert {kind for kind, _ in routes.ROUTES} == set(MODEL_KINDS)
    assert {m for _, m in routes.ROUTES} == set(routes.MECHANISMS)
    calls = []

    def fake_route(request, recognised):
        calls.append((recognised.kind, request.mechanism, sorted(recognised.blocks)))
        return xr.DataTree()

    monkeypatch.setitem(routes.ROUTES, ("conjugate", "laplace"), fake_route)
    with pm.Model():
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.array([0, 1, 1, 0, 1]))
        idata = pymc_dp.sample(10, epsilon=1.0)
    assert calls == [("conjugate", "laplace", ["y"])]
    assert "privacy_ledger" in idata.children  # sample attaches the run's ledger
    with pytest.raises(ValueError, match="not offered"):
        routes.route_for("hmm", "metropolis")


def test_test_folders_mirror_package_folders():
    tests = Path(__file__).resolve().parent
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders and folders <= {p.name for p in PACKAGE.iterdir() if p.is_dir()}
