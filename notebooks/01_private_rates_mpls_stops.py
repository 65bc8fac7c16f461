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
# # Private person-search rates: Minneapolis police stops, 2017
#
# This notebook walks through the main job of `pymc_dp` (`pymc-dp stops`) with ArviZ.
#
# **What is private.** The privacy unit is one stop record of the bundled data (51,920
# stops). Neighbouring datasets *replace one record* (its race, search outcome and stop
# reason may all change); the number of records n is public. The categories (races,
# outcomes, reasons) are a declared schema, not read off the data.
#
# **Two releases**, each a Laplace release of sufficient statistics (Foulds et al. 2016,
# §3.2, eq. 16–17):
#
# 1. `person_search`: the race × {searched, not searched} table of the stops whose
#    person-search outcome was recorded, released once for all groups. Replacing one
#    record removes 1 from one cell and adds 1 to another: **L1 sensitivity 2**, ε₁ = 0.5.
# 2. `stop_reason`: the count of the stop reasons (two categories, n public, so a single
#    count is released): **L1 sensitivity 1**, ε₂ = 0.5.
#
# Every record may appear in both releases, so the total is **ε = 0.5 + 0.5 = 1** by
# sequential composition (δ = 0). The model, `person_search_rate[race] ~ Beta(1, 1)` and
# `stop_reason_probability ~ Dirichlet(1, 1)`, is then sampled from the released
# statistics only; MCMC, draws and chains are post-processing and cost no privacy
# (§4.2).

# %%
import tempfile
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

import pymc_dp
from pymc_dp.datasets import MPLS_STOPS_CATEGORIES, load_mpls_stops
from pymc_dp.stops import RATE, REASON, stops_model

SEED = 2017  # seeds the MCMC only; the privacy noise (OpenDP) is never seeded
CI = 0.94

# %% [markdown]
# ## Data and model

# %%
stops = load_mpls_stops()
print(f"{stops.shape[0]:,} stops x {stops.shape[1]} columns")
{col: list(MPLS_STOPS_CATEGORIES[col]) for col in ("race", "personSearch", "problem")}

# %%
model = stops_model(stops)
print(model.str_repr())
print("\nfree:", [v.name for v in model.free_RVs])
print("observed:", [v.name for v in model.observed_RVs])
print("coords:", {k: list(v) for k, v in model.coords.items()})

# %% [markdown]
# ## Private sampling
#
# `pymc_dp.sample` releases the two tables (recording each release in the ledger before
# its value is used), replaces the likelihoods by potentials on the released statistics
# and samples them with `PrivateConjugateGibbs`. `random_seed` seeds the MCMC only: the
# Laplace noise is drawn by OpenDP and is never seeded (a published seed must not
# reproduce it), so the numbers below change each time the notebook is built.
#
# **Plug-in reading.** This notebook reads the release with `inference="plugin"`: the noisy
# statistics as if they were exact (Foulds et al. 2016, §4.2), whose behaviour the text
# below dissects. `pymc_dp.sample` (and `pymc-dp stops`) read it noise-aware by default, with
# intervals that include the privacy noise: see notebook 05 and `docs/calibration.md`.

# %%
with model:
    idata = pymc_dp.sample(
        1000,
        epsilon=1.0,
        inference="plugin",  # the reading this notebook discusses; the default is noise-aware
        tune=200,
        chains=2,
        cores=1,
        random_seed=SEED,
        progressbar=False,
        compute_convergence_checks=False,  # ArviZ diagnostics below
    )
{name: list(node.data_vars) for name, node in idata.children.items()}

# %% [markdown]
# The trace carries its own privacy ledger: one row per release, with the mechanism, ε,
# the sensitivity used to calibrate the noise and the Laplace scale b = Δ/ε.

# %%
idata["privacy_ledger"].to_dataset()

# %%
ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
print(ledger)
pd.DataFrame([e.to_dict() for e in ledger.events])[
    ["mechanism", "epsilon", "sensitivity", "neighbouring", "variables", "noise_scale"]
]

# %% [markdown]
# No group of the trace can hold raw records: `pymc_dp.sample` keeps only the
# posterior and sampler groups and adds the released statistics and the ledger.

# %%
{g: g in idata.children for g in ("observed_data", "constant_data", "log_likelihood")}

# %% [markdown]
# ## ArviZ diagnostics
#
# ArviZ works on the private trace unchanged. With constant Beta/Dirichlet priors the
# conjugate Gibbs step draws independently from the (private) posterior, so the effective
# sample size is close to the 2 × 1000 draws and R̂ ≈ 1.

# %%
az.summary(idata, ci_prob=CI, ci_kind="eti")

# %%
pd.DataFrame(
    {
        "ess_bulk": az.ess(idata, method="bulk")[RATE].to_series(),
        "ess_tail": az.ess(idata, method="tail")[RATE].to_series(),
        "r_hat": az.rhat(idata)[RATE].to_series(),
    }
).round(3)

