"""Numba kernels of the latent-count conditionals (:mod:`pymc_dp.families.latent_counts`).

Why compiled: one collapsed sweep of a latent table is B·d one-dimensional draws, each a
window of ~2·w0 integers (w0 ≈ b·log(2/tol)) whose size and growth depend on the data. In
NumPy every move paid a dozen array operations and temporaries of that window: measured
(load average 5 on 2 cores) 2.5 ms a sweep of one two-component table and 23 ms a sweep of a
K = 8 Dirichlet table, where the plug-in draw costs ~25 µs. Here a whole sweep is one call,
a few µs per move, with no allocation but the window buffer: 4–130 µs a sweep for the same
cases under the same load.

A target (one row) is the :class:`~pymc_dp.families.latent_counts.CountConditional` form:

    log f(x) = Σ_i ± log Γ(σ_i·x + c_i) − Σ_l w_l·|x − κ_l| − Σ_l v_l·(x − κ_l)²,  0 ≤ x ≤ upper,

with the increments of the Gamma part log(num(x)/den(x)), num and den quadratics.

Window (:func:`settle_window`): the integers [lo, hi] from the noise kinks ± w0, each side
growing (doubling) while a rigorous bound on the omitted mass there exceeds tol/2 of the
enumerated mass. The bound (:func:`tail_bound`) halves the noise decay s at the window's edge
(the noise part is concave, Laplace or Gaussian alike) and pays for any rise of the Gamma part
with its *exact* maximum M against the other half (:func:`sup_rise`: the maximum of
log f_Γ(x) + x·s/2 over the integers of an interval is at an end or next to a real root of a
quadratic, so seven closed-form evaluations give it exactly, even for a U-shaped
Beta-binomial or a prior far from the release). Usually no log-Gamma is needed: when the
sign of that quadratic proves the increments never rise past the edge (:func:`_no_rise`,
with a margin far above rounding), M = 0; otherwise the exact maximum is computed. Either
way M is exact, never an estimate, so truncating to the window changes each conditional by at
most ``tol`` in total variation, wherever the counts are.

Randomness: every kernel takes its uniforms in [0, 1) from the caller's
``numpy.random.Generator`` (one array per call) and holds no state, so a run is reproducible
with ``random_seed`` and the results are deterministic given the uniforms.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "KERNELS",
    "cell_sweep",
    "draw_rows",
    "pair_sweep",
    "sup_rises",
    "target_rows",
    "window_rows",
]

MAX_GROWTHS = 80
ROUNDING = 1e-6
"""Added to every tail bound: four log-Gamma values of arguments up to ~10⁸ (≈ 2·10⁹ each)
carry a rounding error below 1e-6 together (double precision, relative 1.1e-16)."""

# one target as small arrays: shift c (4), sigma σ (4), num (3), den (3), kink κ (2),
# Laplace weight w (2), Gaussian weight v (2)


@njit(cache=True, error_model="numpy")
def log_gamma_part(x, shift, sigma):
    """log f_Γ(x) = log Γ(σ₀x + c₀) − log Γ(σ₁x + c₁) + log Γ(σ₂x + c₂) − log Γ(σ₃x + c₃)."""
    return (
        math.lgamma(sigma[0] * x + shift[0])
        - math.lgamma(sigma[1] * x + shift[1])
        + math.lgamma(sigma[2] * x + shift[2])
        - math.lgamma(sigma[3] * x + shift[3])
    )


@njit(cache=True, error_model="numpy")
def log_noise(x, kink, weight, quadratic):
    """−Σ_l w_l·|x − κ_l| − Σ_l v_l·(x − κ_l)²: the release's log-density (concave in x)."""
    total = 0.0
    for i in range(2):
        if weight[i] > 0.0:
            total -= weight[i] * abs(x - kink[i])
        if quadratic[i] > 0.0:
            d = x - kink[i]
            total -= quadratic[i] * d * d
    return total


