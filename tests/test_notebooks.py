"""The committed notebooks are executed and match their build scripts (not re-executed here).

Rebuild them with ``python notebooks/build_notebooks.py``,
``python notebooks/build_hmm_notebook.py``, ``python notebooks/build_theory_notebook.py`` and
``python notebooks/build_mechanisms_notebook.py``.
"""

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
BUILDS = {
    "01_private_rates_mpls_stops.ipynb": ("build_notebooks.py", 2),
    "02_private_hmm_mpls_stops.ipynb": ("build_hmm_notebook.py", 3),
    "03_posterior_sampling_theory.ipynb": ("build_theory_notebook.py", 4),
    "04_posterior_sampling_mpls_stops.ipynb": ("build_mechanisms_notebook.py", 2),
}


def _build_script(name):
    sys.path.insert(0, str(NOTEBOOKS))  # the HMM builder imports the shared helpers
    try:
        spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), NOTEBOOKS / name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # defines the cells; executes nothing (main() is guarded)
    finally:
        sys.path.remove(str(NOTEBOOKS))
    return module


@pytest.mark.parametrize("notebook", list(BUILDS))
def test_committed_notebook_is_executed_with_figures_and_no_errors(notebook):
    script, min_figures = BUILDS[notebook]
    nb = nbformat.read(NOTEBOOKS / notebook, as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells] == [c.source for c in _build_script(script).CELLS], (
        f"{notebook} is out of date with notebooks/{script}; rebuild it"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"not executed top to bottom: {counts}"
    outputs = [o for c in code for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= min_figures
    assert "RESULTS_DISCUSSION" not in "".join(c.source for c in nb.cells)
