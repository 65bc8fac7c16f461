"""Tests of the Dirichlet/Hellinger mechanisms (``pymc_dp.mechanisms.dirichlet``) against the
note (Dirichlet/Hellinger mechanisms, 2020): §1 (Hellinger, GS, LS, S), Algorithms 1–5,
Theorem 3.1 (privacy, audited exactly and by simulation, with broken controls) and §4
(Theorem 4.5, Corollaries 4.5.2–4.5.3: the LSHist/EHD crossover)."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import gammaln

from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.mechanisms import dirichlet as dm

GS = math.sqrt(1.0 - math.pi / 4.0)
ALPHA = 1e-3  # audit confidence: a sound mechanism's bound exceeds ε with probability ≤ 1e-3


def _neighbours(counts):
    """Replace-one neighbours of a histogram: one record moved from category i to j."""
    counts = list(counts)
    for i, j in itertools.permutations(range(len(counts)), 2):
        if counts[i] >= 1:
            other = counts.copy()
            other[i] -= 1
            other[j] += 1
            yield other


def _pairs(n, k):
    for c in dm.candidate_counts(n, k):
        for other in _neighbours(c):
            yield list(c), other


def _log_beta(a):
    return gammaln(a).sum(-1) - gammaln(np.sum(a, -1))


# --- Hellinger distance (the note, §1) -------------------------------------------------------
@pytest.mark.parametrize(
    ("a1", "a2"), [((2, 1), (1, 2)), ((3.5, 7.0), (4.0, 6.5)), ((1.2, 0.8), (30.0, 2.0))]
)
def test_hellinger_closed_form_matches_quadrature_for_beta(a1, a2):
    p, q = stats.beta(*a1), stats.beta(*a2)
    bc, _ = integrate.quad(lambda t: math.sqrt(p.pdf(t) * q.pdf(t)), 0, 1, limit=200)
    expected = math.sqrt(max(0.0, 1.0 - bc))
    assert dm.hellinger_dirichlet(a1, a2) == pytest.approx(expected, abs=1e-7)


def test_hellinger_closed_form_matches_monte_carlo_for_k3():
    rng = np.random.default_rng(11)
    a1, a2 = np.array([2.0, 3.0, 1.5]), np.array([1.0, 4.0, 2.5])
    theta = rng.dirichlet(a1, size=200_000)
    # BC = E_{θ ~ Dir(a1)} sqrt(q(θ)/p(θ))
    log_p = ((a1 - 1) * np.log(theta)).sum(1) - _log_beta(a1)
    log_q = ((a2 - 1) * np.log(theta)).sum(1) - _log_beta(a2)
    ratio = np.exp(0.5 * (log_q - log_p))
    bc, se = ratio.mean(), ratio.std() / math.sqrt(len(ratio))
    closed = dm.hellinger_dirichlet(a1, a2)
    assert 1.0 - closed**2 == pytest.approx(bc, abs=5 * se)


def test_hellinger_is_a_bounded_symmetric_metric():
    rng = np.random.default_rng(3)
    a, b, c = (rng.gamma(1.0, 5.0, size=(500, 3)) + 0.05 for _ in range(3))
    h_ab, h_ba = dm.hellinger_dirichlet(a, b), dm.hellinger_dirichlet(b, a)
    assert np.array_equal(h_ab, h_ba)
    assert np.all(dm.hellinger_dirichlet(a, a) == 0.0)
    assert np.all((h_ab >= 0) & (h_ab <= 1))
    assert np.all(h_ab <= dm.hellinger_dirichlet(a, c) + dm.hellinger_dirichlet(c, b) + 1e-12)
    # far-apart parameters approach 1 without leaving [0, 1]
    assert 0.99 < dm.hellinger_dirichlet([1e4, 1.0], [1.0, 1e4]) <= 1.0


@pytest.mark.parametrize("bad", [[0.0, 1.0], [np.nan, 1.0], [-1.0, 2.0], [np.inf, 1.0]])
def test_hellinger_rejects_invalid_concentrations(bad):
    with pytest.raises(ValueError, match="a1"):
        dm.hellinger_dirichlet(bad, [1.0, 1.0])


# --- global and local sensitivity -------------------------------------------------------------
def _brute_sensitivity(n, k, alpha):
    """max over replace-one pairs and r ∈ R_α of |H(DirP(x), r) − H(DirP(x'), r)|."""
    alpha = np.asarray(alpha, float)
    cands = dm.candidate_set(alpha, n)
    best = 0.0
    for c, other in _pairs(n, k):
        diff = np.abs(
            dm.hellinger_dirichlet(alpha + c, cands) - dm.hellinger_dirichlet(alpha + other, cands)
        )
        best = max(best, float(diff.max()))
    return best


def test_global_sensitivity_is_the_brute_force_sup_for_the_uniform_prior():
    # The note, §1: GS = √(1 − π/4). For k = 2 the sup is attained at n = 1 (Beta(2,1) vs
    # Beta(1,2)) and decreases with n; for k ≥ 3 it is attained at every n (a record moved
    # between two empty categories).
    assert dm.GLOBAL_SENSITIVITY == pytest.approx(GS, rel=1e-15)
    assert dm.hellinger_dirichlet([2, 1], [1, 2]) == pytest.approx(GS, rel=1e-12)
    beta = [_brute_sensitivity(n, 2, [1, 1]) for n in range(1, 6)]
    assert beta[0] == pytest.approx(GS, rel=1e-12)
    assert all(later < earlier for earlier, later in itertools.pairwise(beta))
    for n in range(1, 4):
        assert _brute_sensitivity(n, 3, [1, 1, 1]) == pytest.approx(GS, rel=1e-12)


@pytest.mark.parametrize("alpha", [[0.5, 0.5], [0.3, 2.0, 1.0], [1.0, 3.0], [2.0, 2.0, 5.0]])
def test_prior_dependent_global_sensitivity_bounds_the_brute_force(alpha):
    bound = dm.hellinger_global_sensitivity(alpha)
    worst = max(_brute_sensitivity(n, len(alpha), alpha) for n in range(1, 4))
    assert worst <= bound * (1 + 1e-12)
    # attained when the two smallest concentrations are both empty categories at n = 1 ...
    assert _brute_sensitivity(1, len(alpha), alpha) == pytest.approx(bound, rel=1e-12)
    # ... and the note's constant is a valid bound exactly when every α_i >= 1
    assert (bound <= GS * (1 + 1e-12)) == (min(alpha) >= 1.0)


def test_shift_factor_increases_so_the_sup_is_at_the_smallest_concentrations():
    grid = np.geomspace(1e-3, 1e4, 2000)
    log_f = dm._log_shift_factor(grid)
    assert np.all(np.diff(log_f) > 0) and log_f[-1] < 0
    assert math.exp(2 * dm._log_shift_factor(1.0)) == pytest.approx(math.pi / 4, rel=1e-13)


@pytest.mark.parametrize(("n", "k", "alpha"), [(4, 2, 1.0), (3, 3, 1.0), (3, 3, 0.4), (5, 2, 3)])
def test_local_sensitivity_closed_form_matches_brute_force(n, k, alpha):
    prior = np.full(k, float(alpha))
    cands = dm.candidate_set(prior, n)
    for c in dm.candidate_counts(n, k):
        brute = max(
            float(
                np.abs(
                    dm.hellinger_dirichlet(prior + c, cands)
                    - dm.hellinger_dirichlet(prior + np.array(o), cands)
                ).max()
            )
            for o in _neighbours(c)
        )
        assert dm.local_sensitivity(c, prior) == pytest.approx(brute, rel=1e-12)


def test_smooth_sensitivity_dominates_ls_and_its_inverse_is_gamma_lipschitz():
    prior, n, gamma = np.ones(3), 6, 0.5
    s = {tuple(c): dm.smooth_sensitivity(c, prior, gamma) for c in dm.candidate_counts(n, 3)}
    for c, value in s.items():
        assert dm.local_sensitivity(c, prior) <= value <= GS * (1 + 1e-12)
    for c, other in _pairs(n, 3):
        assert abs(1 / s[tuple(c)] - 1 / s[tuple(other)]) <= gamma * (1 + 1e-12)


# --- candidate set R_α ------------------------------------------------------------------------
@pytest.mark.parametrize(("n", "k"), [(0, 2), (7, 2), (1, 3), (9, 3), (5, 4), (3, 6)])
def test_candidate_set_size_is_n_plus_k_minus_1_choose_k_minus_1(n, k):
    counts = dm.candidate_counts(n, k)
    assert len(counts) == dm.n_candidates(n, k) == math.comb(n + k - 1, k - 1)
    assert np.all(counts.sum(1) == n) and np.all(counts >= 0)
    assert len(np.unique(counts, axis=0)) == len(counts)
    assert np.array_equal(dm.candidate_set([2.0] * k, n), counts + 2.0)


def test_candidate_enumeration_refuses_infeasible_sets_before_any_charge():
    assert dm.n_candidates(1500, 3) > dm.MAX_CANDIDATES
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="infeasible"):
        dm.release_ehd([500, 500, 500], np.ones(3), epsilon=1.0, ledger=ledger)
    with pytest.raises(ValueError, match="infeasible"):
        dm.release_ehds([30] * 10, np.ones(10), epsilon=1.0, ledger=ledger)
    assert len(ledger) == 0


# --- output distributions against their definitions --------------------------------------------
def test_exponential_mechanism_probabilities_match_their_definitions():
    c, prior, eps, gamma = [2, 0, 3], np.array([1.0, 0.5, 2.0]), 0.7, 0.5
    cands = dm.candidate_set(prior, 5)
    h = dm.hellinger_dirichlet(prior + c, cands)
    gs = max(GS, dm.hellinger_global_sensitivity(prior))
    expected = {
        "ehd": np.exp(-eps * h / (2 * gs)),
        "ehds": np.exp(-eps * h / (4 * dm.smooth_sensitivity(c, prior, gamma))),
        "ehdl": np.exp(-eps * h / (2 * dm.local_sensitivity(c, prior))),
    }
    got = {
        "ehd": dm.ehd_probabilities(c, prior, eps),
        "ehds": dm.ehds_probabilities(c, prior, eps, gamma),
        "ehdl": dm.ehdl_probabilities(c, prior, eps),
    }
    for name, weights in expected.items():
        candidates, p = got[name]
        assert np.array_equal(candidates, cands)
        np.testing.assert_allclose(p, weights / weights.sum(), rtol=1e-12)


@pytest.mark.parametrize("name", ["ehd", "ehds", "ehdl"])
def test_exponential_mechanism_samples_follow_their_probabilities(name):
    c, prior, eps, draws = [1, 2, 0], np.ones(3), 2.0, 1000
    rng = np.random.default_rng(5)
    if name == "ehd":
        cands, p = dm.ehd_probabilities(c, prior, eps)
        out = [
            dm.release_ehd(c, prior, epsilon=eps, ledger=PrivacyLedger(), rng=rng)
            for _ in range(draws)
        ]
    elif name == "ehds":
        cands, p = dm.ehds_probabilities(c, prior, eps, 1.0)
        out = [
            dm.release_ehds(c, prior, epsilon=eps, ledger=PrivacyLedger(), rng=rng)
            for _ in range(draws)
        ]
    else:
        cands, p = dm.ehdl_probabilities(c, prior, eps)
        out = [dm.ehdl_non_private(c, prior, epsilon=eps, rng=rng) for _ in range(draws)]
    index = {tuple(r): i for i, r in enumerate(cands)}
    observed = np.bincount([index[tuple(r)] for r in out], minlength=len(cands))
    assert stats.chisquare(observed, p * draws).pvalue > 1e-4


@pytest.mark.parametrize("name", ["lshist", "lsdim"])
def test_laplace_histogram_outputs_follow_the_algorithm(name):
    """Each released count is ⌊c_i + Lap(scale)⌋ clamped to [0, n] (Algorithms 1–2); the last
    is n minus the others, clamped."""
    c, prior, eps, draws = np.array([1, 4, 3]), np.array([1.0, 2.0, 0.5]), 1.0, 1500
    release = dm.release_lshist if name == "lshist" else dm.release_lsdim
    scale = (2.0 if name == "lshist" else 3.0) / eps
    rng = np.random.default_rng(8)
    out = (
        np.array(
            [
                release(c, prior, epsilon=eps, ledger=PrivacyLedger(), backend="numpy", rng=rng)
                for _ in range(draws)
            ]
        )
        - prior
    )
    n = c.sum()
    assert np.all(out == np.floor(out)) and np.all((out >= 0) & (out <= n))
    np.testing.assert_array_equal(out[:, 2], np.clip(n - out[:, 0] - out[:, 1], 0, n))
    for i in range(2):
        pmf = dm.lshist_marginal_pmf(c[i], n, scale)
        observed = np.bincount(out[:, i].astype(int), minlength=n + 1)
        keep = pmf * draws >= 5  # bins expected below 5 are pooled
        expected = np.append(pmf[keep], pmf[~keep].sum()) * draws
        got = np.append(observed[keep], observed[~keep].sum())
        expected, got = expected[expected > 0], got[expected > 0]
        assert got.sum() == draws
        assert stats.chisquare(got, expected).pvalue > 1e-4


def test_lshist_marginal_pmf_is_the_floored_clamped_laplace():
    pmf = dm.lshist_marginal_pmf(3, 8, 0.5)
    assert pmf.sum() == pytest.approx(1.0)
    lap = stats.laplace(0, 0.5)
    assert pmf[3] == pytest.approx(lap.cdf(1) - lap.cdf(0))
    assert pmf[0] == pytest.approx(lap.cdf(-2))
    assert pmf[8] == pytest.approx(lap.sf(5))


# --- ledger: the event before the noise, nothing on bad input ----------------------------------
class _SpyLedger(PrivacyLedger):
    def __init__(self, rng, **kwargs):
        super().__init__(**kwargs)
        self.rng = rng
        self.states_at_charge = []

    def charge(self, event):
        self.states_at_charge.append(copy.deepcopy(self.rng.bit_generator.state))
        return super().charge(event)


def _call(name, counts, prior, ledger, rng, epsilon=0.8):
    if name in ("lshist", "lsdim"):
        release = dm.release_lshist if name == "lshist" else dm.release_lsdim
        return release(
            counts,
            prior,
            epsilon=epsilon,
            ledger=ledger,
            backend="numpy",
            rng=rng,
            variables=("y",),
        )
    if name == "ehd":
        return dm.release_ehd(
            counts, prior, epsilon=epsilon, ledger=ledger, rng=rng, variables=("y",)
        )
    return dm.release_ehds(
        counts, prior, epsilon=epsilon, gamma=0.5, ledger=ledger, rng=rng, variables=("y",)
    )


MECHANISMS = ["lshist", "lsdim", "ehd", "ehds"]
EXPECTED_EVENT = {
    "lshist": ("laplace", 2.0, 2.0 / 0.8, "Algorithm 2"),
    "lsdim": ("laplace", 3.0, 3.0 / 0.8, "Algorithm 1"),
    "ehd": ("dirichlet-ehd", GS, None, "Algorithm 3"),
    "ehds": ("dirichlet-ehds", GS, None, "Algorithm 5"),
}


@pytest.mark.parametrize("name", MECHANISMS)
def test_ledger_is_charged_once_before_any_noise(name):
    rng = np.random.default_rng(1)
    before = copy.deepcopy(rng.bit_generator.state)
    ledger = _SpyLedger(rng)
    out = _call(name, [2, 1, 4], np.ones(3), ledger, rng)
    assert out.shape == (3,) and out.dtype == np.float64
    assert ledger.states_at_charge == [before] and rng.bit_generator.state != before
    (event,) = ledger.events
    mechanism, sensitivity, scale, algorithm = EXPECTED_EVENT[name]
    assert event.mechanism == mechanism and event.epsilon == 0.8 and event.delta == 0.0
    assert event.sensitivity == pytest.approx(sensitivity, rel=1e-15)
    assert event.noise_scale == (None if scale is None else pytest.approx(scale))
    assert event.neighbouring == "replace-one" and event.variables == ("y",)
    assert algorithm in event.source and "Dirichlet/Hellinger" in event.source
    assert bool(event.unverified_assumption)  # numpy noise: recorded as not a guarantee


@pytest.mark.parametrize("name", MECHANISMS)
@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([2, -1, 3], "non-negative integers"),
        ([2, 1.5, 7777.25], "non-negative integers"),
        ([2, np.nan, 3], "non-negative integers"),
        ([2, 3], "histogram"),
        ([0, 0, 0], "at least one record"),
        ("abc", "not numeric"),
    ],
)
def test_bad_private_counts_raise_naming_the_variable_and_charge_nothing(name, counts, message):
    rng = np.random.default_rng(0)
    state = copy.deepcopy(rng.bit_generator.state)
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match=message) as info:
        _call(name, counts, np.ones(3), ledger, rng)
    assert "counts of y" in str(info.value) and "7777" not in str(info.value)
    assert len(ledger) == 0 and rng.bit_generator.state == state


