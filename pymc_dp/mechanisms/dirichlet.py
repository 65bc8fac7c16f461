"""Private release of a Dirichlet posterior, scored by Hellinger distance.

Source: the note (Dirichlet/Hellinger mechanisms, 2020) — "Differentially Private Bayesian
Inference", March 12, 2020 (``/work/shared/seeds/dirichlet_hellinger_mechanisms_note.md``):
§1 (Hellinger distance, GS, LS, S), §2 Algorithms 1–5, §3 Theorem 3.1, §4 Theorem 4.5 and
Corollaries 4.5.1–4.5.3.

Setting. Records x ∈ 𝒳ⁿ, |𝒳| = k ≥ 2 categories, prior Dir(α); the posterior is
DirP(x, α) = Dir(α + c(x)), c(x) ∈ ℕᵏ the histogram of x (Σ c = n). Every mechanism releases
the parameter vector α̃ of a Dirichlet (shape (k,), float64, in units of pseudo-counts).

Neighbouring relation (the note's): **replace-one on datasets of fixed, public size n** —
x and x' differ in one record, so c(x') = c(x) − e_i + e_j. Every guarantee below is
(ε, δ = 0)-DP under that relation only; n is treated as public (the mechanisms clamp to
[0, n] and enumerate the n-record candidate set). Add/remove-one neighbours are not supported.

Mechanisms (all take the histogram ``counts`` and the prior ``alpha``):

===========================  =========================  ==============================
function                     note                       guarantee
===========================  =========================  ==============================
:func:`release_lsdim`        Algorithm 1 (LSDim)        ε-DP (Laplace, scale k/ε)
:func:`release_lshist`       Algorithm 2 (LSHist)       ε-DP (Laplace, scale 1/ε or 2/ε)
:func:`release_ehd`          Algorithm 3 (EHD)          ε-DP (exponential mechanism, GS)
:func:`release_ehds`         Algorithm 5 (EHDS)         ε-DP for 0 < γ ≤ 1 (smooth sens.)
:func:`ehdl_non_private`     Algorithm 4 (EHDL)         **NOT differentially private**
===========================  =========================  ==============================

The exponential mechanisms sample from the finite candidate set R_α (:func:`candidate_set`),
whose size is C(n + k − 1, k − 1): enumerable for k = 2 (any practical n), k = 3 (n up to
about 1400) and small n for larger k; above :data:`MAX_CANDIDATES` they raise before anything
is charged. Their noise comes from NumPy's Generator (Gumbel-max), like the package's
posterior sampling: the event records that as an ``unverified_assumption``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_epsilon
from pymc_dp.mechanisms.laplace import NoiseBackend, check_rng, release_laplace

__all__ = [
    "DP_RELEASES",
    "GLOBAL_SENSITIVITY",
    "MAX_CANDIDATES",
    "MAX_CONCENTRATION",
    "candidate_counts",
    "candidate_set",
    "category_counts",
    "corollary_4_5_3_crossover",
    "ehd_probabilities",
    "ehdl_non_private",
    "ehdl_probabilities",
    "ehds_probabilities",
    "hellinger_dirichlet",
    "hellinger_global_sensitivity",
    "local_sensitivity",
    "log_multivariate_beta",
    "lshist_marginal_pmf",
    "lshist_scale_sensitivity",
    "n_candidates",
    "release_ehd",
    "release_ehds",
    "release_lsdim",
    "release_lshist",
    "smooth_sensitivity",
    "within_t_probability_ehd",
    "within_t_probability_lshist",
]

GLOBAL_SENSITIVITY = math.sqrt(1.0 - math.pi / 4.0)
"""GS = √(1 − π/4) ≈ 0.4633 (the note, §1): the largest Hellinger distance between the
posteriors of two neighbouring datasets under a uniform prior Dir(1, ..., 1), attained by
Beta(2, 1) vs Beta(1, 2) (n = 1, k = 2) and, for k ≥ 3, by any pair moving a record between
two categories with zero counts. Valid for every prior with all α_i ≥ 1; see
:func:`hellinger_global_sensitivity` for other priors."""

MAX_CANDIDATES = 1_000_000
"""Largest candidate set R_α the exponential mechanisms enumerate (C(n + k − 1, k − 1))."""

_SOURCE = "the note (Dirichlet/Hellinger mechanisms, 2020)"
_NEIGHBOURING = "replace-one"
_EXP_ASSUMPTION = (
    "NumPy Generator sampling of the exponential mechanism (Gumbel-max over the candidate "
    "posteriors): the guarantee assumes the generator's state stays secret (a known seed "
    "reproduces the draw) and ignores floating-point effects in the probabilities"
)


# --- Hellinger distance ----------------------------------------------------------------------
def log_multivariate_beta(a: np.ndarray) -> np.ndarray:
    """log B(a) = Σ_i log Γ(a_i) − log Γ(Σ_i a_i) over the last axis (the note, §1).

    Parameters
    ----------
    a : array_like, shape (..., k)
        Positive concentrations.

    Returns
    -------
    ndarray, shape (...)
    """
    a = np.asarray(a, dtype=np.float64)
    return gammaln(a).sum(axis=-1) - gammaln(a.sum(axis=-1))


def hellinger_dirichlet(a1: np.ndarray, a2: np.ndarray) -> np.ndarray | float:
    """Hellinger distance H(Dir(a1), Dir(a2)) in closed form, in log space (the note, §1).

        H² = 1 − B((a1 + a2)/2) / √(B(a1) B(a2)),

    computed as ``sqrt(-expm1(log B(m) − (log B(a1) + log B(a2))/2))``, m = (a1 + a2)/2
    (no overflow of B for large concentrations). H = √(1 − BC) with BC the Bhattacharyya
    coefficient, so H ∈ [0, 1] (unitless), symmetric, H(a, a) = 0, and H is a metric.

    Precision: H² carries an absolute error of a few ulps of the largest log Γ term it
    subtracts (≈ 1e-12 for concentrations in the thousands), so H of two very close
    posteriors with large concentrations has a relative error ≈ 1e-12 / H².

    Parameters
    ----------
    a1, a2 : array_like, shape (..., k), broadcastable
        Positive, finite concentrations.

    Returns
    -------
    float or ndarray, shape of the broadcast leading axes

    Raises
    ------
    ValueError
        If a concentration is not finite and > 0, or the last axes differ.
    """
    a1 = _concentrations(a1, "a1")
    a2 = _concentrations(a2, "a2")
    if a1.shape[-1] != a2.shape[-1]:
        raise ValueError(
            f"a1 and a2 must have the same number of categories, got "
            f"{a1.shape[-1]} and {a2.shape[-1]}"
        )
    return _hellinger(a1, a2)


def _hellinger(a1: np.ndarray, a2: np.ndarray) -> np.ndarray | float:
    log_ratio = log_multivariate_beta((a1 + a2) / 2.0) - 0.5 * (
        log_multivariate_beta(a1) + log_multivariate_beta(a2)
    )
    squared = np.clip(-np.expm1(np.minimum(log_ratio, 0.0)), 0.0, 1.0)
    out = np.sqrt(squared)
    return float(out) if np.ndim(out) == 0 else out


def _log_shift_factor(a: np.ndarray) -> np.ndarray:
    """log f(a), f(a) = Γ(a + ½) / (Γ(a) √a): the Bhattacharyya coefficient of Dir(β + e_i)
    and Dir(β + e_j) is f(β_i) f(β_j) (every other factor of B cancels). f increases from 0
    (a → 0) to 1 (a → ∞); f(1) = √π / 2."""
    return gammaln(a + 0.5) - gammaln(a) - 0.5 * np.log(a)


def hellinger_global_sensitivity(alpha: Sequence[float]) -> float:
    """sup of H(DirP(x), DirP(x')) over all n ≥ 1 and replace-one neighbours x, x'.

    Posteriors of neighbours are Dir(β + e_i) and Dir(β + e_j), β ≥ α componentwise, with
    Bhattacharyya coefficient f(β_i) f(β_j) (``_log_shift_factor``); f increases, so the
    sup is √(1 − f(α_(1)) f(α_(2))), α_(1) ≤ α_(2) the two smallest prior concentrations. By
    the triangle inequality and r = DirP(x') ∈ R_α this is also the sup of
    |H(DirP(x), r) − H(DirP(x'), r)| (the note's GS, §1). For α = (1, ..., 1) it is the
    note's √(1 − π/4) (:data:`GLOBAL_SENSITIVITY`); for every α ≥ 1 it is at most that; for
    a prior with concentrations < 1 it is larger (e.g. √(1 − 2/π) for α = (½, ½)).

    Parameters
    ----------
    alpha : array_like, shape (k,), k ≥ 2
        Prior concentrations, finite and > 0.

    Returns
    -------
    float in (0, 1)
    """
    alpha = np.sort(_concentrations(alpha, "alpha").ravel())
    if alpha.size < 2:
        raise ValueError(f"alpha must have at least 2 categories, got {alpha.size}")
    coefficient = math.exp(float(_log_shift_factor(alpha[0]) + _log_shift_factor(alpha[1])))
    return math.sqrt(max(0.0, 1.0 - coefficient))


def _ehd_sensitivity(alpha: np.ndarray) -> float:
    """The note's GS, raised to the prior's own bound when α has concentrations below 1."""
    return max(GLOBAL_SENSITIVITY, hellinger_global_sensitivity(alpha))


# --- candidate set R_α and sensitivities ---------------------------------------------------
def n_candidates(n: int, k: int) -> int:
    """|R_α| = C(n + k − 1, k − 1): the histograms of n records over k categories."""
    return math.comb(int(n) + int(k) - 1, int(k) - 1)


def candidate_counts(n: int, k: int, max_candidates: int = MAX_CANDIDATES) -> np.ndarray:
    """Every histogram c ∈ ℕᵏ with Σ c = n, in lexicographic order (the note's R_α − α).

    Returns
    -------
    ndarray of int64, shape (C(n + k − 1, k − 1), k)

    Raises
    ------
    ValueError
        If n < 0, k < 2, or the set has more than ``max_candidates`` elements (enumeration
        infeasible: e.g. k = 3 beyond n = 1412, k = 4 beyond n = 179, k = 10 beyond n = 14).
    """
    n, k = int(n), int(k)
    if n < 0 or k < 2:
        raise ValueError(f"need n >= 0 and k >= 2 categories, got n={n}, k={k}")
    size = n_candidates(n, k)
    if size > max_candidates:
        raise ValueError(
            f"the candidate set R_alpha has C(n + k - 1, k - 1) = {size} elements for "
            f"k={k} categories, more than max_candidates={max_candidates}: enumerating it is "
            "infeasible; the exponential mechanisms (EHD, EHDS, EHDL) need it"
        )
    if k == 2:
        first = np.arange(n + 1, dtype=np.int64)
        return np.column_stack([first, n - first])
    if k == 3:
        first = np.repeat(np.arange(n + 1, dtype=np.int64), np.arange(n + 1, 0, -1))
        starts = np.cumsum(np.arange(n + 1, 0, -1)) - np.arange(n + 1, 0, -1)
        second = np.arange(size, dtype=np.int64) - np.repeat(starts, np.arange(n + 1, 0, -1))
        return np.column_stack([first, second, n - first - second])
    bars = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n + k - 1), k - 1)),
        dtype=np.int64,
        count=size * (k - 1),
    ).reshape(size, k - 1)
    # stars and bars: the gaps between k - 1 bars among n + k - 1 slots are the counts
    edges = np.column_stack(
        [np.full(size, -1, dtype=np.int64), bars, np.full(size, n + k - 1, dtype=np.int64)]
    )
    return np.diff(edges, axis=1) - 1


def candidate_set(alpha: Sequence[float], n: int, max_candidates: int = MAX_CANDIDATES):
    """R_α = {α + c : c ∈ ℕᵏ, Σ c = n}, the posteriors reachable from n records (the note, §1).

    Returns
    -------
    ndarray of float64, shape (C(n + k − 1, k − 1), k)

    Raises
    ------
    ValueError
        For an invalid α, or an infeasible enumeration (:func:`candidate_counts`).
    """
    alpha = _concentrations(alpha, "alpha").ravel()
    return alpha + candidate_counts(n, alpha.size, max_candidates)


def _local_sensitivities(alpha: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """LS of every histogram in ``counts`` (shape (m, k)), closed form (see
    :func:`local_sensitivity`)."""
    post = alpha + counts  # (m, k)
    # record moved from i (needs c_i >= 1) to j != i: BC = f(post_i - 1) f(post_j)
    log_from = np.where(counts >= 1, _log_shift_factor(np.maximum(post - 1.0, alpha)), np.inf)
    log_to = _log_shift_factor(post)
    pair = log_from[:, :, None] + log_to[:, None, :]
    k = alpha.size
    pair[:, np.arange(k), np.arange(k)] = np.inf
    smallest = pair.reshape(len(post), -1).min(axis=1)
    return np.sqrt(np.clip(-np.expm1(np.minimum(smallest, 0.0)), 0.0, 1.0))


def local_sensitivity(counts: Sequence[int], alpha: Sequence[float]) -> float:
    """LS(x) of the note (§1), in closed form.

    LS(x) = max over replace-one neighbours x' and r ∈ R_α of |H(DirP(x), r) − H(DirP(x'), r)|
    = max_{x'} H(DirP(x), DirP(x')) (triangle inequality; attained at r = DirP(x')), and
    moving one record from category i (c_i ≥ 1) to j ≠ i gives
    LS(x) = max_{i, j} √(1 − f(α_i + c_i − 1) f(α_j + c_j)).

    Parameters
    ----------
    counts : array_like of int, shape (k,)
        Histogram c(x), n = Σ c ≥ 1.
    alpha : array_like, shape (k,)
        Prior concentrations.

    Returns
    -------
    float in (0, 1)
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    return float(_local_sensitivities(alpha, counts[None, :])[0])


def smooth_sensitivity(counts: Sequence[int], alpha: Sequence[float], gamma: float) -> float:
    """S(x) = max_{x' ∈ 𝒳ⁿ} 1 / (1/LS(x') + γ · Hamming(x, x')) (the note, §1).

    The mechanisms depend on x only through c(x); for histograms c, c' the smallest Hamming
    distance between datasets with those histograms is ||c − c'||₁ / 2, so the max is taken
    over R_α (enumerated; infeasible sets raise). 1/S is γ-Lipschitz in Hamming distance and
    S(x) ≥ LS(x), the two facts EHDS's privacy uses (:func:`release_ehds`).

    Raises
    ------
    ValueError
        If γ is not finite and > 0, or R_α is too large to enumerate.
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    gamma = validate_epsilon(gamma, "gamma")
    return _smooth_sensitivity(counts, alpha, gamma, candidate_counts(counts.sum(), alpha.size))


def _smooth_sensitivity(counts, alpha, gamma, others) -> float:
    ls = _local_sensitivities(alpha, others)
    distance = np.abs(others - counts).sum(axis=1) / 2.0
    # at distance 0 the term is LS itself (kept exact, so that S(x) >= LS(x) bit for bit)
    terms = np.where(distance == 0, ls, 1.0 / (1.0 / ls + gamma * distance))
    return float(np.max(terms))


# --- the exponential mechanisms' distributions ----------------------------------------------
MAX_CONCENTRATION = 1e6
"""Largest max(α) + n the exponential mechanisms accept. Their Hellinger distances are
differences of log-Gamma values; beyond about 10⁷ float64 loses the precision that the
sensitivity bound needs (an adversarial review found α = (10^3.25, 10^10.75), n = 2, where
EHDS's computed privacy loss reached 8ε, exact arithmetic giving 0.32ε), so a margin of 10
below that is refused before anything is charged."""


def _check_concentration(counts, alpha) -> None:
    """ValueError if max(α) + n exceeds :data:`MAX_CONCENTRATION` (public: α and n)."""
    if float(alpha.max()) + float(counts.sum()) > MAX_CONCENTRATION:
        raise ValueError(
            f"max(alpha) + n must be at most {MAX_CONCENTRATION:g} for the exponential "
            "mechanisms: beyond it float64 Hellinger distances are too imprecise for their "
            "sensitivity bound. Use mechanism 'dirichlet-lshist'. Nothing was released."
        )


def _smooth_exponent(epsilon, counts, alpha, gamma) -> float:
    """EHDS's exponent ε/(4·S(x)), S the γ-smooth sensitivity (ValueError if S is not > 0)."""
    _check_concentration(counts, alpha)
    s = _smooth_sensitivity(counts, alpha, gamma, candidate_counts(counts.sum(), alpha.size))
    if not s > 0:
        raise ValueError("the smooth sensitivity evaluated to 0; nothing was released")
    return epsilon / (4.0 * s)


def _exponential(counts, alpha, exponent_per_unit_distance):
    """(R_α, probabilities, log weights): weights exp(−exponent · H(DirP(x), r)), normalised
    by a softmax in log space (max-shifted).

    Raises ValueError (before any charge: every release calls this first) when
    max(α) + n exceeds :data:`MAX_CONCENTRATION` or the exponent is not finite and > 0."""
    _check_concentration(counts, alpha)
    if not (math.isfinite(exponent_per_unit_distance) and exponent_per_unit_distance > 0):
        raise ValueError(
            "the exponential mechanism's exponent is not a finite positive number (a "
            "sensitivity of 0 or inf); nothing was released"
        )
    cands = alpha + candidate_counts(counts.sum(), alpha.size)
    distances = np.atleast_1d(_hellinger(alpha + counts, cands))
    log_weights = -exponent_per_unit_distance * distances
    shifted = np.exp(log_weights - log_weights.max())
    return cands, shifted / shifted.sum(), log_weights


def ehd_probabilities(counts, alpha, epsilon):
    """EHD's output distribution (the note, Algorithm 3): Pr(r) ∝ exp(−ε H(DirP(x), r)/(2 GS)).

    GS is the note's √(1 − π/4), or :func:`hellinger_global_sensitivity` of α when that is
    larger (a prior with concentrations < 1, for which the note's constant is not a bound).

    Returns
    -------
    candidates : ndarray, shape (m, k)
        R_α (:func:`candidate_set`).
    probabilities : ndarray, shape (m,)
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    epsilon = validate_epsilon(epsilon)
    cands, p, _ = _exponential(counts, alpha, epsilon / (2.0 * _ehd_sensitivity(alpha)))
    return cands, p


def ehds_probabilities(counts, alpha, epsilon, gamma):
    """EHDS's output distribution (the note, Algorithm 5): Pr(r) ∝ exp(ε u(x, r)/(4 S(x))),
    u(x, r) = −H(DirP(x), r), S the γ-smooth sensitivity (:func:`smooth_sensitivity`).

    Returns ``(candidates, probabilities)`` as :func:`ehd_probabilities`.
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    epsilon = validate_epsilon(epsilon)
    gamma = _check_gamma(gamma)
    cands, p, _ = _exponential(counts, alpha, _smooth_exponent(epsilon, counts, alpha, gamma))
    return cands, p


def ehdl_probabilities(counts, alpha, epsilon):
    """EHDL's output distribution (the note, Algorithm 4): Pr(r) ∝ exp(−ε H/(2 LS(x))).

    **Not differentially private** (see :func:`ehdl_non_private`).
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    epsilon = validate_epsilon(epsilon)
    ls = float(_local_sensitivities(alpha, counts[None, :])[0])
    cands, p, _ = _exponential(counts, alpha, epsilon / (2.0 * ls))
    return cands, p


def _gumbel_max(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    return int(np.argmax(log_weights + rng.gumbel(size=log_weights.shape)))


# --- releases ---------------------------------------------------------------------------------
def release_ehd(
    counts: Sequence[int],
    alpha: Sequence[float],
    *,
    epsilon: float,
    ledger: PrivacyLedger,
    variables: Sequence[str] = ("x",),
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """EHD: the exponential mechanism over the candidate posteriors (the note, Algorithm 3).

    Releases r ∈ R_α with probability ∝ exp(−ε · H(DirP(x), r) / (2 · GS)).

    Guarantee: (ε, 0)-DP under replace-one neighbours on datasets of fixed public size n (the
    note, Theorem 3.1). Proof: u(x, r) = −H(DirP(x), r) has sensitivity GS over replace-one
    neighbours (:func:`hellinger_global_sensitivity`), so the standard exponential-mechanism
    argument (McSherry & Talwar 2007) bounds the privacy loss by ε/2 (numerator) + ε/2
    (normaliser). GS = √(1 − π/4) (the note, §1) for every prior with α_i ≥ 1; for a prior
    with concentrations below 1 the prior's larger sensitivity is used instead. The draw uses
    NumPy's Generator (Gumbel-max on the log weights), recorded as an
    ``unverified_assumption``.

    Order: validate → enumerate R_α (public: α and n) and score it → charge ``ledger`` → draw.

    Parameters
    ----------
    counts : array_like of int, shape (k,), k ≥ 2
        Histogram c(x) of the private records, n = Σ c ≥ 1 (n is public).
    alpha : array_like of float, shape (k,)
        Prior concentrations, finite and > 0 (public).
    epsilon : float
        ε > 0, nats.
    ledger : PrivacyLedger
        Charged (mechanism ``"dirichlet-ehd"``) before the draw.
    variables : sequence of str
        Names of the private variables (for the ledger and error messages).
    rng : numpy.random.Generator, optional
        Source of the Gumbel noise (fresh OS entropy when None).

    Returns
    -------
    ndarray of float64, shape (k,)
        The released Dirichlet parameters α̃ = α + c̃ ∈ R_α.

    Raises
    ------
    InvalidPrivateDataError
        If ``counts`` are not non-negative integers of the prior's length with n ≥ 1 (names
        the variables, never a value). Nothing is charged.
    ValueError
        For an invalid α or ε, or an infeasible R_α (> :data:`MAX_CANDIDATES`).
    BudgetExceededError
        If the release would exceed the ledger's budget. Nothing is drawn.

    Examples
    --------
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_ehd
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> counts, prior = [3, 5, 2], [1.0, 1.0, 1.0]  # private counts, public Dirichlet prior
    >>> alpha = release_ehd(counts, prior, epsilon=1.0, ledger=ledger)
    >>> alpha.shape, ledger.epsilon, ledger.events[0].mechanism
    ((3,), 1.0, 'dirichlet-ehd')
    """
    return _release_exponential(
        counts,
        alpha,
        epsilon,
        ledger,
        variables,
        rng,
        mechanism="dirichlet-ehd",
        statistic="EHD: one Dirichlet posterior from R_alpha by the exponential mechanism, "
        "utility -Hellinger, global sensitivity",
        algorithm="Algorithm 3, Theorem 3.1",
    )


def release_ehds(
    counts: Sequence[int],
    alpha: Sequence[float],
    *,
    epsilon: float,
    gamma: float = 1.0,
    ledger: PrivacyLedger,
    variables: Sequence[str] = ("x",),
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """EHDS: the exponential mechanism with γ-smooth sensitivity (the note, Algorithm 5).

    Releases r ∈ R_α with probability ∝ exp(ε · u(x, r) / (4 · S(x))), u = −H(DirP(x), r),
    S(x) = max_{x'} 1/(1/LS(x') + γ·Hamming(x, x')) (:func:`smooth_sensitivity`).

    Guarantee: (ε, 0)-DP under replace-one neighbours on datasets of fixed public size n, for
    0 < γ ≤ 1 (the note, Theorem 3.1, proof in its arXiv version). Self-contained argument:
    for neighbours x, y, |H(x, r)/S(x) − H(y, r)/S(y)| ≤ |H(x, r) − H(y, r)|/S(x) +
    H(y, r)·|1/S(x) − 1/S(y)| ≤ LS(x)/S(x) + γ ≤ 1 + γ (S ≥ LS; 1/S is γ-Lipschitz; H ≤ 1),
    so numerator and normaliser each move by at most ε(1 + γ)/4 and the privacy loss is at
    most ε(1 + γ)/2 ≤ ε. The event's ``sensitivity`` field records GS (the data-independent
    bound; S(x) itself is private and is not recorded).

    Parameters and errors as :func:`release_ehd`, plus ``gamma`` in (0, 1] (ValueError
    otherwise). The ledger event's mechanism is ``"dirichlet-ehds"``.

    Returns
    -------
    ndarray of float64, shape (k,)
        α̃ ∈ R_α.

    Examples
    --------
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_ehds
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> counts, prior = [3, 5, 2], [1.0, 1.0, 1.0]  # private counts, public Dirichlet prior
    >>> alpha = release_ehds(counts, prior, epsilon=1.0, ledger=ledger)
    >>> alpha.shape, ledger.epsilon, ledger.events[0].mechanism
    ((3,), 1.0, 'dirichlet-ehds')
    """
    gamma = _check_gamma(gamma)
    return _release_exponential(
        counts,
        alpha,
        epsilon,
        ledger,
        variables,
        rng,
        mechanism="dirichlet-ehds",
        statistic="EHDS: one Dirichlet posterior from R_alpha by the exponential mechanism, "
        f"utility -Hellinger, gamma-smooth sensitivity (gamma={gamma:g})",
        algorithm="Algorithm 5, Theorem 3.1",
        gamma=gamma,
    )


def _release_exponential(
    counts, alpha, epsilon, ledger, variables, rng, *, mechanism, statistic, algorithm, gamma=None
) -> np.ndarray:
    """EHD (``gamma`` None: exponent ε/(2·GS)) or EHDS (exponent ε/(4·S(x)), S the γ-smooth
    sensitivity): validate → enumerate and score R_α → charge → Gumbel-max draw. The event's
    sensitivity is GS in both cases (S(x) is private and never recorded)."""
    counts, alpha = _check_histogram(counts, alpha, variables)
    epsilon = validate_epsilon(epsilon)
    check_rng(rng)
    sensitivity = _ehd_sensitivity(alpha)
    if gamma is None:
        exponent = epsilon / (2.0 * sensitivity)
    else:
        exponent = _smooth_exponent(epsilon, counts, alpha, gamma)
    cands, _, log_weights = _exponential(counts, alpha, exponent)
    ledger.charge(_exp_event(mechanism, epsilon, sensitivity, variables, statistic, algorithm))
    generator = rng if rng is not None else np.random.default_rng()
    return cands[_gumbel_max(log_weights, generator)].copy()


def ehdl_non_private(
    counts: Sequence[int],
    alpha: Sequence[float],
    *,
    epsilon: float,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """EHDL — NON-PRIVATE BASELINE (the note, Algorithm 4). **Not differentially private.**

    .. warning::
       The exponent ε/(2·LS(x)) uses the *local* sensitivity, which depends on the data:
       the privacy loss between neighbours is unbounded in ε (it grows as LS(x) → 0 with n).
       This function exists only as the note's accuracy baseline. It records nothing in any
       ledger, takes none, and must never be reachable from :func:`pymc_dp.sample`.

    Releases r ∈ R_α with probability ∝ exp(−ε · H(DirP(x), r) / (2 · LS(x))).

    Returns
    -------
    ndarray of float64, shape (k,)
    """
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    epsilon = validate_epsilon(epsilon)
    ls = float(_local_sensitivities(alpha, counts[None, :])[0])
    cands, _, log_weights = _exponential(counts, alpha, epsilon / (2.0 * ls))
    generator = rng if rng is not None else np.random.default_rng()
    return cands[_gumbel_max(log_weights, generator)].copy()


def lshist_scale_sensitivity(k: int) -> int:
    """The note's k of Algorithm 2: 1 if |𝒳| = 2, else 2 — the L1 sensitivity of the first
    |𝒳| − 1 counts under replace-one (a moved record changes two counts, or one when the
    other is the last, unreleased count)."""
    if int(k) < 2:
        raise ValueError(f"need at least 2 categories, got {k}")
    return 1 if int(k) == 2 else 2


def release_lshist(
    counts: Sequence[int],
    alpha: Sequence[float],
    *,
    epsilon: float,
    ledger: PrivacyLedger,
    variables: Sequence[str] = ("x",),
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """LSHist: Laplace noise calibrated to the histogram's sensitivity (the note, Algorithm 2).

    η_i ~ Lap(0, s/ε), s = 1 if k = 2 else 2 (:func:`lshist_scale_sensitivity`), for
    i = 1..k−1; α̃_i = α_i + ⌊c_i + η_i⌋ clamped to [0, n]; α̃_k = α_k + (n − Σ_{i<k} of
    those) clamped to [0, n]. (As in the note, for k ≥ 3 Σ α̃ − Σ α need not equal n.)

    Guarantee: (ε, 0)-DP under replace-one neighbours on datasets of fixed public size n (the
    note, Theorem 3.1): (c_1, ..., c_{k−1}) has L1 sensitivity s, the Laplace mechanism with
    scale s/ε is ε-DP, and the floor, clamp and last count are post-processing (n public).
    The noise is drawn by :func:`pymc_dp.mechanisms.laplace.release_laplace` (OpenDP by
    default), which records the ledger event (mechanism ``"laplace"``, sensitivity s).

    Parameters
    ----------
    counts, alpha, epsilon, ledger, variables
        As :func:`release_ehd`.
    backend : {"opendp", "numpy"}
        Noise source (``"numpy"`` for tests and simulations: not a guarantee).
    rng : numpy.random.Generator, optional
        Only with ``backend="numpy"``.

    Returns
    -------
    ndarray of float64, shape (k,)
        α̃ (integer-valued offsets from α).

    Raises
    ------
    InvalidPrivateDataError, ValueError, BudgetExceededError
        As :func:`release_ehd` (and an ``rng`` with OpenDP); nothing is charged on bad input.

    Examples
    --------
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_lshist
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> counts, prior = [3, 5, 2], [1.0, 1.0, 1.0]  # private counts, public Dirichlet prior
    >>> alpha = release_lshist(counts, prior, epsilon=1.0, ledger=ledger)
    >>> alpha.shape, ledger.epsilon, ledger.events[0].mechanism
    ((3,), 1.0, 'laplace')
    """
    counts, alpha = _check_histogram(counts, alpha, variables)
    s = lshist_scale_sensitivity(alpha.size)
    return _release_laplace_histogram(
        counts, alpha, s, epsilon, ledger, variables, backend, rng, "LSHist", "Algorithm 2"
    )


def release_lsdim(
    counts: Sequence[int],
    alpha: Sequence[float],
    *,
    epsilon: float,
    ledger: PrivacyLedger,
    variables: Sequence[str] = ("x",),
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """LSDim: Laplace noise calibrated to the dimension (the note, Algorithm 1).

    As :func:`release_lshist` with scale |𝒳|/ε instead of s/ε (s ∈ {1, 2}).

    Guarantee: (ε, 0)-DP under replace-one neighbours on datasets of fixed public size n (the
    note, Theorem 3.1); since |𝒳| ≥ s the release is in fact (s·ε/|𝒳|)-DP, so LSDim spends
    the full ε for more noise than LSHist whenever |𝒳| > s. The event records the
    calibration sensitivity |𝒳| (an upper bound on the true s). Parameters, returns and
    errors as :func:`release_lshist`.

    Examples
    --------
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_lsdim
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> counts, prior = [3, 5, 2], [1.0, 1.0, 1.0]  # private counts, public Dirichlet prior
    >>> alpha = release_lsdim(counts, prior, epsilon=1.0, ledger=ledger)
    >>> alpha.shape, ledger.epsilon, ledger.events[0].mechanism
    ((3,), 1.0, 'laplace')
    """
    counts, alpha = _check_histogram(counts, alpha, variables)
    return _release_laplace_histogram(
        counts,
        alpha,
        alpha.size,
        epsilon,
        ledger,
        variables,
        backend,
        rng,
        "LSDim",
        "Algorithm 1",
    )


def _release_laplace_histogram(
    counts, alpha, sensitivity, epsilon, ledger, variables, backend, rng, name, algorithm
):
    n = int(counts.sum())
    noisy = release_laplace(
        counts[:-1].astype(np.float64),
        sensitivity=float(sensitivity),
        epsilon=epsilon,
        ledger=ledger,
        neighbouring=_NEIGHBOURING,
        variables=tuple(variables),
        statistic=(
            f"{name}: first k-1 category counts of {', '.join(variables)} (k={alpha.size}, "
            f"n={n}), floored and clamped to [0, n]; the last count is n minus their sum"
        ),
        source=f"{_SOURCE}, {algorithm}, Theorem 3.1",
        backend=backend,
        rng=rng,
    )
    head = np.clip(np.floor(noisy), 0, n)
    last = np.clip(n - head.sum(), 0, n)
    return alpha + np.append(head, last)


def lshist_marginal_pmf(count: int, n: int, scale: float) -> np.ndarray:
    """Exact pmf of ⌊count + Lap(0, scale)⌋ clamped to [0, n] (one coordinate of LSHist or
    LSDim, the note, Algorithms 1–2), over the values 0..n.

    P(m) = F(m + 1 − count) − F(m − count) for 0 < m < n, with the tails lumped at 0 and n,
    F the Laplace(0, scale) CDF.

    Returns
    -------
    ndarray, shape (n + 1,), summing to 1
    """
    edges = np.arange(1, n + 1, dtype=np.float64) - count  # boundaries m - count, m = 1..n
    tail = 0.5 * np.exp(-np.abs(edges) / scale)
    cdf = np.where(edges < 0, tail, 1.0 - tail)
    cdf = np.concatenate([[0.0], cdf, [1.0]])
    return np.diff(cdf)


# --- the note's accuracy comparison (§4) -----------------------------------------------------
def _within(distance: np.ndarray, t: float, posterior: np.ndarray, strict: bool) -> np.ndarray:
    """distance < t, or distance <= t up to the rounding of the log-Beta closed form: its H²
    carries an absolute error of a few ulps of the largest log Γ it subtracts (≈ 1e-12 at
    n = 3000), so a candidate at exactly t (the neighbour that attains LS(x)) stays inside."""
    if strict:
        return distance < t
    scale = float(np.abs(gammaln(posterior)).sum() + abs(gammaln(posterior.sum())) + 1.0)
    return distance**2 <= t**2 + 64 * np.finfo(np.float64).eps * scale


def within_t_probability_ehd(counts, alpha, epsilon, t, *, strict: bool = True) -> float:
    """Pr[H(DirP(x), EHD(x)) < t] exactly, by enumerating R_α (the note, Theorem 4.5);
    ``strict=False`` gives Pr[... ≤ t] (Corollary 4.5.3's good set R_g), up to rounding."""
    cands, p = ehd_probabilities(counts, alpha, epsilon)
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    distance = np.atleast_1d(_hellinger(alpha + counts, cands))
    inside = _within(distance, t, alpha + counts, strict)
    return float(p[inside].sum())


def within_t_probability_lshist(counts, alpha, epsilon, t, *, strict: bool = True) -> float:
    """Pr[H(DirP(x), LSHist(x)) < t] exactly for k = 2 (Beta posteriors; the note, Theorem
    4.5), from :func:`lshist_marginal_pmf` with scale 1/ε; ``strict=False`` for ≤ t."""
    counts, alpha = _check_histogram(counts, alpha, ("x",))
    if alpha.size != 2:
        raise ValueError("the exact LSHist accuracy is implemented for k = 2 (Beta) only")
    epsilon = validate_epsilon(epsilon)
    n = int(counts.sum())
    pmf = lshist_marginal_pmf(int(counts[0]), n, 1.0 / epsilon)
    released = alpha + np.column_stack([np.arange(n + 1), n - np.arange(n + 1)])
    distance = np.atleast_1d(_hellinger(alpha + counts, released))
    inside = _within(distance, t, alpha + counts, strict)
    return float(pmf[inside].sum())


def corollary_4_5_3_crossover(epsilon: float) -> tuple[float, float]:
    """The sample sizes of the note's Corollary 4.5.3 (good set R_g: H ≤ LS(x), k = 2).

    Returns ``(n_ehd_better, n_lshist_better)``:

    * n_lshist_better = 3 e^{ε/c} / (1 − e^{−ε}), c = 2√(1 − π/4): for n + 1 above it,
      Pr[LSHist ∈ R_g] ≥ 1 − ½(e^{−ε} + e^{−2ε}) > 1 − e^{−ε} ≥ 3 e^{ε/c}/(n + 1) ≥
      Pr[EHD ∈ R_g] (the note's bound, with n + 1 = |R_α| for its n; every EHD weight lies in
      [e^{−ε/c}, 1] and |R_g| ≤ 3).
    * n_ehd_better = (1 + 2 e^{−ε/c}) / (1 − ½(e^{−ε} + e^{−2ε})): for n + 1 below it EHD is
      better (Corollary 4.5.2 with radius 1, in the same corrected form: Pr[EHD ∈ R_g] ≥
      (1 + 2 e^{−ε/c})/(n + 1) for an interior x, and Pr[LSHist ∈ R_g] ≤
      1 − ½(e^{−ε} + e^{−2ε}) when R_g = {c − 1, c, c + 1}).

    The note writes e^{−ε} where e^{−ε/c} is needed: c < 1, so e^{−ε/c} < e^{−ε} and its
    last inequalities in Theorem 4.5 go the wrong way; the corrected constants are used here.
    """
    epsilon = validate_epsilon(epsilon)
    c = 2.0 * GLOBAL_SENSITIVITY
    lshist = 1.0 - 0.5 * (math.exp(-epsilon) + math.exp(-2.0 * epsilon))
    return (
        (1.0 + 2.0 * math.exp(-epsilon / c)) / lshist,
        3.0 * math.exp(epsilon / c) / (1.0 - math.exp(-epsilon)),
    )


# --- validation and events -------------------------------------------------------------------
def _concentrations(a, name: str) -> np.ndarray:
    try:
        array = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of finite numbers > 0") from None
    if array.ndim == 0 or not np.all(np.isfinite(array)) or not np.all(array > 0):
        raise ValueError(f"{name} must be an array of finite concentrations > 0")
    return array


def _check_gamma(gamma: float) -> float:
    gamma = validate_epsilon(gamma, "gamma")
    if gamma > 1.0:
        raise ValueError(f"gamma must lie in (0, 1] for EHDS to be epsilon-DP, got {gamma!r}")
    return gamma


_MAX_RECORDS = 2**53


def _check_histogram(counts, alpha, variables) -> tuple[np.ndarray, np.ndarray]:
    """Validate the public prior, then the private histogram (errors never show counts)."""
    alpha = _concentrations(alpha, "alpha")
    if alpha.ndim != 1 or alpha.size < 2:
        raise ValueError("alpha must be a 1-d array of at least 2 concentrations")
    names = ", ".join(variables)
    try:
        raw = np.asarray(counts)
        if raw.dtype.kind not in "biuf":  # strings and objects are not counts ("7" included)
            raise TypeError
        array = raw.astype(np.float64)
    except (TypeError, ValueError):
        raise InvalidPrivateDataError(
            f"counts of {names} are not numeric; nothing was released"
        ) from None
    if array.shape != alpha.shape:
        raise InvalidPrivateDataError(
            f"counts of {names} must be a histogram over the prior's {alpha.size} categories; "
            "nothing was released"
        )
    if not np.all(np.isfinite(array)) or np.any(array < 0) or np.any(array != np.floor(array)):
        raise InvalidPrivateDataError(
            f"counts of {names} must be finite non-negative integers; nothing was released"
        )
    if array.sum() < 1:
        raise InvalidPrivateDataError(
            f"counts of {names} must hold at least one record; nothing was released"
        )
    if array.sum() > _MAX_RECORDS:  # beyond it, float64 and int64 arithmetic is not exact
        raise InvalidPrivateDataError(
            f"counts of {names} hold more than 2**53 records; nothing was released"
        )
    return array.astype(np.int64), alpha


def _exp_event(mechanism, epsilon, sensitivity, variables, statistic, algorithm):
    return PrivacyEvent(
        mechanism=mechanism,
        epsilon=float(epsilon),
        delta=0.0,
        sensitivity=float(sensitivity),
        neighbouring=_NEIGHBOURING,
        variables=tuple(variables),
        noise_backend="numpy",
        statistic=statistic,
        source=f"{_SOURCE}, {algorithm}",
        unverified_assumption=_EXP_ASSUMPTION,
    )


def category_counts(
    records: Sequence[int] | np.ndarray, k: int, variables: Sequence[str] = ("x",)
) -> np.ndarray:
    """The histogram c(x) of categorical records coded 0..k−1 (the input of every mechanism).

    Parameters
    ----------
    records : array_like of int, shape (n,)
        The private records, each a category index in {0, ..., k − 1}.
    k : int
        Number of categories |𝒳| >= 2 (public).
    variables : sequence of str
        Names of the private variables, for error messages.

    Returns
    -------
    ndarray of int64, shape (k,)

    Raises
    ------
    InvalidPrivateDataError
        If a record is not an integer in {0, ..., k − 1} (names the variables, never a
        record or how many are out of range).
    ValueError
        If k is not an integer >= 2.
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise ValueError(f"k must be an integer >= 2, got {k!r}")
    names = ", ".join(variables)
    try:
        array = np.asarray(records, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InvalidPrivateDataError(f"records of {names} are not numeric") from None
    if not np.all(np.isfinite(array)) or np.any(array != np.floor(array)):
        raise InvalidPrivateDataError(f"records of {names} must be integer category codes")
    if np.any((array < 0) | (array > k - 1)):
        raise InvalidPrivateDataError(f"records of {names} must lie in 0..{k - 1}")
    return np.bincount(array.astype(np.int64), minlength=int(k)).astype(np.int64)


DP_RELEASES = {
    "dirichlet-lsdim": release_lsdim,
    "dirichlet-lshist": release_lshist,
    "dirichlet-ehd": release_ehd,
    "dirichlet-ehds": release_ehds,
}
"""The differentially private releases by the mechanism name of ``pymc_dp.sample(mechanism=...)``
(the ledger's name for EHD and EHDS; LSDim and LSHist are recorded as the Laplace mechanism they
are, the statistic naming the algorithm). EHDL is deliberately absent
(:func:`ehdl_non_private`)."""