# %%
az.plot_trace(
    idata,
    var_names=[RATE, REASON],
    col_wrap=3,
    figure_kwargs={"figsize": (12, 9), "layout": "constrained"},
)
plt.show()

# %% [markdown]
# ## Private vs non-private
#
# > **Warning — not private.** `exact_conjugate_posterior` reads the *raw* records. It is
# > the data holder's yardstick for what privacy costs in accuracy; it, and every plot or
# > number derived from it below, must never be published.
#
# The `Missing` race group is left out of the forest plot: its non-private posterior is
# exactly the flat prior and its private one is driven by noise alone (next section); on
# a [0, 1] axis they would squash the other groups.

# %%
from pymc_dp.reference import exact_conjugate_posterior  # NOT private

reference = exact_conjugate_posterior(model, draws=1000, chains=2, rng=SEED)
recorded_races = [r for r in MPLS_STOPS_CATEGORIES["race"] if r != "Missing"]
pc = az.plot_forest(
    {"private (ε = 1)": idata, "non-private (raw data)": reference},
    var_names=[RATE],
    coords={"race": recorded_races},
    combined=True,
    ci_kind="eti",
    ci_probs=(0.5, CI),
    labels=["race"],
    figure_kwargs={"figsize": (8, 5)},
)
pc.add_legend("model", loc="upper center", bbox_to_anchor=(0.5, 0.0), ncols=2)
pc.viz["figure"].item().suptitle(
    "Person-search rate by perceived race (mean, 50% and 94% intervals)"
)
plt.show()


# %%
def interval_table(trace, label):
    s = az.summary(trace, var_names=[RATE], ci_prob=CI, ci_kind="eti")
    lb, ub = f"eti{round(CI * 100)}_lb", f"eti{round(CI * 100)}_ub"
    return pd.DataFrame(
        {
            f"{label} mean": s["mean"].astype(float),
            f"{label} 94% width": s[ub].astype(float) - s[lb].astype(float),
        }
    )


released = idata["released_statistics"]["person_search_projected"]
comparison = pd.concat(
    [interval_table(idata, "private"), interval_table(reference, "non-private")], axis=1
)
comparison.insert(
    0, "released n", released.sum("person_search_statistic").to_numpy().round(1)
)
comparison.round(4)

# %% [markdown]
# ## The released statistics and the `Missing` group
#
# `released_statistics` holds the noisy tables exactly as released (`person_search`,
# `stop_reason`) and their projection onto non-negative counts (`*_projected`), which is
# what the sampler used. Both are public by construction.

# %%
idata["released_statistics"].to_dataset()

# %%
rs = idata["released_statistics"]
pd.concat(
    {
        "released": rs["person_search"].to_pandas(),
        "projected (counts >= 0)": rs["person_search_projected"].to_pandas(),
    },
    axis=1,
).rename(columns={0: "searched", 1: "not searched"}).round(1)

# %% [markdown]
# The race groups are the declared schema, so the table has a row for `Missing` even
# though **no stop with a recorded search outcome has a missing race** (the 8,221 stops
# with a missing race all lack the search outcome too, so none of them is in this table).
# Its two released counts are therefore pure Laplace noise (scale b = 4 at ε₁ = 0.5),
# clamped at 0 by the projection, and its posterior is Beta(1 + noise, 1 + noise): it
# says nothing about any stop. When both noisy counts are clamped to (near) 0 it is
# (close to) the Beta(1, 1) prior; but a few units of noise act as pseudo-counts, so in
# some builds it looks like an estimate (a mean away from 0.5, a narrower interval). The
# sampler cannot tell noise from data; you have to know the group is empty. This is the
# price of declaring groups from the schema rather than from the data: dropping the rows
# that are empty *in this data* would make the shape of the release depend on the
# records.

# %%
missing = idata["posterior"][RATE].sel(race="Missing")
noisy = rs["person_search_projected"].sel(person_search_group="Missing").to_numpy()
print(f"Missing: projected counts (searched, not searched) = {noisy.round(2)}")
print(
    f"private posterior: Beta({1 + noisy[0]:.2f}, {1 + noisy[1]:.2f}), "
    f"mean {float(missing.mean()):.3f}, sd {float(missing.std()):.3f}"
)
print(f"prior Beta(1, 1): mean 0.500, sd {1 / np.sqrt(12):.3f}")

# %% [markdown]
# ## Privacy vs accuracy
#
# The same analysis at total ε ∈ {0.1, 1, 10} (split equally: the table gets ε/2, so the
# Laplace scale on each cell is b = 2 / (ε/2)), for a small group (Asian, about 650
# stops with a recorded outcome) and a large one (Black, about 15,000). Each run is a
# new release: in practice all three would be charged to the same records (total ε =
# 11.1); here they only illustrate the trade-off.

