"""Models read per cell: ``pymc_dp.sample`` against ``pm.sample`` on the same model and data.

The models users write most (issue: "the models PyMC users write"), for n records (default
10⁴ and 10⁵), in one process:

* ``varying-intercept``: y_i ~ Bernoulli(logit⁻¹(μ + τ z_{g_i})), G = 8 groups, private labels;
* ``logistic-regression``: the same with a slope on a private covariate x ~ U[−1, 1] (declared
  bounds, 10 bins) and on a private 0/1 indicator (read at its levels): 8 × 10 × 2 cells;
* ``poisson-regression``: y_i ~ Poisson(exp(α + β x_i)), counts declared in [0, 10], x in
  10 bins;
* ``group-means``: the radon model's form, y_i ~ Normal(a_{g_i} + b d_i, σ) with a_g = μ + τ z_g
  (G = 8, private labels) and a private 0/1 indicator d read at its levels (16 cells), values
  declared in [−6, 6].

``pm.sample`` on the raw model and ``pymc_dp.sample`` (ε = 1, noise-aware) are each called
twice on a newly written model of the same structure (the second call reuses the compiled
functions). Prints wall seconds, the ratio of second calls (target ≤ 2), divergences and the
load average. After the release the private model reads a table per cell, so its cost should
not grow with n; ``pm.sample``'s does.

Run: python benchmarks/cells_speed.py [--models ...] [--ns 10000 100000] [--draws 1000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pymc as pm

import pymc_dp

GROUPS = 8
MODELS = ("varying-intercept", "logistic-regression", "poisson-regression", "group-means")


def simulate(name: str, n: int, rng: np.random.Generator) -> dict:
    g = rng.integers(0, GROUPS, n)
    x = rng.uniform(-1.0, 1.0, n)
    d = rng.integers(0, 2, n)
    z = rng.normal(size=GROUPS)
    if name == "poisson-regression":
        y = np.minimum(rng.poisson(np.exp(0.5 + 0.8 * x)), 10)
    elif name == "group-means":
        y = np.clip(rng.normal(0.5 + 0.8 * z[g] - 0.7 * d, 1.0), -6.0, 6.0)
    elif name == "logistic-regression":
        y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(-0.5 + 0.8 * z[g] + 1.2 * x - 0.7 * d))))
    else:
        y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(-0.5 + 0.8 * z[g]))))
    return {"g": g, "x": x, "d": d, "y": y}


def build(name: str, data: dict) -> tuple[pm.Model, dict]:
    """The model and the declarations ``pymc_dp.sample`` needs for it."""
    with pm.Model() as model:
        if name == "poisson-regression":
            x = pm.Data("x", data["x"])
            alpha, beta = pm.Normal("alpha", 0.0, 2.0), pm.Normal("beta", 0.0, 2.0)
            pm.Poisson("y", mu=pm.math.exp(alpha + beta * x), observed=data["y"])
            return model, {"data_bounds": {"x": (-1, 1), "y": (0, 10)}}
        labels = pm.Data("g", data["g"])
        mu, tau = pm.Normal("mu", 0.0, 1.5), pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", shape=GROUPS)
        if name == "group-means":
            d, b = pm.Data("d", data["d"]), pm.Normal("b", 0.0, 2.0)
            sigma = pm.HalfNormal("sigma", 2.0)
            pm.Normal("y", mu=mu + tau * z[labels] + b * d, sigma=sigma, observed=data["y"])
            return model, {"data_bounds": {"y": (-6, 6), "d": (0, 1)}}
        logit_p = mu + tau * z[labels]
        declarations = {}
        if name == "logistic-regression":
            x, d = pm.Data("x", data["x"]), pm.Data("d", data["d"])
            logit_p = logit_p + pm.Normal("beta_x", 0.0, 2.0) * x + pm.Normal("beta_d") * d
            declarations = {"data_bounds": {"x": (-1, 1), "d": (0, 1)}}
        pm.Bernoulli("y", logit_p=logit_p, observed=data["y"])
    return model, declarations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--ns", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument(
        "--nuts-sampler",
        choices=("pymc", "blackjax", "nutpie"),
        default=None,
        help="pymc_dp.sample's nuts_sampler (default: its default)",
    )
    args = parser.parse_args()
    private_options = {} if args.nuts_sampler is None else {"nuts_sampler": args.nuts_sampler}
    options = dict(
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        cores=1,
        progressbar=False,
        compute_convergence_checks=False,
        random_seed=1,
    )
    rows = []
    for name in args.models:
        for n in args.ns:
            data = simulate(name, n, np.random.default_rng(n))
            times = {}
            for call in ("first", "second"):
                model, declarations = build(name, data)
                with model:
                    start = time.perf_counter()
                    pm.sample(nuts_sampler="pymc", **options)
                    times[f"pm {call}"] = time.perf_counter() - start
                model, declarations = build(name, data)
                with model:
                    start = time.perf_counter()
                    idata = pymc_dp.sample(
                        epsilon=1.0, **declarations, **options, **private_options
                    )
                    times[f"dp {call}"] = time.perf_counter() - start
                    divergences = int(idata["sample_stats"]["diverging"].sum())
                    steps = float(idata["sample_stats"]["n_steps"].mean())
            rows.append((name, n, times, divergences))
            print(f"{name} n={n}: {times}, private steps per draw {steps:.1f}", flush=True)
    print(
        f"{'model':>20} {'n':>8} {'pm first':>9} {'pm second':>10} {'dp first':>9} "
        f"{'dp second':>10} {'ratio 2nd':>9} {'dp div':>7}"
    )
    for name, n, t, div in rows:
        print(
            f"{name:>20} {n:>8} {t['pm first']:>9.1f} {t['pm second']:>10.1f} "
            f"{t['dp first']:>9.1f} {t['dp second']:>10.1f} "
            f"{t['dp second'] / t['pm second']:>9.2f} {div:>7}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