@pytest.mark.parametrize("name", MECHANISMS)
def test_bad_public_parameters_raise_value_error_and_charge_nothing(name):
    ledger = PrivacyLedger()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="epsilon"):
        _call(name, [1, 2, 3], np.ones(3), ledger, rng, epsilon=0.0)
    with pytest.raises(ValueError, match="alpha"):
        _call(name, [1, 2, 3], [1.0, 0.0, 1.0], ledger, rng)
    assert len(ledger) == 0
    with pytest.raises(ValueError, match="gamma"):
        dm.release_ehds([1, 2], [1, 1], epsilon=1.0, gamma=1.5, ledger=ledger)
    with pytest.raises(ValueError, match="rng"):
        dm.release_lshist([1, 2], [1, 1], epsilon=1.0, ledger=ledger, rng=rng)
    assert len(ledger) == 0


@pytest.mark.parametrize("name", MECHANISMS)
def test_budget_exceeded_draws_nothing(name):
    rng = np.random.default_rng(2)
    ledger = PrivacyLedger(budget=0.5)
    state = copy.deepcopy(rng.bit_generator.state)
    with pytest.raises(BudgetExceededError):
        _call(name, [1, 2, 3], np.ones(3), ledger, rng)
    assert len(ledger) == 0 and rng.bit_generator.state == state


