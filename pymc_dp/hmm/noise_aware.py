"""Noise-aware Gibbs sampling of the naive-Bayes HMM from its Laplace-released count tensor.

The plug-in sampler (:func:`pymc_dp.hmm.gibbs.sweep`) reads the released counts as if they
were exact (Foulds et al. 2016, §4.2). Clamped at 0, the noise then puts phantom mass on every
rare category of every cell. Here the release is read as what it is: an observation, with
Laplace noise of known scale b, of the latent true counts. The likelihood of the release is
the mechanism itself (Bernstein & Sheldon, NeurIPS 2018, §3), and Gibbs sampling runs over
the latent confidential quantities given the privatised output (Ju, Awan, Gong & Rao,
NeurIPS 2022, §3–4). Same release, same ledger event: everything here is post-processing.

Model
-----
For cell i = (r, t) in state k = z_i and declared entry e = (d, j) (feature d, category j):

    λ_i ~ Gamma(1/2, 0)                          (Jeffreys prior of a Poisson mean)
    c_ie | z, θ, λ ~ Poisson(λ_i θ_{k,e})         independently (Poissonised naive Bayes)
    y_ie | c_ie ~ Laplace(c_ie, b)                 the release, b = 2D/ε (Foulds eq. 16–17)

with θ and A as in :mod:`pymc_dp.hmm.gibbs`. The prior of λ_i is improper but every posterior
is proper: λ_i's conditional rate is at least D(1 − e^{−1/b}) > 0.

*Poissonisation.* In Foulds et al.'s model (§5, App. E, eq. 70–71) feature d's counts in cell
i are Multinomial(N_i, θ^{(k,d)}), N_i the number of records in the cell: private, and released
only with noise (in every feature's noisy total). Drawing feature d's total as Poisson(λ_i)
instead makes the entries independent given (z, θ, λ); given a feature's total its counts are
again Multinomial(·, θ^{(k,d)}), so the conditionals of θ (eq. 69) and z (eq. 70) are the
paper's with latent counts in place of n. What is dropped is the constraint that all D features
count the same N_i; λ_i pools their information instead.

*Projection.* For y <= 0 and every count c >= 0, |y − c| = c − y, so exp(−|y − c|/b) ∝
exp(−c/b) whatever y is: clamping y at 0 (``projection="cell"``, Foulds eq. 16) loses no
information about c. The sampler reads y⁺ = max(y, 0) and is the same for either projection.

Sampler (partially collapsed Gibbs, van Dyk & Park 2008)
--------------------------------------------------------
Split a cell's entries into Z_i (y⁺ = 0) and P_i (y⁺ > 0). For e in Z_i the latent count given
(z, θ, λ) is Poisson(e^{−1/b} λ_i θ_{k,e}) exactly (the factor e^{−c/b} thins the Poisson) and
its marginal likelihood is exp(−(1 − e^{−1/b}) λ_i θ_{k,e}); these counts are never drawn one
by one. One sweep (:func:`noise_aware_sweep`):

1. z | c_P, θ, λ, A, with c_Z integrated out: FFBS (:func:`pymc_dp.hmm.gibbs.ffbs`) on the
   cell log-likelihoods Σ_{e∈P_i} c_ie log θ_{k,e} + e^{−1/b} λ_i Σ_{e∈Z_i} θ_{k,e} (terms free
   of k dropped; Σ_e θ_{k,e} = D);
2. c_P | z, θ, λ: one exact draw per entry, p(c) ∝ Pois(c; λ_i θ_{z_i,e}) exp(−|y⁺ − c|/b)
   (``pymc_dp.hmm._kernels.latent_count_draw``);
3. λ_i | z, θ, c_P, with c_Z integrated out:
   Gamma(1/2 + Σ_{e∈P_i} c_ie, rate D − e^{−1/b} Σ_{e∈Z_i} θ_{z_i,e});
4. c_Z | z, θ, λ, through the per-state sums that step 5 reads:
   S_{k,e} ~ Poisson(e^{−1/b} θ_{k,e} Σ_{i: z_i = k, e∈Z_i} λ_i);
5. θ^{(k,d)} | z, c ~ Dirichlet(β + Σ_{i: z_i = k} c_{i,d,:}) (eq. 69 on latent counts;
   truncated models take one Fang et al. (2000) kernel sweep, as in the plug-in sampler);
6. A | z ~ Dirichlet(transition counts + α).

Steps 3–4 are one joint draw of (λ, c_Z); c_Z is read by step 5 only and integrated out again
by step 1 of the next sweep, and c_P ⟂ c_Z given (z, θ, λ). The sweep is therefore a partially
collapsed Gibbs sampler that leaves p(z, θ, A, λ, c_P | y) invariant (van Dyk & Park 2008,
JASA 103, §3: remove draws never conditioned on before they are redrawn). ``tests/hmm/
test_noise_aware.py`` checks it against posteriors computed by enumeration.

Cost and mixing
---------------
A sweep is O(cells · entries), like the plug-in sweep; the per-entry draws of step 2 dominate
(measured in ``docs/hmm.md``). States see the data through c_P, which is drawn given the
previous states: when b is large compared with the counts, the latent counts are mostly prior
draws and the chain moves slowly (the fraction of missing information per entry is about
1 − Var c / (Var c + 2b²)). :func:`initial_latent_state` therefore starts every chain near a
pooled, noise-corrected estimate instead of at a random θ. Sweeps with
``collapsed_states=True`` draw the states with every latent count integrated out, which
unsticks them, at K window sums per positive entry instead of one draw (about 30–200 times
the plug-in sweep, ``docs/hmm.md``); callers may spend a few at the start of a chain
(``collapsed_warmup`` of :func:`pymc_dp.hmm.evaluation.run_gibbs` and
:class:`~pymc_dp.NaiveBayesHMMGibbs`; default 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from pymc_dp.errors import value_free_repr
from pymc_dp.hmm._kernels import (
    noise_aware_loglik,
    noise_aware_marginal_loglik,
    sample_latent_counts,
    state_sums,
)
from pymc_dp.hmm.gibbs import HMMData, ffbs, update_emission, update_transition

__all__ = [
    "RATE_PRIOR_SHAPE",
    "EmissionLatentState",
    "ReleasedCounts",
    "draw_latent_counts",
    "initial_latent_state",
    "noise_aware_sweep",
]

RATE_PRIOR_SHAPE = 0.5
"""Shape of the Gamma(1/2, 0) prior of every cell's rate λ_i: Jeffreys' prior of a Poisson
mean, free of any scale (an informative rate would say how many records a cell holds)."""
INITIAL_CONCENTRATION = 50.0
"""Concentration of the jitter around the pooled estimate that starts each state's emissions
(:func:`initial_latent_state`): fixed, not read from the data; it only breaks the symmetry
between states."""
_NEWTON_STEPS = 40


@value_free_repr
@dataclass(frozen=True)
class ReleasedCounts:
    """The released tensor as the noise-aware sampler reads it.

    Attributes
    ----------
    scale : float
        Laplace scale b of every released entry (the release's ``noise_scale``).
    columns : ndarray of int, shape (E,)
        Flat column (d·J + j) of each declared entry; padded entries are public zeros.
    zero_cell, zero_entry : ndarray of int64, shape (Z,)
        Cell (row) and declared-entry index of every entry whose clamped released value y⁺ is
        0 (the sets Z_i).
    cell, entry : ndarray of int64, shape (P,)
        Cell (row) and declared-entry index of every entry with y⁺ > 0 (the sets P_i).
    value, floor, cross : ndarray, shape (P,)
        y⁺ of those entries, m = ⌊y⁺⌋ and exp(−(2m + 1 − 2y⁺)/b), the ratio of the Laplace
        factors at m + 1 and m.
    """

    scale: float
    columns: np.ndarray
    zero_cell: np.ndarray
    zero_entry: np.ndarray
    cell: np.ndarray
    entry: np.ndarray
    value: np.ndarray
    floor: np.ndarray
    cross: np.ndarray

    @classmethod
    def from_data(cls, data: HMMData, scale: float) -> ReleasedCounts:
        """Index the released counts of ``data`` (clamped at 0) for noise scale b = ``scale``.

        Raises
        ------
        ValueError
            If the scale is not a finite number > 0.
        """
        scale = float(scale)
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"the Laplace scale must be a finite number > 0, got {scale!r}")
        columns = np.flatnonzero(data.mask.ravel())
        clamped = np.maximum(data.counts[:, columns], 0.0)
        positive = clamped > 0
        cell, entry = np.nonzero(positive)
        zero_cell, zero_entry = np.nonzero(~positive)
        value = clamped[cell, entry]
        floor = np.floor(value).astype(np.int64)
        cross = np.exp(-(2.0 * floor + 1.0 - 2.0 * value) / scale)
        return cls(
            scale,
            columns,
            zero_cell.astype(np.int64),
            zero_entry.astype(np.int64),
            cell.astype(np.int64),
            entry.astype(np.int64),
            value,
            floor,
            cross,
        )

    @property
    def thinning(self) -> float:
        """e^{−1/b}: a zero-valued entry's latent count is Poisson(e^{−1/b} λθ)."""
        return float(np.exp(-1.0 / self.scale))

    def clamped(self, n_cells: int) -> np.ndarray:
        """y⁺ as a dense (R·T, E) array."""
        dense = np.zeros((n_cells, self.columns.size))
        dense[self.cell, self.entry] = self.value
        return dense


@value_free_repr
@dataclass(frozen=True)
class EmissionLatentState:
    """The sampler's auxiliary variables (not model variables; not in any trace).

    Attributes
    ----------
    rates : ndarray of float64, shape (R·T,)
        λ_i.
    counts : ndarray of int64, shape (P,)
        Latent true counts c_P of the positive entries, in :class:`ReleasedCounts` order.
    """

    rates: np.ndarray
    counts: np.ndarray


def _entry_emission(data: HMMData, released: ReleasedCounts, emission: np.ndarray) -> np.ndarray:
    """θ_{k,e} of the declared entries, shape (K, E)."""
    return np.ascontiguousarray(emission.reshape(data.n_states, -1)[:, released.columns])


def draw_latent_counts(
    released: ReleasedCounts,
    states: np.ndarray,
    theta: np.ndarray,
    rates: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Step 2: c_ie ~ p(c) ∝ Pois(c; λ_i θ_{z_i,e}) exp(−|y⁺_ie − c|/b) for every e in P_i.

    Parameters
    ----------
    released : ReleasedCounts
    states : ndarray of int, shape (R, T)
    theta : ndarray, shape (K, E)
        Emission probabilities of the declared entries.
    rates : ndarray, shape (R·T,)
    rng : numpy.random.Generator
        Two uniforms per entry come from it (the compiled draw is deterministic given them).

    Returns
    -------
    ndarray of int64, shape (P,)
    """
    uniforms = rng.random((released.value.size, 2))
    out = np.empty(released.value.size, dtype=np.int64)
    return sample_latent_counts(
        released.cell,
        released.entry,
        released.value,
        released.floor,
        released.cross,
        1.0 / released.scale,
        np.ascontiguousarray(rates, dtype=np.float64),
        np.ascontiguousarray(states.ravel(), dtype=np.int64),
        np.ascontiguousarray(theta, dtype=np.float64),
        uniforms,
        out,
    )


def _decreasing_root(target, slope, offset, shrink):
    """Root in x >= 0 of Σ_e [x·s_e + o·exp(−x·s_e·shrink)] = target, per row (Newton).

    The left side is convex and increasing in x (its derivative is >= Σ s_e / 2 because
    o·shrink <= 1/2), so Newton's method started at target / Σ s_e — where the left side is
    already >= target — decreases monotonically to the root; rows whose left side at 0
    exceeds the target have root 0.
    """
    total_slope = slope.sum(axis=-1)
    x = np.maximum(target, 0.0) / total_slope
    for _ in range(_NEWTON_STEPS):
        decay = np.exp(-x[..., None] * slope * shrink)
        value = x * total_slope + offset * decay.sum(axis=-1) - target
        derivative = total_slope - offset * shrink * (slope * decay).sum(axis=-1)
        x = np.maximum(x - value / derivative, 0.0)
    return x


def initial_latent_state(
    data: HMMData,
    released: ReleasedCounts,
    states: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, EmissionLatentState]:
    """Start a chain: emissions near a pooled noise-corrected estimate, rates, latent counts.

    The start of an MCMC chain is free (any start leaves the target invariant); this one is
    computed from the release only (post-processing) and shortens the burn-in of a sampler
    that forgets its start slowly (see the module docstring):

    * pooled mean count μ̄_e of every entry: the moment estimator μ̂_e solves
      mean_i y⁺_ie = h(μ) = μ + (b/2)·exp(−μ(1 − e^{−1/b})), which is E[y⁺] when c ~
      Poisson(μ) (E[max(c + η, 0) | c] = c + (b/2)e^{−c/b} for Laplace(b) noise η), by
      Newton; below h(0) = b/2 it is continued linearly, μ̂ = (ȳ − b/2)/h'(0) < 0. Its
      standard error is τ_e = sd_i(y⁺_ie) / (√(R·T)·h'(μ̂)) (delta method). The start is the
      posterior mean of μ >= 0 under a flat prior and μ̂ ~ N(μ, τ²): μ̄ = μ̂ + τ·φ(μ̂/τ)/Φ(μ̂/τ)
      — when the release says little about an entry (small ε), its start stays away from 0,
      where the slowly mixing chain would otherwise stay;
    * emissions: θ̄^{(d)} ∝ μ̄_{d,:}, each state drawn as
      Dirichlet(``INITIAL_CONCENTRATION``·θ̄^{(d)} + 0.1) to break the symmetry (mapped
      into the truncated simplex when the model is truncated);
    * rates: λ_i solves Σ_e [λθ̄_e + (b/2)exp(−λθ̄_e(1 − e^{−1/b}))] = Σ_e y⁺_ie (at least 0.1);
    * latent counts c_P drawn given (states, θ, λ) (step 2).

    Returns
    -------
    emission : ndarray, shape (K, D, J)
    latent : EmissionLatentState
    """
    n_cells = data.n_regions * data.n_times
    clamped = released.clamped(n_cells)
    shrink = 1.0 - released.thinning
    half = released.scale / 2.0
    mean = clamped.mean(axis=0)
    estimate = _decreasing_root(mean, np.ones((released.columns.size, 1)), half, shrink)
    slope = 1.0 - half * shrink * np.exp(-estimate * shrink)  # h'(μ̂) in [1/2, 1]
    estimate = np.where(mean > half, estimate, (mean - half) / slope)
    error = np.maximum(clamped.std(axis=0, ddof=1) if n_cells > 1 else 0.0, 1e-6)
    error = error / (np.sqrt(n_cells) * slope)
    ratio = estimate / error
    mills = np.exp(-0.5 * ratio**2 - 0.5 * np.log(2 * np.pi) - log_ndtr(ratio))
    flat = np.zeros(data.n_features * data.width)
    flat[released.columns] = np.maximum(estimate + error * mills, 1e-12)
    pooled = flat.reshape(data.n_features, data.width)
    pooled = pooled / pooled.sum(axis=-1, keepdims=True)
    emission = np.zeros((data.n_states, data.n_features, data.width))
    for d, size in enumerate(data.n_categories):
        draw = rng.dirichlet(INITIAL_CONCENTRATION * pooled[d, :size] + 0.1, size=data.n_states)
        if data.lower is not None:
            draw = data.lower[d] + (1 - size * data.lower[d]) * draw
        emission[:, d, :size] = draw
    shares = np.broadcast_to(pooled.ravel()[released.columns], clamped.shape)
    rates = np.maximum(_decreasing_root(clamped.sum(axis=1), shares, half, shrink), 0.1)
    theta = _entry_emission(data, released, emission)
    counts = draw_latent_counts(released, states, theta, rates, rng)
    return emission, EmissionLatentState(rates, counts)


def noise_aware_sweep(
    data: HMMData,
    released: ReleasedCounts,
    states: np.ndarray,
    emission: np.ndarray,
    transition: np.ndarray,
    latent: EmissionLatentState,
    rng: np.random.Generator,
    *,
    collapsed_states: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, EmissionLatentState]:
    """One sweep of the partially collapsed Gibbs sampler (steps 1–6 of the module docstring).

    With ``collapsed_states``, step 1 also integrates out the latent counts of the positive
    entries: z | θ, λ, A by FFBS on Σ_{e∈P_i} log Σ_c Pois(c; λ_i θ_{k,e}) e^{−|y⁺ − c|/b}
    − (1 − e^{−1/b}) λ_i Σ_{e∈Z_i} θ_{k,e}; steps 1–2 are then a joint draw of (z, c_P). Both
    variants leave the posterior invariant; the collapsed one lets the states move given θ
    without dragging the latent counts drawn for the old states along, at K window sums per
    positive entry (``pymc_dp.hmm._kernels.latent_count_log_marginal``) instead of one
    draw.

    Parameters
    ----------
    data : HMMData
        The released counts (only its grid, prior and truncation are read: the values come
        from ``released``).
    released : ReleasedCounts
        The released counts indexed by :meth:`ReleasedCounts.from_data`.
    states, emission, transition
        The current (z, θ, A).
    latent : EmissionLatentState
        The current (λ, c_P), from :func:`initial_latent_state` or the previous sweep.
    rng : numpy.random.Generator

    Returns
    -------
    states, emission, transition, latent
    """
    n_states, n_entries = data.n_states, released.columns.size
    n_cells = data.n_regions * data.n_times
    thinning = released.thinning
    theta = _entry_emission(data, released, emission)
    log_theta = np.log(np.maximum(theta, np.finfo(np.float64).tiny))
    zero_mass = np.empty((n_cells, n_states))  # Σ_{e∈Z_i} θ_{k,e}
    loglik = np.empty((n_cells, n_states))
    if collapsed_states:
        noise_aware_marginal_loglik(
            released.zero_cell,
            released.zero_entry,
            released.cell,
            released.entry,
            released.value,
            released.floor,
            released.cross,
            1.0 / released.scale,
            theta,
            log_theta,
            latent.rates,
            zero_mass,
            loglik,
        )
    else:
        noise_aware_loglik(
            released.zero_cell,
            released.zero_entry,
            released.cell,
            released.entry,
            latent.counts,
            theta,
            log_theta,
            latent.rates,
            thinning,
            zero_mass,
            loglik,
        )
    # 1. states, latent counts of the zero-valued entries integrated out
    states = ffbs(loglik.reshape(data.n_regions, data.n_times, n_states), transition, rng)
    flat_states = np.ascontiguousarray(states.ravel(), dtype=np.int64)
    # 2. latent counts of the positive entries
    counts = draw_latent_counts(released, states, theta, latent.rates, rng)
    # 3. rates, latent counts of the zero-valued entries integrated out
    shape = RATE_PRIOR_SHAPE + np.bincount(released.cell, weights=counts, minlength=n_cells)
    rate = data.n_features - thinning * zero_mass[np.arange(n_cells), flat_states]
    rates = rng.standard_gamma(shape) / rate
    # 4. per-state sums of the zero-valued entries' latent counts, given the new rates
    zero_rates = np.empty((n_states, n_entries))
    state_sums(
        released.zero_cell, released.zero_entry, rates[released.zero_cell], flat_states, zero_rates
    )
    zero_sums = rng.poisson(thinning * theta * zero_rates)
    # 5. emissions on the latent counts (eq. 69)
    entry_sums = np.empty((n_states, n_entries))
    state_sums(released.cell, released.entry, counts.astype(np.float64), flat_states, entry_sums)
    statistics = np.zeros((n_states, data.n_features * data.width))
    statistics[:, released.columns] = entry_sums + zero_sums
    emission = update_emission(
        data,
        states,
        rng,
        current=emission,
        counts=statistics.reshape(n_states, data.n_features, data.width),
    )
    # 6. transitions
    transition = update_transition(data, states, rng)
    return states, emission, transition, EmissionLatentState(rates, counts)
