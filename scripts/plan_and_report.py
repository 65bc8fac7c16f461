"""The planner's honesty check, an allocation example and the privacy report's figure.

    python scripts/plan_and_report.py                 # everything (about 10 minutes, 2 cores)
    python scripts/plan_and_report.py --only check    # the planner against the studies

1. ``pymc_dp.plan`` on the calibration study's designs, beside the study's realised mean
   widths of the noise-aware 90% intervals: Beta(1, 1)–Bernoulli, n = 100, ε ∈ {0.1, 1}
   (``docs/results/calibration.csv``, 2,000 data sets per cell), and the Normal of
   :data:`pymc_dp.calibration.bounded.CASES`, n = 1,000, ε = 1
   (``docs/results/calibration_centred.csv``, 200 data sets). Writes
   ``docs/results/plan_check.csv``.
2. ``pymc_dp.allocate`` on a two-release model (a Bernoulli rate by group and a 4-category
   reason, n = 2,000), for the rates, at ε = 0.3: the split and the gain over the equal split.
3. ``pymc_dp.report`` of a run of that model at ε = 0.3 split equally, with the plan's
   expected widths at that ε: ``docs/results/privacy_report.png``.

Everything is simulated: no record is read, and the releases are charged to throw-away ledgers.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm

import pymc_dp
from pymc_dp.calibration.bounded import CASES

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def _study(path: str, family: str, n: int) -> pd.DataFrame:
    table = pd.read_csv(RESULTS / path)
    keep = (table["family"] == family) & (table["n"] == n) & (table["method"] == "noise-aware")
    return table[keep & (table["neighbouring"] == "replace-one")]


def check() -> pd.DataFrame:
    rows = []
    with pm.Model() as bernoulli:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=np.zeros(100, dtype=int))
    start = time.perf_counter()
    table = pymc_dp.plan(
        [0.1, 1.0], model=bernoulli, datasets=40, draws=500, tune=200, random_seed=3
    )
    seconds = time.perf_counter() - start
    study = _study("calibration.csv", "beta-bernoulli", 100)
    for row in table.itertuples():
        realised = study[study["epsilon"] == row.epsilon]["mean_width"].item()
        rows.append(
            (
                "beta-bernoulli",
                "p",
                100,
                row.epsilon,
                row.width_private,
                realised,
                row.width_nonprivate,
                40,
                seconds,
            )
        )
    case = CASES["normal"]
    _, y, _ = case.simulate(1000, np.random.default_rng(0))  # only its length is read
    start = time.perf_counter()
    table = pymc_dp.plan(
        1.0,
        model=case.model(y, None),
        data_bounds=case.data_bounds,
        datasets=20,
        draws=500,
        tune=500,
        random_seed=4,
    )
    seconds = time.perf_counter() - start
    study = _study("calibration_centred.csv", "normal", 1000)
    names = {"mu": "mean μ", "sigma": "sd σ"}
    for row in table.itertuples():
        realised = study[(study["epsilon"] == 1.0) & (study["parameter"] == names[row.parameter])]
        rows.append(
            (
                "normal",
                row.parameter,
                1000,
                1.0,
                row.width_private,
                realised["mean_width"].item(),
                row.width_nonprivate,
                20,
                seconds,
            )
        )
    result = pd.DataFrame(
        rows,
        columns=[
            "family",
            "parameter",
            "n",
            "epsilon",
            "width_planned",
            "width_study",
            "width_nonprivate",
            "datasets",
            "seconds",
        ],
    )
    result["relative_error"] = result["width_planned"] / result["width_study"] - 1
    result.to_csv(RESULTS / "plan_check.csv", index=False)
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
    args = parser.parse_args()
    if args.only in (None, "check"):
        check()
    if args.only in (None, "report"):
        allocation_and_report()


if __name__ == "__main__":
    main()
