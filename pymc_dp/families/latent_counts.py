"""Noise-aware inference for Laplace-released count tables: the latent true counts.

The Laplace route releases, per group g, noisy counts ñ_gj = n_gj + Laplace(b) (one component
in the one-group, public-total Beta case; :mod:`pymc_dp.mechanisms.statistics`). *Plug-in*
inference (Foulds et al. 2016, §4.2) treats the projected ñ as the true counts. *Noise-aware*
inference (Bernstein & Sheldon, NeurIPS 2018, §3; Ju, Awan, Gong & Rao, NeurIPS 2022, §3)
keeps the true counts n latent with their sampling distribution given θ and takes the Laplace
density as the likelihood of the release:

    p(θ, n | ñ) ∝ p(θ) · p(n | θ) · Π_gj exp(−|ñ_gj − n_gj| / b).

It reads nothing but the release (``noisy``, its scale b and public totals): post-processing,
no new release and no privacy cost.

Model of the latent counts, per group g with concentration a_g (Beta(α, β) is a = (α, β)):

* **Public total** T (replace-one, one group, public trials): n_g ~ Multinomial(T, θ_g).
* **Private totals** (add-remove-one; replace-one with several groups, whose labels are
  private; per-record trials): the total N_g is unknown, so it gets a prior. We Poissonise,
  n_gk | λ_g, θ_g ~ Poisson(λ_g θ_gk), with Jeffreys' prior p(λ_g) ∝ λ_g^(-1/2) for the
  Poisson rate; conditional on N_g this is exactly Multinomial(N_g, θ_g), and the implied prior
  on the total is p(N_g) ∝ Γ(N_g + 1/2)/Γ(N_g + 1) ≈ N_g^(-1/2): invariant under rescaling of
  the rate, uninformative about the size of the data set, improper but with a proper posterior
  (the Laplace likelihood decays exponentially in N_g). The PyMC model says nothing about N_g;
  under add-remove-one N_g is private and must not be plugged in. With replace-one and several
  groups the grand total is public, but it is not carried by the release, so it is not used
  (valid, slightly wider intervals).

Collapsed updates. θ (and λ) are integrated out analytically, so every update of the latent
counts is an exact draw from a one-dimensional conditional of the *marginal* posterior
p(n | ñ, a); θ | n ~ Dirichlet(a + n) (Beta(α + s, β + f)) is drawn afterwards. Integrating θ
out removes the slow θ ↔ n coupling of the uncollapsed Gibbs sampler (θ | n, n | θ), whose
moves of n are O(√μ) while the posterior of n has width O(b): measured for one Beta–binomial
group, the uncollapsed chain needs 10 sweeps per independent draw at n = 10, b = 10 and 19 at
n = 100, b = 10; the collapsed one-component draw is exact and independent.

* :func:`pair_target` — two components j, k of a public-total table, n_j + n_k = m fixed:
  p(n_j | rest) ∝ BetaBinomial(n_j; m, a_j, a_k) · Lap(ñ_j − n_j) · Lap(ñ_k − (m − n_j)),
  because the Dirichlet–multinomial restricted to a pair is Beta-binomial. With one group, two
  components and one released component this is the whole posterior of s (case 1, exact,
  independent draws, :class:`OneComponentPosterior`).
* :func:`cell_target` — one cell of a private-total table, all other cells fixed (R their sum):
  p(n_k | rest) ∝ Γ(n_k + a_k)/Γ(n_k + 1) · Γ(n_k + R + 1/2)/Γ(n_k + R + A) · Lap(ñ_k − n_k),
  A = Σ_j a_j (Poisson–Jeffreys total, Dirichlet collapsed).

Gaussian noise (:mod:`pymc_dp.mechanisms.gaussian`): every Lap(·) above is the normal density
N(·; 0, σ²) of the release instead, σ known. It is log-concave too, so the same collapsed
updates and the same rigorous windows apply (:class:`CountConditional`).

Several releases sharing one prior are handled by adding the other releases' latent counts to
a (the Dirichlet–multinomial of all tables together), see :class:`LatentCounts`.

Windows. Each conditional is enumerated exactly on a window of integers; the window grows until
a rigorous bound on the omitted mass, relative to the enumerated mass, is below ``tol``
(:func:`count_window`). The bound uses the concavity of the Laplace terms and the exact maximum
of the Gamma-function part against half the Laplace decay (:func:`sup_log_gamma_part`; its
increments are the log of a ratio of two quadratics, so that maximum is found at the roots of
a quadratic). Truncating to the window changes each conditional by at most ``tol`` in total
variation.

Large counts. The window is O(b · (log(1/tol) + log-factors of the prior)) wide wherever the
counts are: the Gamma-function part varies slowly (like (a − 1)·log x) while the Laplace factor
decays at rate 1/b, and the grid is summed from increments (one logarithm per point, exact at
any size). A draw therefore costs the same at T = 10³ and T = 10⁷, and no normal approximation
of large counts (a two-piece truncated normal in the uncollapsed sampler, whose exact windows
cost O(√μ + b)) is needed or used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from pymc_dp.families.beta import BetaBernoulli
from pymc_dp.families.dirichlet import DirichletCategorical

__all__ = [
    "DEFAULT_TOL",
    "NOISE_AWARE_PRIORS",
    "CountConditional",
    "LatentCounts",
    "OneComponentPosterior",
    "cell_target",
    "concentration_matrix",
    "count_window",
    "draw_counts",
    "initial_counts",
    "noise_aware_draws",
    "pair_target",
    "sup_log_gamma_part",
]

DEFAULT_TOL = 1e-10
"""Largest relative mass a window may omit (total-variation error of one conditional draw)."""
NOISE_AWARE_PRIORS: tuple[str, ...] = ("beta", "dirichlet")
"""Conjugate priors (``ConjugateFamily.prior``) whose releases have a noise-aware update."""

_MAX_GROWTHS = 80
_THETA_DRAW = {"beta": BetaBernoulli(), "dirichlet": DirichletCategorical()}


# --- one-dimensional conditionals -----------------------------------------------------------


class CountConditional:
    """B independent one-dimensional targets on the integers 0..upper (upper may be +inf):

        log f(x) = log f_Γ(x) − Σ_l w_l·|x − κ_l| − Σ_l v_l·(x − κ_l)²,
        log f_Γ(x) = Σ_i ± log Γ(σ_i·x + c_i)   (four terms, σ_i = ±1),

    with the increments of the Gamma part a ratio of two quadratics,
    log f_Γ(x + 1) − log f_Γ(x) = log(num(x)/den(x)). Built by :func:`pair_target` and
    :func:`cell_target`; every array has B rows.

    Attributes
    ----------
    upper : ndarray (B,)
    shift : ndarray (B, 4)
        c_i of the four log-Gamma terms (signs +, −, +, −).
    sigma : ndarray (4,)
        σ_i of the four log-Gamma terms.
    num, den : ndarray (B, 3)
        Coefficients (q2, q1, q0) of num and den.
    kink, weight : ndarray (B, 2)
        Centres κ_l (in x) of the noise terms, and Laplace weights w_l = 1/b (0 for a
        component not released, or for Gaussian noise).
    scale : ndarray (B,)
        Noise scale: Laplace b, or the Gaussian standard deviation σ.
    quadratic : ndarray (B, 2), optional
        Gaussian weights v_l = 1/(2σ²) (0 for a component not released, or for Laplace
        noise); zeros by default. Both noise terms are concave in x, which is all the window
        bounds use.
    """

    def __init__(self, upper, shift, sigma, num, den, kink, weight, scale, quadratic=None) -> None:
        self.upper, self.shift, self.sigma = upper, shift, sigma
        self.num, self.den = num, den
        self.kink, self.weight, self.scale = kink, weight, scale
        self.quadratic = np.zeros_like(weight) if quadratic is None else quadratic
        released = (weight > 0) | (self.quadratic > 0)
        self.low_kink = np.min(np.where(released, kink, np.inf), axis=1)
        self.high_kink = np.max(np.where(released, kink, -np.inf), axis=1)

    def rows(self, keep: np.ndarray) -> CountConditional:
        """The targets of the rows where ``keep`` is True."""
        return CountConditional(
            self.upper[keep],
            self.shift[keep],
            self.sigma,
            self.num[keep],
            self.den[keep],
            self.kink[keep],
            self.weight[keep],
            self.scale[keep],
            self.quadratic[keep],
        )

    def log_gamma_part(self, x: np.ndarray) -> np.ndarray:
        """log f_Γ(x) in closed form (log-Gamma) at points x (B, n)."""
        terms = gammaln(x[:, :, None] * self.sigma + self.shift[:, None, :])
        return terms[..., 0] - terms[..., 1] + terms[..., 2] - terms[..., 3]

    def log_gamma_grid(self, x: np.ndarray) -> np.ndarray:
        """log f_Γ on consecutive integers x (B, L), up to a constant per row.

        Summed from the increments log(num(x)/den(x)): one logarithm per point instead of four
        log-Gamma evaluations, and exact differences at any size of the counts (log-Gamma
        values near 10⁷ are ~10⁸ and lose eight digits when subtracted). Points beyond a row's
        window may be NaN; the caller masks them.
        """
        x = x[:, :-1]
        (n2, n1, n0), (d2, d1, d0) = self.num.T[:, :, None], self.den.T[:, :, None]
        steps = np.log(((n2 * x + n1) * x + n0) / ((d2 * x + d1) * x + d0))
        terms = np.zeros((x.shape[0], x.shape[1] + 1))
        np.cumsum(steps, axis=1, out=terms[:, 1:])
        return terms

    def log_laplace(self, x: np.ndarray) -> np.ndarray:
        """The noise part −Σ_l w_l |x − κ_l| − Σ_l v_l (x − κ_l)² at x (B, n); concave in x
        (Laplace and Gaussian terms alike)."""
        kink, weight = self.kink[:, None, :], self.weight[:, None, :]
        distance = x[:, :, None] - kink
        laplace = -np.sum(weight * np.abs(distance), axis=2)
        if not np.any(self.quadratic):
            return laplace
        quadratic = self.quadratic[:, None, :]
        return laplace - np.sum(quadratic * np.where(quadratic > 0, distance, 0.0) ** 2, axis=2)

    @property
    def gaussian(self) -> np.ndarray:
        """(B,) True for the rows whose noise is Gaussian."""
        return np.any(self.quadratic > 0, axis=1)


_PAIR_SIGMA = np.array([1.0, 1.0, -1.0, -1.0])
_CELL_SIGMA = np.array([1.0, 1.0, 1.0, 1.0])


def _noise_weights(released: np.ndarray, scale: np.ndarray, noise: str):
    """(Laplace weights 1/b, Gaussian weights 1/(2σ²)) of the released components (B, 2)."""
    if noise == "gaussian":
        return np.zeros(released.shape), released / (2.0 * scale[:, None] ** 2)
    if noise != "laplace":
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return released / scale[:, None], None


def pair_target(total, a_j, a_k, noisy_j, noisy_k, scale, noise="laplace") -> CountConditional:
    """p(x) ∝ BetaBinomial(x; m, a_j, a_k) · Lap(ñ_j − x) · Lap(ñ_k − (m − x)), x ∈ 0..m.

    The Dirichlet–multinomial conditional of one pair of components with n_j + n_k = m fixed
    (the Dirichlet integrated out), times the Laplace likelihoods of the released components
    (Bernstein & Sheldon 2018, §3). ``noisy_j`` / ``noisy_k`` are NaN when that component was
    not released (the one-component release: only the first component is noisy, the second is
    m − x with m = T public). Arguments have shape (B,).

    log f_Γ(x) = log Γ(x + a_j) − log Γ(x + 1) + log Γ(m − x + a_k) − log Γ(m − x + 1), with
    increments log[(x + a_j)(m − x)] − log[(x + 1)(m − x − 1 + a_k)].

    With ``noise="gaussian"`` each Lap(·) is the normal density N(·; 0, σ²), σ = ``scale``
    (the release of :mod:`pymc_dp.mechanisms.gaussian`).
    """
    m = np.asarray(total, dtype=np.float64)
    rows = m.shape[0]
    released = np.empty((rows, 2), dtype=bool)
    released[:, 0], released[:, 1] = noisy_j == noisy_j, noisy_k == noisy_k  # not NaN
    kink = np.empty((rows, 2))
    kink[:, 0] = np.where(released[:, 0], noisy_j, 0.0)
    kink[:, 1] = m - np.where(released[:, 1], noisy_k, 0.0)
    shift, num, den = np.empty((rows, 4)), np.empty((rows, 3)), np.empty((rows, 3))
    shift[:, 0], shift[:, 1], shift[:, 2], shift[:, 3] = a_j, 1.0, m + a_k, m + 1.0
    num[:, 0], num[:, 1], num[:, 2] = -1.0, m - a_j, a_j * m
    den[:, 0], den[:, 1], den[:, 2] = -1.0, m - 2.0 + a_k, m - 1.0 + a_k
    scale = np.asarray(scale, dtype=np.float64)
    weight, quadratic = _noise_weights(released.astype(np.float64), scale, noise)
    return CountConditional(m, shift, _PAIR_SIGMA, num, den, kink, weight, scale, quadratic)


def cell_target(rest, a, a_total, noisy, scale, noise="laplace") -> CountConditional:
    """p(x) ∝ Γ(x + a)/Γ(x + 1) · Γ(x + R + 1/2)/Γ(x + R + A) · Lap(ñ − x), x ∈ 0, 1, 2, ...

    One cell of a private-total table given the others (sum R): the Poisson–Jeffreys model of
    the module docstring with λ and θ integrated out,
    ∫∫ λ^(-1/2) Π_j Poisson(n_j; λ θ_j) Dirichlet(θ; a) dλ dθ ∝ Γ(N + 1/2)/Γ(N + A) ·
    Π_j Γ(n_j + a_j)/Γ(n_j + 1), N = Σ_j n_j, A = Σ_j a_j — times the Laplace likelihood of the
    released cell (Bernstein & Sheldon 2018, §3). ``a`` is a_k, ``a_total`` is A; arguments
    have shape (B,). Increments of the Gamma part:
    log[(x + a)(x + R + 1/2)] − log[(x + 1)(x + R + A)]. ``noise="gaussian"``: the normal
    density of the release instead of the Laplace one.
    """
    r = np.asarray(rest, dtype=np.float64)
    rows = r.shape[0]
    shift, num, den = np.empty((rows, 4)), np.empty((rows, 3)), np.empty((rows, 3))
    shift[:, 0], shift[:, 1], shift[:, 2], shift[:, 3] = a, 1.0, r + 0.5, r + a_total
    num[:, 0], num[:, 1], num[:, 2] = 1.0, a + r + 0.5, a * (r + 0.5)
    den[:, 0], den[:, 1], den[:, 2] = 1.0, r + a_total + 1.0, r + a_total
    kink, released = np.empty((rows, 2)), np.zeros((rows, 2))
    kink[:, 0], kink[:, 1] = noisy, noisy
    scale = np.asarray(scale, dtype=np.float64)
    released[:, 0] = 1.0
    weight, quadratic = _noise_weights(released, scale, noise)
    return CountConditional(
        np.full(rows, np.inf), shift, _CELL_SIGMA, num, den, kink, weight, scale, quadratic
    )


def _quadratic_roots(q2: np.ndarray, q1: np.ndarray, q0: np.ndarray) -> tuple[np.ndarray, ...]:
    """Real roots of q2 x² + q1 x + q0 (NaN when there are none), in the cancellation-free
    form q = −(q1 + sign(q1)·√disc)/2, roots q/q2 and q0/q (a linear equation when q2 = 0)."""
    q = -0.5 * (q1 + np.copysign(np.sqrt(q1 * q1 - 4.0 * q2 * q0), q1))
    return q / q2, q0 / q


def sup_log_gamma_part(
    target: CountConditional,
    start: np.ndarray,
    end: np.ndarray,
    slope: np.ndarray,
    reference: np.ndarray,
) -> np.ndarray:
    """max over integers x ∈ [start, end] of Φ(x) − Φ(reference), Φ(x) = log f_Γ(x) + slope·x.

    f_Γ is the Gamma-function part of the target. Arrays are (B,), or (B, S) for S intervals
    per target. The increments of Φ are log(num(x)/den(x)) + slope, positive exactly where the
    quadratic P(x) = e^slope·num(x) − den(x) is positive, so Φ has a local maximum on the
    integers only at an end of the interval or at ⌈r⌉ for a real root r of P. Φ is evaluated in
    closed form (log-Gamma) at both ends and at ⌊r⌋, ⌈r⌉ of both roots, clipped into the
    interval: the extra points lie in the interval and cannot exceed the maximum, so the
    result is exact. ``end`` may be +inf when Φ → −∞ there (the cell target with slope < 0:
    P has leading coefficient e^slope − 1 < 0).
    """
    squeeze = np.ndim(start) == 1
    start, end, slope, reference = (np.atleast_2d(v.T).T for v in (start, end, slope, reference))
    factor = np.exp(slope)
    (n2, n1, n0), (d2, d1, d0) = target.num.T[:, :, None], target.den.T[:, :, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        roots = _quadratic_roots(factor * n2 - d2, factor * n1 - d1, factor * n0 - d0)
    points = [reference, start, np.where(np.isfinite(end), end, start)]
    for root in roots:
        root = np.where(np.isfinite(root), root, start)
        points += [np.floor(root), np.ceil(root)]
    x = np.clip(np.stack(points, axis=-1), start[..., None], np.maximum(end, start)[..., None])
    phi = target.log_gamma_part(x.reshape(x.shape[0], -1)).reshape(x.shape) + slope[..., None] * x
    rise = np.max(phi, axis=-1) - phi[..., 0]
    return rise[:, 0] if squeeze else rise


def _log_geometric_tail(log_edge: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """log Σ_{k≥1} exp(log_edge + k·slope) = log_edge + slope − log(1 − e^slope); +inf if the
    slope is not negative."""
    tail = log_edge + slope - np.log(-np.expm1(slope))
    return np.where(slope < 0, tail, np.inf)


_ROUNDING = 1e-6
"""Added to every bound: four log-Gamma values of arguments up to ~10⁸ (≈ 2·10⁹ each) carry a
rounding error below 1e-6 together (double precision, relative 1.1e-16)."""


def _tail_bounds(target: CountConditional, lo, hi, f_lo, f_hi) -> np.ndarray:
    """log of upper bounds on Σ_{x > hi} f(x) and Σ_{x < lo} f(x), shape (B, 2) (unnormalised;
    −inf for an empty tail, +inf when no bound is available yet).

    Right tail. The noise part (Laplace or Gaussian) is concave, so Lap(hi + k) − Lap(hi) ≤ k·s with
    s = Lap(hi + 1) − Lap(hi) (< 0 once hi is past every kink). Split the decay in halves:
    log f(hi + k) − log f(hi) ≤ [Φ(hi + k) − Φ(hi)] + k·s/2 with Φ(x) = log f_Γ(x) + x·s/2,
    so the tail is at most f(hi) · e^M · Σ_{k≥1} e^{k s/2}, M = max_{x ≥ hi} Φ(x) − Φ(hi)
    (:func:`sup_log_gamma_part`, exact). M pays for any rise of the Gamma part (a prior far
    from the release, a U-shaped Beta-binomial whose spike at the far end is damped by the
    Laplace factor) and is 0 when it is flat. Left tail: the mirror image, with
    s = Lap(lo − 1) − Lap(lo) and Φ(x) = log f_Γ(x) − x·s/2 on [0, lo]. Valid for any positive
    concentrations, log-concave or not.
    """
    upper = target.upper
    laplace = target.log_laplace(np.stack([hi, hi + 1.0, lo, lo - 1.0], axis=1))
    half = 0.5 * (laplace[:, [1, 3]] - laplace[:, [0, 2]])  # (B, 2): right, left
    usable = (half < 0) & np.stack([hi < upper, lo > 0], axis=1)
    half_or_dummy = np.where(usable, half, -1.0)
    rise = sup_log_gamma_part(
        target,
        np.stack([hi, np.zeros_like(lo)], axis=1),
        np.stack([upper, lo], axis=1),
        half_or_dummy * np.array([1.0, -1.0]),  # Φ = f_Γ + x·s/2 (right), f_Γ − x·s/2 (left)
        np.stack([hi, lo], axis=1),
    )
    edge = np.stack([f_hi, f_lo], axis=1)
    tails = np.where(usable, _log_geometric_tail(edge + rise + _ROUNDING, half_or_dummy), np.inf)
    return np.where(np.stack([hi < upper, lo > 0], axis=1), tails, -np.inf)


def _initial_half_width(scale: np.ndarray, tol: float, gaussian=False) -> np.ndarray:
    """w0 = ⌈b·(log(2/tol) + 1)⌉ + 2: where the Laplace factor alone has fallen by tol/2
    (Gaussian noise: w0 = ⌈σ·√(2·log(2/tol))⌉ + 2, where the normal factor has).

    If the Gamma terms are flat, the mass beyond c + w relative to the mass near c is about
    e^(−w/b)/2 per side; the window grows (doubling) when the terms are not flat.
    """
    laplace = np.ceil(scale * (math.log(2.0 / tol) + 1.0)) + 2.0
    normal = np.ceil(scale * math.sqrt(2.0 * math.log(2.0 / tol))) + 2.0
    return np.where(gaussian, normal, laplace)


def count_window(
    target: CountConditional, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """Integers lo (B,) and log-weights (B, L) of the window x = lo + 0..L−1 of each target.

    Padding beyond a target's window is −inf. The window starts at the Laplace kinks ± w0
    (``_initial_half_width``), clipped to the support, and each side at which the bound of
    ``_tail_bounds`` on the omitted mass exceeds tol/2 of the enumerated mass doubles
    (O(log) rounds when the Gamma terms pull the mass away from the kinks). On return the
    omitted mass is at most ``tol`` times the total: the truncated distribution is within
    ``tol`` of the exact one in total variation.

    Raises
    ------
    RuntimeError
        If the window did not settle (it always does: the Laplace terms decay geometrically).
    """
    lo, log_f, _ = _window(target, tol)
    return lo, log_f


def _window(target: CountConditional, tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`count_window` plus the weights exp(log f − max log f) (B, L).

    Rows whose window has to grow are recomputed alone (a few rows of a large batch).
    """
    upper = target.upper
    w0 = _initial_half_width(target.scale, tol, target.gaussian)
    lo = np.clip(np.floor(np.clip(target.low_kink, 0.0, upper)) - w0, 0.0, upper)
    hi = np.clip(np.ceil(np.clip(target.high_kink, 0.0, upper)) + w0, lo, upper)
    half = math.log(tol / 2.0)
    pending, part = np.arange(lo.shape[0]), target
    finished = []
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(_MAX_GROWTHS):
            part_lo, part_hi = lo[pending], hi[pending]
            x = part_lo[:, None] + np.arange(int(np.max(part_hi - part_lo)) + 1.0)
            log_f = np.where(
                x <= part_hi[:, None], part.log_gamma_grid(x) + part.log_laplace(x), -np.inf
            )
            top = np.max(log_f, axis=1, keepdims=True)
            weights = np.exp(log_f - top)
            log_mass = top[:, 0] + np.log(np.sum(weights, axis=1))
            last = (part_hi - part_lo).astype(np.intp)[:, None]
            f_hi = np.take_along_axis(log_f, last, axis=1)[:, 0]
            tails = _tail_bounds(part, part_lo, part_hi, log_f[:, 0], f_hi)
            grow = tails - log_mass[:, None] > half  # (B, 2): right, left
            grows = grow[:, 0] | grow[:, 1]
            if not grows.any() and not finished:
                return lo, log_f, weights  # every window settled at once (the usual case)
            finished.append((pending[~grows], log_f[~grows], weights[~grows]))
            if not grows.any():
                break
            step = np.maximum(w0[pending], part_hi - part_lo)
            hi[pending] = np.where(grow[:, 0], np.minimum(part_hi + step, part.upper), part_hi)
            lo[pending] = np.where(grow[:, 1], np.maximum(part_lo - step, 0.0), part_lo)
            pending, part = pending[grows], part.rows(grows)
        else:  # pragma: no cover
            raise RuntimeError("latent-count window did not settle")
    width = max(piece.shape[1] for _, piece, _ in finished)
    log_f = np.full((lo.shape[0], width), -np.inf)
    weights = np.zeros((lo.shape[0], width))
    for rows, piece, piece_weights in finished:
        log_f[rows, : piece.shape[1]] = piece
        weights[rows, : piece.shape[1]] = piece_weights
    return lo, log_f, weights


