"""The planner's honesty check, an allocation example and the privacy report's figure.

    python scripts/plan_and_report.py                 # everything (about 40 minutes, 2 cores)
    python scripts/plan_and_report.py --only check    # the planner against the studies
    python scripts/plan_and_report.py --only check --designs cells group-means

1. ``pymc_dp.plan`` on the calibration studies' designs, beside the studies' realised mean
   widths of the noise-aware 90% intervals (``DESIGNS``; ``--designs`` runs some of them and
   keeps the other designs' rows of ``docs/results/plan_check.csv``, which it rewrites):

   * ``beta-bernoulli``: Beta(1, 1)–Bernoulli, n = 100, ε ∈ {0.1, 1}
     (``docs/results/calibration.csv``, 2,000 data sets per cell);
   * ``normal`` and ``linear-regression``: :data:`pymc_dp.calibration.bounded.CASES`,
     n = 1,000, ε = 1 (``docs/results/calibration_centred.csv``, 200 data sets). The
     regression's covariates are private: the plan gets one public stand-in drawn from the
     study's covariate prior with its own seed. The study draws a new design per data set,
     and the widths vary fourfold between designs: ``linear-regression-designs`` plans 20
     stand-ins drawn from that prior, 2 data sets each, and averages;
   * ``cells``: the varying-intercept logistic model of ``scripts/cells_calibration.py``,
     n = 1,000, ε ∈ {0.1, 1} (``docs/results/cells_calibration.csv``, 100 data sets);
   * ``group-means``: the Normal group-means model of ``scripts/group_means_calibration.py``,
     n = 2,000, ε = 1 (that script writes no table: its printed mean widths over 24 data sets
     are :data:`GROUP_MEANS_STUDY`);
   * ``poisson-regression``: the Poisson regression of ``scripts/glm_calibration.py`` (log
     link, x in 10 bins, counts in [0, 10] clamped), n = 1,000, ε ∈ {0.1, 1}
     (``docs/results/glm_calibration.csv``, 50 data sets); its covariate is private: the plan
     gets one stand-in drawn as the study draws x (uniform on [−1, 1]), with its own seed.

   The group labels are private: the plan gets stand-ins drawn as the studies draw them
   (uniform over the groups), with their own seeds. The group log-odds and means θ_g are
   deterministics of the studies' (non-centred) models, and ``plan`` reports free variables
   only: θ_g is planned on the centred model (θ_g ~ N(μ, τ), the same prior and posterior),
   μ and σ on the studies' own models.
2. ``pymc_dp.allocate`` on a two-release model (a Bernoulli rate by group and a 4-category
   reason, n = 2,000), for the rates, at ε = 0.3: the split and the gain over the equal split.
3. ``pymc_dp.report`` of a run of that model at ε = 0.3 split equally, with the plan's
   expected widths at that ε: ``docs/results/privacy_report.png``.

Everything is simulated: no record is read, and the releases are charged to throw-away ledgers.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import cells_calibration
import glm_calibration
import group_means_calibration
import numpy as np
import pandas as pd
import pymc as pm

import pymc_dp
import pymc_dp.planning
from pymc_dp.calibration.bounded import CASES, _covariates

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"
DESIGNS = (
    "beta-bernoulli",
    "normal",
    "linear-regression",
    "linear-regression-designs",
    "cells",
    "group-means",
    "poisson-regression",
)
COLUMNS = [
    "family",
    "parameter",
    "n",
    "epsilon",
    "width_planned",
    "width_study",
    "width_nonprivate",
    "datasets",
    "datasets_study",
    "seconds",
    "load_start",
    "load_end",
    "relative_error",
]
GROUP_MEANS_STUDY = {"mu": 1.1326, "sigma": 1.2645, "theta (pooled)": 1.1823}
"""Realised mean widths of the noise-aware 90% intervals of ``scripts/group_means_calibration.py
--n 2000 --datasets 24 --epsilon 1`` (seeds 0–23; θ_g pooled over the 8 groups; run
2026-12-07 at load 2–3.4, 750 s). Their spread over the data sets: sd 0.53 (μ), 0.23 (σ),
0.34 (θ_g): the means' Monte Carlo errors are about 10%, 4% and 6%."""
GROUP_MEANS_DATASETS = 24


