"""The committed notebook is executed (built by notebooks/build_notebooks.py); not re-run here."""

from pathlib import Path

import nbformat

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "01_private_rates_mpls_stops.ipynb"


def test_notebook_is_executed_with_figures_and_no_errors():
    cells = [c for c in nbformat.read(NOTEBOOK, 4).cells if c.cell_type == "code"]
    assert cells and all(c.execution_count for c in cells)
    outputs = [o for c in cells for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
