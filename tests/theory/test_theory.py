"""pymc_dp.theory: closed forms, paper values, round trips, monotonicity and bad input.

Reference values are from the digests of Dimitrakakis et al. (JMLR) and Minami et al. 2016
(``shared/seeds/digests``), or computed here by brute force from the definitions.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, special, stats

from pymc_dp import theory
from pymc_dp.theory import (
    Assumption2Constants,
    VacuousBoundWarning,
    approximate_sampling_delta,
    bayesian_network_classical_epsilon,
    bayesian_network_lipschitz,
    bernoulli_lipschitz,
    bernoulli_lipschitz_bound,
    beta_binomial_assumption2_constants,
    binomial_lipschitz,
    categorical_lipschitz_bound,
    distinguishability_threshold,
    distinguishability_threshold_stochastic,
    example1_family,
    exponential_assumption2_constants,
    exponential_lipschitz,
    gaussian_prior_strong_convexity,
    kl_robustness_bound,
    kl_robustness_bound_stochastic,
    laplace_lipschitz,
    lipschitz_mass,
    logistic_regression_lipschitz,
    max_posterior_samples,
    minami_beta,
    minami_corollary8_epsilon_max,
    minami_epsilon,
    minami_tail_bound,
    multivariate_normal_lipschitz,
    normal_known_mean_assumption2_constants,
    normal_known_mean_lipschitz,
    ops_temperature,
    posterior_sampling_epsilon,
    psaqr_utility_gap,
    random_dp_failure_probability,
    stochastic_lipschitz_c,
    stochastic_posterior_delta,
)

EPS = st.floats(1e-3, 20.0)
DELTA = st.floats(1e-12, 0.5)
POSITIVE = st.floats(1e-2, 1e2)


def test_public_names_are_exported():
    for name in theory.__all__:
        assert hasattr(theory, name), name
    assert {"ops_temperature", "posterior_sampling_epsilon", "minami_beta"} <= set(theory.__all__)


def test_one_module_per_paper_and_the_package_re_exports_them_all():
    from pymc_dp.theory import dimitrakakis2017, foulds2016, minami2016

    modules = (foulds2016, dimitrakakis2017, minami2016)
    per_paper = [set(module.__all__) for module in modules]
    assert not any(a & b for a, b in itertools.combinations(per_paper, 2))  # one home each
    assert set().union(*per_paper) | {"VacuousBoundWarning"} == set(theory.__all__)
    for module in modules:
        for name in module.__all__:
            assert getattr(theory, name) is getattr(module, name), name
    assert {"ops_temperature", "ops_epsilon"} == set(foulds2016.__all__)
    assert "minami_beta" in minami2016.__all__
    assert "posterior_sampling_epsilon" in dimitrakakis2017.__all__


def test_package_code_never_imports_the_theory_calculators():
    # the mechanisms own their calibration; theory may build on them, never the reverse
    import ast
    from pathlib import Path

    package = Path(theory.__file__).resolve().parents[1]
    offenders = []
    for path in package.rglob("*.py"):
        rel = path.relative_to(package)
        if rel.parts[0] in ("theory", "cli.py") or rel.parts == ("__init__.py",):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "pymc_dp.theory" or n.startswith("pymc_dp.theory.") for n in names):
                offenders.append(str(rel))
    assert offenders == []


def test_ops_temperature_unchanged():
    assert ops_temperature(1.5, 0.5) == pytest.approx(6.0)
    with pytest.raises(ValueError, match="untruncated"):
        ops_temperature(math.inf, 1.0)


def test_ops_temperature_is_the_uncapped_calibration():
    from pymc_dp.mechanisms.exponential import calibrate_temperature

    for bound, epsilon in [(1.5, 0.5), (0.1, 10.0)]:
        calibration = calibrate_temperature(2 * bound, epsilon)
        assert ops_temperature(bound, epsilon) == calibration.uncapped_temperature
        assert calibration.temperature == max(1.0, ops_temperature(bound, epsilon))


def test_minami_beta_exact_is_the_mechanism_calibration():
    from pymc_dp.mechanisms.exponential import gibbs_posterior_inverse_temperature

    for args in [(1.0, 1e-5, 2.0, 1.0), (0.3, 1e-8, 1.0, 4.0), (50.0, 0.1, 0.5, 2.0)]:
        assert minami_beta(*args) == gibbs_posterior_inverse_temperature(*args)


# ------------------------------------------------------------------------------------------
# Dimitrakakis et al.: ε of N posterior samples
# ------------------------------------------------------------------------------------------


def test_posterior_sampling_epsilon_is_2nl_not_corollary10_2l():
    assert posterior_sampling_epsilon(1.5) == pytest.approx(3.0)
    # Corollary 10 prints (2L, 0) for N samples; N samples compose to 2NL (Theorem 17(a)).
    assert posterior_sampling_epsilon(1.5, n_samples=4) == pytest.approx(12.0)


@given(POSITIVE, st.integers(1, 1000))
def test_posterior_sampling_epsilon_linear_in_samples(lipschitz, n):
    eps = posterior_sampling_epsilon(lipschitz, n)
    assert eps == pytest.approx(n * posterior_sampling_epsilon(lipschitz))
    assert eps == pytest.approx(2 * n * lipschitz)


@given(st.floats(1e-2, 1e3), POSITIVE)
def test_max_posterior_samples_inverts_the_cost(budget, lipschitz):
    n = max_posterior_samples(budget, lipschitz)
    assert n >= 0
    if n:
        assert posterior_sampling_epsilon(lipschitz, n) <= budget * (1 + 1e-9)
    assert posterior_sampling_epsilon(lipschitz, n + 1) > budget


@pytest.mark.parametrize(
    ("lipschitz", "n"), [(0.0, 1), (-1.0, 1), (math.inf, 1), (math.nan, 1), (1.0, 0), (1.0, 1.5)]
)
def test_posterior_sampling_epsilon_rejects_bad_input(lipschitz, n):
    with pytest.raises(ValueError, match=r"lipschitz|n_samples"):
        posterior_sampling_epsilon(lipschitz, n)


def test_posterior_sampling_epsilon_rejects_bool_samples():
    with pytest.raises(ValueError, match="n_samples"):
        posterior_sampling_epsilon(1.0, True)


# ------------------------------------------------------------------------------------------
# Per-family ℓ(θ) and L, against brute force from the definition (eq. 2)
# ------------------------------------------------------------------------------------------


@given(st.floats(1e-4, 1 - 1e-4))
def test_bernoulli_lipschitz_matches_definition(theta):
    logp = stats.bernoulli.logpmf([0, 1], theta)
    assert bernoulli_lipschitz(theta) == pytest.approx(abs(logp[1] - logp[0]), rel=1e-9)


def test_bernoulli_lipschitz_bound_values():
    assert bernoulli_lipschitz_bound(0.2) == pytest.approx(math.log(4))  # Fig. 1, Δ = 0.2
    assert bernoulli_lipschitz_bound(0.05) == pytest.approx(math.log(19))  # Fig. 1, Δ = 0.05
    assert bernoulli_lipschitz_bound(0.05) < math.log(1 / 0.05)  # paper's ln(1/Δ) is an upper bound
    assert bernoulli_lipschitz_bound(0.1, 0.6) == pytest.approx(math.log(9))
    grid = np.linspace(0.2, 0.8, 1001)
    assert bernoulli_lipschitz_bound(0.2) == pytest.approx(
        max(bernoulli_lipschitz(t) for t in grid)
    )


@pytest.mark.parametrize("theta", [0.0, 1.0, -0.1, 1.5, math.nan])
def test_bernoulli_lipschitz_rejects_boundary(theta):
    with pytest.raises(ValueError, match="theta"):
        bernoulli_lipschitz(theta)


@pytest.mark.parametrize(
    ("lower", "upper", "match"),
    [
        (0.5, None, "need lower < upper"),
        (0.6, None, "need lower < upper"),
        (0.3, 0.2, "need lower < upper"),
        (0.0, 0.5, "lower must satisfy 0 < lower < 1"),
    ],
)
def test_bernoulli_lipschitz_bound_rejects_bad_support(lower, upper, match):
    with pytest.raises(ValueError, match=match):
        bernoulli_lipschitz_bound(lower, upper)


def test_categorical_bound_is_the_supremum_over_the_truncated_simplex():
    a0, k = 0.05, 3
    bound = categorical_lipschitz_bound(a0, k)
    assert categorical_lipschitz_bound(0.2, 2) == pytest.approx(bernoulli_lipschitz_bound(0.2))
    rng = np.random.default_rng(0)
    p = a0 + (1 - k * a0) * rng.dirichlet(np.ones(k), size=20_000)
    ratios = np.log(p.max(axis=1) / p.min(axis=1))
    assert ratios.max() <= bound + 1e-12
    vertex = np.array([1 - (k - 1) * a0, a0, a0])
    assert math.log(vertex.max() / vertex.min()) == pytest.approx(bound)
    assert bound < bayesian_network_lipschitz(a0)  # Lemma 24's ln(1/ε) is an upper bound


@pytest.mark.parametrize(
    ("a0", "k", "match"),
    [
        (0.5, 2, r"truncation a0 must be < 1/2"),
        (1 / 3, 3, r"truncation a0 must be < 1/3"),
        (0.0, 3, r"infinite without a truncation .* give truncation a0 > 0"),
        (0.1, 1, r"need K >= 2 categories, got 1"),
    ],
)
def test_categorical_bound_rejects_bad_input(a0, k, match):
    with pytest.raises(ValueError, match=match):
        categorical_lipschitz_bound(a0, k)


@pytest.mark.parametrize(
    ("eps_min", "lipschitz", "markov"),
    [(0.1, 2.3026, 9.2103), (0.05, 2.9957, 11.983), (0.01, 4.6052, 18.42)],
)
def test_bayesian_network_values_from_lemma_24(eps_min, lipschitz, markov):
    assert bayesian_network_lipschitz(eps_min) == pytest.approx(lipschitz, abs=1e-4)
    # Markov chain: each x_t has out-degree 1, so ‖v‖_∞ = 2 and ε = 4 ln(1/ε_min).
    assert bayesian_network_classical_epsilon(eps_min, [1, 1, 0]) == pytest.approx(markov, abs=1e-3)
    assert posterior_sampling_epsilon(bayesian_network_lipschitz(eps_min)) == pytest.approx(
        2 * lipschitz, abs=1e-3
    )


def test_bayesian_network_whole_record_uses_sum_of_connectivity():
    # v = (2, 3, 1): max 3, sum 6.
    lip = bayesian_network_lipschitz(0.1)
    assert bayesian_network_classical_epsilon(0.1, [1, 2, 0]) == pytest.approx(2 * 3 * lip)
    assert bayesian_network_classical_epsilon(0.1, [1, 2, 0], whole_record=True) == pytest.approx(
        2 * 6 * lip
    )


@pytest.mark.parametrize(
    ("eps_min", "degrees", "match"),
    [
        (0.0, [0], "min_probability must satisfy 0 < min_probability < 1"),
        (1.0, [0], "min_probability must satisfy 0 < min_probability < 1"),
        (0.1, [], "out_degrees must be non-empty integers >= 0"),
        (0.1, [-1], "out_degrees must be non-empty integers >= 0"),
    ],
)
def test_bayesian_network_rejects_bad_input(eps_min, degrees, match):
    with pytest.raises(ValueError, match=match):
        bayesian_network_classical_epsilon(eps_min, degrees)


@pytest.mark.parametrize(("theta", "n"), [(0.3, 5), (0.9, 12), (0.5, 1), (0.02, 40)])
def test_binomial_lipschitz_matches_definition(theta, n):
    logp = stats.binom.logpmf(np.arange(n + 1), n, theta)
    assert binomial_lipschitz(theta, n) == pytest.approx(np.abs(np.diff(logp)).max(), rel=1e-9)


def test_binomial_lipschitz_rejects_bad_input():
    with pytest.raises(ValueError, match="n_trials"):
        binomial_lipschitz(0.3, 0)
    with pytest.raises(ValueError, match="theta"):
        binomial_lipschitz(1.0, 3)


def _max_slope(logpdf, x):
    """sup over pairs on a grid of |Δ log p| / |Δ x| (attained at neighbours on a grid)."""
    return float(np.max(np.abs(np.diff(logpdf(x))) / np.diff(x)))


def test_exponential_and_laplace_lipschitz_match_definition():
    x = np.linspace(0.0, 5.0, 2001)
    assert exponential_lipschitz(1.7) == pytest.approx(
        _max_slope(stats.expon(scale=1 / 1.7).logpdf, x)
    )
    x = np.linspace(-4.0, 6.0, 2001)
    law = stats.laplace(loc=0.3, scale=0.4)
    assert laplace_lipschitz(0.4) == pytest.approx(_max_slope(law.logpdf, x), rel=1e-9)
    with pytest.raises(ValueError, match="rate"):
        exponential_lipschitz(0.0)
    with pytest.raises(ValueError, match="scale"):
        laplace_lipschitz(-1.0)


@pytest.mark.parametrize("mean", [0.0, 0.4, -2.5])
def test_normal_known_mean_lipschitz_bounds_log_ratio(mean):
    precision = 3.0
    lip = normal_known_mean_lipschitz(precision, mean)
    assert lip == pytest.approx(max(abs(mean), 1.0) * precision / 2)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-3, 3, size=(2, 5000))
    law = stats.norm(loc=mean, scale=precision**-0.5)
    rho = np.abs(x**2 - y**2) + 2 * np.abs(x - y)
    assert np.all(np.abs(law.logpdf(x) - law.logpdf(y)) <= lip * rho + 1e-9)
    with pytest.raises(ValueError, match="mean"):
        normal_known_mean_lipschitz(1.0, math.inf)


def test_multivariate_normal_lipschitz_lemma_23():
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert multivariate_normal_lipschitz(a) == pytest.approx(1.1726, abs=1e-4)  # digest value
    mu = np.array([3.0, 4.0])
    lip = multivariate_normal_lipschitz(a, mu)
    assert lip == pytest.approx(5 * 1.1726, abs=5e-4)
    law = stats.multivariate_normal(mean=mu, cov=np.linalg.inv(a))
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-2, 2, size=(2, 3000, 2))
    outer = np.einsum("ni,nj->nij", x, x) - np.einsum("ni,nj->nij", y, y)
    rho = np.linalg.norm(outer, axis=(1, 2)) + 2 * np.linalg.norm(x - y, axis=1)
    assert np.all(np.abs(law.logpdf(x) - law.logpdf(y)) <= lip * rho + 1e-9)


@pytest.mark.parametrize(
    ("precision", "mean", "match"),
    [
        ([[1.0, 2.0], [0.0, 1.0]], None, "precision must be a finite symmetric matrix"),
        ([[1.0, 0.0], [0.0, -1.0]], None, "precision must be positive definite"),
        ([1.0], None, r"precision must be a non-empty square matrix, got shape \(1,\)"),
        ([[1.0, 0.0], [0.0, 1.0]], [1.0], "mean must be a finite vector of length 2"),
    ],
)
def test_multivariate_normal_lipschitz_rejects_bad_input(precision, mean, match):
    with pytest.raises(ValueError, match=match):
        multivariate_normal_lipschitz(precision, mean)


# ------------------------------------------------------------------------------------------
# Example 1 / Figure 1 (digest §4)
# ------------------------------------------------------------------------------------------

FIG1 = {
    (0.2, "uniform"): [(0.4055, 0.5), (1.3863, 1.0)],
    (0.2, "exponential"): [(0.4055, 0.7273), (1.3863, 1.0)],
    (0.05, "uniform"): [
        (0, 0.0526),
        (0.2007, 0.1579),
        (0.4055, 0.2632),
        (0.6190, 0.3684),
        (0.8473, 0.4737),
        (1.0986, 0.5789),
        (1.3863, 0.6842),
        (1.7346, 0.7895),
        (2.1972, 0.8947),
        (2.9444, 1.0),
    ],
    (0.05, "exponential"): [
        (0, 0.1290),
        (0.2007, 0.3401),
        (0.4055, 0.5122),
        (0.6190, 0.6511),
        (0.8473, 0.7617),
        (1.0986, 0.8477),
        (1.3863, 0.9122),
        (1.7346, 0.9577),
        (2.1972, 0.9864),
        (2.9444, 1.0),
    ],
}


@pytest.mark.parametrize(("step", "prior"), list(FIG1))
def test_figure1_step_values(step, prior):
    _, ell, weights = example1_family(step, prior)
    levels, mass = lipschitz_mass(ell, weights)
    expected = np.array(FIG1[(step, prior)])
    np.testing.assert_allclose(levels, expected[:, 0], atol=1e-4)
    np.testing.assert_allclose(mass, expected[:, 1], atol=1e-4)


def test_figure1_trends():
    # Uniform L of Δ = 0.2 is about half that of Δ = 0.05 (1.386 / 2.944 ≈ 0.47).
    ratio = example1_family(0.2)[1].max() / example1_family(0.05)[1].max()
    assert ratio == pytest.approx(0.47, abs=0.005)
    # The exp(-ℓ) prior raises the stochastic-Lipschitz constant c (Fig. 1b vs 1a).
    for step in (0.2, 0.05):
        levels = lipschitz_mass(*example1_family(step)[1:])[0]
        c_uniform = stochastic_lipschitz_c(*example1_family(step)[1:], l0=levels[0])
        c_exp = stochastic_lipschitz_c(*example1_family(step, "exponential")[1:], l0=levels[0])
        assert 0 < c_uniform < c_exp


@pytest.mark.parametrize(
    ("step", "prior"), [(0.05, "uniform"), (0.05, "exponential"), (0.2, "uniform")]
)
@pytest.mark.parametrize("l0", [0.0, 0.3, 0.5, 1.0])
def test_stochastic_lipschitz_c_is_the_largest_valid_constant(step, prior, l0):
    _, ell, weights = example1_family(step, prior)
    c = stochastic_lipschitz_c(ell, weights, l0)
    grid = np.linspace(l0, ell.max() + 1, 20_001)[1:]
    mass = np.array([weights[ell <= g + 1e-12].sum() for g in grid])

    def holds(value):
        return bool(np.all(mass >= 1 - np.exp(-value * (grid - l0)) - 1e-12))

    assert holds(c)
    if c > 0:
        assert not holds(c * 1.01)


def test_stochastic_lipschitz_c_edge_cases():
    _, ell, weights = example1_family(0.2)
    assert stochastic_lipschitz_c(ell, weights, 0.1) == 0.0  # no mass just above L0
    assert stochastic_lipschitz_c(ell, weights, 2.0) == math.inf  # all mass below L0
    with pytest.raises(ValueError, match="l0"):
        stochastic_lipschitz_c(ell, weights, -1.0)


@pytest.mark.parametrize(
    ("ell", "weights", "match"),
    [
        ([], [], "must be non-empty and of equal length"),
        ([1.0], [0.5], "weights must be >= 0 and sum to 1"),
        ([1.0, -1.0], [0.5, 0.5], "lipschitz_values must be finite and >= 0"),
        ([1.0], [1.0, 0.0], "must be non-empty and of equal length"),
    ],
)
def test_lipschitz_mass_rejects_bad_input(ell, weights, match):
    with pytest.raises(ValueError, match=match):
        lipschitz_mass(ell, weights)


@pytest.mark.parametrize(
    ("step", "prior", "match"),
    [
        (0.3, "uniform", r"1/step must be an integer >= 2, got step=0\.3"),
        (1.0, "uniform", "step must satisfy 0 < step < 1"),
        (0.2, "flat", "prior must be 'uniform' or 'exponential', got 'flat'"),
    ],
)
def test_example1_family_rejects_bad_input(step, prior, match):
    with pytest.raises(ValueError, match=match):
        example1_family(step, prior)


# ------------------------------------------------------------------------------------------
# Theorems 7 and 8 on an exact posterior (Example 1, Δ = 0.2, uniform prior)
# ------------------------------------------------------------------------------------------


def _posterior(theta, prior, data):
    logp = np.log(prior) + sum(stats.bernoulli.logpmf(x, theta) for x in data)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_theorems_7_and_8_hold_on_example1_posteriors():
    theta, ell, prior = example1_family(0.2)
    lip = float(ell.max())
    worst_kl = worst_log_ratio = 0.0
    for data in itertools.product([0, 1], repeat=3):
        for i in range(3):
            other = list(data)
            other[i] = 1 - other[i]  # Hamming distance 1
            p, q = _posterior(theta, prior, data), _posterior(theta, prior, other)
            worst_kl = max(worst_kl, float(np.sum(p * np.log(p / q))))
            worst_log_ratio = max(worst_log_ratio, float(np.max(np.log(p / q))))
    assert worst_kl <= kl_robustness_bound(lip)  # Theorem 7.1
    assert worst_log_ratio <= posterior_sampling_epsilon(lip) + 1e-12  # Theorem 8.1
    assert worst_log_ratio > lip  # the factor 2 of 2L is needed here


def test_kl_bounds_closed_forms():
    assert kl_robustness_bound(1.5, 2.0) == pytest.approx(6.0)
    assert kl_robustness_bound_stochastic(2.0, 0.5, 3.0, 2.0) == pytest.approx(3 * 2.5 * 2)
    with pytest.raises(ValueError, match="c > 1"):
        kl_robustness_bound_stochastic(1.0, 0.5, 3.0)
    with pytest.raises(ValueError, match="distance"):
        kl_robustness_bound(1.0, -1.0)


# ------------------------------------------------------------------------------------------
# Assumption 2 (Lemmas 19, 21, 22; Theorem 8.2; Corollary 9)
# ------------------------------------------------------------------------------------------


def test_lemma_19_constants_and_delta():
    k = exponential_assumption2_constants(2.0, 0.5, 2.0, 1.0)
    assert (k.c, k.l0) == (2.0, 0.5)
    assert k.C == pytest.approx(math.exp(2.0))
    with pytest.warns(VacuousBoundWarning):
        assert k.delta() == pytest.approx(3.039, abs=1e-3)


def test_lemma_19_constant_bounds_the_exact_ratio():
    lam, c1, c2, b = 2.0, 0.5, 2.0, 1.0
    theta = np.linspace(c1, c2, 4001)
    prior = lam * np.exp(-lam * theta)
    prior /= np.trapezoid(prior, theta)
    exact = 0.0
    for x in np.linspace(0.0, b, 101):
        lik = theta * np.exp(-theta * x)
        exact = max(exact, lik.max() / np.trapezoid(lik * prior, theta))
    assert 1.0 <= exact <= exponential_assumption2_constants(lam, c1, c2, b).C


def test_lemma_22_constants_as_printed():
    k = normal_known_mean_assumption2_constants(2.0, 0.5, 2.0, 0.0)
    assert (k.c, k.l0) == (4.0, 0.25)
    assert k.C == pytest.approx(5.4366, abs=1e-4)
    with pytest.warns(VacuousBoundWarning):
        assert k.delta() == pytest.approx(2.181, abs=1e-3)
    k = normal_known_mean_assumption2_constants(2.0, 0.5, 2.0, -3.0)
    assert (k.c, k.l0) == pytest.approx((4.0 / 3.0, 0.75))


@pytest.mark.parametrize(
    ("alpha", "c"),
    [
        (1.5, 0.6366),
        (2, 0.75),
        (3, 0.9375),
        (4, 1.0938),
        (5, 1.2305),
        (6, 1.3535),
        (8, 1.571),
        (10, 1.762),
        (20, 2.507),
        (50, 3.980),
    ],
)
def test_lemma_21_c_table(alpha, c):
    assert beta_binomial_assumption2_constants(alpha, 3).c == pytest.approx(c, abs=1e-3)


@pytest.mark.parametrize(
    ("alpha", "n", "big_c", "delta"),
    [(5, 1, 2.0, 1.346), (5, 5, 38.1, 9.79), (5, 10, 1428, 67.7), (10, 1, 2.0, 1.25)],
)
def test_lemma_21_c_and_delta(alpha, n, big_c, delta):
    k = beta_binomial_assumption2_constants(alpha, n)
    assert k.l0 == pytest.approx(math.log(n))
    assert k.C == pytest.approx(big_c, rel=2e-3)
    with pytest.warns(VacuousBoundWarning):
        assert k.delta() == pytest.approx(delta, rel=2e-3)


def test_lemma_21_c_blows_up_and_bounds_the_exact_ratio():
    assert beta_binomial_assumption2_constants(5, 100).C == pytest.approx(4.3e30, rel=0.05)
    assert beta_binomial_assumption2_constants(5, 10**6).C == math.inf
    for alpha, n in [(2, 2), (2, 5), (5, 5), (5, 10)]:
        k = np.arange(n + 1)
        p = k / n
        with np.errstate(divide="ignore", invalid="ignore"):
            log_sup = np.nan_to_num(k * np.log(p)) + np.nan_to_num((n - k) * np.log1p(-p))
        log_marginal = special.betaln(k + alpha, n - k + alpha) - special.betaln(alpha, alpha)
        exact = np.exp(log_sup - log_marginal).max()
        assert exact <= beta_binomial_assumption2_constants(alpha, n).C


def test_lemma_21_needs_alpha_above_4_for_theorem_8_2():
    with pytest.raises(ValueError, match="c > 1"):
        beta_binomial_assumption2_constants(3, 1).delta()
    with pytest.raises(ValueError, match="alpha > 1"):
        beta_binomial_assumption2_constants(1.0, 1)


def test_stochastic_delta_formula_and_no_warning_when_informative():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert stochastic_posterior_delta(10.0, 0.0, 1.0) == pytest.approx(math.sqrt(0.55))
    with pytest.warns(VacuousBoundWarning, match="vacuous"):
        stochastic_posterior_delta(2.0, 1.0, 1.0)


@given(st.floats(1.01, 100), st.floats(0, 10), st.floats(1, 100))
def test_stochastic_delta_is_at_least_sqrt_half(c, l0, big_c):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        delta = stochastic_posterior_delta(c, l0, big_c)
    assert delta >= math.sqrt(0.5)
    assert delta**2 == pytest.approx(kl_robustness_bound_stochastic(c, l0, big_c) / 2)


@pytest.mark.parametrize(
    ("c", "l0", "big_c", "match"),
    [
        (1.0, 0.0, 1.0, "c > 1"),
        (0.5, 0.0, 1.0, "c > 1"),
        (0.0, 0.0, 1.0, "c must"),
        (2.0, -1.0, 1.0, "l0"),
        (2.0, 0.0, 0.5, "C must"),
        (2.0, 0.0, math.nan, "C must"),
    ],
)
def test_stochastic_delta_rejects_bad_constants(c, l0, big_c, match):
    with pytest.raises(ValueError, match=match):
        stochastic_posterior_delta(c, l0, big_c)


def test_assumption2_constants_validate():
    with pytest.raises(ValueError, match=r"C must be >= 1 .* got 0\.9"):
        Assumption2Constants(c=1.0, l0=0.0, C=0.9)
    with pytest.raises(ValueError, match="lower < upper"):
        exponential_assumption2_constants(2.0, 2.0, 1.0, 1.0)


def test_random_dp_failure_probability_corollary_9():
    assert random_dp_failure_probability(3.0, 2.0, 1.0) == pytest.approx(math.exp(-4.0))
    assert random_dp_failure_probability(1.0, 2.0, 1.0) == 1.0
    with pytest.raises(ValueError, match="L >= L0"):
        random_dp_failure_probability(0.5, 2.0, 1.0)
    with pytest.raises(ValueError, match="c > 1"):
        random_dp_failure_probability(3.0, 0.9, 1.0)


# ------------------------------------------------------------------------------------------
# Theorem 13 and Lemma 11
# ------------------------------------------------------------------------------------------


def test_theorem_13_thresholds():
    assert distinguishability_threshold(100, 0.05, 1.0) == pytest.approx(0.02247, abs=1e-5)
    expected = 6 * math.log(20) / (100 * (math.e / 2 + 1))
    assert distinguishability_threshold_stochastic(100, 0.05, 2.0, math.e) == pytest.approx(
        expected
    )


@given(st.integers(1, 10_000), DELTA, POSITIVE)
def test_theorem_13_threshold_shrinks_like_one_over_n(n, delta, lipschitz):
    one = distinguishability_threshold(n, delta, lipschitz)
    assert distinguishability_threshold(2 * n, delta, lipschitz) == pytest.approx(one / 2)


def test_lemma_11_gap():
    assert psaqr_utility_gap(100, 0.05) == pytest.approx(0.2716, abs=1e-4)
    assert psaqr_utility_gap(400, 0.05) == pytest.approx(0.2716 / 2, abs=1e-4)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0])
def test_delta_must_be_in_open_unit_interval(delta):
    for call in (
        lambda: distinguishability_threshold(10, delta, 1.0),
        lambda: distinguishability_threshold_stochastic(10, delta, 2.0, 2.0),
        lambda: psaqr_utility_gap(10, delta),
        lambda: minami_beta(1.0, delta, 1.0, 1.0),
        lambda: minami_epsilon(0.5, delta, 1.0, 1.0),
    ):
        with pytest.raises(ValueError, match="delta"):
            call()


# ------------------------------------------------------------------------------------------
# Minami et al.
# ------------------------------------------------------------------------------------------


def _beta_by_brentq(epsilon, delta, lipschitz, m):
    """Numerical inversion of eq. 6: the β at which the tail bound equals δ (capped at 1)."""

    def gap(beta):
        return math.log(minami_tail_bound(epsilon, beta, lipschitz, m)) - math.log(delta)

    hi = min(1.0, math.sqrt(epsilon * m / 2) / lipschitz * (1 - 1e-12))
    if gap(hi) <= 0:
        return hi
    lo = hi / 2
    while gap(lo) > 0:
        lo /= 2
    return optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=1e-13)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
@pytest.mark.parametrize(("lipschitz", "m"), [(1.0, 1.0), (math.sqrt(2.0), 0.3)])
def test_minami_beta_exact_inverts_eq6(epsilon, delta, lipschitz, m):
    beta = minami_beta(epsilon, delta, lipschitz, m)
    assert beta == pytest.approx(_beta_by_brentq(epsilon, delta, lipschitz, m), rel=1e-9)
    if beta < 1:
        assert minami_tail_bound(epsilon, beta, lipschitz, m) == pytest.approx(delta, rel=1e-6)
        assert minami_tail_bound(epsilon, beta * (1 + 1e-4), lipschitz, m) > delta


def test_minami_digest_examples():
    # ε = 2, δ = 1e-5, L = m_π = 1.
    assert minami_beta(2, 1e-5, 1, 1) == pytest.approx(0.20006, abs=1e-5)
    with pytest.warns(UserWarning, match="Corollary 8"):
        cor8 = minami_beta(2, 1e-5, 1, 1, method="corollary8")
    assert cor8 == pytest.approx(0.20401, abs=1e-5)
    assert minami_tail_bound(2, cor8, 1, 1) == pytest.approx(1.62e-5, rel=0.01)
    # ε = 5, δ = 1e-3.
    assert minami_beta(5, 1e-3, 1, 1) == pytest.approx(0.5816, abs=1e-4)
    with pytest.warns(UserWarning, match="Corollary 8"):
        cor8 = minami_beta(5, 1e-3, 1, 1, method="corollary8")
    assert cor8 == pytest.approx(0.6495, abs=1e-4)
    assert minami_tail_bound(5, cor8, 1, 1) == pytest.approx(6.0e-3, rel=0.02)
    # For ε < 1 Corollary 8 is slightly conservative.
    for eps, ratio in [(0.1, 1.019), (1.0, 1.0002)]:
        exact = minami_beta(eps, 1e-5, 1, 1)
        assert exact / minami_beta(eps, 1e-5, 1, 1, method="corollary8") == pytest.approx(
            ratio, abs=1e-3
        )


@pytest.mark.parametrize(
    ("delta", "eps_max"),
    [(1e-2, 1.0258), (1e-3, 1.0175), (1e-5, 1.0106), (1e-6, 1.0089), (1e-8, 1.0067)],
)
def test_corollary8_epsilon_max(delta, eps_max):
    assert minami_corollary8_epsilon_max(delta) == pytest.approx(eps_max, abs=1e-4)


@given(st.floats(1e-3, 1.0), st.floats(1e-10, 0.5))
def test_corollary8_is_valid_up_to_epsilon_1(epsilon, delta):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        beta = minami_beta(epsilon, delta, 1.0, 1.0, method="corollary8")
    assert beta <= minami_beta(epsilon, delta, 1.0, 1.0) * (1 + 1e-12)
    assert minami_tail_bound(epsilon, beta, 1.0, 1.0) <= delta * (1 + 1e-9)


@given(st.floats(1.03, 8.0), st.floats(1e-10, 1e-2))
def test_corollary8_is_invalid_above_epsilon_1(epsilon, delta):
    # m_π small enough that neither β is capped at 1.
    m = 1e-3
    with pytest.warns(UserWarning, match="Corollary 8"):
        beta = minami_beta(epsilon, delta, 1.0, m, method="corollary8")
    assert beta > minami_beta(epsilon, delta, 1.0, m)
    assert minami_tail_bound(epsilon, beta, 1.0, m) > delta  # not (ε, δ)-DP by Theorem 7


@given(EPS, DELTA, POSITIVE, POSITIVE)
def test_minami_round_trip(epsilon, delta, lipschitz, m):
    beta = minami_beta(epsilon, delta, lipschitz, m)
    assert 0 < beta <= 1
    eps_back = minami_epsilon(beta, delta, lipschitz, m)
    if beta < 1:
        assert eps_back == pytest.approx(epsilon, rel=1e-9)
    else:  # capped: β = 1 costs no more than ε
        assert eps_back <= epsilon * (1 + 1e-9)


@given(st.floats(1e-3, 1.0), DELTA, POSITIVE, POSITIVE)
def test_minami_epsilon_inverts_beta(beta, delta, lipschitz, m):
    epsilon = minami_epsilon(beta, delta, lipschitz, m)
    assert minami_beta(epsilon, delta, lipschitz, m) == pytest.approx(beta, rel=1e-9)


@given(EPS, EPS, DELTA, POSITIVE, POSITIVE)
def test_minami_beta_increasing_in_epsilon_and_capped(e1, e2, delta, lipschitz, m):
    lo, hi = sorted((e1, e2))
    b_lo, b_hi = minami_beta(lo, delta, lipschitz, m), minami_beta(hi, delta, lipschitz, m)
    assert b_lo <= b_hi <= 1.0


@given(EPS, DELTA, DELTA, POSITIVE, POSITIVE)
def test_minami_beta_increasing_in_delta(epsilon, d1, d2, lipschitz, m):
    lo, hi = sorted((d1, d2))
    assert minami_beta(epsilon, lo, lipschitz, m) <= minami_beta(epsilon, hi, lipschitz, m)


@given(EPS, DELTA, POSITIVE, POSITIVE, st.floats(1.0, 10.0))
def test_minami_beta_shrinkage_and_lipschitz_monotonicity(epsilon, delta, lipschitz, m, k):
    beta = minami_beta(epsilon, delta, lipschitz, m)
    assert minami_beta(epsilon, delta, lipschitz, m * k) >= beta  # stronger prior: larger β
    assert minami_beta(epsilon, delta, lipschitz * k, m) <= beta  # rougher loss: smaller β


def test_minami_beta_capped_at_one():
    assert minami_beta(1.0, 1e-5, 1.0, 1e6) == 1.0
    assert minami_beta(1.0, 1e-5, 1.0, 1e6, method="corollary8") == 1.0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0, 1e-5, 1.0, 1.0), "epsilon"),
        ((-1.0, 1e-5, 1.0, 1.0), "epsilon"),
        ((math.inf, 1e-5, 1.0, 1.0), "epsilon"),
        ((1.0, 1e-5, 0.0, 1.0), "lipschitz"),
        ((1.0, 1e-5, 1.0, -2.0), "strong_convexity"),
    ],
)
def test_minami_beta_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        minami_beta(*args)


def test_minami_rejects_unknown_method_and_bad_beta():
    with pytest.raises(ValueError, match="method"):
        minami_beta(1.0, 1e-5, 1.0, 1.0, method="approx")
    for beta in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError, match="beta"):
            minami_epsilon(beta, 1e-5, 1.0, 1.0)


def test_logistic_regression_lipschitz_needs_the_intercept_term():
    r = 2.0
    assert logistic_regression_lipschitz(r) == pytest.approx(math.sqrt(5.0))
    assert logistic_regression_lipschitz(r, intercept=False) == r
    # Gradient of log(1 + exp(-y(aᵀz + b))) in (a, b) is -yσ(-y(aᵀz+b))·(z, 1); with
    # ‖z‖ = r and a badly misclassified point its norm approaches √(r² + 1) > r.
    z = np.array([r, 0.0])
    theta = -20.0 * np.append(z, 1.0)  # y = +1
    margin = theta[:2] @ z + theta[2]
    grad = -special.expit(-margin) * np.append(z, 1.0)
    assert r < np.linalg.norm(grad) <= logistic_regression_lipschitz(r)
    with pytest.raises(ValueError, match="feature_norm_bound"):
        logistic_regression_lipschitz(0.0)


def test_gaussian_prior_strong_convexity():
    assert gaussian_prior_strong_convexity(sigma=2.0) == pytest.approx(0.25)
    cov = np.array([[4.0, 0.0], [0.0, 1.0]])
    assert gaussian_prior_strong_convexity(covariance=cov) == pytest.approx(0.25)
    for kwargs, match in (
        ({}, "give exactly one of sigma and covariance"),
        ({"sigma": 1.0, "covariance": cov}, "give exactly one of sigma and covariance"),
        ({"sigma": 0.0}, "sigma must be a finite number > 0"),
        ({"covariance": [[1.0, 0.0], [0.0, -1.0]]}, "covariance must be positive definite"),
    ):
        with pytest.raises(ValueError, match=match):
            gaussian_prior_strong_convexity(**kwargs)


def test_approximate_sampling_delta_proposition_12():
    assert approximate_sampling_delta(1.0, 1e-5, 1e-6) == pytest.approx(1e-5 + (1 + math.e) * 1e-6)
    assert approximate_sampling_delta(1.0, 0.0, 0.0) == 0.0
    with pytest.warns(VacuousBoundWarning):
        approximate_sampling_delta(5.0, 0.0, 0.01)
    for args, match in (
        ((0.0, 0.0, 0.1), "epsilon must be a finite number > 0"),
        ((1.0, 1.0, 0.1), "delta must satisfy 0 <= delta < 1"),
        ((1.0, -0.1, 0.1), "delta must satisfy 0 <= delta < 1"),
        ((1.0, 0.0, 1.5), "tv_distance must be <= 1"),
    ):
        with pytest.raises(ValueError, match=match):
            approximate_sampling_delta(*args)


@given(st.floats(0.1, 3.0), st.floats(0.0, 0.04))
def test_approximate_sampling_delta_is_attained_by_a_perturbed_mechanism(epsilon, gamma):
    # Randomised response on one bit is (ε, 0)-DP. Moving mass γ (in TV) towards output 0 under
    # D and away from it under D' gives a hockey-stick divergence of exactly (1 + e^ε)γ.
    p = np.array([math.exp(epsilon), 1.0]) / (1 + math.exp(epsilon))
    q = p[::-1]
    p_approx = p + np.array([gamma, -gamma])
    q_approx = q + np.array([-gamma, gamma])
    hockey = np.clip(p_approx - math.exp(epsilon) * q_approx, 0, None).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VacuousBoundWarning)
        bound = approximate_sampling_delta(epsilon, 0.0, gamma)
    assert hockey <= bound + 1e-12
    assert hockey == pytest.approx(bound, abs=1e-12)
