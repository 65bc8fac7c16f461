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
a quadratic; usually the sign of that quadratic alone proves the maximum is at the window's
edge, and no log-Gamma is evaluated). Truncating to the window changes each conditional by at
most ``tol`` in total variation.

Compiled. The windows, draws and whole sweeps run in the numba kernels of
``pymc_dp.families._count_kernels`` (one call per sweep, uniforms from the caller's
generator); the first noise-aware run on a machine compiles them and says so
(``announce_kernels``).

Large counts. The window is O(b · (log(1/tol) + log-factors of the prior)) wide wherever the
counts are: the Gamma-function part varies slowly (like (a − 1)·log x) while the Laplace factor
decays at rate 1/b, and the grid is summed from increments (one logarithm per point, exact at
any size). A draw therefore costs the same at T = 10³ and T = 10⁷, and no normal approximation
of large counts (a two-piece truncated normal in the uncollapsed sampler, whose exact windows
cost O(√μ + b)) is needed or used.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from pymc_dp.compiling import announce, numba_needs_compiling
from pymc_dp.families import _count_kernels as _kernels
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

    def log_gamma_part(self, x: np.ndarray) -> np.ndarray:
        """log f_Γ(x) in closed form (log-Gamma) at points x (B, n)."""
        terms = gammaln(x[:, :, None] * self.sigma + self.shift[:, None, :])
        return terms[..., 0] - terms[..., 1] + terms[..., 2] - terms[..., 3]


_PAIR_SIGMA = np.array([1.0, 1.0, -1.0, -1.0])
_CELL_SIGMA = np.array([1.0, 1.0, 1.0, 1.0])


def _is_gaussian(noise: str) -> bool:
    if noise not in ("laplace", "gaussian"):
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    return noise == "gaussian"


def _column(value, rows: int | None = None) -> np.ndarray:
    value = np.atleast_1d(np.asarray(value, dtype=np.float64))
    return np.ascontiguousarray(value if rows is None else np.broadcast_to(value, (rows,)))


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
    m = _column(total)
    rows = m.shape[0]
    scale = _column(scale, rows)
    shift, num, den, kink, weight, quadratic = _kernels.target_rows(
        False, m, _column(a_j, rows), _column(a_k, rows), _column(noisy_j, rows),
        _column(noisy_k, rows), scale, _is_gaussian(noise),
    )  # fmt: skip
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
    r = _column(rest)
    rows = r.shape[0]
    scale = _column(scale, rows)
    noisy = _column(noisy, rows)
    shift, num, den, kink, weight, quadratic = _kernels.target_rows(
        True, r, _column(a, rows), _column(a_total, rows), noisy, noisy, scale,
        _is_gaussian(noise),
    )  # fmt: skip
    return CountConditional(
        np.full(rows, np.inf), shift, _CELL_SIGMA, num, den, kink, weight, scale, quadratic
    )


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
    P has leading coefficient e^slope − 1 < 0). The window's tail bounds use the same
    computation (``pymc_dp.families._count_kernels.sup_rise``).
    """
    squeeze = np.ndim(start) == 1
    start, end, slope, reference = (
        np.ascontiguousarray(np.atleast_2d(np.asarray(v, dtype=np.float64).T).T)
        for v in (start, end, slope, reference)
    )
    rise = _kernels.sup_rises(
        target.shift, target.sigma, target.num, target.den, start, end, slope, reference
    )
    return rise[:, 0] if squeeze else rise


def count_window(
    target: CountConditional, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """Integers lo (B,) and log-weights (B, L) of the window x = lo + 0..L−1 of each target.

    Padding beyond a target's window is −inf. The window starts at the noise kinks ± w0
    (w0 = ⌈b·(log(2/tol) + 1)⌉ + 2 for Laplace noise, ⌈σ·√(2·log(2/tol))⌉ + 2 for Gaussian:
    where the noise factor alone has fallen by tol/2), clipped to the support, and each side at
    which a rigorous bound on the omitted mass exceeds tol/2 of the enumerated mass doubles
    (O(log) rounds when the Gamma terms pull the mass away from the kinks). The bound uses the
    concavity of the noise part and the exact maximum of the Gamma part against half its decay
    (:func:`sup_log_gamma_part`); see ``pymc_dp.families._count_kernels``. On return the
    omitted mass is at most ``tol`` times the total: the truncated distribution is within
    ``tol`` of the exact one in total variation.

    Raises
    ------
    RuntimeError
        If the window did not settle (it always does: the noise terms decay geometrically).
    """
    return _kernels.window_rows(*_target_arrays(target), tol)


def draw_counts(
    target: CountConditional, rng: np.random.Generator, tol: float = DEFAULT_TOL
) -> np.ndarray:
    """One exact draw (up to ``tol`` in total variation) of each of the B targets (inverse CDF
    on the window of :func:`count_window`)."""
    uniforms = rng.random(target.upper.shape[0])
    return _kernels.draw_rows(*_target_arrays(target), tol, uniforms)


def _target_arrays(target: CountConditional) -> tuple:
    return (
        np.ascontiguousarray(target.upper, dtype=np.float64),
        target.shift,
        target.sigma,
        target.num,
        target.den,
        target.kink,
        target.weight,
        target.quadratic,
        np.ascontiguousarray(target.scale, dtype=np.float64),
    )


def announce_kernels() -> None:
    """Before sampling: if the latent counts' numba kernels are neither compiled in this
    process nor in numba's on-disk cache, say so (:mod:`pymc_dp.compiling`) and compile them
    all now, so the next runs load them and say nothing."""
    if numba_needs_compiling(*_kernels.KERNELS):
        announce("the latent counts' numba kernels", True)
        _kernels.compile_all()


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
        self.noisy = np.ascontiguousarray(noisy, dtype=np.float64)
        n_rows, n_released = self.noisy.shape
        self.initial = np.array(initial, dtype=np.float64)
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
        self._gaussian = _is_gaussian(noise)
        d = self.n_components
        if totals is None:
            self._n_uniforms = n_rows * d
        else:
            self._n_uniforms = n_rows if d == 2 else (d - 1) + n_rows * d
        self.counts = self.initial.copy()

    def reset(self) -> None:
        """Return to the initial table (a new chain)."""
        np.copyto(self.counts, self.initial)

    def sweep(self, rng: np.random.Generator, concentration: np.ndarray) -> np.ndarray:
        """One collapsed Gibbs sweep of the latent table given Dirichlet ``concentration``.

        ``concentration`` (B, d) is the prior a plus the latent tables of any other release
        sharing the prior. Public totals: pair moves (j, k) along a random cycle of the
        components (one pair when d = 2: then the draw is exact and independent of the current
        table), each n_j | n_j + n_k from :func:`pair_target`. Private totals: every cell in
        turn from :func:`cell_target`. Each move is an exact draw (up to ``tol``) from a full
        conditional of p(n | ñ, a), so the sweep leaves it invariant. The whole sweep is one
        call of a compiled kernel (``pymc_dp.families._count_kernels.pair_sweep``,
        ``cell_sweep``) with its uniforms drawn from
        ``rng``. Updates ``counts`` in place and returns it.
        """
        a = np.ascontiguousarray(concentration, dtype=np.float64)
        if self.totals is not None:
            uniforms = rng.random(self._n_uniforms)
            return _kernels.pair_sweep(
                self.counts, a, self.noisy, self.scale, self._gaussian, self.tol, uniforms
            )
        uniforms = rng.random(self._n_uniforms)
        return _kernels.cell_sweep(
            self.counts, a, self.noisy, self.scale, self._gaussian, self.tol, uniforms
        )


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