@njit(cache=True, error_model="numpy")
def _phi(x, start, top, shift, sigma, slope):
    """Φ(x) = log f_Γ(x) + slope·x at x clipped into [start, top]."""
    x = min(max(x, start), top)
    return log_gamma_part(x, shift, sigma) + slope * x


@njit(cache=True, error_model="numpy")
def _no_rise(num, den, slope, start, last, rising):
    """True if the increments of Φ = log f_Γ + slope·x provably have one sign at every
    integer of [start, last]: all ≤ 0 (``rising`` False: Φ is largest at ``start``) or all ≥ 0
    (``rising`` True: largest at ``last + 1``). Then the exact maximum of :func:`sup_rise` is
    the reference and no log-Gamma is evaluated; False means "not proven" (the caller computes
    the exact maximum).

    An increment has the sign of P(x) = e^slope·num(x) − den(x) (den > 0 on the support).
    Q = ±P (the sign wanted) is a quadratic: concave or linear, its minimum on the interval is
    at an end; convex, at an integer next to its vertex. Q is required to be positive there
    with a relative margin far above the rounding of P (:func:`_signed_p`).
    """
    factor = math.exp(slope)
    q2 = factor * num[0] - den[0]
    q1 = factor * num[1] - den[1]
    q0 = factor * num[2] - den[2]
    sign = 1.0 if rising else -1.0  # Q = sign·P must be ≥ 0 on [start, last]
    lead = sign * q2
    if lead <= 0.0:  # Q concave (or linear): its minimum is at an end
        return (
            math.isfinite(last)
            and _signed_p(q2, q1, q0, factor, num, den, sign, start)
            and _signed_p(q2, q1, q0, factor, num, den, sign, last)
        )
    # Q convex: its minimum over the integers is next to the vertex −q1/(2·q2); the integers
    # around the computed vertex (off by far less than 1), clipped into the interval
    base = np.floor(-q1 / (2.0 * q2)) - 1.0
    for i in range(4):
        x = base + i
        if not _signed_p(q2, q1, q0, factor, num, den, sign, min(max(x, start), last)):
            return False
    return True


@njit(cache=True, error_model="numpy")
def _signed_p(q2, q1, q0, factor, num, den, sign, x):
    """sign·P(x) ≥ 1e-12·Σ_i (e^slope·|num_i| + |den_i|)·|x|^i: a sign that the rounding of
    P's coefficients and of its evaluation (≲ 1e-15 of that sum) cannot flip."""
    ax = abs(x)
    size = (factor * abs(num[0]) + abs(den[0])) * ax * ax
    size += (factor * abs(num[1]) + abs(den[1])) * ax + factor * abs(num[2]) + abs(den[2])
    return sign * ((q2 * x + q1) * x + q0) >= 1e-12 * size


@njit(cache=True, error_model="numpy")
def sup_rise(shift, sigma, num, den, start, end, slope, reference):
    """max over integers x ∈ [start, end] of Φ(x) − Φ(reference), Φ = log f_Γ(x) + slope·x.

    The increments of Φ are log(num(x)/den(x)) + slope, positive exactly where the quadratic
    P = e^slope·num − den is, so Φ has a local maximum on the integers only at an end or at
    ⌈r⌉ for a real root r of P; Φ is evaluated at both ends and ⌊r⌋, ⌈r⌉ of both roots
    (clipped into the interval): exact. ``end`` may be +inf when Φ → −∞ there.
    """
    factor = math.exp(slope)
    q2 = factor * num[0] - den[0]
    q1 = factor * num[1] - den[1]
    q0 = factor * num[2] - den[2]
    top = end if end > start else start
    last = end if math.isfinite(end) else start
    phi_ref = log_gamma_part(reference, shift, sigma) + slope * reference
    best = max(phi_ref, _phi(start, start, top, shift, sigma, slope))
    best = max(best, _phi(last, start, top, shift, sigma, slope))
    disc = q1 * q1 - 4.0 * q2 * q0
    if disc >= 0.0:
        q = -0.5 * (q1 + math.copysign(math.sqrt(disc), q1))
        for root in (q / q2, q0 / q):
            if math.isfinite(root):
                best = max(best, _phi(np.floor(root), start, top, shift, sigma, slope))
                best = max(best, _phi(np.ceil(root), start, top, shift, sigma, slope))
    return best - phi_ref


