# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Plan, allocate, spend, report: the Minneapolis stops
#
# Before spending any ε on the 51,920 stops of the bundled data, ask what the release will
# tell. `pymc_dp.plan` simulates stops from the model's prior, releases and samples each
# simulated data set as `pymc_dp.sample` will, and returns the expected interval widths. It
# reads nothing private: only the number of stops, public under replace-one. Then
# `pymc_dp.allocate` splits ε between the two releases (the race × search table and the stop
# reasons) for the parameters we care about, the person-search rates; `pymc_dp.sample` spends
# it once on the real records; `pymc_dp.report` shows what was spent and what it cost; and
# `pymc_dp.to_netcdf` writes the trace.
#
# The planning model has the structure of the real one (`pymc_dp.stops.stops_model`), with
# two assumptions the real numbers would otherwise supply, since they are private: every stop
# has a recorded person-search outcome, and the nine race groups are equally frequent
# (`pymc_dp.stops.stops_planning_model`).

# %%
import warnings

import matplotlib.pyplot as plt

import pymc_dp
from pymc_dp.datasets import load_mpls_stops
from pymc_dp.stops import RATE, stops_model, stops_planning_model

stops = load_mpls_stops()  # the private records: below, only len(stops) is read until "Spend"
planning_model, stand_ins = stops_planning_model(len(stops))
# what every plan below is given: the planning model, the stand-in labels, the rates
planning = dict(model=planning_model, data=stand_ins, var_names=[RATE], tune=100)

# %% [markdown]
# ## Plan
#
# Ten simulated data sets at each ε (the mean width's Monte Carlo error is about a tenth of
# the spread, `width_private_sd`).

# %%
grid = [0.03, 0.1, 0.3, 1.0]
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # printed below instead
    table = pymc_dp.plan(grid, datasets=10, draws=400, random_seed=1, **planning)
table = table.assign(race=table["parameter"].str.slice(len(RATE) + 1, -1))
widths = table.pivot(index="race", columns="epsilon", values="width_private")
widths["non-private"] = table.groupby("race")["width_nonprivate"].first()
widths.round(4)

# %%
summary = table.groupby("epsilon")[["width_private", "width_nonprivate", "informative"]].mean()
summary["width_ratio"] = summary["width_private"] / summary["width_nonprivate"]
summary.round(3)

# %%
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(summary.index, summary["width_private"], "o-", label="private (planned)")
ax.axhline(
    summary["width_nonprivate"].iloc[0], color="tab:green", linestyle="--", label="non-private"
)
ax.set_xscale("log")
ax.set_xlabel("total ε of the run")
ax.set_ylabel("mean width of a rate's 90% interval")
ax.set_title("Planned precision of the person-search rates, 51,920 stops")
ax.legend()
plt.show()

# %% [markdown]
# Privacy costs little precision here above ε ≈ 0.3: the groups are large. Below it the noise
# dominates. To ask for a width instead: the smallest ε at which every rate's interval is at
# most 0.025 wide on average (bisection between the grid points):

# %%
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    target = pymc_dp.plan(
        [0.03, 1.0], target_width=0.025, datasets=6, draws=300, random_seed=2, **planning
    )
epsilon = round(target.attrs["epsilon_for_target"], 2)
print(
    f"smallest ε for a 0.025-wide interval: {target.attrs['epsilon_for_target']:.3f}; "
    f"we spend ε = {epsilon}"
)

# %% [markdown]
# ## Allocate
#
# `pymc_dp.sample(epsilon=ε)` would split ε equally between the two releases. We care about
# the rates only, so let `pymc_dp.allocate` split it:

# %%
with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    allocation = pymc_dp.allocate(epsilon, datasets=6, draws=300, random_seed=3, **planning)
print(allocation)

# %%
allocation.widths.round(4)

# %% [markdown]
# ## Spend
#
# One release of each table, on the real records, at the allocated split. This is the only
# step that reads them.

# %%
with stops_model(stops):
    idata = pymc_dp.sample(
        1000, tune=200, chains=2, epsilon=allocation.epsilon, random_seed=4, progressbar=False
    )
ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
ledger.to_dataframe()

# %% [markdown]
# ## Report
#
# The report reads only the trace. Its widths panel shows the trace's intervals beside what
# the plan expected at the ε nearest the one spent (the plan's groups were equal-sized; the
# real ones are not, so small groups come out wider than planned and large ones narrower).

# %%
report = pymc_dp.report(idata, plan=table)
fig = report.figure()
plt.show()

# %%
report.limits.round(3)

# %% [markdown]
# ## Publish
#
# `pymc_dp.to_netcdf` writes the trace whole or not at all, and refuses anything the ledger
# does not cover (see notebook 01 for a refusal).

# %%
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as folder:
    path = pymc_dp.to_netcdf(idata, Path(folder) / "stops_trace.nc")
    print(path.name, f"{path.stat().st_size / 1e3:.0f} kB")
