"""The committed notebooks are in sync with their paired scripts and were executed.

Each ``notebooks/NN_*.ipynb`` is paired by jupytext with a percent-format script of the same
stem, ``notebooks/NN_*.py`` (header ``formats: ipynb,py:percent``). Edit the ``.py``, then, from
the repository root, re-sync and re-execute its notebook (top to bottom, in ``notebooks/``,
kernel ``python3`` = the Python that runs ``jupyter``; outputs and figures are written into the
``.ipynb``)::

    .venv/bin/jupytext --to ipynb notebooks/NAME.py
    .venv/bin/jupyter execute --inplace notebooks/NAME.ipynb

then strip the machine paths its warnings printed (``scripts/strip_notebook_paths.py``; a
committed output may hold none, :func:`test_committed_outputs_hold_no_machine_paths`)::

    .venv/bin/python scripts/strip_notebook_paths.py

and commit both files. (``jupytext --sync notebooks/NAME.py`` instead of ``--to ipynb`` keeps
the old outputs, for an edit that does not need a re-run, e.g. of a markdown cell.) The
notebooks are not executed here: that takes minutes; only :data:`EXECUTED_IN_CI` are (about a
minute each, in the ``integration`` tier; 05 in ``slow``), in a kernel of the interpreter that
runs pytest (:func:`_kernel_of_this_interpreter`), never one found through the user's Jupyter
configuration.

A notebook that saves files (06 saves its figures as PNGs) writes them to ``docs/results``, or
to the directory named by the environment variable ``PYMC_DP_RESULTS`` when it is set. The
executions here set it to a temporary directory and check that ``docs/results`` and
``notebooks/`` are unchanged afterwards: running the suite never modifies the repository.
"""

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
MIN_FIGURES = {
    "01_private_rates_mpls_stops": 2,
    "02_private_hmm_mpls_stops": 3,
    "03_posterior_sampling_theory": 4,
    "04_posterior_sampling_mpls_stops": 2,
    "05_calibrated_posteriors": 3,
    "06_inferential_limits": 5,
    "07_dirichlet_mechanisms": 5,
    "08_regression_mpls_stops": 2,
    "09_plan_a_study": 2,
}
EXECUTED_IN_CI = (
    "05_calibrated_posteriors",
    "06_inferential_limits",
    "07_dirichlet_mechanisms",
    "08_regression_mpls_stops",
    "09_plan_a_study",
)
"""Notebooks that this suite also runs top to bottom (the others take minutes). Notebooks 05
(about two minutes) and 08 (non-private fits on 43,699 records beside the private ones:
about fourteen) are marked ``slow`` and run in ``.ci/run``'s slow tier."""
SLOW_NOTEBOOKS = {"05_calibrated_posteriors", "08_regression_mpls_stops"}
RESULTS_VARIABLE = "PYMC_DP_RESULTS"
"""Environment variable naming the directory a notebook saves its files to (default
``docs/results``)."""