def _study(path: str, family: str, n: int) -> pd.DataFrame:
    table = pd.read_csv(RESULTS / path)
    keep = (table["family"] == family) & (table["n"] == n) & (table["method"] == "noise-aware")
    return table[keep & (table["neighbouring"] == "replace-one")]


def _timed_plan(epsilon, **options) -> tuple[pd.DataFrame, dict]:
    """``pymc_dp.plan`` with its time and the 1-minute load average before and after."""
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    table = pymc_dp.plan(epsilon, **options)
    run = {
        "datasets": table.attrs["datasets"],
        "seconds": time.perf_counter() - start,
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
    }
    print(table.to_string(index=False), flush=True)
    print(run, flush=True)
    return table, run


def _pooled(table: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """Rows of the elements ``prefix[...]`` averaged per ε (the studies pool their intervals)."""
    rows = table[table["parameter"].str.startswith(f"{prefix}[")]
    return rows.groupby("epsilon", as_index=False)[["width_private", "width_nonprivate"]].mean()


def _row(family, parameter, n, epsilon, planned, study, datasets_study, run) -> dict:
    return {
        "family": family,
        "parameter": parameter,
        "n": n,
        "epsilon": float(epsilon),
        "width_planned": float(planned.width_private),
        "width_study": float(study),
        "width_nonprivate": float(planned.width_nonprivate),
        "datasets_study": datasets_study,
        **run,
    }


def _beta_bernoulli() -> list[dict]:
    with pm.Model() as bernoulli:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.zeros(100, dtype=int))
    table, run = _timed_plan(
        [0.1, 1.0], model=bernoulli, datasets=40, draws=500, tune=200, random_seed=3
    )
    study = _study("calibration.csv", "beta-bernoulli", 100)
    return [
        _row(
            "beta-bernoulli",
            "p",
            100,
            row.epsilon,
            row,
            study[study["epsilon"] == row.epsilon]["mean_width"].item(),
            2000,
            run,
        )
        for row in table.itertuples()
    ]


def _bounded(family: str, names: dict[str, str], stand_in_seed: int | None, seed: int):
    """A case of :data:`CASES` at n = 1,000, ε = 1; ``names``: plan's parameter (an element
    prefix for a vector, pooled) → the study's label."""
    case = CASES[family]
    _, y, X = case.simulate(1000, np.random.default_rng(0))  # only their shapes are read
    data = {}
    if X is not None:  # a public stand-in for the private covariates, drawn as the study does
        data["X"] = _covariates(1000, np.random.default_rng(stand_in_seed))
    table, run = _timed_plan(
        1.0,
        model=case.model(y, X),
        data=data,
        data_bounds=case.data_bounds,
        datasets=20,
        draws=500,
        tune=500,
        random_seed=seed,
    )
    study = _study("calibration_centred.csv", family, 1000)
    study = study[study["epsilon"] == 1.0]
    rows = []
    for name, label in names.items():
        planned, parameter = table[table["parameter"] == name], name
        if planned.empty:
            planned, parameter = _pooled(table, name), f"{name} (pooled)"
        realised = study[study["parameter"] == label]["mean_width"].item()
        row = next(planned.itertuples())
        rows.append(_row(family, parameter, 1000, 1.0, row, realised, 200, run))
    return rows


def _normal() -> list[dict]:
    return _bounded("normal", {"mu": "mean μ", "sigma": "sd σ"}, None, 4)


def _linear_regression() -> list[dict]:
    return _bounded(
        "linear-regression", {"alpha": "intercept α", "beta": "slopes β (pooled)"}, 21, 4
    )


