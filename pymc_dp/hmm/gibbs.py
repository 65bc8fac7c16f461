"""Gibbs updates of the naive-Bayes HMM (Foulds et al. 2016, §5 and App. E), in NumPy.

State of the sampler:

* ``states`` z, int array (R, T): each region's latent state per time step, in 0..K-1;
* ``emission`` θ, array (K, D, J): ``emission[k, d, :K_d]`` is state k's distribution over
  feature d's categories (entries j >= K_d are 0);
* ``transition`` A, array (K + 1, K): row 0 is the dummy initial state (z_{r,0} = 0 in the
  paper), row 1 + k the transitions out of state k.

The data enter only through the count tensor n[r, t, d, j] (raw, or Laplace-privatised
and projected to >= 0), as ``counts`` of shape (R·T, D·J) in the functions below.

Every update can run at a temperature T >= 1: it then draws from the conditional of the
joint density raised to 1/T, Pr(θ, A, z, X)^{1/T} (Foulds eq. 10 and eq. 19), which is what
the one-posterior-sample mechanism needs; T = 1 is ordinary Gibbs. A Dirichlet(c) factor
raised to 1/T is Dirichlet((c - 1)/T + 1).

Updates:

* :func:`ffbs` — forward-filtering backward-sampling of every region's chain at once (an exact
  joint draw of z given θ and A), vectorised over regions;
* :func:`collapsed_single_site` — the paper's sampler (eq. 68): A integrated out, one z_{r,t}
  at a time (T = 1 only);
* :func:`update_emission` — eq. 69, θ^{(k,d)} | z, X ~ Dirichlet(n_{d,k,:} + β), optionally
  truncated at a0_d (Fang et al. 2000 Gibbs kernel, :mod:`pymc_dp.truncated`);
* :func:`update_transition` — A_k | z ~ Dirichlet(transition counts + α).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from pymc_dp.errors import value_free_repr
from pymc_dp.hmm._kernels import ffbs_regions
from pymc_dp.truncated import truncated_dirichlet_gibbs

__all__ = [
    "HMMData",
    "categorical",
    "collapsed_single_site",
    "emission_log_likelihood",
    "ffbs",
    "simulate_chains",
    "sweep",
    "transition_counts",
    "update_emission",
    "update_transition",
]

_TINY = np.finfo(np.float64).tiny


@value_free_repr
@dataclass(frozen=True)
class HMMData:
    """What the sampler needs to know about the data and the prior (nothing else).

    Attributes
    ----------
    counts : ndarray of float64, shape (R·T, D·J)
        Cell counts, flattened; rows are cells (r-major), columns (feature, category).
    n_regions, n_times : int
    n_categories : ndarray of int, shape (D,)
    n_states : int
        K.
    alpha, beta : float
        Symmetric Dirichlet concentrations of the transition rows and the emissions.
    lower : ndarray of float, shape (D,), optional
        Truncation a0_d of the emission Dirichlets (None: untruncated).
    """

    counts: np.ndarray
    n_regions: int
    n_times: int
    n_categories: np.ndarray
    n_states: int
    alpha: float = 1.0
    beta: float = 1.0
    lower: np.ndarray | None = None

    @classmethod
    def from_tensor(cls, counts: np.ndarray, n_categories, n_states: int, **kwargs) -> HMMData:
        """Build from a (R, T, D, J) tensor."""
        n_regions, n_times, n_features, width = counts.shape
        flat = np.ascontiguousarray(counts, dtype=np.float64).reshape(-1, n_features * width)
        return cls(flat, n_regions, n_times, np.asarray(n_categories), n_states, **kwargs)

    @property
    def n_features(self) -> int:
        return len(self.n_categories)

    @property
    def width(self) -> int:
        return self.counts.shape[1] // self.n_features

    @property
    def mask(self) -> np.ndarray:
        """(D, J) True where the category exists."""
        return np.arange(self.width)[None, :] < self.n_categories[:, None]


def emission_log_likelihood(data: HMMData, emission: np.ndarray) -> np.ndarray:
    """log Pr(X^{(r,t)} | z = k, θ) = Σ_d Σ_j n[r,t,d,j] log θ_j^{(k,d)} (eq. 70–71).

    Returns
    -------
    ndarray, shape (R, T, K)
    """
    log_theta = np.where(data.mask, np.log(np.maximum(emission, _TINY)), 0.0)
    loglik = data.counts @ log_theta.reshape(data.n_states, -1).T
    return loglik.reshape(data.n_regions, data.n_times, data.n_states)


def categorical(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per row from unnormalised non-negative ``weights`` (..., K)."""
    cumulative = np.cumsum(weights, axis=-1)
    u = rng.uniform(size=(*weights.shape[:-1], 1)) * cumulative[..., -1:]
    return np.minimum((cumulative <= u).sum(axis=-1), weights.shape[-1] - 1)