def test_ehdl_is_a_labelled_non_private_function_without_a_ledger():
    import inspect

    assert "ledger" not in inspect.signature(dm.ehdl_non_private).parameters
    assert "not differentially private" in dm.ehdl_non_private.__doc__.lower()
    assert not any("ehdl" in name and "release" in name for name in dm.__all__)
    assert set(dm.DP_RELEASES) == {
        "dirichlet-lsdim",
        "dirichlet-lshist",
        "dirichlet-ehd",
        "dirichlet-ehds",
    }
    assert dm.ehdl_non_private not in dm.DP_RELEASES.values()


def test_category_counts_is_the_histogram_and_rejects_bad_records():
    np.testing.assert_array_equal(dm.category_counts([0, 2, 2, 1, 2], 4), [1, 1, 3, 0])
    for bad in ([0, 3], [0, -1], [0, 1.5], [0, np.nan]):
        with pytest.raises(InvalidPrivateDataError, match="records of z") as info:
            dm.category_counts(bad, 3, variables=("z",))
        assert "1.5" not in str(info.value)
    with pytest.raises(ValueError, match="k must be"):
        dm.category_counts([0, 1], 1)


# --- privacy: exact audits of the exponential mechanisms (Theorem 3.1) ------------------------
def _exact_loss(probabilities, pairs, *args):
    """max over the pairs and outputs r of |log Pr(r | x) − log Pr(r | x')|."""
    worst = 0.0
    for c, other in pairs:
        _, p = probabilities(c, *args)
        _, q = probabilities(other, *args)
        worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(q)))))
    return worst