def _linear_regression_designs(stand_ins: int = 20) -> list[dict]:
    """The regression planned over the study's covariate designs: the study draws a new design
    per data set from its covariate prior (spread, mean and correlation), so here ``stand_ins``
    plans of 2 data sets each, each with its own stand-in drawn from that prior, averaged."""
    case = CASES["linear-regression"]
    _, y, X = case.simulate(1000, np.random.default_rng(0))  # only their shapes are read
    tables, runs = [], []
    for k in range(stand_ins):
        table, run = _timed_plan(
            1.0,
            model=case.model(y, X),
            data={"X": _covariates(1000, np.random.default_rng(100 + k))},
            data_bounds=case.data_bounds,
            datasets=2,
            draws=500,
            tune=500,
            random_seed=200 + k,
        )
        tables.append(table)
        runs.append(run)
    table = (
        pd.concat(tables)
        .groupby("parameter", as_index=False)[["width_private", "width_nonprivate"]]
        .mean()
    )
    table["epsilon"] = 1.0
    run = {
        "datasets": sum(r["datasets"] for r in runs),
        "seconds": sum(r["seconds"] for r in runs),
        "load_start": runs[0]["load_start"],
        "load_end": runs[-1]["load_end"],
    }
    study = _study("calibration_centred.csv", "linear-regression", 1000)
    study = study[study["epsilon"] == 1.0]
    rows = []
    for name, label in (("alpha", "intercept α"), ("beta", "slopes β (pooled)")):
        planned, parameter = table[table["parameter"] == name], name
        if planned.empty:
            planned, parameter = _pooled(table, name), f"{name} (pooled)"
        realised = study[study["parameter"] == label]["mean_width"].item()
        row = next(planned.itertuples())
        rows.append(
            _row("linear-regression-designs", parameter, 1000, 1.0, row, realised, 200, run)
        )
    return rows


def _centred_cells(g, y) -> pm.Model:
    """``cells_calibration.model`` with θ_g = μ + τ z_g a free variable (θ_g ~ N(μ, τ))."""
    with pm.Model() as model:
        labels = pm.Data("g", g)
        outcome = pm.Data("y", y)
        mu = pm.Normal("mu", 0.0, 1.5)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=cells_calibration.GROUPS)
        pm.Bernoulli("y_obs", logit_p=theta[labels], observed=outcome)
    return model


def _cells() -> list[dict]:
    n, groups = 1000, cells_calibration.GROUPS
    _, g, y = cells_calibration.simulate(n, np.random.default_rng(0))  # shapes only
    labels = np.random.default_rng(22).integers(0, groups, n)  # uniform, as the study's
    study = pd.read_csv(RESULTS / "cells_calibration.csv")
    study = study[(study["n"] == n) & (study["method"] == "noise-aware")]
    rows = []
    for build, names in (
        (cells_calibration.model, {"mu": "mu"}),
        (_centred_cells, {"theta": "theta"}),
    ):
        table, run = _timed_plan(
            [0.1, 1.0],
            model=build(g, y),
            data={"g": labels},
            datasets=20,
            draws=500,
            tune=500,
            random_seed=5,
        )
        for name, label in names.items():
            planned = table[table["parameter"] == name]
            if planned.empty:
                planned = _pooled(table, name)
                label_out = f"{name} (pooled)"
            else:
                label_out = name
            for row in planned.itertuples():
                cell = study[(study["epsilon"] == row.epsilon) & (study["parameter"] == label)]
                realised, count = cell["mean_width"].item(), cell["n_datasets"].item()
                rows.append(_row("cells", label_out, n, row.epsilon, row, realised, count, run))
    return rows


def _centred_group_means(y, g) -> pm.Model:
    """``group_means_calibration.build`` with θ_g ~ N(μ, τ) a free variable."""
    with pm.Model(coords={"group": range(group_means_calibration.GROUPS)}) as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, dims="group")
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu=theta[pm.Data("g", g)], sigma=sigma, observed=y)
    return model


def _group_means() -> list[dict]:
    n, groups = 2000, group_means_calibration.GROUPS
    y = np.zeros(n)  # only its length is read
    labels = np.random.default_rng(23).integers(0, groups, n)  # uniform, as the study's
    rows = []
    for build, names in (
        (group_means_calibration.build, ("mu", "sigma")),
        (_centred_group_means, ("theta",)),
    ):
        table, run = _timed_plan(
            1.0,
            model=build(y, labels),
            data={"g": labels},
            data_bounds={"y": group_means_calibration.BOUNDS},
            datasets=20,
            draws=500,
            tune=500,
            random_seed=6,
        )
        for name in names:
            planned = table[table["parameter"] == name]
            label = name
            if planned.empty:
                planned, label = _pooled(table, name), f"{name} (pooled)"
            realised = GROUP_MEANS_STUDY[label]
            rows.append(
                _row(
                    "group-means",
                    label,
                    n,
                    1.0,
                    next(planned.itertuples()),
                    realised,
                    GROUP_MEANS_DATASETS,
                    run,
                )
            )
    return rows


