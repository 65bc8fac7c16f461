"""Coverage and width of the noise-aware varying-intercept logistic model (cell counts).

    python scripts/cells_calibration.py                    # n ∈ {10³, 10⁴}, ε ∈ {0.1, 1}
    python scripts/cells_calibration.py --ns 1000 --epsilons 1 --n-datasets 50

The model (the one users write most, refused before :mod:`pymc_dp.families.cells`):
μ ~ N(0, 1.5²), τ ~ HalfNormal(1), z_g ~ N(0, 1) for G = 5 groups, y_i ~ Bernoulli(logit⁻¹(μ +
τ z_{g_i})) with private labels g_i uniform over the groups. Parameters are drawn from the
prior, records given them; the per-cell table is released as ``pymc_dp.sample`` releases it
(:func:`pymc_dp.mechanisms.statistics.release_bounded`, replace-one, NumPy noise, a throw-away
ledger), and the private model is built once per cell and refilled with each release
(:func:`pymc_dp.analysis.rewrite.set_released_statistics`). Scores the central 90% intervals
of μ and of the group log-odds θ_g = μ + τ z_g (pooled over groups) of the noise-aware and the
non-private posteriors: coverage and mean width. Writes ``docs/results/cells_calibration.csv``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm

from pymc_dp.analysis import recognise
from pymc_dp.analysis.rewrite import build_private_model, set_released_statistics
from pymc_dp.families.bounded import BoundedLink
from pymc_dp.ledger import PrivacyLedger
from pymc_dp.mechanisms.statistics import release_bounded

GROUPS = 5
LEVEL = 0.9


def simulate(n: int, rng: np.random.Generator):
    mu, tau = rng.normal(0.0, 1.5), abs(rng.normal())
    z = rng.normal(size=GROUPS)
    g = rng.integers(0, GROUPS, n)
    y = rng.binomial(1, 1.0 / (1.0 + np.exp(-(mu + tau * z[g]))))
    return {"mu": mu, "theta": mu + tau * z}, g, y


def model(g, y) -> pm.Model:
    with pm.Model() as m:
        labels = pm.Data("g", g)
        outcome = pm.Data("y", y)
        mu = pm.Normal("mu", 0.0, 1.5)
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", shape=GROUPS)
        pm.Deterministic("theta", mu + tau * z)
        pm.Bernoulli("y_obs", logit_p=mu + tau * z[labels], observed=outcome)
    return m


def sample_each(m: pm.Model, datasets, rng):
    """One NUTS chain (1,000 draws after 500 tuning steps, ``target_accept`` 0.9) on ``m``
    filled with each data set in turn (``pm.set_data``): the model compiles once. Yields the
    traces (``MultiTrace``). Shared with ``scripts/glm_calibration.py``."""
    with m:
        step = pm.NUTS(target_accept=0.9)
    for values in datasets:
        pm.set_data(values, model=m)
        yield pm.sample(
            1000,
            tune=500,
            step=step,
            model=m,
            chains=1,
            cores=1,
            random_seed=int(rng.integers(2**31)),
            progressbar=False,
            compute_convergence_checks=False,
            return_inferencedata=False,
        )


def intervals(m: pm.Model, datasets, rng) -> dict[str, np.ndarray]:
    out = {"mu": [], "theta": []}
    for trace in sample_each(m, datasets, rng):
        for name in out:
            q = np.quantile(trace.get_values(name), [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
            out[name].append(np.moveaxis(q, 0, -1))
    return {k: np.stack(v) for k, v in out.items()}


def cell(n: int, epsilon: float, n_datasets: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    simulated = [simulate(n, rng) for _ in range(n_datasets)]
    truth = {k: np.stack([np.asarray(t[k]) for t, _, _ in simulated]) for k in ("mu", "theta")}
    rows = []
    raw = model(*simulated[0][1:])
    link = recognise(raw, "laplace").blocks["y_obs"]
    first = release_bounded(link, epsilon, ledger=PrivacyLedger(), backend="numpy", rng=rng)
    private = build_private_model(raw, [first], inference="noise-aware")
    released = []
    for _, g, y in simulated:
        out = release_bounded(
            BoundedLink(link.structure, y, groups=g[:, None]),
            epsilon,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
        )
        set_released_statistics(private, "y_obs", out.noisy, scale=out.scale)
        released.append({v.name: np.asarray(v.get_value()) for v in private.data_vars})
    methods = {
        "noise-aware": intervals(private, released, rng),
        "non-private": intervals(raw, [{"g": g, "y": y} for _, g, y in simulated], rng),
    }
    for method, found in methods.items():
        for name in ("mu", "theta"):
            lo, hi = found[name][..., 0], found[name][..., 1]
            rows.append(
                {
                    "n": n,
                    "epsilon": epsilon,
                    "method": method,
                    "parameter": name,
                    "coverage": float(np.mean((truth[name] >= lo) & (truth[name] <= hi))),
                    "mean_width": float(np.mean(hi - lo)),
                    "n_datasets": n_datasets,
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", nargs="+", type=int, default=[1000, 10000])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0])
    parser.add_argument("--n-datasets", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--output", type=Path, default=Path("docs/results/cells_calibration.csv"))
    args = parser.parse_args()
    rows = []
    for n in args.ns:
        for epsilon in args.epsilons:
            start = time.perf_counter()
            rows += cell(n, epsilon, args.n_datasets, args.seed)
            print(f"n={n} ε={epsilon}: {time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    wide = table.pivot_table(
        index=["n", "epsilon", "parameter"], columns="method", values=["coverage", "mean_width"]
    )
    wide[("width_ratio", "")] = (
        wide[("mean_width", "noise-aware")] / wide[("mean_width", "non-private")]
    )
    print(wide.round(3).to_string())
    args.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output, index=False)


if __name__ == "__main__":
    main()