def _ehd_loss(pairs, prior, eps):
    return _exact_loss(dm.ehd_probabilities, pairs, prior, eps)


@pytest.mark.parametrize(("n", "k"), [(1, 2), (2, 2), (4, 2), (8, 2), (1, 3), (3, 3)])
def test_ehd_exact_privacy_loss_is_at_most_epsilon(n, k):
    eps, prior = 1.0, np.ones(k)
    loss = _ehd_loss(list(_pairs(n, k)), prior, eps)
    assert loss <= eps * (1 + 1e-9)
    # A pair at GS (a record moved between two categories with zero counts otherwise: n = 1,
    # or any n when k >= 3) has Z(x) = Z(x') by symmetry and its numerator moves by exactly
    # ε·GS/(2GS) = ε/2: there the worst case is at least ε/2.
    if n == 1 or k >= 3:
        assert loss >= eps / 2 * (1 - 1e-9)
    if n == 1:
        assert loss == pytest.approx(eps / 2, rel=1e-9)


def test_ehd_broken_controls_exceed_epsilon_in_the_exact_audit():
    eps = 1.0
    pairs = list(_pairs(2, 2))
    sound = _ehd_loss(pairs, np.ones(2), eps)
    broken = _ehd_loss(pairs, np.ones(2), 4 * eps)  # control: 4ε in the exponent (GS/4)
    assert sound <= eps < broken
    # control: EHDL (local sensitivity) on a pair found by search (k = 3, α = 10, n = 60)
    pair = [([1, 0, 59], [0, 0, 60])]
    ehdl = _exact_loss(dm.ehdl_probabilities, pair, np.full(3, 10.0), eps)
    assert ehdl > 1.2 * eps
    assert _ehd_loss(pair, np.full(3, 10.0), eps) <= eps