def _poisson_regression() -> list[dict]:
    n = 1000
    _, covariates, y = glm_calibration.simulate("poisson", n, np.random.default_rng(0))
    stand_in = np.random.default_rng(24).uniform(-1.0, 1.0, (n, 1))  # as the study draws x
    study = pd.read_csv(RESULTS / "glm_calibration.csv")
    study = study[
        (study["design"] == "poisson") & (study["n"] == n) & (study["method"] == "noise-aware")
    ]
    table, run = _timed_plan(
        [0.1, 1.0],
        model=glm_calibration.model("poisson", covariates, y),
        data={"X": stand_in},
        datasets=20,
        draws=500,
        tune=500,
        random_seed=6,
        **glm_calibration.declarations("poisson"),
    )
    rows = []
    for name, label in (("alpha", "alpha"), ("beta[0]", "beta[0]")):
        for row in table[table["parameter"] == name].itertuples():
            cell = study[(study["epsilon"] == row.epsilon) & (study["parameter"] == label)]
            realised, count = cell["width"].mean(), len(cell)
            rows.append(_row("poisson-regression", name, n, row.epsilon, row, realised, count, run))
    return rows


RUNS = {
    "beta-bernoulli": _beta_bernoulli,
    "normal": _normal,
    "linear-regression": _linear_regression,
    "linear-regression-designs": _linear_regression_designs,
    "cells": _cells,
    "group-means": _group_means,
    "poisson-regression": _poisson_regression,
}


def check(designs: tuple[str, ...] = DESIGNS) -> pd.DataFrame:
    """Plan each design in ``designs`` and write them, with the other designs' rows already in
    ``docs/results/plan_check.csv``, to that file."""
    rows = []
    for design in designs:
        rows += RUNS[design]()
    result = pd.DataFrame(rows)
    result["relative_error"] = result["width_planned"] / result["width_study"] - 1
    path = RESULTS / "plan_check.csv"
    if path.exists():
        kept = pd.read_csv(path)
        kept = kept[~kept["family"].isin(designs)]
        result = pd.concat([kept, result], ignore_index=True)
    order = {design: i for i, design in enumerate(DESIGNS)}
    result = result.sort_values("family", key=lambda f: f.map(order), kind="stable")
    result = result.reindex(columns=COLUMNS)
    result[["datasets", "datasets_study"]] = result[["datasets", "datasets_study"]].astype("Int64")
    result.to_csv(path, index=False)
    print(result.to_string(index=False))
    return result


def _two_releases() -> tuple[pm.Model, dict]:
    rng = np.random.default_rng(5)
    group = rng.integers(0, 3, 2000)
    searched = rng.binomial(1, np.array([0.1, 0.3, 0.6])[group])
    reason = rng.integers(0, 4, 2000)
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        g = pm.Data("g", group)
        rate = pm.Beta("rate", 1, 1, dims="group")
        share = pm.Dirichlet("share", np.ones(4))
        pm.Bernoulli("searched", p=rate[g], observed=searched)
        pm.Categorical("reason", p=share, observed=reason)
    return model, {"g": np.arange(2000) % 3}  # stand-in labels: equal groups


def allocation_and_report() -> None:
    model, stand_ins = _two_releases()
    allocation = pymc_dp.allocate(
        0.3,
        model=model,
        var_names=["rate"],
        data=stand_ins,
        datasets=10,
        draws=400,
        tune=100,
        random_seed=6,
    )
    print(allocation)
    print(allocation.widths.to_string(index=False))
    plan = pymc_dp.plan(
        [0.3], model=model, data=stand_ins, datasets=10, draws=400, tune=100, random_seed=6
    )
    with model:  # the equal split, as planned (the allocation's gain is printed above)
        idata = pymc_dp.sample(
            1000,
            tune=200,
            chains=2,
            epsilon=0.3,
            budget=0.5,
            random_seed=7,
            progressbar=False,
        )
    summary = pymc_dp.report(idata, plan=plan)
    summary.savefig(RESULTS / "privacy_report.png")
    print(summary.widths.to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["check", "report"], default=None)
    parser.add_argument(
        "--designs", nargs="+", choices=DESIGNS, default=list(DESIGNS), help="designs to check"
    )
    args = parser.parse_args()
    if args.only in (None, "check"):
        check(tuple(args.designs))
    if args.only in (None, "report"):
        allocation_and_report()


if __name__ == "__main__":
    main()