def ffbs(
    log_likelihood: np.ndarray,
    transition: np.ndarray,
    rng: np.random.Generator,
    temperature: float = 1.0,
) -> np.ndarray:
    """Forward-filtering backward-sampling of all regions' state chains (exact joint draw).

    Draws z ~ Pr(z | θ, A, X)^{1/T} (normalised), the chains of different regions being
    independent given θ and A. Forward messages are normalised per step (scaled forward
    algorithm), cost O(R·T·K²), in a compiled loop (``pymc_dp.hmm._kernels.ffbs_regions``)
    fed with one uniform per draw from ``rng``.

    Parameters
    ----------
    log_likelihood : ndarray, shape (R, T, K)
        Cell log-likelihoods from :func:`emission_log_likelihood`.
    transition : ndarray, shape (K + 1, K)
        Row 0: initial distribution; row 1 + k: transitions out of k.
    rng : numpy.random.Generator
    temperature : float
        T >= 1.

    Returns
    -------
    ndarray of int64, shape (R, T)
    """
    scaled = log_likelihood / temperature if temperature != 1 else log_likelihood
    power = np.maximum(transition, _TINY) ** (1.0 / temperature)
    uniforms = rng.random(log_likelihood.shape[:2])
    return ffbs_regions(np.ascontiguousarray(scaled), power[0], power[1:].copy(), uniforms)


