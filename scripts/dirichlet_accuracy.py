"""Reproduce the accuracy comparison of the note (Dirichlet/Hellinger mechanisms, 2020), §4:
Pr[H(DirP(x), M(x)) within t] for LSHist vs EHD as n grows (k = 2, uniform prior), and the
crossover predicted by Corollaries 4.5.1–4.5.3.

Panel (a): t = LS(x) (the good set R_g of Corollary 4.5.3; "≤ t"), with the bracket of
:func:`pymc_dp.mechanisms.dirichlet.corollary_4_5_3_crossover`. Panel (b): a fixed t = 0.1
("< t", Theorem 4.5), with the n where Corollary 4.5.1's (corrected) condition
n + 1 > (2k+1)e^{ε/c}/(1 − e^{−kε}) holds, k = k(n) the count radius within t. Exact
probabilities by enumeration; Monte Carlo points from the release functions themselves.

Usage: ``.venv/bin/python scripts/dirichlet_accuracy.py`` (about a minute) → writes
``docs/results/dirichlet_accuracy.csv`` and ``docs/results/dirichlet_accuracy.png``.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pymc_dp import PrivacyLedger
from pymc_dp.mechanisms import dirichlet as dm

OUT = Path(__file__).resolve().parents[1] / "docs" / "results"
EPSILONS = (0.1, 0.3, 1.0)
FIXED_T = 0.1
PRIOR = np.ones(2)
C = 2.0 * dm.GLOBAL_SENSITIVITY


def _data(n: int) -> list[int]:
    return [n // 3, n - n // 3]


def _radius(counts, t):
    """Smallest of the count radii below and above x within Hellinger distance < t."""
    n, c = sum(counts), counts[0]
    post = PRIOR + counts
    others = PRIOR + np.column_stack([np.arange(n + 1), n - np.arange(n + 1)])
    inside = dm.hellinger_dirichlet(post, others) < t
    lo = next(j for j in range(c + 1) if c - j - 1 < 0 or not inside[c - j - 1])
    hi = next(j for j in range(n - c + 1) if c + j + 1 > n or not inside[c + j + 1])
    return min(lo, hi)


def _simulate(release, counts, eps, t, draws, rng, strict):
    post = PRIOR + counts
    kwargs = {"backend": "numpy"} if release is dm.release_lshist else {}
    out = np.array(
        [
            release(counts, PRIOR, epsilon=eps, ledger=PrivacyLedger(), rng=rng, **kwargs)
            for _ in range(draws)
        ]
    )
    distance = dm.hellinger_dirichlet(post, out)
    return float(np.mean(dm._within(distance, t, post, strict)))


def main() -> None:
    rng = np.random.default_rng(2020)
    grid = np.unique(np.round(np.geomspace(6, 3000, 70)).astype(int))
    rows = []
    for eps in EPSILONS:
        n_ehd, n_lshist = dm.corollary_4_5_3_crossover(eps)
        for n in grid:
            counts = _data(int(n))
            ls = dm.local_sensitivity(counts, PRIOR)
            k = _radius(counts, FIXED_T)
            cond_451 = k >= 1 and n + 1 > (2 * k + 1) * math.exp(eps / C) / (1 - math.exp(-k * eps))
            rows.append(
                {
                    "epsilon": eps,
                    "n": int(n),
                    "count": counts[0],
                    "local_sensitivity": ls,
                    "lshist_ls": dm.within_t_probability_lshist(
                        counts, PRIOR, eps, ls, strict=False
                    ),
                    "ehd_ls": dm.within_t_probability_ehd(counts, PRIOR, eps, ls, strict=False),
                    "lshist_t": dm.within_t_probability_lshist(counts, PRIOR, eps, FIXED_T),
                    "ehd_t": dm.within_t_probability_ehd(counts, PRIOR, eps, FIXED_T),
                    "radius_t": k,
                    "corollary_4_5_1_holds": bool(cond_451),
                    "corollary_4_5_3_ehd_better_below": n_ehd - 1,
                    "corollary_4_5_3_lshist_better_above": n_lshist - 1,
                }
            )
    table = pd.DataFrame(rows)
    # Monte Carlo from the release functions at a few n (t = LS(x))
    mc = []
    for eps in EPSILONS:
        for n in (8, 30, 120):
            counts = _data(n)
            ls = dm.local_sensitivity(counts, PRIOR)
            mc.append(
                {
                    "epsilon": eps,
                    "n": n,
                    "lshist_mc": _simulate(dm.release_lshist, counts, eps, ls, 1000, rng, False),
                    "ehd_mc": _simulate(dm.release_ehd, counts, eps, ls, 1000, rng, False),
                }
            )
    mc = pd.DataFrame(mc)
    table = table.merge(mc, on=["epsilon", "n"], how="left")
    OUT.mkdir(parents=True, exist_ok=True)
    table.to_csv(OUT / "dirichlet_accuracy.csv", index=False)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    colours = dict(zip(EPSILONS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    for eps in EPSILONS:
        sub, col = table[table.epsilon == eps], colours[eps]
        ax = axes[0]
        ax.plot(sub.n, sub.lshist_ls, "-", color=col, label=f"LSHist, ε={eps:g}")
        ax.plot(sub.n, sub.ehd_ls, "--", color=col, label=f"EHD, ε={eps:g}")
        low, high = sub.iloc[0][
            ["corollary_4_5_3_ehd_better_below", "corollary_4_5_3_lshist_better_above"]
        ]
        ax.axvspan(max(low, 6), high, color=col, alpha=0.12)
        ax.axvline(high, color=col, lw=0.8, ls=":")
        points = sub.dropna(subset=["lshist_mc"])
        ax.plot(points.n, points.lshist_mc, "o", color=col, ms=4)
        ax.plot(points.n, points.ehd_mc, "x", color=col, ms=5)
        ax = axes[1]
        ax.plot(sub.n, sub.lshist_t, "-", color=col, label=f"LSHist, ε={eps:g}")
        ax.plot(sub.n, sub.ehd_t, "--", color=col, label=f"EHD, ε={eps:g}")
        holds = sub[sub.corollary_4_5_1_holds]
        if len(holds):
            ax.axvline(holds.n.min(), color=col, lw=0.8, ls=":")
    axes[0].set_title(
        "(a) t = LS(x): Pr[H ≤ LS(x)] (Cor. 4.5.3)\nshaded: predicted crossover bracket; "
        "o/x: Monte Carlo"
    )
    axes[1].set_title(
        f"(b) fixed t = {FIXED_T:g}: Pr[H < t] (Thm 4.5)\n"
        "dotted: Cor. 4.5.1 (corrected) first holds"
    )
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("n (records), x at n/3, prior Beta(1, 1)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("probability the release is within t of DirP(x)")
    axes[0].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(OUT / "dirichlet_accuracy.png", dpi=130)
    crossings = []
    for eps in EPSILONS:
        sub = table[table.epsilon == eps]
        better = sub.lshist_ls > sub.ehd_ls
        after = [n for n, b in zip(sub.n, better, strict=True) if b and better[sub.n >= n].all()]
        crossings.append((eps, min(after), *dm.corollary_4_5_3_crossover(eps)))
    for eps, observed, n_ehd, n_lshist in crossings:
        print(
            f"eps={eps:g}: LSHist better from n={observed} on the grid; predicted bracket "
            f"[{n_ehd - 1:.1f}, {n_lshist - 1:.1f}]"
        )


if __name__ == "__main__":
    main()
