"""Coverage and width of private logistic and Poisson regression (covariates read in bins).

    python scripts/glm_calibration.py                          # both designs, n ∈ {10³, 10⁴, 10⁵}
    python scripts/glm_calibration.py --designs logistic --ns 1000 --n-datasets 50

Designs (parameters drawn from the prior, records given them):

* ``logistic``: α ~ N(0, 1), β ~ N(0, 1)², y ~ Bernoulli(logit⁻¹(α + β₁x + β₂d)) with a
  continuous covariate x ~ U[−1, 1] (declared bounds [−1, 1], 10 bins) and an indicator
  d ~ Bernoulli(½) (read at its levels): 20 cells.
* ``poisson``: α ~ N(0, ½), β ~ N(0, ½), y ~ Poisson(exp(α + βx)), x ~ U[−1, 1] (10 bins),
  counts declared in [0, 10] and clamped into it (``clamp_to_bounds``; a record above 10 is
  rare under this prior, and the score is against the α, β that generated the data).

The table is released as ``pymc_dp.sample`` releases it
(:func:`pymc_dp.mechanisms.statistics.release_bounded`, replace-one, NumPy noise, a
throw-away ledger); the private model is built once per cell and refilled with each release
(:func:`pymc_dp.analysis.rewrite.set_released_statistics`) and sampled by NUTS (one chain,
1,000 draws after 500 tuning steps, ``target_accept`` 0.9). The non-private reference is the
Laplace approximation of the exact posterior (Newton's method on the records' log-posterior:
at n ≥ 10³ it is the posterior to the width's second digit). Scores the central 90%
intervals of every coefficient: coverage of the true value and mean width, and the private
width over the non-private width. Writes ``docs/results/glm_calibration.csv``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
from cells_calibration import sample_each  # scripts/ is on the path when run as a script
from scipy import special, stats

from pymc_dp.analysis import recognise
from pymc_dp.analysis.rewrite import build_private_model, set_released_statistics
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.mechanisms.statistics import release_bounded

LEVEL = 0.9
COUNT_BOUND = 10
PRIORS = {"logistic": (1.0, 1.0), "poisson": (0.5, 0.5)}  # prior sds of α and of each β


def simulate(design: str, n: int, rng: np.random.Generator):
    """(true coefficients (α, β…), design matrix (n, p), outcomes)."""
    sd_alpha, sd_beta = PRIORS[design]
    x = rng.uniform(-1.0, 1.0, n)
    if design == "logistic":
        covariates = np.column_stack([x, rng.integers(0, 2, n)]).astype(np.float64)
        truth = np.r_[rng.normal(0, sd_alpha), rng.normal(0, sd_beta, 2)]
        y = rng.binomial(1, special.expit(truth[0] + covariates @ truth[1:]))
    else:
        covariates = x[:, None]
        truth = np.r_[rng.normal(0, sd_alpha), rng.normal(0, sd_beta)]
        y = np.minimum(rng.poisson(np.exp(truth[0] + covariates @ truth[1:])), COUNT_BOUND)
    return truth, covariates, y


def model(design: str, covariates, y) -> pm.Model:
    sd_alpha, sd_beta = PRIORS[design]
    with pm.Model() as m:
        X = pm.Data("X", covariates)
        outcome = pm.Data("y", y)
        alpha = pm.Normal("alpha", 0.0, sd_alpha)
        beta = pm.Normal("beta", 0.0, sd_beta, shape=covariates.shape[1])
        eta = alpha + X @ beta
        if design == "logistic":
            pm.Bernoulli("y_obs", logit_p=eta, observed=outcome)
        else:
            pm.Poisson("y_obs", mu=pm.math.exp(eta), observed=outcome)
    return m


def declarations(design: str) -> dict:
    if design == "logistic":
        return {
            "data_bounds": {"X": ([-1.0, 0.0], [1.0, 1.0])},
            "covariate_bins": {"X": [10, "levels"]},
        }
    return {
        "data_bounds": {"X": (-1.0, 1.0), "y_obs": (0, COUNT_BOUND)},
        "covariate_bins": {"X": 10},
        "clamp_to_bounds": ["y_obs"],
    }


def laplace_intervals(design: str, covariates, y) -> np.ndarray:
    """Central intervals (p + 1, 2) of (α, β) from the Laplace approximation of the exact
    posterior (Newton's method from 0; the log-posterior is concave)."""
    sd_alpha, sd_beta = PRIORS[design]
    design_matrix = np.column_stack([np.ones(len(y)), covariates])
    precision = np.diag([sd_alpha**-2] + [sd_beta**-2] * covariates.shape[1])
    theta = np.zeros(design_matrix.shape[1])
    for _ in range(50):
        eta = design_matrix @ theta
        if design == "logistic":
            mean = special.expit(eta)
            weight = mean * (1 - mean)
        else:
            mean = weight = np.exp(eta)
        gradient = design_matrix.T @ (y - mean) - precision @ theta
        hessian = design_matrix.T @ (design_matrix * weight[:, None]) + precision
        step = np.linalg.solve(hessian, gradient)
        theta = theta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    sd = np.sqrt(np.diag(np.linalg.inv(hessian)))
    z = stats.norm.ppf((1 + LEVEL) / 2)
    return np.column_stack([theta - z * sd, theta + z * sd])


def private_intervals(m: pm.Model, released, rng) -> list[np.ndarray]:
    out = []
    for trace in sample_each(m, released, rng):
        draws = np.column_stack([trace.get_values("alpha"), trace.get_values("beta")])
        q = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
        divergent = int(np.sum(trace.get_sampler_stats("diverging")))
        out.append((q.T, divergent))
    return out


def cell(design: str, n: int, epsilon: float, n_datasets: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    simulated = [simulate(design, n, rng) for _ in range(n_datasets)]
    raw = model(design, *simulated[0][1:])
    link = recognise(raw, "laplace", **declarations(design)).blocks["y_obs"]
    first = release_bounded(link, epsilon, ledger=PrivacyLedger(), backend="numpy", rng=rng)
    private = build_private_model(raw, [first], inference="noise-aware")
    released = []
    for _, covariates, y in simulated:
        out = release_bounded(
            BoundedLink(link.structure, y, covariates=covariates),
            epsilon,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
        )
        set_released_statistics(private, "y_obs", out.noisy, scale=out.scale)
        released.append({v.name: np.asarray(v.get_value()) for v in private.data_vars})
    found = private_intervals(private, released, rng)
    names = ["alpha"] + [f"beta[{j}]" for j in range(simulated[0][1].shape[1])]
    rows = []
    for (truth, covariates, y), (interval, divergent) in zip(simulated, found, strict=True):
        reference = laplace_intervals(design, covariates, y)
        for j, name in enumerate(names):
            for method, (lo, hi) in (("noise-aware", interval[j]), ("non-private", reference[j])):
                rows.append(
                    {
                        "design": design,
                        "n": n,
                        "epsilon": epsilon,
                        "method": method,
                        "parameter": name,
                        "covered": bool(lo <= truth[j] <= hi),
                        "width": float(hi - lo),
                        "divergences": divergent if method == "noise-aware" else 0,
                    }
                )
    return rows


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    grouped = table.groupby(["design", "n", "epsilon", "parameter", "method"])
    wide = grouped.agg(coverage=("covered", "mean"), mean_width=("width", "mean")).unstack()
    wide[("width_ratio", "")] = (
        wide[("mean_width", "noise-aware")] / wide[("mean_width", "non-private")]
    )
    return wide


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", nargs="+", default=["logistic", "poisson"])
    parser.add_argument("--ns", nargs="+", type=int, default=[1000, 10000, 100000])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    parser.add_argument("--n-datasets", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--output", type=Path, default=Path("docs/results/glm_calibration.csv"))
    args = parser.parse_args()
    rows = []
    for design in args.designs:
        for n in args.ns:
            for epsilon in args.epsilons:
                start = time.perf_counter()
                found = cell(design, n, epsilon, args.n_datasets, args.seed)
                rows += found
                print(
                    f"{design} n={n} ε={epsilon}: {time.perf_counter() - start:.0f} s",
                    flush=True,
                )
                args.output.parent.mkdir(parents=True, exist_ok=True)
                pd.DataFrame(rows).to_csv(args.output, index=False)
    table = pd.DataFrame(rows)
    print(summarise(table).round(3).to_string())
    divergent = table[table.method == "noise-aware"].groupby(["design", "n", "epsilon"])
    print("divergences per data set:", divergent["divergences"].mean().round(3).to_dict())


if __name__ == "__main__":
    main()
