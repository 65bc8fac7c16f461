"""The committed notebook is executed and matches its build script (not re-executed here).

Rebuild it with ``python notebooks/build_notebooks.py``.
"""

import importlib.util
from pathlib import Path

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = NOTEBOOKS / "01_private_rates_mpls_stops.ipynb"


def _build_script():
    path = NOTEBOOKS / "build_notebooks.py"
    spec = importlib.util.spec_from_file_location("build_notebooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines the cells; executes nothing (main() is guarded)
    return module


def test_committed_notebook_is_executed_with_figures_and_no_errors():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert [c.source for c in nb.cells] == [c.source for c in _build_script().CELLS], (
        "notebook is out of date with notebooks/build_notebooks.py; rebuild it"
    )
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), f"not executed top to bottom: {counts}"
    outputs = [o for c in code for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