@pytest.mark.parametrize("gamma", [0.25, 1.0])
def test_ehds_exact_privacy_loss_is_at_most_epsilon_one_plus_gamma_over_two(gamma):
    eps = 1.0
    for n, k, a in [(4, 2, 1.0), (3, 3, 1.0), (3, 3, 0.5), (10, 2, 3.0)]:
        loss = _exact_loss(dm.ehds_probabilities, list(_pairs(n, k)), np.full(k, a), eps, gamma)
        assert loss <= eps * (1 + gamma) / 2 * (1 + 1e-9)


# --- privacy: simulated audits with a broken control -------------------------------------------
def _outputs(release, counts, prior, eps, runs, rng, **kwargs):
    return np.array(
        [
            release(counts, prior, epsilon=eps, ledger=PrivacyLedger(), rng=rng, **kwargs)
            for _ in range(runs)
        ]
    )


def test_lshist_audit_reaches_near_epsilon_and_catches_half_the_noise():
    """k = 3, scale 2/ε. D0 = (c1, c2, c3), D1 moves one record from category 2 to 1. The
    event {c̃1 ≥ c1 + 1, c̃2 ≤ c2 − 2} has probability ¼ under D1 and ¼e^{-ε} under D0:
    privacy loss exactly ε. The control (2ε claimed as ε: half the noise) has loss 2ε."""
    eps, runs, prior = 1.0, 2000, np.ones(3)
    d0, d1 = np.array([4, 5, 3]), np.array([5, 4, 3])

    def event(out):
        return (out[:, 0] - 1 >= d0[0] + 1) & (out[:, 1] - 1 <= d0[1] - 2)

    def audit(release_eps, seed):
        rng = np.random.default_rng(seed)
        kw = {"backend": "numpy"}
        o0 = _outputs(dm.release_lshist, d0, prior, release_eps, runs, rng, **kw)
        o1 = _outputs(dm.release_lshist, d1, prior, release_eps, runs, rng, **kw)
        return epsilon_lower_bound(o0, o1, event, alpha=ALPHA, vectorized=True)

    # the event's exact probabilities (Algorithm 2's marginals): their log-ratio is ε
    n, scale = d0.sum(), 2.0 / eps

    def exact(d):
        first = dm.lshist_marginal_pmf(d[0], n, scale)[d0[0] + 1 :].sum()
        second = dm.lshist_marginal_pmf(d[1], n, scale)[: d0[1] - 1].sum()
        return first * second

    assert math.log(exact(d1) / exact(d0)) == pytest.approx(eps, rel=1e-9)
    route, control = audit(eps, 21), audit(2 * eps, 22)
    assert 0.4 * eps < route <= eps  # 2000 runs per side certify about half of ε
    assert control > eps


