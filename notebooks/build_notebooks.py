"""Build and execute notebooks/01_private_rates_mpls_stops.ipynb.

Run: python notebooks/build_notebooks.py
"""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).parent
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
cells = [
    md(
        "# Private person-search rates, Minneapolis stops 2017\n\nPrivacy unit: one stop "
        "(replace-one, n public). Two Laplace releases (Foulds et al. 2016, §3.2 eq. 16–17): "
        "the race × person-search table (L1 sensitivity 2, ε = 0.5) and the stop-reason count "
        "(sensitivity 1, ε = 0.5); total ε = 1 by sequential composition. Sampling is "
        "post-processing (§4.2)."
    ),
    code(
        "import arviz as az\nimport matplotlib.pyplot as plt\nimport pymc_dp\n"
        "from pymc_dp.datasets import load_mpls_stops\nfrom pymc_dp.stops import stops_model\n"
        "stops = load_mpls_stops()\nmodel = stops_model(stops)\nstops.shape"
    ),
    code(
        "with model:\n    idata = pymc_dp.sample(1000, epsilon=1.0, tune=200, chains=2, "
        "random_seed=0, progressbar=False)\nlist(idata.children)"
    ),
    md("No `observed_data` or `constant_data` group: the trace holds no raw record. The ledger:"),
    code(
        "idata['privacy_ledger'].to_dataset().to_dataframe()[['mechanism', 'epsilon', "
        "'sensitivity', 'neighbouring', 'variables', 'noise_backend', 'noise_scale']]"
    ),
    code("az.summary(idata)"),
    code("az.plot_trace(idata, var_names=['stop_reason_probability'])\nplt.show()"),
    md(
        "The non-private reference below reads the raw data: for the data holder only. The "
        "'Missing' race group has no stop with a recorded outcome, so its released counts are "
        "clamped noise and its posterior is close to the prior."
    ),
    code(
        "from pymc_dp.reference import exact_conjugate_posterior\n"
        "reference = exact_conjugate_posterior(model, draws=1000, chains=2, rng=0)\n"
        "az.plot_forest({'private': idata, 'non-private': reference}, "
        "var_names=['person_search_rate'], combined=True, labels=['race'])\nplt.show()"
    ),
    code("idata['released_statistics'].to_dataset()"),
]
nb = nbformat.v4.new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
NotebookClient(
    nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
).execute()
nbformat.write(nb, HERE / "01_private_rates_mpls_stops.ipynb")
