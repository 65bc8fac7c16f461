"""How much wider than non-private are the private intervals? Normal and regression, σ = 1.

    python scripts/width_ratios.py                       # 5 data sets per cell, both families
    python scripts/width_ratios.py --datasets 3 --families normal

For the calibration study's Normal and linear-regression models and bounds
(:data:`pymc_dp.calibration.bounded.CASES`: records in [−12, 12]; covariates in [−1, 1],
responses in [−10, 10]) with the residual sd fixed at σ = 1, the other parameters drawn from
their priors (μ ~ N(0, 1); α, β₁, β₂ ~ N(0, 1)), n ∈ {10³, 10⁴}, ε ∈ {0.1, 1}, replace-one:
simulates ``--datasets`` data sets per cell, runs ``pymc_dp.sample`` (default, noise-aware)
and ``pm.sample`` on the same records, and reports the ratio of the central 90% interval
widths (private / non-private) per parameter, the mean over data sets and their range, and
whether each private interval covers the truth. Two regression designs: covariates uniform on
[−1, 1] (``uniform``) and drawn from the regression family's covariate prior as in the
calibration study (``prior``: their spread varies from data set to data set, and the ratio
with it). Writes ``width_ratios.csv`` to ``--output-dir`` (default ``docs/results``).

Every run: 2 chains × 1,000 draws + 1,000 tuning, one core.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm

import pymc_dp
from pymc_dp.calibration.bounded import CASES, _covariates

CELLS_N = (1_000, 10_000)
CELLS_EPSILON = (1.0, 0.1)


def _normal(n, rng):
    case = CASES["normal"]
    while True:  # reject a data set with a record outside the bounds, as the study does
        mu = rng.normal()
        y = rng.normal(mu, 1.0, n)
        if np.all(np.abs(y) <= 12.0):
            truth = {"mu": np.asarray(mu), "sigma": np.asarray(1.0)}
            return truth, case.model(y, None), case.data_bounds


def _regression(design):
    def simulate(n, rng):
        case = CASES["linear-regression"]
        while True:
            alpha, beta = rng.normal(), rng.normal(size=2)
            if design == "uniform":
                X = rng.uniform(-1.0, 1.0, (n, 2))
            else:
                X = _covariates(n, rng)
            y = alpha + X @ beta + rng.normal(0.0, 1.0, n)
            if np.all(np.abs(y) <= 10.0):
                truth = {"alpha": np.asarray(alpha), "beta": beta, "sigma": np.asarray(1.0)}
                return truth, case.model(y, X), case.data_bounds

    return simulate


DESIGNS = {
    "normal": _normal,
    "regression-uniform": _regression("uniform"),
    "regression-prior": _regression("prior"),
}


def _intervals(idata, name):
    draws = idata["posterior"][name].stack(sample=("chain", "draw")).transpose("sample", ...)
    values = draws.to_numpy().reshape(draws.shape[0], -1)
    return np.quantile(values, 0.05, axis=0), np.quantile(values, 0.95, axis=0)


def _run(design, n, epsilon, seed):
    rng = np.random.default_rng(seed)
    truth, model, bounds = DESIGNS[design](n, rng)
    options = {"draws": 1000, "tune": 1000, "chains": 2, "cores": 1, "progressbar": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private = pymc_dp.sample(
            epsilon=epsilon, data_bounds=bounds, model=model, random_seed=seed, **options
        )
        with model:
            exact = pm.sample(random_seed=seed, compute_convergence_checks=False, **options)
    rows = []
    for name, value in truth.items():
        low, high = _intervals(private, name)
        low_np, high_np = _intervals(exact, name)
        value = np.ravel(value)
        for j in range(value.size):
            label = name if value.size == 1 else f"{name}[{j}]"
            rows.append(
                {
                    "design": design,
                    "n": n,
                    "epsilon": epsilon,
                    "seed": seed,
                    "parameter": label,
                    "width_private": high[j] - low[j],
                    "width_non_private": high_np[j] - low_np[j],
                    "ratio": (high[j] - low[j]) / (high_np[j] - low_np[j]),
                    "covers": bool(low[j] <= value[j] <= high[j]),
                    "divergences": int(private["sample_stats"]["diverging"].sum()),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=["normal", "regression"])
    parser.add_argument("--datasets", type=int, default=5)
    parser.add_argument("--ns", nargs="+", type=int, default=list(CELLS_N))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(CELLS_EPSILON))
    parser.add_argument("--output-dir", type=Path, default=Path("docs/results"))
    args = parser.parse_args()
    designs = [d for d in DESIGNS if d.split("-")[0] in args.families]
    rows = []
    start = time.perf_counter()
    for design in designs:
        for n in args.ns:
            for epsilon in args.epsilons:
                for seed in range(args.datasets):
                    rows.extend(_run(design, n, epsilon, seed))
                cell = pd.DataFrame(rows).query(
                    "design == @design and n == @n and epsilon == @epsilon"
                )
                summary = cell.groupby("parameter")["ratio"].agg(["mean", "min", "max"])
                print(f"{design} n={n} ε={epsilon:g}:")
                for parameter, row in summary.iterrows():
                    covered = cell[cell.parameter == parameter]["covers"].mean()
                    print(
                        f"  {parameter:9s} width ratio {row['mean']:6.2f} "
                        f"({row['min']:.2f}–{row['max']:.2f}), covered {covered:.0%}"
                    )
    table = pd.DataFrame(rows)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output_dir / "width_ratios.csv", index=False)
    print(f"{len(table)} intervals in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