def test_lsdim_audit_is_below_epsilon_and_catches_a_wrong_scale():
    """LSDim, k = 3, scale 3/ε: the same event has loss 2ε/3. Control: scale 1/ε (3ε
    claimed as ε), loss 2ε."""
    eps, runs, prior = 1.0, 2000, np.ones(3)
    d0, d1 = np.array([4, 5, 3]), np.array([5, 4, 3])

    def event(out):
        return (out[:, 0] - 1 >= d0[0] + 1) & (out[:, 1] - 1 <= d0[1] - 2)

    def audit(release_eps, seed):
        rng = np.random.default_rng(seed)
        kw = {"backend": "numpy"}
        o0 = _outputs(dm.release_lsdim, d0, prior, release_eps, runs, rng, **kw)
        o1 = _outputs(dm.release_lsdim, d1, prior, release_eps, runs, rng, **kw)
        return epsilon_lower_bound(o0, o1, event, alpha=ALPHA, vectorized=True)

    route, control = audit(eps, 31), audit(3 * eps, 32)
    assert route <= 2 * eps / 3
    assert control > eps


def test_ehd_sampling_audit_and_a_broken_control():
    """EHD at n = 1, k = 2 is randomized response between Beta(2,1) and Beta(1,2): exact
    loss ε/2. Control: 4ε in the exponent (e.g. the sensitivity mistaken for GS/4): 2ε."""
    eps, runs, prior = 2.0, 1500, np.ones(2)
    d0, d1 = [1, 0], [0, 1]

    def event(out):
        return out[:, 0] == 2.0

    def audit(release_eps, seed):
        rng = np.random.default_rng(seed)
        o0 = _outputs(dm.release_ehd, d0, prior, release_eps, runs, rng)
        o1 = _outputs(dm.release_ehd, d1, prior, release_eps, runs, rng)
        return epsilon_lower_bound(o0, o1, event, alpha=ALPHA, vectorized=True)

    route, control = audit(eps, 41), audit(4 * eps, 42)
    assert 0.25 * eps < route <= eps / 2  # the exact loss of this pair is ε/2
    assert control > eps


