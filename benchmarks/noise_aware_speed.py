"""ESS per second of noise-aware inference on Beta–Binomial models, and its cost against n.

Model: θ ~ Beta(1, 1), y_i ~ Binomial(5, θ) for n synthetic records (fixed seed), one group,
replace-one neighbours: the route releases the success count once (Laplace, ε) and
``pymc_dp.sample(inference="noise-aware")`` draws exact, independent posterior samples of
(latent true count, θ) (:class:`pymc_dp.families.latent_counts.OneComponentPosterior`).

Part 1, ESS/s, for n ∈ {10, 100, 1000} and ε ∈ {0.1, 1}: each sampler runs 2 chains ×
``--draws`` draws on 1 core in this process, after one untimed warm-up run of each inference,
with a full garbage collection before each timed run. Timed: the whole ``pymc_dp.sample`` call
(analysis, release, private model, compilation, sampling, conversion). ESS: bulk ESS of θ
(``arviz.ess``). Printed: ESS/s of noise-aware and of plug-in inference (the baseline, same
process), their ratio, and the ratio to Bernstein & Sheldon's (NeurIPS 2018) published sampler
on Beta–Binomial cells at ε = 0.1 (1,500 iterations in 0.93 s with min ESS 15–55, i.e. at best
60 ESS/s; their code is not run here). Target: ≥ 10 × 60 = 600 ESS/s.

Part 2, cost against n ∈ {10³, …, 10⁷} at ε = 0.1: the marginal cost of a draw, (wall time of
a run with ``--draws`` draws − wall time with ``--draws // 10``) / (0.9 · draws), and the wall
time of the whole call. After the release the cost should not grow with n (the latent count is
enumerated on a window of width O(b log(1/tol)) whatever n is); the records themselves are
validated and summed once, which is O(n).

Part 3, the collapsed Gibbs cases (the latent table swept by the compiled kernels of
:mod:`pymc_dp.families._count_kernels`), n = 1000, ε = 1, 1000 tune + ``--draws`` draws for
both inferences: Dirichlet–Categorical K = 3 under replace-one (public total: pair moves) and
Beta–Bernoulli with three groups under add-remove-one (private totals: cell moves). ESS: the
minimum bulk ESS over the components.

Run: python benchmarks/noise_aware_speed.py [--draws 20000] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import time

import arviz as az
import numpy as np
import pymc as pm

import pymc_dp

TRIALS = 5
BERNSTEIN_SHELDON_BEST_ESS_PER_S = 55 / 0.93  # published, ε = 0.1 (see module docstring)


def _run(n: int, epsilon: float, inference: str, draws: int, seed: int) -> tuple[float, float]:
    """(wall seconds of the whole pymc_dp.sample call, bulk ESS of θ)."""
    rng = np.random.default_rng(seed)
    y = rng.binomial(TRIALS, 0.3, size=n)
    with pm.Model():
        theta = pm.Beta("theta", 1.0, 1.0)
        pm.Binomial("y", n=TRIALS, p=theta, observed=y)
        gc.collect()
        start = time.perf_counter()
        idata = pymc_dp.sample(
            draws,
            epsilon=epsilon,
            inference=inference,
            tune=0 if inference == "noise-aware" else 100,
            chains=2,
            cores=1,
            random_seed=seed,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(seed + 1),
            compute_convergence_checks=False,
            progressbar=False,
        )
        wall = time.perf_counter() - start
    ess = float(az.ess(idata, var_names=["theta"], method="bulk")["theta"])
    return wall, ess


def _run_gibbs(case: str, inference: str, draws: int, seed: int = 3) -> tuple[float, float]:
    """Part 3: (wall seconds of the whole pymc_dp.sample call, min bulk ESS of θ)."""
    rng = np.random.default_rng(seed)
    n, options = 1000, {}
    with pm.Model():
        if case == "Dirichlet K=3, replace-one":
            theta = pm.Dirichlet("theta", np.ones(3))
            pm.Categorical("y", p=theta, observed=rng.choice(3, size=n, p=[0.2, 0.3, 0.5]))
        else:
            group = rng.integers(0, 3, size=n)
            theta = pm.Beta("theta", 1.0, 1.0, shape=3)
            pm.Bernoulli("y", p=theta[group], observed=rng.binomial(1, 0.3, size=n))
            options = {"neighbouring": "add-remove-one", "public": []}
        gc.collect()
        start = time.perf_counter()
        idata = pymc_dp.sample(
            draws,
            epsilon=1.0,
            inference=inference,
            tune=1000,
            chains=2,
            cores=1,
            random_seed=seed,
            noise_backend="numpy",
            noise_rng=np.random.default_rng(seed + 1),
            compute_convergence_checks=False,
            progressbar=False,
            **options,
        )
        wall = time.perf_counter() - start
    ess = float(az.ess(idata, var_names=["theta"], method="bulk")["theta"].min())
    return wall, ess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="fewer draws and sizes")
    args = parser.parse_args()
    draws = 2_000 if args.quick else args.draws
    for inference in ("noise-aware", "plugin"):
        _run(20, 1.0, inference, 50, 0)  # warm-up: imports, compilation caches

    print(f"Part 1: ESS/s, 2 chains x {draws} draws, whole pymc_dp.sample call")
    print(
        f"{'n':>6} {'eps':>5} {'noise-aware ESS/s':>18} {'plugin ESS/s':>13} "
        f"{'aware/plugin':>13} {'aware/B&S best':>15}"
    )
    for n in (10, 100, 1000):
        for epsilon in (0.1, 1.0):
            rates = {}
            for inference in ("noise-aware", "plugin"):
                wall, ess = _run(n, epsilon, inference, draws, seed=n)
                rates[inference] = ess / wall
            aware, plugin = rates["noise-aware"], rates["plugin"]
            print(
                f"{n:>6} {epsilon:>5g} {aware:>18.0f} {plugin:>13.0f} {aware / plugin:>13.2f} "
                f"{aware / BERNSTEIN_SHELDON_BEST_ESS_PER_S:>15.1f}"
            )

    sizes = (10**3, 10**5) if args.quick else (10**3, 10**4, 10**5, 10**6, 10**7)
    print(f"\nPart 2: cost against n (noise-aware, eps = 0.1, 2 chains x {draws} draws)")
    print(f"{'n':>9} {'whole call s':>13} {'per draw us':>12} {'per draw / n=1e3':>17}")
    baseline = None
    for n in sizes:
        long, _ = _run(n, 0.1, "noise-aware", draws, seed=7)
        short, _ = _run(n, 0.1, "noise-aware", draws // 10, seed=7)
        per_draw = (long - short) / (2 * (draws - draws // 10)) * 1e6
        baseline = baseline or per_draw
        print(f"{n:>9} {long:>13.2f} {per_draw:>12.1f} {per_draw / baseline:>17.2f}")

    print(f"\nPart 3: collapsed Gibbs cases, n = 1000, eps = 1, 2 chains x (1000 + {draws})")
    print(f"{'case':<30} {'noise-aware ESS/s':>18} {'plugin ESS/s':>13} {'aware/plugin':>13}")
    for case in ("Dirichlet K=3, replace-one", "Beta 3 groups, add-remove-one"):
        rates = {}
        for inference in ("noise-aware", "plugin"):
            _run_gibbs(case, inference, 50)  # warm-up
            wall, ess = _run_gibbs(case, inference, draws)
            rates[inference] = ess / wall
        aware, plugin = rates["noise-aware"], rates["plugin"]
        print(f"{case:<30} {aware:>18.0f} {plugin:>13.0f} {aware / plugin:>13.2f}")


if __name__ == "__main__":
    main()
