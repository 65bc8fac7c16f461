"""Cell counts: ``pymc_dp.sample`` on a varying-intercept logistic model vs ``pm.sample``.

The model users write most (issue: "the models PyMC users write"): y_i ~ Bernoulli(logit⁻¹(μ +
τ z_{g_i})), G = 8 groups, private labels. For n records (default 10⁴ and 10⁵), in one
process: ``pm.sample`` on the raw model and ``pymc_dp.sample`` (ε = 1, noise-aware), each
called twice on a newly written model of the same structure (the second call reuses the
compiled functions). Prints wall seconds, the ratio of second calls (target ≤ 2), divergences
and the load average. After the release the private model reads a (G, 2) table, so its cost
should not grow with n; ``pm.sample``'s does.

Run: python benchmarks/cells_speed.py [--ns 10000 100000] [--draws 1000] [--tune 1000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pymc as pm

import pymc_dp

GROUPS = 8


def build(g, y):
    with pm.Model() as model:
        labels = pm.Data("g", g)
        mu, tau = pm.Normal("mu", 0.0, 1.5), pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", shape=GROUPS)
        pm.Bernoulli("y", logit_p=mu + tau * z[labels], observed=y)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    args = parser.parse_args()
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
    for n in args.ns:
        rng = np.random.default_rng(n)
        g = rng.integers(0, GROUPS, n)
        y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(-0.5 + 0.8 * rng.normal(size=GROUPS)[g]))))
        times = {}
        for call in ("first", "second"):
            with build(g, y):
                start = time.perf_counter()
                idata = pm.sample(nuts_sampler="pymc", **options)
                times[f"pm {call}"] = time.perf_counter() - start
            with build(g, y):
                start = time.perf_counter()
                idata = pymc_dp.sample(epsilon=1.0, **options)
                times[f"dp {call}"] = time.perf_counter() - start
                divergences = int(idata["sample_stats"]["diverging"].sum())
        rows.append((n, times, divergences))
    print(
        f"{'n':>8} {'pm first':>9} {'pm second':>10} {'dp first':>9} {'dp second':>10} "
        f"{'ratio 2nd':>9} {'dp div':>7}"
    )
    for n, t, div in rows:
        print(
            f"{n:>8} {t['pm first']:>9.1f} {t['pm second']:>10.1f} {t['dp first']:>9.1f} "
            f"{t['dp second']:>10.1f} {t['dp second'] / t['pm second']:>9.2f} {div:>7}"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