# --- accuracy: Theorem 4.5 and the LSHist/EHD crossover (Corollaries 4.5.2–4.5.3) ------------
def test_theorem_4_5_lshist_probability_closed_form():
    """Pr[H(DirP(x), LSHist(x)) < t] = 1 − ½e^{−k_lo ε} − ½e^{−(k_hi+1)ε}, k_lo/k_hi the
    count radii within t (symmetric: the note's 1 − ½(e^{−kε} + e^{−(k+1)ε}))."""
    prior, n, c, eps, t = np.ones(2), 400, 200, 0.3, 0.15
    post = prior + np.array([c, n - c])
    dist = lambda m: dm.hellinger_dirichlet(post, prior + np.array([m, n - m]))  # noqa: E731
    k_lo = max(j for j in range(c + 1) if dist(c - j) < t)
    k_hi = max(j for j in range(n - c + 1) if dist(c + j) < t)
    assert k_lo >= 3 and k_hi >= 3
    expected = 1 - 0.5 * math.exp(-k_lo * eps) - 0.5 * math.exp(-(k_hi + 1) * eps)
    assert dm.within_t_probability_lshist([c, n - c], prior, eps, t) == pytest.approx(expected)
    # EHD's within-t probability lies in the (corrected) bounds of Theorem 4.5
    inside = k_lo + k_hi + 1
    p_ehd = dm.within_t_probability_ehd([c, n - c], prior, eps, t)
    lower = (1 + (inside - 1) * math.exp(-eps * t / (2 * GS))) / (n + 1)
    upper = inside * math.exp(eps / (2 * GS)) / (n + 1)
    assert lower <= p_ehd <= upper


