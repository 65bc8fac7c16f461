"""Exact draws from one block's conditional posterior at temperature T: the dispatcher.

Foulds et al. (2016), §3.1 eq. (14) and §4.1 eq. (19): the update of block θ_l samples
Pr(θ_l, θ_¬l, X)^{1/T} on the truncated parameter space. Only the block's own prior and
likelihoods depend on θ_l, and both are conjugate, so the tempered conditional is the
conjugate posterior with every exponent divided by T, truncated. Each family module owns its
update; this module picks it by the block's kind:

* ``"beta"`` — :func:`pymc_dp.families.beta.beta_tempered_parameters`: Beta(α, β) prior, s
  successes and f failures: Beta((α − 1 + s)/T + 1, (β − 1 + f)/T + 1) on [lower, upper];
* ``"gamma"`` — :func:`pymc_dp.families.gamma.gamma_tempered_parameters`: Gamma(α, rate β)
  prior, Poisson counts with sum Σy over n records: Gamma((α − 1 + Σy)/T + 1, rate (β + n)/T)
  on [lower, upper];
* ``"normal"`` — :func:`pymc_dp.families.normal.normal_tempered_parameters`: Normal(μ₀, σ₀²)
  prior, Normal records with known σ (statistics Σx/σ² and n/σ²): Normal(m, T/P) on
  [lower, upper], with P = 1/σ₀² + n/σ² and m = (μ₀/σ₀² + Σx/σ²)/P;
* ``"dirichlet"`` — :func:`pymc_dp.families.dirichlet.dirichlet_tempered_parameters`:
  Dirichlet(α) prior truncated at a0, counts n: the truncated Dirichlet((α − 1 + n)/T + 1),
  updated by the Fang et al. (2000) kernel: K − 1 exact conditional pair updates
  (:func:`pymc_dp.truncated.truncated_dirichlet_gibbs`), each an exponential mechanism.

The Beta, Gamma and Normal draws are exact (inverse CDF or SciPy's ``truncnorm``), vectorised
over groups and over a leading ``size``. At T = 1 each is the exact truncated posterior.

``part="likelihood"`` tempers the likelihood only, π(θ_l | θ_¬l)·Pr(X | θ)^{1/T} (the Gibbs
posterior of Minami et al. 2016; Wang et al. 2015): the conjugate update with the statistics
divided by T and the prior untouched. It is the same exponential mechanism with the prior as
its data-independent base measure, so it costs the same 2Δ/T (the prior cancels, eq. 9), and
it keeps an informative prior or a hyperprior from being flattened by T.
"""

from __future__ import annotations

import numpy as np

from pymc_dp.families.beta import beta_tempered_draw, beta_tempered_parameters
from pymc_dp.families.dirichlet import dirichlet_tempered_draw, dirichlet_tempered_parameters
from pymc_dp.families.gamma import gamma_tempered_draw, gamma_tempered_parameters
from pymc_dp.families.normal import normal_tempered_draw, normal_tempered_parameters

__all__ = ["TEMPERING", "tempered_draw", "tempered_parameters"]

TEMPERING = ("joint", "likelihood")

_PARAMETERS = {
    "beta": beta_tempered_parameters,
    "gamma": gamma_tempered_parameters,
    "normal": normal_tempered_parameters,
    "dirichlet": dirichlet_tempered_parameters,
}
_EXACT_DRAWS = {
    "beta": beta_tempered_draw,
    "gamma": gamma_tempered_draw,
    "normal": normal_tempered_draw,
}


def tempered_parameters(
    kind: str,
    prior_parameters: tuple[np.ndarray, ...],
    statistics: np.ndarray,
    temperature: float,
    part: str = "joint",
) -> tuple[np.ndarray, ...]:
    """Parameters of the untruncated tempered conditional (see the module docstring).

    Parameters
    ----------
    kind : {"beta", "gamma", "normal", "dirichlet"}
    prior_parameters : tuple of ndarray
        Beta (α, β); Gamma (α, scale = 1/rate) as PyMC stores it; Normal (μ₀, σ₀);
        Dirichlet (α,). Each broadcast to the groups: shape (G,), or (G, K) for Dirichlet.
    statistics : ndarray, shape (G, d)
        The block's exact sufficient statistics (:class:`~pymc_dp.analysis.tempered.TemperedBlock`).
    temperature : float
        T >= 1.
    part : {"joint", "likelihood"}
        Temper prior and likelihood (Foulds eq. 14) or the likelihood only.

    Returns
    -------
    tuple of ndarray
        Beta (a, b); Gamma (shape, rate); Normal (mean, sd); Dirichlet (α',).

    Raises
    ------
    ValueError
        For an unknown kind or part, or T < 1.
    """
    if not temperature >= 1:
        raise ValueError(f"temperature must be >= 1, got {temperature!r}")
    if part not in TEMPERING:
        raise ValueError(f"part must be one of {TEMPERING}, got {part!r}")
    if kind not in _PARAMETERS:
        raise ValueError(f"unknown block kind {kind!r}")
    if part == "likelihood":  # the prior at T = 1 with the likelihood's statistics over T
        statistics, temperature = np.asarray(statistics) / temperature, 1.0
    return _PARAMETERS[kind](prior_parameters, statistics, float(temperature))


def tempered_draw(
    kind: str,
    prior_parameters: tuple[np.ndarray, ...],
    statistics: np.ndarray,
    temperature: float,
    bounds: tuple[float, float],
    rng: np.random.Generator,
    *,
    current: np.ndarray | None = None,
    size: tuple[int, ...] = (),
    part: str = "joint",
) -> np.ndarray:
    """Draw the block from its tempered, truncated conditional.

    Parameters
    ----------
    kind, prior_parameters, statistics, temperature, part
        As :func:`tempered_parameters`.
    bounds : (float, float)
        Truncation (lower, upper); for a Dirichlet, (a0, 1 − (K − 1)·a0).
    rng : numpy.random.Generator
    current : ndarray, shape (G, K), optional
        The current value, required for a Dirichlet block (its update is an MCMC kernel).
    size : tuple of int
        Leading shape of independent draws (Beta, Gamma and Normal blocks only).

    Returns
    -------
    ndarray, shape ``(*size, G)`` or ``(G, K)``
    """
    parameters = tempered_parameters(kind, prior_parameters, statistics, temperature, part)
    if kind == "dirichlet":
        if current is None or size:
            raise ValueError("a Dirichlet block is updated from its current value, one at a time")
        return dirichlet_tempered_draw(parameters, bounds, rng, current)
    shape = (*size, statistics.shape[0])
    broadcast = tuple(np.broadcast_to(p, shape) for p in parameters)
    return _EXACT_DRAWS[kind](broadcast, bounds, rng)