# %%
import logging

groups = ["Asian", "Black"]
# NOT private, for the comparison only: the non-private posterior and the raw group sizes
exact = interval_table(reference, "non-private").loc[[f"{RATE}[{g}]" for g in groups]]
raw_n = stops.loc[stops["personSearch"] != "Missing", "race"].value_counts()
rows = []
logging.getLogger("pymc").setLevel(logging.WARNING)  # quiet the three sampler banners
for epsilon in (0.1, 1.0, 10.0):
    with model:
        trace = pymc_dp.sample(
            500,
            epsilon=epsilon,
            inference="plugin",
            tune=200,
            chains=2,
            cores=1,
            random_seed=SEED,
            progressbar=False,
            compute_convergence_checks=False,
        )
    private = interval_table(trace, "private")
    n = trace["released_statistics"]["person_search_projected"]
    table_event = pymc_dp.PrivacyLedger.from_datatree(trace).events[0]
    assert table_event.variables[0] == "person_search"
    for g in groups:
        key = f"{RATE}[{g}]"
        released_n = float(n.sel(person_search_group=g).sum())
        rows.append(
            {
                "ε": epsilon,
                "group": g,
                "table ε": table_event.epsilon,
                "Laplace b per cell": table_event.noise_scale,
                "released searched": float(n.sel(person_search_group=g)[0]),
                "released n": released_n,
                "noise sd of rate ≈ √2·b/n (raw n)": np.sqrt(2)
                * table_event.noise_scale
                / raw_n[g],
                "private mean": private.loc[key, "private mean"],
                "private 94% width": private.loc[key, "private 94% width"],
                "non-private mean": exact.loc[key, "non-private mean"],
                "non-private 94% width": exact.loc[key, "non-private 94% width"],
            }
        )
logging.getLogger("pymc").setLevel(logging.INFO)
accuracy = pd.DataFrame(rows).set_index(["ε", "group"])
accuracy["|error| / non-private width"] = (
    (accuracy["private mean"] - accuracy["non-private mean"]).abs()
    / accuracy["non-private 94% width"]
)
accuracy.round(4)

# %% [markdown]
# **Reading the table.** The noise has the same scale b on every cell whatever the
# group's size, so it hurts small groups first. Its typical effect on a rate is about
# √2·b / n (the Laplace standard deviation over the group's size): at ε = 0.1 (b = 40)
# that is about 0.09 for the Asian group (about 650 stops with a recorded outcome, 62 of
# them searched in the raw data), twice the width of its non-private 94% interval,
# against about 0.004 for the Black group (about 15,000 stops), a third of its width.
# The error of a single run (last column) is one draw of that noise and changes from
# build to build, but at ε = 0.1 a single release can easily put the Asian estimate
# outside its non-private interval. At ε = 10 (b = 0.4) both private posteriors match
# the non-private ones.
#
# Note also the *widths*: the private posterior treats the released counts as if they
# were the data (Foulds et al. 2016, §3.2: the noisy statistics are plugged into the
# conjugate update), so its 94% interval reflects the sampling uncertainty of counts of
# that size only: it stays about as narrow as the non-private one at every ε and does
# **not** include the privacy noise. The last column is the error of the private mean
# in units of the non-private interval width; above about 1/2 the private 94% interval
# misses the non-private mean, which happens for small groups at small ε.

# %% [markdown]
# ## Saving and reloading the private trace
#
# `pymc_dp.to_netcdf` writes the trace, with its released statistics and ledger (stored both
# as the `privacy_ledger` group and as JSON in the root attribute `pymc_dp_ledger`), and
# refuses a trace holding anything the ledger does not cover — a group `observed_data` that
# `pm.sample_posterior_predictive(idata, extend_inferencedata=True)` would fill with the raw
# stops, say:

# %%
unsafe = idata.copy()
unsafe["observed_data"] = xr.Dataset({"searched": ("stop", np.zeros(3))})  # as PyMC would
try:
    pymc_dp.to_netcdf(unsafe, "unsafe_trace.nc")
except pymc_dp.UncertifiedTraceError as error:
    print(str(error)[:160], "…")

# %%
with tempfile.TemporaryDirectory() as tmp:
    path = pymc_dp.to_netcdf(idata, Path(tmp) / "stops_trace.nc")
    with xr.open_datatree(path, engine="h5netcdf") as loaded:
        loaded = loaded.load()
print("groups:", list(loaded.children))
reloaded = pymc_dp.PrivacyLedger.from_datatree(loaded)
print(reloaded)
print("same events as before saving:", reloaded.events == ledger.events)
print(
    "same posterior:",
    loaded["posterior"].to_dataset().equals(idata["posterior"].to_dataset()),
)
