"""Calibration of private posteriors: coverage and width of central intervals.

For each family, sample size n and ε, simulate data sets with parameters drawn from the prior,
release their statistics as :func:`pymc_dp.sample` does on the Laplace route, and record how
often the central 90% interval of each method contains the true parameter and how wide it is.
A calibrated method covers 90% of the time: with the parameters drawn from the prior, this
holds exactly for the exact posterior of any model whose likelihood is the true one (Cook,
Gelman & Rubin 2006), so coverage measures how honestly each method accounts for the noise.

Methods: ``"non-private"`` (the posterior given the raw data: the reference), ``"plugin"``
(the noisy statistics as if exact, Foulds et al. 2016 §4.2) and ``"noise-aware"`` (the release
as observed data, the true statistics latent; Bernstein & Sheldon 2018, Ju et al. 2022).

:func:`coverage_table` runs a grid of cells; ``scripts/evaluate_calibration.py`` runs the full
study and writes ``docs/results/calibration*.csv`` and the figure.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from pymc_dp.calibration.bounded import bounded_study
from pymc_dp.calibration.counts import CountStudy, count_intervals, simulate_counts

__all__ = [
    "CELLS_EPSILON",
    "CELLS_N",
    "FAMILIES_STUDIED",
    "METHODS",
    "TARGET",
    "CountStudy",
    "count_intervals",
    "coverage_rows",
    "coverage_table",
    "simulate_counts",
]

METHODS: tuple[str, ...] = ("non-private", "plugin", "noise-aware")
CELLS_N: tuple[int, ...] = (10, 100, 1000, 10_000)
CELLS_EPSILON: tuple[float, ...] = (0.1, 1.0)
TARGET: tuple[float, float] = (0.88, 0.92)
"""Coverage band of 90% intervals that noise-aware inference must reach in every cell."""

_COMPONENTS = {"beta-bernoulli": [0], "dirichlet-categorical": None}
"""Components of θ scored: the success probability, or every category (pooled)."""
_PARAMETER = {"beta-bernoulli": "p", "dirichlet-categorical": "p[k] (pooled)"}


def _count_study(family, n, epsilon, n_datasets, rng, methods, level, neighbouring, sampler=None):
    """(parameter, method, truth, intervals) of a count family; see :mod:`.counts`.

    ``sampler`` is not used: the count posteriors are exact or drawn by the Gibbs numerics.
    """
    study = simulate_counts(family, n, epsilon, n_datasets, rng, neighbouring=neighbouring)
    components = _COMPONENTS[family]
    truth = study.theta if components is None else study.theta[:, components]
    for method in methods:
        intervals = count_intervals(study, method, rng, level=level)
        if components is not None:
            intervals = intervals[:, components]
        yield _PARAMETER[family], method, truth, intervals


FAMILIES_STUDIED = {
    "beta-bernoulli": _count_study,
    "dirichlet-categorical": _count_study,
    "poisson": bounded_study,
    "normal": bounded_study,
    "linear-regression": bounded_study,
}
"""Family → study: yields (parameter, method, truth (B, ...), intervals (B, ..., 2)).

Study signature: ``(family, n, epsilon, n_datasets, rng, methods, level, neighbouring,
sampler=None)``."""


def coverage_rows(
    family: str,
    n: int,
    epsilon: float,
    n_datasets: int,
    rng: np.random.Generator,
    *,
    methods: Sequence[str] = METHODS,
    level: float = 0.9,
    neighbouring: str = "replace-one",
    sampler: str | None = None,
) -> list[dict]:
    """Coverage and mean width of every method in one (family, n, ε) cell.

    Returns one row per (parameter, method) with ``coverage``, its binomial standard error
    ``coverage_se`` = √(c(1 − c)/m) over the m scored intervals, ``mean_width`` and
    ``n_datasets``. ``sampler`` picks the NUTS of the bounded families
    (``pymc_dp.calibration.bounded.bounded_study``).
    """
    if family not in FAMILIES_STUDIED:
        raise ValueError(f"family must be one of {sorted(FAMILIES_STUDIED)}, got {family!r}")
    study = FAMILIES_STUDIED[family]
    rows = []
    for parameter, method, truth, intervals in study(
        family, n, epsilon, n_datasets, rng, methods, level, neighbouring, sampler=sampler
    ):
        covered = (intervals[..., 0] <= truth) & (truth <= intervals[..., 1])
        coverage = float(covered.mean())
        rows.append(
            {
                "family": family,
                "parameter": parameter,
                "n": n,
                "epsilon": epsilon,
                "neighbouring": neighbouring,
                "method": method,
                "coverage": coverage,
                "coverage_se": float(np.sqrt(coverage * (1 - coverage) / covered.size)),
                "mean_width": float((intervals[..., 1] - intervals[..., 0]).mean()),
                "n_datasets": n_datasets,
            }
        )
    return rows


def coverage_table(
    families: Iterable[str],
    *,
    ns: Iterable[int] = CELLS_N,
    epsilons: Iterable[float] = CELLS_EPSILON,
    n_datasets: int = 500,
    seed: int = 2018,
    methods: Sequence[str] = METHODS,
    level: float = 0.9,
    neighbouring: str = "replace-one",
    sampler: str | None = None,
) -> pd.DataFrame:
    """:func:`coverage_rows` for every family × n × ε, one seeded stream per cell."""
    rows = []
    for family in families:
        for n in ns:
            for epsilon in epsilons:
                key = [seed, zlib.crc32(family.encode()), n, round(epsilon * 1000)]
                rng = np.random.default_rng(key)
                rows += coverage_rows(
                    family,
                    n,
                    epsilon,
                    n_datasets,
                    rng,
                    methods=methods,
                    level=level,
                    neighbouring=neighbouring,
                    sampler=sampler,
                )
    return pd.DataFrame(rows)