def _strip_notebook_paths():
    """``scripts/strip_notebook_paths.py`` as a module (the one definition of a machine path)."""
    path = ROOT / "scripts" / "strip_notebook_paths.py"
    spec = importlib.util.spec_from_file_location("strip_notebook_paths", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cells(nb):
    return [(c.cell_type, c.source) for c in nb.cells]


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def test_every_notebook_is_listed_and_paired():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(MIN_FIGURES)
    for stem in MIN_FIGURES:
        assert (NOTEBOOKS / f"{stem}.py").is_file(), f"notebooks/{stem}.py is missing"


@pytest.mark.parametrize("stem", list(MIN_FIGURES))
def test_notebook_matches_its_script(stem):
    script = jupytext.read(NOTEBOOKS / f"{stem}.py")
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert script.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert _cells(nb) == _cells(script), (
        f"notebooks/{stem}.ipynb is out of sync with notebooks/{stem}.py; re-sync and "
        f"re-execute it (see this module's docstring)"
    )
    for metadata in (script.metadata, nb.metadata):
        assert metadata["kernelspec"]["name"] == "python3"  # whichever Python runs jupyter
        paths = [s for s in _strings(metadata) if Path(s).is_absolute()]
        assert not paths, f"machine-specific paths in the metadata of {stem}: {paths}"


@pytest.mark.parametrize("stem", list(MIN_FIGURES))
def test_committed_notebook_is_executed_with_figures_and_no_errors(stem):
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"not executed top to bottom: {counts}"
    outputs = [o for c in code for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= MIN_FIGURES[stem]
    assert "RESULTS_DISCUSSION" not in "".join(c.source for c in nb.cells)


@pytest.mark.parametrize("stem", list(MIN_FIGURES))
def test_committed_outputs_hold_no_machine_paths(stem):
    """No output of a committed notebook names a file of the machine that executed it (a
    warning's ``/home/…/site-packages/…`` path): ``scripts/strip_notebook_paths.py`` strips
    them."""
    nb = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    found = _strip_notebook_paths().machine_paths(nb)
    assert not found, (
        f"machine paths in the outputs of notebooks/{stem}.ipynb (cell, line): {found}; run "
        f"scripts/strip_notebook_paths.py"
    )


def test_machine_path_check_catches_and_strips_a_warning_path():
    strip = _strip_notebook_paths()
    line = "/home/u/p/.venv/lib/python3.12/site-packages/pymc/x.py:7: UserWarning: w\n"
    nb = {"cells": [{"cell_type": "code", "outputs": [{"output_type": "stream", "text": [line]}]}]}
    assert strip.machine_paths(nb) == [(0, line.strip())]
    assert strip.machine_paths(strip.strip(nb)) == []
    assert nb["cells"][0]["outputs"][0]["text"] == ["pymc/x.py:7: UserWarning: w\n"]
    for text in ("/work/main/x.py", "C:\\Users\\me\\x.py", "/tmp/abc/y.csv", "/root/.cache"):
        assert strip.MACHINE_PATH.search(text), text
    for text in ("docs/results/x.png", "ε/δ = 1/2", "a ratio 3/tmp", "https://x.org/home/"):
        assert not strip.MACHINE_PATH.search(text), text


def _snapshot(*directories: Path) -> dict[str, tuple[str, int]]:
    """SHA-256 and modification time (a rewrite with the same bytes counts too) of every file
    under ``directories``, by path relative to the repository."""
    return {
        str(path.relative_to(ROOT)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for directory in directories
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


KERNEL_NAME = "pymc-dp-test-interpreter"


def _kernel_of_this_interpreter(directory: Path, monkeypatch) -> str:
    """A kernel spec whose argv is ``sys.executable`` (the Python running pytest), put first on
    ``JUPYTER_PATH``; returns its name. The ``python3`` spec resolves through the user's Jupyter
    configuration, which may start another Python with another ``pymc_dp`` on its path."""
    spec = directory / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "pytest's Python", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(directory))
    return KERNEL_NAME


def test_notebook_kernel_is_the_interpreter_running_pytest(tmp_path, monkeypatch):
    from jupyter_client.kernelspec import KernelSpecManager

    name = _kernel_of_this_interpreter(tmp_path, monkeypatch)
    assert KernelSpecManager().get_kernel_spec(name).argv[0] == sys.executable


@pytest.mark.parametrize(
    "stem",
    [
        pytest.param(s, marks=pytest.mark.slow if s in SLOW_NOTEBOOKS else pytest.mark.integration)
        for s in EXECUTED_IN_CI
    ],
)
def test_notebook_runs_top_to_bottom(stem, tmp_path, monkeypatch):
    """Run the paired script's cells in a fresh kernel, in ``notebooks/`` (its relative paths),
    without writing the outputs back; any error fails the test. The kernel inherits
    ``PYMC_DP_RESULTS`` = a temporary directory (a notebook that reads it must save there), and
    the run must leave ``docs/results`` and ``notebooks/`` untouched (bytes and mtimes)."""
    from nbclient import NotebookClient

    monkeypatch.setenv(RESULTS_VARIABLE, str(tmp_path / "results"))
    (tmp_path / "results").mkdir()
    kernel = _kernel_of_this_interpreter(tmp_path / "jupyter", monkeypatch)
    before = _snapshot(ROOT / "docs" / "results", NOTEBOOKS)
    nb = jupytext.read(NOTEBOOKS / f"{stem}.py")
    # per cell: notebook 08's private search model takes 204 s alone (2026-12-07, load 0.1)
    # and passed 600 s at load 4-5 in one CI run; a hung cell still fails within CI's budget
    client = NotebookClient(
        nb, timeout=1800, kernel_name=kernel, resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    figures = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
    assert figures >= MIN_FIGURES[stem]
    after = _snapshot(ROOT / "docs" / "results", NOTEBOOKS)
    changed = sorted(
        path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
    )
    assert not changed, f"running {stem} modified the repository: {changed}"
    if RESULTS_VARIABLE in "".join(c.source for c in code):
        assert any((tmp_path / "results").iterdir()), (
            f"{stem} reads {RESULTS_VARIABLE} but saved nothing there"
        )