@pytest.mark.parametrize("eps", [0.1, 0.3, 1.0])
def test_crossover_of_corollary_4_5_3_brackets_the_exact_crossover(eps):
    """Good set R_g = {r : H ≤ LS(x)} (t = LS(x)), x at a third of n. Corollary 4.5.3:
    LSHist is more accurate once n + 1 > 3e^{ε/c}/(1 − e^{−ε}); the radius-1 form of
    Corollary 4.5.2: EHD is more accurate while n + 1 < (1 + 2e^{−ε/c})/(1 − ½(e^{−ε} +
    e^{−2ε})), c = 2√(1 − π/4)."""
    n_ehd, n_lshist = dm.corollary_4_5_3_crossover(eps)
    prior, lshist_better = np.ones(2), []
    for n in range(6, int(n_lshist) + 40):
        c = [n // 3, n - n // 3]  # interior: 2 <= c_1 <= n - 2, no clamping inside R_g
        t = dm.local_sensitivity(c, prior)
        distance = dm.hellinger_dirichlet(prior + c, dm.candidate_set(prior, n))
        good = dm._within(distance, t, prior + c, strict=False)
        assert good.sum() <= 3  # |R_g| <= 3, used by both corollaries
        p_ls = dm.within_t_probability_lshist(c, prior, eps, t, strict=False)
        p_ehd = dm.within_t_probability_ehd(c, prior, eps, t, strict=False)
        assert good.sum() == 3  # x and its two neighbours
        # Theorem 4.5 with radius 1 (the note's 1 − ½(e^{−ε} + e^{−2ε})): exact here
        assert p_ls == pytest.approx(1 - 0.5 * (math.exp(-eps) + math.exp(-2 * eps)))
        if n + 1 > n_lshist:
            assert p_ls > p_ehd
        if n + 1 < n_ehd:
            assert p_ehd > p_ls
        lshist_better.append((n, p_ls > p_ehd))
    crossover = min(n for n, better in lshist_better if all(b for m, b in lshist_better if m >= n))
    assert n_ehd - 1 <= crossover <= math.floor(n_lshist)


def test_simulated_accuracy_matches_the_exact_probabilities():
    eps, prior, c, draws = 0.3, np.ones(2), [10, 20], 800
    t = dm.local_sensitivity(c, prior)
    rng = np.random.default_rng(9)
    post = prior + c
    for release, exact in [
        (dm.release_lshist, dm.within_t_probability_lshist(c, prior, eps, t, strict=False)),
        (dm.release_ehd, dm.within_t_probability_ehd(c, prior, eps, t, strict=False)),
    ]:
        kw = {"backend": "numpy"} if release is dm.release_lshist else {}
        out = _outputs(release, c, prior, eps, draws, rng, **kw)
        hits = np.sum(dm._within(dm.hellinger_dirichlet(post, out), t, post, strict=False))
        se = math.sqrt(exact * (1 - exact) / draws)
        assert abs(hits / draws - exact) < 5 * se
