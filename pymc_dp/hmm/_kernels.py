"""Numba kernels for the two loops NumPy cannot make fast enough (``benchmarks/hmm_sweep.py``).

* :func:`count_records` — one pass over the records that checks every code against the
  declared domain and increments the (cell, feature, category) counters. NumPy needs one
  ``bincount`` per feature plus separate range checks (6.7 M records/s at 10⁷ records;
  this kernel: about 10 M/s there, bound by random access to the tensor).
* :func:`ffbs_regions` — scaled forward filtering and backward sampling of each region's
  chain. In NumPy the T time steps cost several full-array passes each.
* :func:`sample_latent_counts` — one exact draw per released entry of its latent true count
  given the Laplace-noisy value (noise-aware inference, :mod:`pymc_dp.hmm.noise_aware`): a
  loop with data-dependent branches and rejection steps, which NumPy cannot vectorise.

Numba is already installed as a PyTensor dependency. Results are bit-for-bit deterministic
given the uniforms, which come from the caller's ``numpy.random.Generator``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "KERNELS",
    "count_records",
    "ffbs_regions",
    "latent_count_draw",
    "latent_count_log_marginal",
    "noise_aware_loglik",
    "noise_aware_marginal_loglik",
    "sample_latent_counts",
    "state_sums",
]

_N_TABLE = 8192
_LOG_FACTORIAL = np.array([math.lgamma(c + 1.0) for c in range(_N_TABLE)])
_RECIPROCAL = np.array([0.0] + [1.0 / c for c in range(1, _N_TABLE)])
WINDOW_TOLERANCE = 1e-13
"""The exact latent-count draw omits tails of relative mass below this (geometric bound)."""


@njit(cache=True, nogil=True)
def count_records(region, time, records, n_regions, n_times, n_categories, counts):
    """Add each record to ``counts`` (R·T, D, J), int32; return (-1, -1) or the first bad code.

    32-bit counters keep a cell's D·J counters in fewer cache lines: records arrive in random
    cell order, so memory traffic, not arithmetic, sets the rate.

    A bad code is reported as (row, column) with columns 0..D-1 the features, D the region and
    D + 1 the time. Counting stops there; the caller discards ``counts`` on error.
    """
    n_records, n_features = records.shape
    for i in range(n_records):
        r = region[i]
        t = time[i]
        if r < 0 or r >= n_regions:
            return i, n_features
        if t < 0 or t >= n_times:
            return i, n_features + 1
        cell = r * n_times + t
        for d in range(n_features):
            x = records[i, d]
            if x < 0 or x >= n_categories[d]:
                return i, d
            counts[cell, d, x] += 1
    return -1, -1


@njit(cache=True, nogil=True)
def ffbs_regions(log_likelihood, initial, moves, uniforms):
    """Exact joint draw of every region's states given cell log-likelihoods.

    Parameters
    ----------
    log_likelihood : (R, T, K) float64, already divided by the temperature
    initial : (K,) initial-state weights (row 0 of A, raised to 1/T)
    moves : (K, K) transition weights (rows 1.. of A, raised to 1/T)
    uniforms : (R, T) float64 in [0, 1), one per draw

    Returns
    -------
    (R, T) int64
    """
    n_regions, n_times, n_states = log_likelihood.shape
    states = np.empty((n_regions, n_times), dtype=np.int64)
    filtered = np.empty((n_times, n_states))
    weights = np.empty(n_states)
    for r in range(n_regions):
        for t in range(n_times):
            peak = log_likelihood[r, t, 0]
            for k in range(1, n_states):
                peak = max(peak, log_likelihood[r, t, k])
            total = 0.0
            for k in range(n_states):
                if t == 0:
                    prior = initial[k]
                else:
                    prior = 0.0
                    for j in range(n_states):
                        prior += filtered[t - 1, j] * moves[j, k]
                value = prior * np.exp(log_likelihood[r, t, k] - peak)
                filtered[t, k] = value
                total += value
            if total > 0.0:
                for k in range(n_states):
                    filtered[t, k] /= total
        for t in range(n_times - 1, -1, -1):
            total = 0.0
            for k in range(n_states):
                weight = filtered[t, k]
                if t < n_times - 1:
                    weight *= moves[k, states[r, t + 1]]
                weights[k] = weight
                total += weight
            target = uniforms[r, t] * total
            chosen = n_states - 1
            cumulative = 0.0
            for k in range(n_states):
                cumulative += weights[k]
                if target < cumulative:
                    chosen = k
                    break
            states[r, t] = chosen
    return states


# --- latent true counts behind Laplace-noisy counts (noise-aware inference) -------------------
#
# Target, for one released entry with clamped value y >= 0, Laplace scale b and Poisson mean
# mu = rate * theta (see pymc_dp.hmm.noise_aware):
#
#     p(c) ∝ w(c) = mu^c / c! · exp(-|y - c| / b),   c = 0, 1, 2, ...
#
# With m = floor(y): w(c + 1) / w(c) = mu·e^{1/b}/(c + 1) for c < m, mu·e^{-(2m+1-2y)/b}/(m + 1)
# at c = m and mu·e^{-1/b}/(c + 1) for c > m. The ratios decrease in c, so p is log-concave,
# and p is a two-piece mixture: Poisson(nu1 = mu·e^{1/b}) restricted to c <= m and
# Poisson(nu2 = mu·e^{-1/b}) restricted to c > m.


@njit(cache=True, inline="always")
def _log_factorial(c):
    if c < _N_TABLE:
        return _LOG_FACTORIAL[c]
    return math.lgamma(c + 1.0)


@njit(cache=True, inline="always")
def _reciprocal(c):
    if c < _N_TABLE:
        return _RECIPROCAL[c]
    return 1.0 / c


@njit(cache=True)
def poisson_inverse(nu, u):
    """Inverse CDF of Poisson(ν) at u ∈ [0, 1): from 0 for ν < 8, else chop-down from the mode."""
    if nu <= 0.0:
        return 0
    if nu < 8.0:
        t = math.exp(-nu)
        cumulative = t
        c = 0
        while u > cumulative and t > 0.0:
            c += 1
            t *= nu * _reciprocal(c)
            cumulative += t
        return c
    k = int(nu)
    p = math.exp(-nu + k * math.log(nu) - _log_factorial(k))
    u -= p
    if u <= 0.0:
        return k
    low = k
    high = k
    p_low = p
    p_high = p
    inverse_nu = 1.0 / nu
    while p_low > 0.0 or p_high > 0.0:
        if low > 0:
            p_low *= low * inverse_nu
            low -= 1
            u -= p_low
            if u <= 0.0:
                return low
        else:
            p_low = 0.0
        high += 1
        p_high *= nu * _reciprocal(high)
        u -= p_high
        if u <= 0.0:
            return high
    return k  # u within rounding of 1 (probability ~1e-16)


@njit(cache=True, inline="always")
def _ratio(c, mu, m, up, cross, down):
    """w(c + 1) / w(c)."""
    if c < m:
        factor = up
    elif c == m:
        factor = cross
    else:
        factor = down
    return mu * factor * _reciprocal(c + 1)


@njit(cache=True, inline="always")
def _mode(mu, m, up, cross, down):
    """The first c whose ratio w(c + 1)/w(c) is <= 1 (ratios decrease: the mode)."""
    below = math.floor(mu * up)
    if below < m:
        return int(below)
    if mu * cross <= m + 1.0:
        return m
    return int(max(m + 1, math.floor(mu * down)))


@njit(cache=True)
def _window(mu, m, cross, up, down, mode):
    """Σ_c w(c)/w(mode) over the window around the mode holding all but 1e-13 of the mass.

    From the mode, terms are multiplied out by the ratios in both directions; a direction
    stops once its ratio is <= 1/2 (so the rest is below the last term, by log-concavity)
    and the last term is below WINDOW_TOLERANCE times the running total. Returns the total,
    the window's lowest c with its term w(c)/w(mode), and its highest c.
    """
    total = 1.0
    t = 1.0
    c = mode
    while True:
        r = _ratio(c, mu, m, up, cross, down)
        t *= r
        c += 1
        total += t
        if t == 0.0 or (r <= 0.5 and t < WINDOW_TOLERANCE * total):
            break
    high = c
    t = 1.0
    c = mode
    while c > 0:
        r = _ratio(c - 1, mu, m, up, cross, down)
        t /= r
        c -= 1
        total += t
        if t == 0.0 or (r >= 2.0 and t < WINDOW_TOLERANCE * total):
            break
    return total, c, t, high


@njit(cache=True)
def _exact_latent_draw(mu, m, cross, up, down, u):
    """Inverse-CDF draw on the window around the mode (:func:`_window`)."""
    mode = _mode(mu, m, up, cross, down)
    total, c, t, high = _window(mu, m, cross, up, down, mode)
    target = u * total
    cumulative = t
    while cumulative < target and c < high:
        t *= _ratio(c, mu, m, up, cross, down)
        c += 1
        cumulative += t
    return c


@njit(cache=True)
def latent_count_log_marginal(mu, log_mu, y, m, cross, inverse_scale, up):
    """log Σ_c Pois(c; μ) exp(−|y − c|/b) for y > 0, by the window of :func:`_window`."""
    if mu <= 0.0:
        return -y * inverse_scale
    down = 1.0 / up
    mode = _mode(mu, m, up, cross, down)
    total, _, _, _ = _window(mu, m, cross, up, down, mode)
    return (
        -mu + mode * log_mu - _log_factorial(mode) - abs(y - mode) * inverse_scale + math.log(total)
    )


@njit(cache=True)
def latent_count_draw(mu, y, m, cross, inverse_scale, up, u1, u2):
    """One exact draw of c with p(c) ∝ μ^c/c! · exp(-|y - c|/b), from two uniforms.

    Parameters: μ >= 0; y >= 0 the (clamped) released value; m = floor(y); ``cross`` =
    exp(-(2m + 1 - 2y)/b); ``inverse_scale`` = 1/b; ``up`` = exp(1/b); u1, u2 independent
    uniforms on [0, 1).

    * y = 0: p is Poisson(μ e^{-1/b}) exactly (every c >= y): inverse CDF.
    * Mode in the lower piece (ν1 = μe^{1/b} <= m + 1/2): propose Poisson(ν1) (u1), accept
      c <= m always and c > m with probability exp(-2(c - y)/b) (u2). The proposal is the
      lower piece's own Poisson, so the bound w/q is attained on c <= m.
    * Mode in the upper piece (ν2 = μe^{-1/b} >= m + 1/2): the mirror image, Poisson(ν2),
      accept c <= m with probability exp(-2(y - c)/b).
    * Mode at the kink: the pmf decays at least geometrically away from m (rate m/ν1) and
      from m + 1 (rate ν2/(m + 2)); sample that envelope (u1 picks the side and the offset) and
      accept with the exact ratio (u2). If the envelope is loose (acceptance bound < 1/4),
      draw by :func:`_exact_latent_draw` directly.

    After a rejection, u2 rescaled to its rejection interval is a fresh uniform independent of
    the proposal; it drives :func:`_exact_latent_draw`, so the output is exact whichever branch
    ends the draw.
    """
    if mu <= 0.0:
        return 0
    down = 1.0 / up
    nu1 = mu * up
    nu2 = mu * down
    if y <= 0.0:
        return poisson_inverse(nu2, u1)
    if nu1 <= m + 0.5:
        c = poisson_inverse(nu1, u1)
        if c <= m:
            return c
        accept = math.exp(-2.0 * (c - y) * inverse_scale)
    elif nu2 >= m + 0.5:
        c = poisson_inverse(nu2, u1)
        if c > m:
            return c
        accept = math.exp(-2.0 * (y - c) * inverse_scale)
    else:
        step_up = mu * cross * _reciprocal(m + 1)  # w(m + 1) / w(m)
        rho_low = m / nu1
        rho_high = nu2 * _reciprocal(m + 2)
        top = 1.0 - rho_low ** (m + 1)
        mass_low = top / (1.0 - rho_low)
        mass_high = step_up / (1.0 - rho_high)
        if 1.0 + step_up < 0.25 * (mass_low + mass_high):
            return _exact_latent_draw(mu, m, cross, up, down, u1)
        v = u1 * (mass_low + mass_high)
        if v < mass_low:
            if m == 0:
                return 0
            j = min(m, int(math.log1p(-(v / mass_low) * top) / math.log(rho_low)))
            c = m - j
            if j == 0:
                return c
            accept = math.exp(_log_factorial(m) - _log_factorial(c) - j * math.log(m))
        else:
            w = (v - mass_low) / mass_high
            j = int(math.log1p(-w) / math.log(rho_high)) if rho_high > 0.0 else 0
            c = m + 1 + j
            if j == 0:
                return c
            accept = math.exp(j * math.log(m + 2.0) - _log_factorial(c) + _log_factorial(m + 1))
    if u2 < accept:
        return c
    return _exact_latent_draw(mu, m, cross, up, down, (u2 - accept) / (1.0 - accept))


@njit(cache=True, nogil=True)
def sample_latent_counts(
    cell, entry, value, floor, cross, inverse_scale, rate, states, theta, uniforms, out
):
    """out[p] ~ latent count of positive entry p, μ = rate[i]·theta[states[i], entry[p]].

    ``i = cell[p]``; ``uniforms`` has shape (P, 2); ``states`` is the flat (R·T,) state array.
    """
    up = math.exp(inverse_scale)
    for p in range(value.shape[0]):
        i = cell[p]
        out[p] = latent_count_draw(
            rate[i] * theta[states[i], entry[p]],
            value[p],
            floor[p],
            cross[p],
            inverse_scale,
            up,
            uniforms[p, 0],
            uniforms[p, 1],
        )
    return out


@njit(cache=True, nogil=True)
def noise_aware_loglik(
    zero_cell, zero_entry, cell, entry, counts, theta, log_theta, rate, thinning, zero_mass, loglik
):
    """Cell log-likelihoods of the states given the latent counts of the positive entries.

    zero_mass[i, k] = Σ_{e∈Z_i} θ[k, e] and loglik[i, k] = Σ_{e∈P_i} c_e log θ[k, e] +
    thinning·rate[i]·zero_mass[i, k], both overwritten; see :mod:`pymc_dp.hmm.noise_aware`.
    """
    n_states = theta.shape[0]
    zero_mass[:] = 0.0
    loglik[:] = 0.0
    for p in range(zero_cell.shape[0]):
        i = zero_cell[p]
        e = zero_entry[p]
        for k in range(n_states):
            zero_mass[i, k] += theta[k, e]
    for p in range(cell.shape[0]):
        c = counts[p]
        if c > 0:
            i = cell[p]
            e = entry[p]
            for k in range(n_states):
                loglik[i, k] += c * log_theta[k, e]
    for i in range(loglik.shape[0]):
        for k in range(n_states):
            loglik[i, k] += thinning * rate[i] * zero_mass[i, k]
    return loglik


@njit(cache=True, nogil=True)
def state_sums(cell, entry, weights, states, out):
    """out[k, e] = Σ_p weights[p] over the entries p with states[cell[p]] = k, entry[p] = e."""
    out[:] = 0.0
    for p in range(cell.shape[0]):
        out[states[cell[p]], entry[p]] += weights[p]
    return out


@njit(cache=True, nogil=True)
def noise_aware_marginal_loglik(
    zero_cell,
    zero_entry,
    cell,
    entry,
    value,
    floor,
    cross,
    inverse_scale,
    theta,
    log_theta,
    rate,
    zero_mass,
    loglik,
):
    """Cell log-likelihoods of the states with every latent count summed out.

    loglik[i, k] = Σ_{e∈P_i} log Σ_c Pois(c; λ_i θ_ke) e^{−|y_e − c|/b}
    − (1 − e^{−1/b}) λ_i Σ_{e∈Z_i} θ_ke and zero_mass[i, k] = Σ_{e∈Z_i} θ_ke (overwritten).
    """
    n_states = theta.shape[0]
    up = math.exp(inverse_scale)
    shrink = 1.0 - 1.0 / up
    zero_mass[:] = 0.0
    loglik[:] = 0.0
    for p in range(zero_cell.shape[0]):
        i = zero_cell[p]
        e = zero_entry[p]
        for k in range(n_states):
            zero_mass[i, k] += theta[k, e]
    for p in range(cell.shape[0]):
        i = cell[p]
        e = entry[p]
        log_rate = math.log(rate[i]) if rate[i] > 0.0 else -np.inf
        for k in range(n_states):
            loglik[i, k] += latent_count_log_marginal(
                rate[i] * theta[k, e],
                log_rate + log_theta[k, e],
                value[p],
                floor[p],
                cross[p],
                inverse_scale,
                up,
            )
    for i in range(loglik.shape[0]):
        for k in range(n_states):
            loglik[i, k] -= shrink * rate[i] * zero_mass[i, k]
    return loglik


KERNELS = (
    count_records,
    ffbs_regions,
    sample_latent_counts,
    noise_aware_loglik,
    state_sums,
    noise_aware_marginal_loglik,
)
"""The entry points the HMM route calls (:func:`pymc_dp.compiling.numba_needs_compiling`)."""