@njit(cache=True, error_model="numpy")
def tail_bound(shift, sigma, num, den, kink, weight, quadratic, edge, f_edge, side, upper):
    """log of an upper bound on the unnormalised mass beyond ``edge`` (side +1: x > edge;
    side −1: x < edge); −inf for an empty tail, +inf when no bound is available yet.

    The noise part is concave, so its decay past the edge is at least k·s with
    s = noise(edge + side) − noise(edge); half of it bounds the geometric tail
    f(edge)·e^M·Σ_{k≥1} e^{k·s/2}, the other half goes into Φ = log f_Γ(x) ± x·s/2, whose
    exact maximum rise M past the edge (:func:`sup_rise`) pays for any rise of the Gamma part.
    """
    if side > 0 and not edge < upper:
        return -np.inf
    if side < 0 and not edge > 0.0:
        return -np.inf
    half = 0.5 * (
        log_noise(edge + side, kink, weight, quadratic) - log_noise(edge, kink, weight, quadratic)
    )
    if not half < 0.0:
        return np.inf
    if side > 0:
        if _no_rise(num, den, half, edge, upper - 1.0, False):
            rise = 0.0
        else:
            rise = sup_rise(shift, sigma, num, den, edge, upper, half, edge)
    elif _no_rise(num, den, -half, 0.0, edge - 1.0, True):
        rise = 0.0
    else:
        rise = sup_rise(shift, sigma, num, den, 0.0, edge, -half, edge)
    return f_edge + rise + ROUNDING + half - math.log(-math.expm1(half))


@njit(cache=True, error_model="numpy")
def settle_window(
    upper, shift, sigma, num, den, kink, weight, quadratic, scale, tol, buf, as_weights
):
    """Fill ``buf[:L]`` with log f on the window lo..lo + L − 1 (up to a constant), or with
    the weights f/max f if ``as_weights`` (what a draw needs: one exponential per point).

    Returns (lo, L, top, log_mass, buf): top = max log f, log_mass = log Σ f on the window,
    and the buffer (a larger one when the window outgrew ``buf``). The omitted mass is at most
    ``tol`` times the total (module docstring).
    """
    gaussian = quadratic[0] > 0.0 or quadratic[1] > 0.0
    log_two_over_tol = math.log(2.0 / tol)
    if gaussian:
        w0 = math.ceil(scale * math.sqrt(2.0 * log_two_over_tol)) + 2.0
    else:
        w0 = math.ceil(scale * (log_two_over_tol + 1.0)) + 2.0
    low_kink, high_kink = np.inf, -np.inf
    for i in range(2):
        if weight[i] > 0.0 or quadratic[i] > 0.0:
            low_kink = min(low_kink, kink[i])
            high_kink = max(high_kink, kink[i])
    lo = min(max(np.floor(min(max(low_kink, 0.0), upper)) - w0, 0.0), upper)
    hi = min(max(np.ceil(min(max(high_kink, 0.0), upper)) + w0, lo), upper)
    half_tol = math.log(tol / 2.0)
    for _ in range(MAX_GROWTHS):
        length = int(hi - lo) + 1
        if length > buf.shape[0]:
            buf = np.empty(2 * length)
        gamma = 0.0
        x = lo
        buf[0] = log_noise(x, kink, weight, quadratic)
        top = buf[0]
        for i in range(1, length):
            gamma += math.log(
                ((num[0] * x + num[1]) * x + num[2]) / ((den[0] * x + den[1]) * x + den[2])
            )
            x += 1.0
            value = gamma + log_noise(x, kink, weight, quadratic)
            buf[i] = value
            if value > top:
                top = value
        f_lo, f_hi = buf[0], buf[length - 1]
        total = 0.0
        for i in range(length):
            value = math.exp(buf[i] - top)
            total += value
            if as_weights:
                buf[i] = value
        log_mass = top + math.log(total)
        right = tail_bound(shift, sigma, num, den, kink, weight, quadratic, hi, f_hi, 1.0, upper)
        left = tail_bound(shift, sigma, num, den, kink, weight, quadratic, lo, f_lo, -1.0, upper)
        grow_right = right - log_mass > half_tol
        grow_left = left - log_mass > half_tol
        if not (grow_right or grow_left):
            return lo, length, top, log_mass, buf
        step = max(w0, hi - lo)
        if grow_right:
            hi = min(hi + step, upper)
        if grow_left:
            lo = max(lo - step, 0.0)
    raise RuntimeError("latent-count window did not settle")


