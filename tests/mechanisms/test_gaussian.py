"""The Gaussian mechanism: calibration against closed forms, L2 sensitivities by brute force,
the release and its ledger event, bad input, an empirical audit and the Gaussian noise-aware
numerics (latent counts, Poisson marginal) against direct enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytensor
import pytest
from scipy import optimize, special, stats

from pymc_dp import BudgetExceededError, InvalidPrivateDataError, PrivacyLedger
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.families import (
    BetaBernoulli,
    BetaBinomial,
    BoundedLink,
    BoundedStructure,
    DirichletCategorical,
    DirichletMultinomial,
    LinearRegressionFamily,
    NormalFamily,
    PoissonFamily,
    RecordDomain,
)
from pymc_dp.families.base import ConjugateLink
from pymc_dp.families.latent_counts import (
    OneComponentPosterior,
    cell_target,
    count_window,
    noise_aware_draws,
)
from pymc_dp.families.poisson import poisson_gaussian_log_marginal
from pymc_dp.mechanisms.gaussian import gaussian_calibration, release_gaussian
from pymc_dp.mechanisms.statistics import (
    release_sufficient_statistics,
    released_components,
    sufficient_statistics,
    sufficient_statistics_l2_sensitivity,
)

NEIGHBOURINGS = ("replace-one", "add-remove-one")
GRID = [(eps, delta) for eps in (0.1, 1.0, 10.0) for delta in (1e-3, 1e-6, 1e-10)]


# --- calibration ------------------------------------------------------------------------------
def bun_steinke_sigma(sensitivity, epsilon, delta):
    """σ from Bun & Steinke 2016 Prop. 1.3 solved for ρ: ε = ρ + 2√(ρ log(1/δ)), i.e.
    ρ = (√(ε + log(1/δ)) − √log(1/δ))², and Prop. 1.6: σ = Δ₂/√(2ρ)."""
    log_inv = math.log(1 / delta)
    rho = (math.sqrt(epsilon + log_inv) - math.sqrt(log_inv)) ** 2
    return sensitivity / math.sqrt(2 * rho)


def cks_delta(rho, epsilon):
    """Canonne, Kamath & Steinke 2020, Cor. 13: δ = inf_{α>1} e^{(α−1)(αρ−ε)}/(α−1)·(1−1/α)^α,
    minimised numerically over log(α − 1)."""

    def log_delta(log_a):
        alpha = 1 + math.exp(log_a)
        return (
            (alpha - 1) * (alpha * rho - epsilon)
            - math.log(alpha - 1)
            + alpha * math.log1p(-1 / alpha)
        )

    best = optimize.minimize_scalar(log_delta, bounds=(-20, 15), method="bounded")
    return math.exp(best.fun)


def balle_wang_delta(sigma, sensitivity, epsilon):
    """Exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8)."""
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)


@pytest.mark.parametrize(("epsilon", "delta"), GRID)
def test_calibration_matches_the_zcdp_closed_forms(epsilon, delta):
    calibration = gaussian_calibration(1.0, epsilon, delta)
    sigma, rho = calibration.scale, calibration.rho
    # Prop. 1.6: ρ = Δ₂²/(2σ²) (OpenDP rounds its map up by a few ulps)
    assert rho == pytest.approx(1 / (2 * sigma**2), rel=1e-9)
    assert rho >= 1 / (2 * sigma**2)
    # the tight conversion (Cor. 13) is at ε exactly: δ of ρ at ε is δ (σ is the smallest)
    assert cks_delta(rho, epsilon) == pytest.approx(delta, rel=1e-3)
    # ... which is tighter than Prop. 1.3: less noise than its closed form
    assert sigma < bun_steinke_sigma(1.0, epsilon, delta)
    assert sigma > 0.5 * bun_steinke_sigma(1.0, epsilon, delta)
    # and the noise drawn really is (ε, δ)-DP: the exact Gaussian curve at σ is below δ
    assert balle_wang_delta(sigma, 1.0, epsilon) <= delta
    assert (calibration.epsilon, calibration.delta) == (epsilon, delta)


def test_calibration_is_linear_in_the_l2_sensitivity():
    unit = gaussian_calibration(1.0, 1.0, 1e-6)
    for sensitivity in (0.5, math.sqrt(2), 3.0, 77**0.5):
        scaled = gaussian_calibration(sensitivity, 1.0, 1e-6)
        assert scaled.scale == pytest.approx(sensitivity * unit.scale, rel=1e-6)
        assert scaled.rho == pytest.approx(unit.rho, rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, "delta must satisfy 0 < delta < 1"),
        ({"delta": 1.0}, "delta must satisfy 0 < delta < 1"),
        ({"delta": float("nan")}, "delta"),
        ({"epsilon": 0.0}, "epsilon must be a finite number > 0"),
        ({"sensitivity": -1.0}, "sensitivity must be a finite number > 0"),
    ],
)
def test_calibration_refuses_bad_parameters(kwargs, match):
    arguments = {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-6, **kwargs}
    with pytest.raises(ValueError, match=match):
        gaussian_calibration(**arguments)


# --- the release ------------------------------------------------------------------------------
def release(values, ledger, **kwargs):
    arguments = {
        "sensitivity": 1.0,
        "epsilon": 1.0,
        "delta": 1e-6,
        "ledger": ledger,
        "neighbouring": "replace-one",
        "variables": ("y",),
        "statistic": "test",
        **kwargs,
    }
    return release_gaussian(values, **arguments)


def test_release_records_a_gaussian_event_then_draws_the_calibrated_noise():
    ledger = PrivacyLedger()
    noisy = release(np.zeros((200, 100)), ledger, backend="numpy", rng=np.random.default_rng(0))
    [event] = ledger.events
    calibration = gaussian_calibration(1.0, 1.0, 1e-6)
    assert event.mechanism == "gaussian"
    assert (event.epsilon, event.delta, event.sensitivity) == (1.0, 1e-6, 1.0)
    assert event.noise_scale == calibration.scale
    assert event.rho == calibration.rho
    assert event.unverified_assumption  # NumPy noise is not a guarantee
    assert noisy.shape == (200, 100)
    # 20 000 draws: sd within 5 standard errors (SE of a sd ≈ σ/√(2N))
    assert np.std(noisy) == pytest.approx(calibration.scale, abs=5 * calibration.scale / 200)
    assert abs(np.mean(noisy)) < 5 * calibration.scale / math.sqrt(noisy.size)


def test_opendp_release_is_a_guarantee_and_has_the_calibrated_spread():
    ledger = PrivacyLedger()
    noisy = release(np.full(5000, 5.0), ledger)
    [event] = ledger.events
    assert event.noise_backend == "opendp" and ledger.guaranteed
    # SE of the sd: σ/√(2·5000) = 1% of σ
    assert np.std(noisy) == pytest.approx(event.noise_scale, rel=0.05)
    assert np.mean(noisy) == pytest.approx(5.0, abs=5 * event.noise_scale / math.sqrt(5000))


def test_bad_input_raises_before_anything_is_charged():
    ledger = PrivacyLedger()
    with pytest.raises(InvalidPrivateDataError, match="NaN or infinite"):
        release(np.array([1.0, np.nan]), ledger)
    with pytest.raises(ValueError, match="delta must satisfy 0 < delta < 1"):
        release(np.ones(2), ledger, delta=0.0)
    with pytest.raises(ValueError, match="neighbouring"):
        release(np.ones(2), ledger, neighbouring="swap")
    with pytest.raises(ValueError, match="rng is only used by the numpy backend"):
        release(np.ones(2), ledger, rng=np.random.default_rng(0))
    assert len(ledger) == 0
    budget = PrivacyLedger(budget=(5.0, 1e-7))  # the δ does not fit
    with pytest.raises(BudgetExceededError, match="delta"):
        release(np.ones(2), budget)
    assert len(budget) == 0


# --- L2 sensitivities by brute force ----------------------------------------------------------
def neighbours(dataset, domain, neighbouring):
    """Every neighbour of ``dataset`` (a tuple of records) within the record ``domain``."""
    if neighbouring == "replace-one":
        for i, record in itertools.product(range(len(dataset)), domain):
            yield (*dataset[:i], record, *dataset[i + 1 :])
    else:
        for i in range(len(dataset)):
            yield dataset[:i] + dataset[i + 1 :]
        for record in domain:
            yield (*dataset, record)


def brute_force_l2(release_of, domain, neighbouring, size=2):
    """max ||release(D) − release(D')||₂ over datasets of ``size`` records and neighbours."""
    worst = 0.0
    for dataset in itertools.product(domain, repeat=size):
        here = release_of(dataset)
        for other in neighbours(dataset, domain, neighbouring):
            worst = max(worst, float(np.linalg.norm(release_of(other) - here)))
    return worst


CONJUGATE_CASES = {
    # name: (family, record domain [(value, trials, group)], n_categories, max_trials,
    #        public trials or None, n_groups)
    "bernoulli": (BetaBernoulli(), [(v, None, 0) for v in (0, 1)], 2, 1, None, 1),
    "bernoulli-grouped": (
        BetaBernoulli(),
        [(v, None, g) for v in (0, 1) for g in (0, 1)],
        2,
        1,
        None,
        2,
    ),
    "binomial-public-trials": (BetaBinomial(), [(v, 3, 0) for v in range(4)], 2, 3, 3, 1),
    "binomial-private-trials": (
        BetaBinomial(),
        [(v, m, 0) for m in range(3) for v in range(m + 1)],
        2,
        2,
        None,
        1,
    ),
    "categorical": (DirichletCategorical(), [(v, None, 0) for v in range(3)], 3, 1, None, 1),
    "multinomial-grouped": (
        DirichletMultinomial(),
        [(c, None, g) for c in [(2, 0, 0), (0, 2, 0), (1, 1, 0), (0, 0, 2)] for g in (0, 1)],
        3,
        2,
        2,
        2,
    ),
}


def conjugate_link(case, dataset):
    family, _, n_categories, max_trials, public_trials, n_groups = CONJUGATE_CASES[case]
    values = [record[0] for record in dataset]
    data = np.asarray(values, dtype=np.int64)
    trials = public_trials
    if public_trials is None and family.likelihood == "binomial":
        trials = np.asarray([record[1] for record in dataset], dtype=np.int64)
    groups = np.asarray([record[2] for record in dataset]) if n_groups > 1 else None
    domain = RecordDomain(n_categories, max_trials, trials)
    return ConjugateLink("y", "p", family, data, groups, n_groups, domain)


@pytest.mark.parametrize("neighbouring", NEIGHBOURINGS)
@pytest.mark.parametrize("case", sorted(CONJUGATE_CASES))
def test_conjugate_l2_sensitivity_is_the_brute_force_maximum(case, neighbouring):
    domain = CONJUGATE_CASES[case][1]

    def release_of(dataset):
        link = conjugate_link(case, dataset)
        link.validate()
        return sufficient_statistics(link)[:, : released_components(link, neighbouring)]

    stated = sufficient_statistics_l2_sensitivity(conjugate_link(case, domain[:2]), neighbouring)
    assert brute_force_l2(release_of, domain, neighbouring) == pytest.approx(stated, rel=1e-12)


def bounded_structure(family, n_groups=1, p=0):
    if p:
        return BoundedStructure(
            "y",
            family,
            (0.0, 1.0),
            {},
            covariates="X",
            covariate_bounds=(np.zeros(p), np.ones(p)),
        )
    return BoundedStructure("y", family, (0.0, 2.0), {}, n_groups=n_groups, grouped=n_groups > 1)


BOUNDED_CASES = {
    # name: (structure, record domain [(y, x or None, group or None)])
    "poisson": (bounded_structure(PoissonFamily()), [(y, None, None) for y in range(3)]),
    "poisson-grouped": (
        bounded_structure(PoissonFamily(), n_groups=2),
        [(y, None, g) for y in range(3) for g in (0, 1)],
    ),
    "normal": (bounded_structure(NormalFamily()), [(y, None, None) for y in (0, 0.5, 1.3, 2)]),
    "regression-p1": (
        bounded_structure(LinearRegressionFamily(), p=1),
        [(y, (x,), None) for y in (0, 0.5, 1) for x in (0, 0.5, 1)],
    ),
    "regression-p2": (
        bounded_structure(LinearRegressionFamily(), p=2),
        [(y, x, None) for y in (0, 1) for x in itertools.product((0, 1), repeat=2)],
    ),
}


@pytest.mark.parametrize("neighbouring", NEIGHBOURINGS)
@pytest.mark.parametrize("case", sorted(BOUNDED_CASES))
def test_bounded_l2_sensitivity_is_the_brute_force_maximum(case, neighbouring):
    structure, domain = BOUNDED_CASES[case]
    family = structure.family
    index = family.released_components(structure, neighbouring)

    def release_of(dataset):
        y = np.asarray([record[0] for record in dataset], dtype=float)
        x = None
        if structure.covariates is not None:
            x = np.asarray([record[1] for record in dataset], dtype=float).reshape(len(y), -1)
        groups = None
        if structure.grouped:
            groups = np.asarray([record[2] for record in dataset], dtype=np.int64)
        weights = family.weights(structure, neighbouring)[index]  # the release is c ⊙ T
        return family.statistics(BoundedLink(structure, y, x, groups))[:, index] * weights

    stated = family.l2_sensitivity(structure, neighbouring)
    found = brute_force_l2(release_of, domain, neighbouring)
    if neighbouring == "replace-one" and family.name != "poisson":
        # the second moments' triangle bound √Σ s_j²: no replaced record moves every
        # entry by its range at once, so the bound holds but is not reached
        assert 0.5 * stated < found <= stated * (1 + 1e-12)
    else:
        assert found == pytest.approx(stated, rel=1e-12)
    # the Gaussian's L2 never exceeds the Laplace's L1
    assert stated <= family.sensitivity(structure, neighbouring)


# --- an empirical audit -------------------------------------------------------------------------
def test_audit_does_not_exceed_the_claimed_epsilon_and_catches_halved_noise():
    """Worst-case pair: a count of 0 against 1 (Δ₂ = 1). One release of a vector of N copies
    of the count draws N independent runs of the scalar mechanism (its noise is i.i.d. per
    coordinate). The event {output > 4.5} is fixed in advance. The mechanism as calibrated
    (σ ≈ 2.90 at ε = 1, δ = 1e-3) must not show ε above its claim; a broken one calibrated to
    Δ₂ = 1/2 (σ halved) is caught. NumPy noise (10⁶ OpenDP draws take minutes); the OpenDP
    noise's spread is checked above."""
    epsilon, delta, runs = 1.0, 1e-3, 1_000_000
    rng = np.random.default_rng(11)

    def bound(sensitivity):
        def outputs(count):
            return release(
                np.full(runs, float(count)),
                PrivacyLedger(),
                sensitivity=sensitivity,
                epsilon=epsilon,
                delta=delta,
                backend="numpy",
                rng=rng,
            )

        return epsilon_lower_bound(
            outputs(1), outputs(0), lambda values: values > 4.5, delta, vectorized=True
        )

    sound, broken = bound(1.0), bound(0.5)
    assert 0.3 < sound <= epsilon  # the audit has power, and the claim holds
    assert broken > epsilon + 0.5


# --- Gaussian noise-aware numerics against direct enumeration ---------------------------------
def test_one_component_gaussian_posterior_matches_enumeration():
    total, alpha, beta, sigma = 60, 2.0, 3.0, 7.5
    noisy = np.array([21.3, -8.0, 70.0])
    posterior = OneComponentPosterior(noisy, sigma, total, alpha, beta, noise="gaussian")
    s = np.arange(total + 1)
    for row, released in enumerate(noisy):
        log_p = (
            special.gammaln(s + alpha)
            - special.gammaln(s + 1)
            + special.gammaln(total - s + beta)
            - special.gammaln(total - s + 1)
            - 0.5 * ((released - s) / sigma) ** 2
        )
        pmf = np.exp(log_p - special.logsumexp(log_p))
        width = np.sum(np.isfinite(posterior.cdf[row]))
        support = posterior.lo[row] + np.arange(width)
        cdf = np.interp(support, s, np.cumsum(pmf))
        np.testing.assert_allclose(posterior.cdf[row, :width], cdf, atol=1e-9)


def test_gaussian_cell_window_matches_enumeration():
    """One cell of a private-total table: the window's normalised weights equal the directly
    enumerated target on 0..5000 (the omitted mass is below tol)."""
    rest, a, a_total, sigma = np.array([40.0, 0.0]), np.array([1.5, 0.5]), 3.0, 12.0
    noisy = np.array([130.4, -20.0])
    target = cell_target(rest, a, np.full(2, a_total), noisy, np.full(2, sigma), "gaussian")
    lo, log_f = count_window(target)
    x = np.arange(5001.0)
    for row in range(2):
        log_p = (
            special.gammaln(x + a[row])
            - special.gammaln(x + 1)
            + special.gammaln(x + rest[row] + 0.5)
            - special.gammaln(x + rest[row] + a_total)
            - 0.5 * ((noisy[row] - x) / sigma) ** 2
        )
        exact = np.exp(log_p - special.logsumexp(log_p))
        window = log_f[row][np.isfinite(log_f[row])]
        weights = np.exp(window - special.logsumexp(window))
        start = int(lo[row])
        np.testing.assert_allclose(weights, exact[start : start + weights.size], atol=1e-9)
        assert exact[start : start + weights.size].sum() > 1 - 1e-9


def test_poisson_gaussian_marginal_matches_enumeration():
    released = pytensor.tensor.dvector("r")
    mean = pytensor.tensor.dvector("m")
    scale = pytensor.tensor.dscalar("s")
    formula = poisson_gaussian_log_marginal(released, mean, scale, None, None)
    function = pytensor.function([released, mean, scale], formula)
    r, m, sigma = np.array([12.3, 400.0, -3.0]), np.array([10.0, 380.0, 2.5]), 6.0
    k = np.arange(3000.0)
    expected = [
        special.logsumexp(stats.poisson.logpmf(k, m_i) + stats.norm.logpdf(r_i - k, scale=sigma))
        for r_i, m_i in zip(r, m, strict=True)
    ]
    np.testing.assert_allclose(function(r, m, sigma), expected, rtol=1e-9)
    # a far-off proposal of the mean (a latent cell size early in tuning) gets a window of
    # the narrower factor's width, not 12·√mean terms (10⁷ here: it once ran out of memory)
    far = function(np.array([5.0]), np.array([1e12]), 2.0)
    assert far.shape == (1,) and np.isfinite(far[0]) and far[0] < -1e11


@pytest.mark.integration
def test_noise_aware_gaussian_beta_bernoulli_covers():
    """θ ~ Beta(2, 2), s ~ Binomial(40, θ), the count released with Gaussian noise
    (ε = 0.5, δ = 1e-6: σ ≈ 8.7, one-component, Δ₂ = 1). The noise-aware posterior is the
    exact Bayesian posterior, so its central 90% interval covers θ in 90% of data sets (400
    data sets: 3 binomial SE = 0.045); the plug-in interval, blind to the noise, covers far
    less."""
    rng = np.random.default_rng(2024)
    n, n_sets = 40, 400
    theta = rng.beta(2.0, 2.0, n_sets)
    successes = rng.binomial(n, theta)
    covered = {"noise-aware": 0, "plugin": 0}
    for i in range(n_sets):
        link = ConjugateLink(
            "y",
            "p",
            BetaBernoulli(),
            (np.arange(n) < successes[i]).astype(np.int64),
            None,
            1,
            RecordDomain(2),
        )
        released = release_sufficient_statistics(
            link,
            0.5,
            ledger=PrivacyLedger(),
            backend="numpy",
            rng=rng,
            noise="gaussian",
            delta=1e-6,
        )
        draws = noise_aware_draws(
            released.noisy,
            released.scale,
            "beta",
            (2.0, 2.0),
            2000,
            rng,
            public_totals=released.public_totals,
            noise="gaussian",
        )[:, 0]
        low, high = np.quantile(draws, [0.05, 0.95])
        covered["noise-aware"] += low <= theta[i] <= high
        s = released.table[0]
        plug = stats.beta(2.0 + s[0], 2.0 + s[1])
        covered["plugin"] += plug.ppf(0.05) <= theta[i] <= plug.ppf(0.95)
    se = math.sqrt(0.9 * 0.1 / n_sets)
    assert abs(covered["noise-aware"] / n_sets - 0.9) < 3 * se
    assert covered["plugin"] / n_sets < 0.9 - 3 * se