def simulate_chains(
    transition: np.ndarray, n_regions: int, n_times: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw R independent state chains of length T from A (row 0: initial); (R, T) int."""
    states = np.empty((n_regions, n_times), dtype=np.int64)
    previous = np.zeros(n_regions, dtype=np.int64)
    for t in range(n_times):
        states[:, t] = categorical(transition[previous], rng)
        previous = states[:, t] + 1
    return states


def transition_counts(states: np.ndarray, n_states: int) -> np.ndarray:
    """Counts of transitions, shape (K + 1, K): row 0 counts initial states z_{r,1}."""
    previous = np.concatenate(
        [np.zeros((states.shape[0], 1), np.int64), states[:, :-1] + 1], axis=1
    )
    flat = previous.ravel() * n_states + states.ravel()
    return np.bincount(flat, minlength=(n_states + 1) * n_states).reshape(n_states + 1, n_states)


def _tempered(counts: np.ndarray, prior: float, temperature: float) -> np.ndarray:
    """Dirichlet parameters of Dirichlet(counts + prior) raised to the power 1/T."""
    return (counts + prior - 1.0) / temperature + 1.0


def _dirichlet(params: np.ndarray, rng: np.random.Generator, mask=None) -> np.ndarray:
    gamma = rng.standard_gamma(params)
    if mask is not None:
        gamma = np.where(mask, gamma, 0.0)
    total = gamma.sum(axis=-1, keepdims=True)
    draw = gamma / np.where(total > 0, total, 1.0)
    # gamma draws can underflow to 0 when all parameters are tiny: fall back to the mean
    empty = (total <= 0)[..., 0]
    if np.any(empty):
        mean = np.where(mask, params, 0.0) if mask is not None else params
        draw[empty] = (mean / mean.sum(axis=-1, keepdims=True))[empty]
    return draw


def update_transition(
    data: HMMData, states: np.ndarray, rng: np.random.Generator, temperature: float = 1.0
) -> np.ndarray:
    """A_k | z ~ Dirichlet(transition counts_k + α), at temperature T; shape (K + 1, K)."""
    counts = transition_counts(states, data.n_states)
    return _dirichlet(_tempered(counts, data.alpha, temperature), rng)


def emission_counts(data: HMMData, states: np.ndarray) -> np.ndarray:
    """n_{d,k,:} = Σ_{cells with z = k} n[r,t,d,:] (eq. 69), shape (K, D, J)."""
    cells = states.size
    one_hot = sparse.csr_array(
        (np.ones(cells), (states.ravel(), np.arange(cells))), shape=(data.n_states, cells)
    )
    return (one_hot @ data.counts).reshape(data.n_states, data.n_features, data.width)


def update_emission(
    data: HMMData,
    states: np.ndarray,
    rng: np.random.Generator,
    temperature: float = 1.0,
    current: np.ndarray | None = None,
    counts: np.ndarray | None = None,
) -> np.ndarray:
    """θ^{(k,d)} | z, X ~ Dirichlet(n_{d,k,:} + β) (eq. 69) at temperature T; (K, D, J).

    With ``data.lower`` set, the Dirichlets are truncated at a0_d and the update is one Fang
    et al. (2000) Gibbs sweep from ``current`` (required) instead of an independent draw.
    ``counts`` (K, D, J) replaces the per-state sums n_{d,k,:} of ``data.counts`` (the
    noise-aware sampler passes the sums of latent counts, :mod:`pymc_dp.hmm.noise_aware`).
    """
    if counts is None:
        counts = emission_counts(data, states)
    # released counts may be negative (projection="none"): project the per-state sums at 0
    params = _tempered(np.maximum(counts, 0.0), data.beta, temperature)
    if data.lower is None:
        return _dirichlet(params, rng, data.mask)
    if current is None:
        raise ValueError("a truncated emission update needs the current emission")
    new = np.array(current, dtype=np.float64)
    for d, size in enumerate(data.n_categories):
        new[:, d, :size] = truncated_dirichlet_gibbs(
            current[:, d, :size], params[:, d, :size], float(data.lower[d]), rng
        )
    return new


def collapsed_single_site(
    data: HMMData,
    states: np.ndarray,
    log_likelihood: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """One sweep of single-site updates of z with A integrated out (Foulds eq. 68).

    For each (r, t) in turn, with n the transition counts excluding z_{r,t}'s two transitions
    (n_{to,from} in the paper; here ``n[from, to]``, from = 0 the dummy initial state):

        Pr(z_{r,t} = k | ...) ∝ (n[p, k] + α) / (n[p, ·] + Kα)
            × (n[1+k, q] + 𝕀[p = 1+k = 1+q] + α) / (n[1+k, ·] + 𝕀[p = 1+k] + Kα)
            × Pr(X^{(r,t)} | z = k, θ),

    with p = 1 + z_{r,t-1} (0 at t = 1) and q = z_{r,t+1}; the second factor is dropped at
    the last time step. Python loop over cells: for comparison with :func:`ffbs` on small
    grids. Temperature 1 only.

    Returns
    -------
    ndarray of int64, shape (R, T): the new states (a new array).
    """
    states = np.array(states, dtype=np.int64)
    n_regions, n_times = states.shape
    n_states, alpha = data.n_states, data.alpha
    counts = transition_counts(states, n_states).astype(np.float64)
    row_totals = counts.sum(axis=1)
    likelihood = np.exp(log_likelihood - log_likelihood.max(axis=-1, keepdims=True))
    candidates = np.arange(n_states)
    for r in range(n_regions):
        for t in range(n_times):
            p = 0 if t == 0 else 1 + states[r, t - 1]
            z = states[r, t]
            last = t == n_times - 1
            counts[p, z] -= 1
            row_totals[p] -= 1
            if not last:
                q = states[r, t + 1]
                counts[1 + z, q] -= 1
                row_totals[1 + z] -= 1
            weight = (counts[p] + alpha) / (row_totals[p] + n_states * alpha)
            if not last:
                same = (candidates + 1) == p
                weight = weight * (
                    (counts[1 + candidates, q] + (same & (candidates == q)) + alpha)
                    / (row_totals[1 + candidates] + same + n_states * alpha)
                )
            weight = weight * likelihood[r, t]
            z = int(categorical(weight, rng))
            states[r, t] = z
            counts[p, z] += 1
            row_totals[p] += 1
            if not last:
                counts[1 + z, q] += 1
                row_totals[1 + z] += 1
    return states


def sweep(
    data: HMMData,
    states: np.ndarray,
    emission: np.ndarray,
    transition: np.ndarray,
    rng: np.random.Generator,
    *,
    temperature: float = 1.0,
    method: str = "ffbs",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One full Gibbs sweep: states, then emissions, then transitions.

    ``method="ffbs"`` draws all states jointly given (θ, A) (:func:`ffbs`);
    ``method="collapsed"`` is the paper's sampler (eq. 68–69: single-site z with A
    integrated out, then θ; A is then drawn from its conditional so the trace carries it).

    Returns
    -------
    states, emission, transition
    """
    log_likelihood = emission_log_likelihood(data, emission)
    if method == "ffbs":
        states = ffbs(log_likelihood, transition, rng, temperature)
    elif method == "collapsed":
        if temperature != 1:
            raise ValueError("the collapsed sampler (eq. 68) runs at temperature 1 only")
        states = collapsed_single_site(data, states, log_likelihood, rng)
    else:
        raise ValueError(f"method must be 'ffbs' or 'collapsed', got {method!r}")
    emission = update_emission(data, states, rng, temperature, current=emission)
    transition = update_transition(data, states, rng, temperature)
    return states, emission, transition