@njit(cache=True, error_model="numpy")
def draw_from_window(weights, length, top, log_mass, u):
    """Inverse CDF on a window settled ``as_weights``: the offset of the draw for uniform
    ``u``."""
    target = u * math.exp(log_mass - top)
    cumulative = 0.0
    for i in range(length):
        cumulative += weights[i]
        if cumulative > target:
            return i
    return length - 1


@njit(cache=True, error_model="numpy")
def window_rows(upper, shift, sigma, num, den, kink, weight, quadratic, scale, tol):
    """Windows of B targets (arrays with B rows): lo (B,) and log f (B, L), −inf padding."""
    rows = upper.shape[0]
    los = np.empty(rows)
    lengths = np.empty(rows, dtype=np.int64)
    pieces = []
    buf = np.empty(256)
    for r in range(rows):
        lo, length, _, _, buf = settle_window(
            upper[r], shift[r], sigma, num[r], den[r], kink[r], weight[r], quadratic[r],
            scale[r], tol, buf, False,
        )  # fmt: skip
        los[r] = lo
        lengths[r] = length
        pieces.append(buf[:length].copy())
    width = 1
    for r in range(rows):
        width = max(width, lengths[r])
    log_f = np.full((rows, width), -np.inf)
    for r in range(rows):
        log_f[r, : lengths[r]] = pieces[r]
    return los, log_f


@njit(cache=True, error_model="numpy")
def draw_rows(upper, shift, sigma, num, den, kink, weight, quadratic, scale, tol, uniforms):
    """One draw of each of B targets (inverse CDF on its window, uniforms (B,))."""
    rows = upper.shape[0]
    out = np.empty(rows)
    buf = np.empty(256)
    for r in range(rows):
        lo, length, top, log_mass, buf = settle_window(
            upper[r], shift[r], sigma, num[r], den[r], kink[r], weight[r], quadratic[r],
            scale[r], tol, buf, True,
        )  # fmt: skip
        out[r] = lo + draw_from_window(buf, length, top, log_mass, uniforms[r])
    return out


@njit(cache=True, error_model="numpy")
def sup_rises(shift, sigma, num, den, start, end, slope, reference):
    """:func:`sup_rise` of row r's target on each of its S intervals; arrays (B, S)."""
    rows, n_intervals = start.shape
    out = np.empty((rows, n_intervals))
    for r in range(rows):
        for s in range(n_intervals):
            out[r, s] = sup_rise(
                shift[r], sigma, num[r], den[r], start[r, s], end[r, s], slope[r, s],
                reference[r, s],
            )  # fmt: skip
    return out


@njit(cache=True, error_model="numpy")
def _noise_weights(released, scale, gaussian, weight, quadratic, slot):
    """Noise term ``slot``: Laplace weight 1/b or Gaussian weight 1/(2σ²); 0 if not released."""
    weight[slot] = 0.0
    quadratic[slot] = 0.0
    if released and gaussian:
        quadratic[slot] = 1.0 / (2.0 * scale * scale)
    elif released:
        weight[slot] = 1.0 / scale