def draw_counts(
    target: CountConditional, rng: np.random.Generator, tol: float = DEFAULT_TOL
) -> np.ndarray:
    """One exact draw (up to ``tol`` in total variation) of each of the B targets (inverse CDF
    on the window of :func:`count_window`)."""
    lo, _, weights = _window(target, tol)
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random(lo.shape[0]) * cumulative[:, -1]
    index = np.minimum(np.sum(cumulative <= u[:, None], axis=1), weights.shape[1] - 1)
    return lo + index


# --- case 1: one released component, public total, constant prior ---------------------------


class OneComponentPosterior:
    """Exact, independent noise-aware draws for one group with a public total (case 1).

    Only s̃ = s + Lap(b) is released; the total T is public; s | θ ~ Binomial(T, θ) and
    θ ~ Beta(α, β) (or the first component of a Dirichlet(α, β)). With θ integrated out,
    p(s | s̃) ∝ BetaBinomial(s; T, α, β) · exp(−|s̃ − s|/b) (Bernstein & Sheldon 2018, §3), and
    θ | s, s̃ ~ Beta(α + s, β + T − s). The window of s and its CDF are computed once
    (:func:`count_window`, O(b·log(T/tol)) integers); each draw of s is then a binary search,
    O(log window), and θ one Beta draw. Fields have shape (B,) for B independent releases.
    With ``noise="gaussian"``, s̃ = s + N(0, σ²) and exp(−|s̃ − s|/b) becomes
    exp(−(s̃ − s)²/(2σ²)), σ = ``scale``.
    """

    def __init__(
        self,
        noisy: np.ndarray,
        scale: np.ndarray,
        total: np.ndarray,
        alpha: np.ndarray,
        beta: np.ndarray,
        tol: float = DEFAULT_TOL,
        noise: str = "laplace",
    ) -> None:
        noisy = np.atleast_1d(np.asarray(noisy, dtype=np.float64))
        shape = noisy.shape

        def as_array(value) -> np.ndarray:
            return np.broadcast_to(np.asarray(value, dtype=np.float64), shape).copy()

        self.total, self.alpha, self.beta = as_array(total), as_array(alpha), as_array(beta)
        target = pair_target(
            self.total,
            self.alpha,
            self.beta,
            noisy,
            np.full(shape, np.nan),
            as_array(scale),
            noise,
        )
        self.lo, log_f = count_window(target, tol)
        weights = np.exp(log_f - np.max(log_f, axis=1, keepdims=True))
        cdf = np.cumsum(weights, axis=1)
        cdf /= cdf[:, -1:]
        last = np.sum(np.isfinite(log_f), axis=1) - 1
        cdf[np.arange(cdf.shape[0]), last] = 1.0  # exactly 1 at the window's end ...
        cdf[~np.isfinite(log_f)] = 1.0  # ... and on the padding, which is never drawn
        self.cdf = cdf

    def draw_counts(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent draws of s from p(s | s̃), shape (size, B)."""
        n_rows, width = self.cdf.shape
        u = rng.random((n_rows, size))
        # one binary search for all rows: row r's CDF lives in [r, r + 1]
        offsets = np.arange(n_rows, dtype=np.float64)[:, None]
        flat = (self.cdf + offsets).ravel()
        index = np.searchsorted(flat, (u + offsets).ravel(), side="right").reshape(n_rows, size)
        index = np.minimum(index - np.arange(n_rows)[:, None] * width, width - 1)
        return (self.lo[:, None] + index).T

    def draw_table(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws of the latent table (s, T − s), shape (size, B, 2)."""
        s = self.draw_counts(rng, size)
        return np.stack([s, self.total - s], axis=-1)


# --- latent tables and their collapsed Gibbs sweeps -------------------------------------------


def initial_counts(projected: np.ndarray, totals: np.ndarray | None) -> np.ndarray:
    """A feasible integer table to start from: the projected (clamped) table, rounded.

    With public totals each row is rescaled to its total and rounded by largest remainders
    (so it sums to T exactly; an all-zero row is split evenly); otherwise rounded to the
    nearest non-negative integers.
    """
    table = np.clip(np.asarray(projected, dtype=np.float64), 0.0, None)
    if totals is None:
        return np.round(table)
    totals = np.asarray(totals, dtype=np.float64)
    row_sums = table.sum(axis=1, keepdims=True)
    positive = row_sums > 0
    share = np.where(positive, table / np.where(positive, row_sums, 1.0), 1.0 / table.shape[1])
    exact = share * totals[:, None]
    counts = np.floor(exact)
    missing = (totals - counts.sum(axis=1)).astype(np.int64)
    order = np.argsort(-(exact - counts), axis=1, kind="stable")
    for row, k in enumerate(missing):
        counts[row, order[row, :k]] += 1.0
    return counts


class LatentCounts:
    """The latent true table behind one release, with collapsed Gibbs sweeps.

    Parameters
    ----------
    noisy : ndarray, shape (B, r)
        The release exactly as published (not projected): r = d components, or r = 1 when only
        the first of d = 2 components is released (its total public).
    scale : float or ndarray (B,)
        Laplace scale b of every released component.
    totals : ndarray (B,), optional
        Public totals T (then n_b ~ Multinomial(T, θ_b)); None for private totals (Poisson–
        Jeffreys model, module docstring).
    initial : ndarray (B, d)
        Starting table (:func:`initial_counts`); :meth:`reset` returns to it.
    tol : float
        Window tolerance of every conditional draw (:func:`count_window`).
    noise : {"laplace", "gaussian"}
        The release's noise: Laplace(b), or N(0, σ²) with σ = ``scale``.

    Attributes
    ----------
    counts : ndarray (B, d)
        Current latent table (whole numbers, float64).
    """

    def __init__(
        self,
        noisy: np.ndarray,
        scale: float | np.ndarray,
        initial: np.ndarray,
        totals: np.ndarray | None = None,
        tol: float = DEFAULT_TOL,
        noise: str = "laplace",
    ) -> None:
        self.noise = noise
        self.noisy = np.asarray(noisy, dtype=np.float64)
        n_rows, n_released = self.noisy.shape
        self.initial = np.asarray(initial, dtype=np.float64)
        self.n_components = self.initial.shape[1]
        if n_released not in (1, self.n_components) or (n_released == 1 and totals is None):
            raise ValueError(
                f"a release of {n_released} of {self.n_components} components needs "
                "r = d, or r = 1 with a public total"
            )
        self.scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (n_rows,)).copy()
        if not (np.isfinite(self.scale).all() and (self.scale > 0).all()):
            raise ValueError(f"the noise scale must be finite and > 0, got {scale!r}")
        self.totals = None if totals is None else np.asarray(totals, dtype=np.float64)
        self.tol = tol
        self.counts = self.initial.copy()

    def reset(self) -> None:
        """Return to the initial table (a new chain)."""
        self.counts = self.initial.copy()

    def _released(self, k: int) -> np.ndarray:
        if k < self.noisy.shape[1]:
            return self.noisy[:, k]
        return np.full(self.noisy.shape[0], np.nan)

    def sweep(self, rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
        """One collapsed Gibbs sweep of the latent table given Dirichlet ``concentration``.

        ``concentration`` (B, d) is the prior a plus the latent tables of any other release
        sharing the prior. Public totals: pair moves (j, k) along a random cycle of the
        components (one pair when d = 2: then the draw is exact and independent of the current
        table), each n_j | n_j + n_k from :func:`pair_target`. Private totals: every cell in
        turn from :func:`cell_target`. Each move is an exact draw from a full conditional of
        p(n | ñ, a), so the sweep leaves it invariant. Returns the new table.
        """
        a = np.asarray(concentration, dtype=np.float64)
        counts = self.counts
        if self.totals is not None:
            d = self.n_components
            cycle = [0] if d == 2 else list(rng.permutation(d))
            pairs = [(0, 1)] if d == 2 else [(cycle[i], cycle[(i + 1) % d]) for i in range(d)]
            for j, k in pairs:
                target = pair_target(
                    counts[:, j] + counts[:, k],
                    a[:, j],
                    a[:, k],
                    self._released(j),
                    self._released(k),
                    self.scale,
                    self.noise,
                )
                x = draw_counts(target, rng, self.tol)
                counts[:, k] = target.upper - x
                counts[:, j] = x
        else:
            a_total = a.sum(axis=1)
            for k in range(self.n_components):
                target = cell_target(
                    counts.sum(axis=1) - counts[:, k],
                    a[:, k],
                    a_total,
                    self.noisy[:, k],
                    self.scale,
                    self.noise,
                )
                counts[:, k] = draw_counts(target, rng, self.tol)
        return counts


def concentration_matrix(
    prior: str, params: Sequence[np.ndarray], shape: tuple[int, int]
) -> np.ndarray:
    """Prior parameters as a (G, d) Dirichlet concentration: Beta (α, β) → columns (α, β)."""
    if prior == "beta":
        alpha, beta = (np.broadcast_to(np.asarray(p, dtype=np.float64), shape[:1]) for p in params)
        return np.column_stack([alpha, beta])
    if prior == "dirichlet":
        (a,) = params
        return np.broadcast_to(np.asarray(a, dtype=np.float64), shape).copy()
    raise ValueError(f"noise-aware inference supports priors {NOISE_AWARE_PRIORS}, got {prior!r}")


def _theta_draw(prior: str, rng: np.random.Generator, posterior: np.ndarray) -> np.ndarray:
    """θ from Beta(posterior[..., 0], posterior[..., 1]) (first component) or Dirichlet."""
    family = _THETA_DRAW[prior]
    if prior == "beta":
        return family.sample_posterior(rng, (posterior[..., 0], posterior[..., 1]))
    return family.sample_posterior(rng, (posterior,))


def noise_aware_draws(
    noisy: np.ndarray,
    scale: float,
    prior: str,
    prior_params: Sequence,
    n_draws: int,
    rng: np.random.Generator,
    *,
    public_totals: np.ndarray | None = None,
    warmup: int = 200,
    tol: float = DEFAULT_TOL,
    noise: str = "laplace",
) -> np.ndarray:
    """Noise-aware posterior draws of θ for one release, NumPy only (no PyMC).

    The same numerics as :class:`pymc_dp.steps.noise_aware_gibbs.NoiseAwareConjugateGibbs`
    with constant prior parameters: exact independent draws in the one-component public-total
    case (:class:`OneComponentPosterior`), collapsed Gibbs sweeps (:class:`LatentCounts`)
    otherwise, each followed by θ | n ~ Beta/Dirichlet(a + n).

    Parameters
    ----------
    noisy : ndarray, shape (..., G, r)
        The release as published (``ReleasedStatistics.noisy``); leading dimensions are
        independent data sets (vectorised simulation studies).
    scale : float
        Noise scale (``ReleasedStatistics.scale``): Laplace b, or Gaussian σ.
    prior : {"beta", "dirichlet"}
    prior_params : tuple
        (α, β) broadcastable to (G,) for "beta"; (a,) broadcastable to (G, K) for "dirichlet".
    n_draws : int
    rng : numpy.random.Generator
    public_totals : ndarray (..., G), optional
        ``ReleasedStatistics.public_totals`` (public totals: one group, replace-one, public
        trials). Required when r = 1.
    warmup : int
        Collapsed Gibbs sweeps discarded first (not used for exact draws).
    tol : float
    noise : {"laplace", "gaussian"}
        The release's noise (``ReleasedStatistics.noise``).

    Returns
    -------
    ndarray
        Shape (n_draws, ..., G) for "beta" (θ = success probability) or (n_draws, ..., G, K).
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    *batch, n_groups, n_released = noisy.shape
    n_components = 2 if prior == "beta" else n_released
    if prior == "dirichlet" and n_released == 1:
        n_components = 2
    conc = concentration_matrix(prior, prior_params, (n_groups, n_components))
    conc = np.broadcast_to(conc, (*batch, n_groups, n_components)).reshape(-1, n_components)
    flat_noisy = noisy.reshape(-1, n_released)
    totals = None
    if public_totals is not None:
        totals = np.broadcast_to(np.asarray(public_totals, dtype=np.float64), (*batch, n_groups))
        totals = totals.reshape(-1)
    if n_released == 1:
        if totals is None:
            raise ValueError("a one-component release needs its public total")
        exact = OneComponentPosterior(
            flat_noisy[:, 0], scale, totals, conc[:, 0], conc[:, 1], tol, noise
        )
        tables = exact.draw_table(rng, n_draws)  # (n_draws, B, 2)
        draws = _theta_draw(prior, rng, conc + tables)
    else:
        projected = np.clip(flat_noisy, 0.0, None)
        latent = LatentCounts(
            flat_noisy, scale, initial_counts(projected, totals), totals, tol, noise
        )
        for _ in range(int(warmup)):
            latent.sweep(rng, conc)
        draws = np.stack(
            [_theta_draw(prior, rng, conc + latent.sweep(rng, conc)) for _ in range(int(n_draws))]
        )
    shape = (n_draws, *batch, n_groups) + ((n_components,) if prior == "dirichlet" else ())
    return draws.reshape(shape)
