"""Calibration studies of the count families: Beta–Bernoulli and Dirichlet–Categorical.

Each study draws θ from the prior, n records given θ, releases the sufficient statistics as
the Laplace route does (the sensitivity, the released components and the public totals come
from :mod:`pymc_dp.mechanisms.statistics`, not from this module), and returns the central
interval of every method for every simulated data set:

* ``"non-private"`` — the exact conjugate posterior given the true counts (Foulds et al. 2016,
  §3.1 eq. 11): Beta(α + s, β + n − s), or the Beta marginal Beta(a_k + n_k, A + n − a_k − n_k)
  of each Dirichlet component;
* ``"plugin"`` — the same posterior given the projected noisy counts, as
  :class:`~pymc_dp.steps.PrivateConjugateGibbs` samples it (Foulds §4.2);
* ``"noise-aware"`` — draws of :func:`pymc_dp.families.latent_counts.noise_aware_draws`, the
  numerics :class:`~pymc_dp.steps.noise_aware_gibbs.NoiseAwareConjugateGibbs` runs inside
  ``pymc_dp.sample`` (Bernstein & Sheldon 2018; Ju et al. 2022).

The Laplace noise of a study comes from NumPy (seeded, reproducible): a study is the data
holder's choice of method, not a release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pymc_dp.errors import value_free_repr
from pymc_dp.families import FAMILIES
from pymc_dp.families.base import ConjugateLink, RecordDomain
from pymc_dp.families.latent_counts import noise_aware_draws
from pymc_dp.mechanisms.statistics import (
    released_components,
    sufficient_statistics_sensitivity,
)

__all__ = ["CountStudy", "count_intervals", "simulate_counts"]

_PRIORS = {"beta-bernoulli": ("beta", 2), "dirichlet-categorical": ("dirichlet", 3)}


@value_free_repr
@dataclass(frozen=True)
class CountStudy:
    """Simulated data sets of one count family and their releases.

    Attributes
    ----------
    family : {"beta-bernoulli", "dirichlet-categorical"}
    n, epsilon : int, float
    neighbouring : str
    concentration : ndarray, shape (d,)
        Prior (α, β) or Dirichlet a; every data set draws θ from it.
    theta : ndarray, shape (B, d)
        True probabilities (first column: the Beta family's success probability).
    counts : ndarray, shape (B, d)
        True counts.
    noisy : ndarray, shape (B, r)
        Released components (r = 1 or d).
    scale : float
        Laplace scale b of every released component.
    public_total : float or None
        The public total n·trials when the route treats it as public, else None.
    """

    family: str
    n: int
    epsilon: float
    neighbouring: str
    concentration: np.ndarray
    theta: np.ndarray
    counts: np.ndarray
    noisy: np.ndarray
    scale: float
    public_total: float | None


def _link(family: str, n_categories: int) -> ConjugateLink:
    """A one-group link with no records: its public structure decides the release."""
    prior, likelihood = family.split("-")
    return ConjugateLink(
        observed="y",
        prior="p",
        family=FAMILIES[prior, likelihood],
        data=np.zeros(0, dtype=np.int64),
        groups=None,
        n_groups=1,
        domain=RecordDomain(n_categories=n_categories),
    )


def simulate_counts(
    family: str,
    n: int,
    epsilon: float,
    n_datasets: int,
    rng: np.random.Generator,
    *,
    neighbouring: str = "replace-one",
    concentration: float = 1.0,
) -> CountStudy:
    """Draw ``n_datasets`` data sets of ``n`` records and release their statistics.

    θ ~ Beta(c, c) or Dirichlet(c, c, c) (``concentration`` c), the records' counts ~
    Multinomial(n, θ), then Laplace noise of scale sensitivity/ε on the released components.
    """
    if family not in _PRIORS:
        raise ValueError(f"family must be one of {sorted(_PRIORS)}, got {family!r}")
    d = _PRIORS[family][1]
    link = _link(family, d)
    r = released_components(link, neighbouring)
    scale = sufficient_statistics_sensitivity(link, neighbouring) / epsilon
    conc = np.full(d, float(concentration))
    theta = rng.dirichlet(conc, size=n_datasets)
    counts = np.stack([rng.multinomial(n, t) for t in theta]).astype(np.float64)
    noisy = counts[:, :r] + rng.laplace(0.0, scale, size=(n_datasets, r))
    public = float(n) if neighbouring == "replace-one" else None
    return CountStudy(family, n, epsilon, neighbouring, conc, theta, counts, noisy, scale, public)


def _plugin_table(study: CountStudy) -> np.ndarray:
    """The projected table the plug-in posterior uses (as mechanisms.statistics projects)."""
    if study.noisy.shape[1] == 1:
        first = np.clip(study.noisy[:, 0], 0.0, study.public_total)
        return np.column_stack([first, study.public_total - first])
    return np.clip(study.noisy, 0.0, None)


def _beta_marginal_interval(conc: np.ndarray, table: np.ndarray, level: float) -> np.ndarray:
    """Central intervals of every component of Dirichlet(conc + table): (B, d, 2)."""
    post = conc + table
    a, b = post, post.sum(axis=1, keepdims=True) - post
    tail = (1 - level) / 2
    return np.stack([stats.beta.ppf(tail, a, b), stats.beta.ppf(1 - tail, a, b)], axis=-1)


def count_intervals(
    study: CountStudy,
    method: str,
    rng: np.random.Generator,
    *,
    level: float = 0.9,
    n_draws: int = 1000,
) -> np.ndarray:
    """Central ``level`` intervals of every component of θ, shape (B, d, 2).

    For the Beta family component 0 is the success probability (component 1 is its
    complement and carries the same information).
    """
    if method == "non-private":
        return _beta_marginal_interval(study.concentration, study.counts, level)
    if method == "plugin":
        return _beta_marginal_interval(study.concentration, _plugin_table(study), level)
    if method != "noise-aware":
        raise ValueError(f"unknown method {method!r}")
    prior = _PRIORS[study.family][0]
    params = tuple(study.concentration) if prior == "beta" else (study.concentration,)
    totals = None if study.public_total is None else np.full((len(study.noisy), 1), study.n)
    draws = noise_aware_draws(
        study.noisy[:, None, :],
        study.scale,
        prior,
        params,
        n_draws,
        rng,
        public_totals=totals,
    )[:, :, 0]  # (draws, B) or (draws, B, K)
    if prior == "beta":
        draws = np.stack([draws, 1.0 - draws], axis=-1)
    tail = (1 - level) / 2
    return np.moveaxis(np.quantile(draws, [tail, 1 - tail], axis=0), 0, -1)