@njit(cache=True, error_model="numpy")
def fill_pair(
    m, a_j, a_k, noisy_j, noisy_k, scale, gaussian, shift, num, den, kink, weight, quadratic
):
    """The pair target of :func:`pymc_dp.families.latent_counts.pair_target` (one row, in
    place); ``noisy_j``/``noisy_k`` NaN when not released."""
    shift[0], shift[1], shift[2], shift[3] = a_j, 1.0, m + a_k, m + 1.0
    num[0], num[1], num[2] = -1.0, m - a_j, a_j * m
    den[0], den[1], den[2] = -1.0, m - 2.0 + a_k, m - 1.0 + a_k
    released_j, released_k = not math.isnan(noisy_j), not math.isnan(noisy_k)
    kink[0] = noisy_j if released_j else 0.0
    kink[1] = m - noisy_k if released_k else m
    _noise_weights(released_j, scale, gaussian, weight, quadratic, 0)
    _noise_weights(released_k, scale, gaussian, weight, quadratic, 1)


@njit(cache=True, error_model="numpy")
def fill_cell(rest, a, a_total, noisy, scale, gaussian, shift, num, den, kink, weight, quadratic):
    """The cell target of :func:`pymc_dp.families.latent_counts.cell_target` (one row, in
    place)."""
    shift[0], shift[1], shift[2], shift[3] = a, 1.0, rest + 0.5, rest + a_total
    num[0], num[1], num[2] = 1.0, a + rest + 0.5, a * (rest + 0.5)
    den[0], den[1], den[2] = 1.0, rest + a_total + 1.0, rest + a_total
    kink[0] = noisy
    kink[1] = noisy
    _noise_weights(True, scale, gaussian, weight, quadratic, 0)
    _noise_weights(False, scale, gaussian, weight, quadratic, 1)


@njit(cache=True, error_model="numpy")
def target_rows(cell, first, second, third, noisy_j, noisy_k, scale, gaussian):
    """B pair targets (first, second, third = m, a_j, a_k) or cell targets (rest, a, A; noisy_k
    unused): arrays shift (B, 4), num, den (B, 3), kink, weight, quadratic (B, 2)."""
    rows = first.shape[0]
    shift, num, den = np.empty((rows, 4)), np.empty((rows, 3)), np.empty((rows, 3))
    kink, weight, quadratic = np.empty((rows, 2)), np.empty((rows, 2)), np.empty((rows, 2))
    for r in range(rows):
        if cell:
            fill_cell(
                first[r], second[r], third[r], noisy_j[r], scale[r], gaussian,
                shift[r], num[r], den[r], kink[r], weight[r], quadratic[r],
            )  # fmt: skip
        else:
            fill_pair(
                first[r], second[r], third[r], noisy_j[r], noisy_k[r], scale[r], gaussian,
                shift[r], num[r], den[r], kink[r], weight[r], quadratic[r],
            )  # fmt: skip
    return shift, num, den, kink, weight, quadratic


@njit(cache=True, error_model="numpy")
def pair_sweep(counts, concentration, noisy, scale, gaussian, tol, uniforms):
    """One collapsed sweep of public-total tables, in place: pair moves n_j | n_j + n_k.

    ``counts`` (B, d) whole numbers, ``concentration`` (B, d), ``noisy`` (B, r) with r = d
    (every component released) or r = 1 (only the first of d = 2), ``scale`` (B,).
    d = 2: the one pair (0, 1). d > 2: the pairs (c_i, c_{i+1 mod d}) along a random cycle c
    of the components (one Fisher–Yates shuffle for all rows, from ``uniforms[:d − 1]``).
    Move (j, k) of row b draws from the Beta-binomial × noise conditional of
    :func:`pymc_dp.families.latent_counts.pair_target` with uniform
    ``uniforms[offset + move·B + b]``. Needs d − 1 (d > 2) + B·(number of pairs) uniforms.
    """
    rows, d = counts.shape
    n_released = noisy.shape[1]
    cycle = np.arange(d)
    used = 0
    if d > 2:
        for i in range(d - 1, 0, -1):  # Fisher–Yates
            j = int(uniforms[used] * (i + 1))
            used += 1
            cycle[i], cycle[j] = cycle[j], cycle[i]
    n_pairs = 1 if d == 2 else d
    sigma = np.array([1.0, 1.0, -1.0, -1.0])
    shift, num, den = np.empty(4), np.empty(3), np.empty(3)
    kink, weight, quadratic = np.empty(2), np.empty(2), np.empty(2)
    buf = np.empty(256)
    for move in range(n_pairs):
        j, k = cycle[move], cycle[(move + 1) % d]
        for b in range(rows):
            m = counts[b, j] + counts[b, k]
            fill_pair(
                m, concentration[b, j], concentration[b, k],
                noisy[b, j] if j < n_released else np.nan,
                noisy[b, k] if k < n_released else np.nan,
                scale[b], gaussian, shift, num, den, kink, weight, quadratic,
            )  # fmt: skip
            lo, length, top, log_mass, buf = settle_window(
                m, shift, sigma, num, den, kink, weight, quadratic, scale[b], tol, buf, True
            )
            x = lo + draw_from_window(buf, length, top, log_mass, uniforms[used])
            used += 1
            counts[b, j] = x
            counts[b, k] = m - x
    return counts


@njit(cache=True, error_model="numpy")
def cell_sweep(counts, concentration, noisy, scale, gaussian, tol, uniforms):
    """One collapsed sweep of private-total tables, in place: every cell n_k | the others.

    Cells k = 0..d − 1 in turn, each row b from the Poisson–Jeffreys × noise conditional of
    :func:`pymc_dp.families.latent_counts.cell_target` with uniform ``uniforms[k·B + b]``
    (B·d uniforms). ``noisy`` (B, d): every cell released.
    """
    rows, d = counts.shape
    sigma = np.ones(4)
    shift, num, den = np.empty(4), np.empty(3), np.empty(3)
    kink, weight, quadratic = np.empty(2), np.empty(2), np.empty(2)
    buf = np.empty(256)
    for k in range(d):
        for b in range(rows):
            a_total = 0.0
            rest = 0.0
            for c in range(d):
                a_total += concentration[b, c]
                if c != k:
                    rest += counts[b, c]
            fill_cell(
                rest, concentration[b, k], a_total, noisy[b, k], scale[b], gaussian,
                shift, num, den, kink, weight, quadratic,
            )  # fmt: skip
            lo, length, top, log_mass, buf = settle_window(
                np.inf, shift, sigma, num, den, kink, weight, quadratic, scale[b], tol, buf, True
            )
            counts[b, k] = lo + draw_from_window(buf, length, top, log_mass, uniforms[k * rows + b])
    return counts


KERNELS = (pair_sweep, cell_sweep, target_rows, window_rows, draw_rows, sup_rises)
"""The entry points :mod:`pymc_dp.families.latent_counts` calls
(:func:`pymc_dp.compiling.numba_needs_compiling`)."""


def compile_all() -> None:
    """Compile every entry point of :data:`KERNELS` now, on a tiny public example (no data),
    so a first run compiles them all at once and later runs load them from numba's cache."""
    one, two = np.ones(1), np.ones((1, 2))
    target = target_rows(False, 2.0 * one, one, one, one, np.full(1, np.nan), one, False)
    shift, num, den, kink, weight, quadratic = target
    sigma = np.array([1.0, 1.0, -1.0, -1.0])
    rows = (2.0 * one, shift, sigma, num, den, kink, weight, quadratic, one)
    window_rows(*rows, 1e-10)
    draw_rows(*rows, 1e-10, 0.5 * one)
    sup_rises(shift, sigma, num, den, 0.0 * two, 2.0 * two, -0.1 * two, 0.0 * two)
    pair_sweep(two.copy(), two, two, one, False, 1e-10, 0.5 * one)
    cell_sweep(two.copy(), two, two, one, False, 1e-10, 0.5 * two[0])
