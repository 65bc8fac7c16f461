"""Bounded families (Poisson, Normal with unknown mean and sd, linear regression): statistics,
sensitivities against brute force, moments, plug-in likelihoods, projection, noise-aware pieces."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, special, stats
from scipy.special import gammaln

from pymc_dp import InvalidPrivateDataError
from pymc_dp.families import BOUNDED_FAMILIES, BoundedLink, BoundedStructure
from pymc_dp.families.poisson import poisson_laplace_closed_form, poisson_laplace_log_marginal
from pymc_dp.families.second_moments import (
    entry_sensitivity,
    gaussian_release_log_likelihood,
    gaussian_second_moments,
    log_normal_laplace,
    project_second_moments,
    replace_one_maximiser,
    second_moment_matrix,
    second_moment_statistics,
    two_component_laplace_log_likelihood,
)

NORMAL, POISSON, REGRESSION = (
    BOUNDED_FAMILIES[name] for name in ("normal", "poisson", "linear-regression")
)
NEIGHBOURING = ("replace-one", "add-remove-one")


def normal_link(values, bounds=(-2.0, 3.0), clamp=()):
    structure = BoundedStructure("x", NORMAL, bounds, {}, clamp=frozenset(clamp))
    return BoundedLink(structure, np.asarray(values, dtype=float))


def poisson_link(counts, groups=None, n_groups=1, bounds=(0, 7), clamp=()):
    structure = BoundedStructure(
        "y",
        POISSON,
        bounds,
        {},
        n_groups=n_groups,
        grouped=n_groups > 1,
        clamp=frozenset(clamp),
    )
    return BoundedLink(structure, np.asarray(counts), groups=groups)


def regression_link(y, x, bounds=(-1.0, 4.0), low=(0.0, -1.0), high=(2.0, 1.0), clamp=()):
    structure = BoundedStructure(
        "y",
        REGRESSION,
        bounds,
        {},
        covariates="X",
        covariate_bounds=(np.asarray(low, float), np.asarray(high, float)),
        clamp=frozenset(clamp),
    )
    return BoundedLink(structure, np.asarray(y, float), covariates=np.asarray(x, float))


# --- sensitivity: brute force over extreme records -----------------------------------------
def _released(link, neighbouring):
    """The released vector without noise: the family's weights times the statistics."""
    family = link.family
    index = family.released_components(link.structure, neighbouring)
    return family.statistics(link)[:, index] * family.weights(link.structure, neighbouring)[index]


def _brute_force(single, records, neighbouring, norm=1):
    """max ||S(D) − S(D')|| (L1 or L2) over neighbours: statistics are sums, so a replaced
    record moves them by t(r) − t(r'), an added one by t(r)."""
    released = np.stack([_released(single(r), neighbouring).ravel() for r in records])
    if neighbouring == "add-remove-one":
        moves = released
    else:
        moves = (released[:, None, :] - released[None, :, :]).reshape(-1, released.shape[1])
    return float(np.max(np.linalg.norm(moves, ord=norm, axis=1)))


def _interior(rng, low, high, size):
    return rng.uniform(low, high, size)


@pytest.mark.parametrize("neighbouring", NEIGHBOURING)
def test_normal_sensitivity_is_the_brute_force_maximum(neighbouring):
    # a grid of step 1/2000 of the range: the replace-one maximum is reached at an interior
    # record (w = (c₂ − c₁)/(2c₂) − ½ on the centred scale), which the grid passes within 1/4000
    records = np.linspace(-2.0, 3.0, 2001)
    found = _brute_force(lambda r: normal_link([r]), records, neighbouring)
    stated = NORMAL.sensitivity(normal_link([0.0]).structure, neighbouring)
    assert found <= stated + 1e-12
    if neighbouring == "add-remove-one":
        assert found == pytest.approx(1.0, abs=1e-12)  # the record at the upper bound
    else:
        assert found == pytest.approx(stated, abs=1e-5)
        assert stated == pytest.approx(3.1**2 / 11.2, rel=1e-12)  # (c₁ + c₂)²/(4c₂)


@pytest.mark.parametrize("neighbouring", NEIGHBOURING)
@pytest.mark.parametrize("n_groups", [1, 3])
def test_poisson_sensitivity_is_the_brute_force_maximum(neighbouring, n_groups):
    records = [(y, g) for y in range(8) for g in range(n_groups)]

    def single(record):
        y, g = record
        groups = np.array([g]) if n_groups > 1 else None
        return poisson_link([y], groups=groups, n_groups=n_groups)

    found = _brute_force(single, records, neighbouring)
    structure = single(records[0]).structure
    assert POISSON.sensitivity(structure, neighbouring) == found
    expected = {("replace-one", 1): 1.0, ("replace-one", 3): 4.0}.get((neighbouring, n_groups), 2.0)
    assert found == expected


@pytest.mark.parametrize("neighbouring", NEIGHBOURING)
def test_regression_sensitivity_is_the_brute_force_maximum(neighbouring):
    rng = np.random.default_rng(1)
    corners = [(y, (x0, x1)) for y in (-1.0, 4.0) for x0 in (0.0, 2.0) for x1 in (-1.0, 1.0)]
    interior = [
        (float(_interior(rng, -1, 4, ())), tuple(_interior(rng, [0, -1], [2, 1], 2)))
        for _ in range(10)
    ]
    found = _brute_force(
        lambda r: regression_link([r[0]], [r[1]]), corners + interior, neighbouring
    )
    structure = regression_link([0.0], [[1.0, 0.0]]).structure
    stated = REGRESSION.sensitivity(structure, neighbouring)
    assert found <= stated + 1e-12
    if neighbouring == "add-remove-one":
        # Σ_j c_j Δ_j = Σ shares = 1: reached by adding the record at every upper bound
        assert stated == pytest.approx(1.0, rel=1e-12)
        assert found == pytest.approx(stated, rel=1e-12)
    else:
        # the exact maximum, below the triangle bound 1; reached by the record at every upper
        # bound against w′ = a* − ½ (replace_one_maximiser), not by corners alone
        assert stated == pytest.approx(0.6401394422310758, rel=1e-9)
        _, a = replace_one_maximiser(3, REGRESSION.weights(structure, neighbouring))
        low, high = np.array([-1.0, 0.0, -1.0]), np.array([4.0, 2.0, 1.0])  # y, x0, x1
        worst = low + (high - low) * (np.array([a[2], a[0], a[1]]))  # w′ + ½ on [lo, hi]
        pair = [(4.0, (2.0, 1.0)), (worst[0], (worst[1], worst[2]))]
        reached = _brute_force(lambda r: regression_link([r[0]], [r[1]]), pair, neighbouring)
        assert reached == pytest.approx(stated, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(
    q=st.integers(1, 4),
    raw=st.lists(st.floats(0.01, 5.0), min_size=15, max_size=15),
    seed=st.integers(0, 2**32 - 1),
)
def test_replace_one_maximum_bounds_every_pair_and_is_reached(q, raw, seed):
    """For any positive weights: no pair of centred records moves the weighted second moments
    by more than the stated maximum (random pairs, corners and local searches), and the pair
    it names reaches it."""
    d = (q + 1) * (q + 2) // 2
    weights = np.array([0.0, *raw[: d - 1]])
    stated, a = replace_one_maximiser(q, weights)

    def moved(w, w2):
        return float(
            np.abs(
                weights * (second_moment_statistics(w[None]) - second_moment_statistics(w2[None]))
            ).sum()
        )

    rng = np.random.default_rng(seed)
    pairs = rng.uniform(-0.5, 0.5, (400, 2, q))
    pairs[:100] = rng.choice([-0.5, 0.0, 0.5], size=(100, 2, q))
    assert max(moved(w, w2) for w, w2 in pairs) <= stated * (1 + 1e-12)
    best = optimize.minimize(
        lambda x: -moved(x[:q], x[q:]),
        rng.uniform(-0.5, 0.5, 2 * q),
        bounds=[(-0.5, 0.5)] * (2 * q),
        method="L-BFGS-B",
    )
    assert -best.fun <= stated * (1 + 1e-9)
    assert moved(np.full(q, 0.5), a - 0.5) == pytest.approx(stated, rel=1e-9)
    if q == 1:  # the closed form
        c1, c2 = weights[1:]
        assert stated == pytest.approx(c1 if c2 <= c1 else (c1 + c2) ** 2 / (4 * c2), rel=1e-12)


def test_every_per_record_component_lies_within_its_stated_range():
    rng = np.random.default_rng(2)
    corners = [(y, (x0, x1)) for y in (-1.0, 4.0) for x0 in (0.0, 2.0) for x1 in (-1.0, 1.0)]
    corners.append((1.5, (1.0, 0.0)))  # the midpoint: every square at 0
    y = np.concatenate([rng.uniform(-1, 4, 50), [c[0] for c in corners]])
    x = np.concatenate([rng.uniform([0, -1], [2, 1], (50, 2)), [c[1] for c in corners]])
    link = regression_link(y, x)
    w = REGRESSION.unit_records(link) - 0.5
    per_record = np.stack([second_moment_statistics(row[None, :]) for row in w])
    add = entry_sensitivity(3, "add-remove-one")  # the largest magnitude of each entry
    replace = entry_sensitivity(3, "replace-one")  # the largest change of each entry
    assert np.all(np.abs(per_record) <= add + 1e-15)
    np.testing.assert_allclose(np.abs(per_record).max(axis=0), add)  # the corners reach it
    spread = per_record.max(axis=0) - per_record.min(axis=0)
    assert np.all(spread[1:] <= replace[1:] + 1e-15)
    np.testing.assert_allclose(spread[1:], replace[1:])
    np.testing.assert_allclose(per_record.sum(axis=0), REGRESSION.statistics(link)[0])


# --- statistics ----------------------------------------------------------------------------
def test_normal_statistics_are_n_sum_and_sum_of_squares_centred_on_the_midpoint():
    x = np.array([-2.0, 0.5, 3.0, 1.0])
    u = (x + 2) / 5 - 0.5
    np.testing.assert_allclose(NORMAL.statistics(normal_link(x)), [[4, u.sum(), (u**2).sum()]])
    assert NORMAL.component_names(normal_link(x).structure) == ["n", "sum(u)", "sum(u*u)"]


def test_regression_statistics_are_the_upper_triangle_of_zzT():
    rng = np.random.default_rng(3)
    y, x = rng.uniform(-1, 4, 30), rng.uniform([0, -1], [2, 1], (30, 2))
    z = np.column_stack([np.ones(30), x[:, 0] / 2, (x[:, 1] + 1) / 2, (y + 1) / 5])
    z[:, 1:] -= 0.5  # centred on the declared midpoints
    gram = z.T @ z
    stats_ = REGRESSION.statistics(regression_link(y, x))[0]
    np.testing.assert_allclose(second_moment_matrix(stats_, 3), gram)
    names = REGRESSION.component_names(regression_link(y, x).structure)
    assert names[:4] == ["n", "sum(X[0])", "sum(X[1])", "sum(y)"]
    assert names[-1] == "sum(y*y)" and len(names) == 10


def test_poisson_statistics_are_group_counts_and_scaled_sums():
    counts, groups = np.array([0, 7, 3, 2, 5]), np.array([0, 2, 2, 0, 2])
    table = POISSON.statistics(poisson_link(counts, groups, n_groups=3))
    np.testing.assert_allclose(table, [[2, 2 / 7], [0, 0], [3, 15 / 7]])


# --- records: bad input and clamping ------------------------------------------------------
def test_out_of_bound_values_are_refused_with_a_count_and_no_values():
    with pytest.raises(InvalidPrivateDataError, match="x: 2 values outside") as error:
        normal_link([-2.5, 0.0, 3.25]).validate()
    assert "2.5" not in str(error.value) and "3.25" not in str(error.value)
    with pytest.raises(InvalidPrivateDataError, match="X: 1 covariate values outside"):
        regression_link([0.0, 1.0], [[0.5, 0.0], [2.5, 0.0]]).validate()
    with pytest.raises(InvalidPrivateDataError, match="y: 1 counts outside"):
        poisson_link([0, 8]).validate()


def test_non_finite_and_fractional_records_are_refused_even_when_clamping():
    with pytest.raises(InvalidPrivateDataError, match="1 values are NaN or infinite"):
        normal_link([0.0, np.inf], clamp=["x"]).validate()
    with pytest.raises(InvalidPrivateDataError, match="NaN"):
        poisson_link(np.array([1.0, np.nan]), clamp=["y"]).validate()
    with pytest.raises(InvalidPrivateDataError, match="whole numbers"):
        poisson_link(np.array([1.0, 2.5]), clamp=["y"]).validate()


def test_clamping_computes_the_statistics_of_the_clamped_records():
    x = np.array([-5.0, 0.0, 9.0])
    np.testing.assert_allclose(
        NORMAL.statistics(normal_link(x, clamp=["x"])), NORMAL.statistics(normal_link([-2, 0, 3]))
    )
    link = regression_link([9.0], [[5.0, -3.0]], clamp=["X"])
    with pytest.raises(InvalidPrivateDataError, match="y: 1 values"):
        link.validate()  # only the covariates were opted in
    clamped = regression_link([9.0], [[5.0, -3.0]], clamp=["X", "y"])
    assert clamped.structure.clamping() == "y to [-1, 4]; X to [(0, -1), (2, 1)] per column"
    np.testing.assert_allclose(
        REGRESSION.statistics(clamped), REGRESSION.statistics(regression_link([4.0], [[2, -1]]))
    )


# --- moments of z zᵀ (Isserlis) ----------------------------------------------------------
def test_second_moments_of_one_normal_variable_match_the_closed_form():
    m, s = 0.3, 0.2
    mean_t, cov_t = gaussian_second_moments(np.array([m]), np.array([[s**2]]), 1)
    np.testing.assert_allclose(mean_t.eval(), [1, m, m**2 + s**2])
    expected = np.array(
        [
            [0, 0, 0],
            [0, s**2, 2 * m * s**2],
            [0, 2 * m * s**2, 4 * m**2 * s**2 + 2 * s**4],
        ]
    )
    np.testing.assert_allclose(cov_t.eval(), expected, atol=1e-15)


def test_second_moments_of_a_normal_vector_match_monte_carlo():
    rng = np.random.default_rng(4)
    mean = np.array([0.4, 0.6, 0.5])
    a = rng.normal(size=(3, 3)) * 0.1
    cov = a @ a.T + 0.01 * np.eye(3)
    w = rng.multivariate_normal(mean, cov, size=400_000)
    z = np.column_stack([np.ones(len(w)), w])
    j, k = np.triu_indices(4)
    t = z[:, j] * z[:, k]
    mean_t, cov_t = (v.eval() for v in gaussian_second_moments(mean, cov, 3))
    root_n = np.sqrt(len(t))
    assert np.all(np.abs(t.mean(axis=0) - mean_t) <= 6 * t.std(axis=0) / root_n + 1e-12)
    centred = t - t.mean(axis=0)
    for c, d in zip(*np.triu_indices(t.shape[1]), strict=True):
        product = centred[:, c] * centred[:, d]  # its mean estimates Cov(t_c, t_d)
        assert abs(product.mean() - cov_t[c, d]) <= 6 * product.std() / root_n + 1e-12


# --- plug-in log-likelihood = PyMC's log-likelihood on exact statistics ------------------
def _float64(value):
    """A float64 constant (PyTensor makes a Python 0.5 a float32 one)."""
    return pt.as_tensor(np.float64(value))


def _logp_of_observed(model, point):
    return float(model.compile_logp(vars=model.observed_RVs, jacobian=False)(point))


def test_normal_plugin_log_likelihood_equals_the_model_logp():
    rng = np.random.default_rng(5)
    x = np.clip(rng.normal(1.0, 0.8, 40), -2, 3)
    link = normal_link(x)
    with pm.Model() as model:
        mu = pm.Normal("mu")
        sigma = pm.HalfNormal("sigma")
        pm.Normal("x", mu, sigma, observed=x)
    table = pt.as_tensor(NORMAL.statistics(link))
    for mu_value, sigma_value in [(0.7, 0.5), (-1.0, 2.0), (2.9, 0.05)]:
        potential = NORMAL.plugin_log_likelihood(
            {"mu": _float64(mu_value), "sigma": _float64(sigma_value)},
            table,
            link.structure,
        ).eval()
        point = {"mu": mu_value, "sigma_log__": np.log(sigma_value)}
        assert potential == pytest.approx(_logp_of_observed(model, point), rel=1e-10)
        assert potential == pytest.approx(stats.norm(mu_value, sigma_value).logpdf(x).sum())


@pytest.mark.parametrize("intercept", [True, False])
def test_regression_plugin_log_likelihood_equals_the_model_logp(intercept):
    rng = np.random.default_rng(6)
    x = rng.uniform([0, -1], [2, 1], (50, 2))
    y = np.clip(0.5 + x @ [1.0, -0.7] + rng.normal(0, 0.3, 50), -1, 4)
    link = regression_link(y, x)
    with pm.Model() as model:
        beta = pm.Normal("beta", shape=2)
        alpha = pm.Normal("alpha")
        sigma = pm.HalfNormal("sigma")
        mean = pt.as_tensor(x) @ beta + (alpha if intercept else 0.0)
        pm.Normal("y", mean, sigma, observed=y)
    table = pt.as_tensor(REGRESSION.statistics(link))
    for b, a, s in [([1.0, -0.7], 0.5, 0.3), ([-2.0, 0.4], 1.5, 1.7)]:
        parameters = {"beta": pt.as_tensor(np.array(b)), "sigma": _float64(s)}
        if intercept:
            parameters["alpha"] = _float64(a)
        potential = REGRESSION.plugin_log_likelihood(parameters, table, link.structure).eval()
        point = {"beta": np.array(b), "alpha": a, "sigma_log__": np.log(s)}
        mean = x @ b + (a if intercept else 0.0)
        assert potential == pytest.approx(_logp_of_observed(model, point), rel=1e-9)
        assert potential == pytest.approx(stats.norm(mean, s).logpdf(y).sum(), rel=1e-9)


def test_poisson_plugin_log_likelihood_is_the_model_logp_without_the_data_constant():
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 3, 60)
    counts = np.minimum(rng.poisson(np.array([0.5, 2.0, 4.0])[groups]), 7)
    link = poisson_link(counts, groups, n_groups=3)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2, 1, shape=3)
        pm.Poisson("y", lam[groups], observed=counts)
    table = pt.as_tensor(POISSON.statistics(link))
    for rates in ([0.5, 2.0, 4.0], [3.0, 0.1, 9.0]):
        rates = np.array(rates)
        potential = POISSON.plugin_log_likelihood(
            {"rate": pt.as_tensor(rates)}, table, link.structure
        ).eval()
        constant = gammaln(counts + 1).sum()  # −Σ log y! is data-only and not released
        point = {"lam_log__": np.log(rates)}
        assert potential - constant == pytest.approx(_logp_of_observed(model, point), rel=1e-10)


# --- projection (post-processing) ----------------------------------------------------------
def test_projection_keeps_exact_statistics():
    rng = np.random.default_rng(8)
    link = regression_link(rng.uniform(-1, 4, 30), rng.uniform([0, -1], [2, 1], (30, 2)))
    exact = REGRESSION.statistics(link)
    np.testing.assert_allclose(
        REGRESSION.project(exact, link.structure, 1e-9, "replace-one"), exact, atol=1e-9
    )


def test_projection_makes_the_second_moments_feasible():
    rng = np.random.default_rng(9)
    for _ in range(50):
        noisy = rng.normal(0, 30, 10)
        noisy[0] = 20.0  # n public
        table = project_second_moments(noisy, 3, floor=2.0)
        matrix = second_moment_matrix(table, 3)
        n, sums = matrix[0, 0], matrix[0, 1:]
        assert n == 20.0 and np.all(np.abs(sums) <= n / 2)  # centred: |w| <= ½
        centred = matrix[1:, 1:] - np.outer(sums, sums) / n
        assert np.linalg.eigvalsh(centred).min() >= 2.0 - 1e-9
    one = project_second_moments(np.array([-3.0, 5.0, 1.0]), 1, floor=0.5)
    assert one[0] == 1.0 and one[1] == 0.5  # n >= 1, Σu <= n/2
    assert one[2] - one[1] ** 2 / one[0] >= 0.5 - 1e-12  # Σu² ≥ (Σu)²/n


def test_poisson_projection_keeps_counts_and_sums_feasible():
    full = np.array([[-3.0, 2.0], [10.0, 12.0], [10.0, -1.0]])
    np.testing.assert_allclose(
        POISSON.project(full, poisson_link([0], n_groups=3).structure, 1.0, "replace-one"),
        [[0, 0], [10, 10], [10, 0]],
    )


# --- noise-aware pieces ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "scale",
    [0.01, 2.5, 60.0],  # Laplace window; Laplace window; Poisson window (narrower)
)
@pytest.mark.integration
def test_poisson_window_marginal_equals_the_full_sum(scale):
    released = np.array([37.3, 4.2, -3.0, 120.0])
    mean = np.array([35.0, 6.0, 1.5, 60.0])
    mean_var = pt.dvector("mean")
    marginal = poisson_laplace_log_marginal(
        pt.as_tensor(released), mean_var, pt.as_tensor(np.float64(scale)), None, None
    )
    k = np.arange(0, 4000)
    full, derivative = [], []
    for r, m in zip(released, mean, strict=True):
        terms = stats.poisson(m).logpmf(k) + stats.laplace(k, scale).logpdf(r)
        full.append(np.logaddexp.reduce(terms))
        weights = np.exp(terms - full[-1])
        derivative.append(np.sum(weights * (k / m - 1)))  # d/dμ log Σ_k Poisson(k; μ) L(k)
    np.testing.assert_allclose(marginal.eval({mean_var: mean}), full, rtol=1e-10)
    gradient = pt.grad(marginal.sum(), mean_var).eval({mean_var: mean})
    np.testing.assert_allclose(gradient, derivative, rtol=1e-8, atol=1e-12)


def test_poisson_laplace_sum_is_exact_on_both_sides_of_the_closed_form_switch():
    """The closed form (incomplete gammas) where the Poisson sd is ≤ 10 Laplace scales and
    b ≥ 1, the window elsewhere (b = 0.1, where e^{1/b} would overflow the closed form's
    factors, and μ = 10⁴ at b = 2): both against the whole sum, values and derivatives in
    μ, released values up to 40 widths away for the closed form and 10 for the window (which
    caps the gap it sums over far from the mean, by design)."""
    r_var, m_var, b_var = pt.dvector("r"), pt.dvector("mean"), pt.dscalar("b")
    marginal = poisson_laplace_log_marginal(r_var, m_var, b_var, None, None)
    closed = poisson_laplace_closed_form(r_var, m_var, b_var)
    f = pytensor.function([r_var, m_var, b_var], [marginal, pt.grad(marginal.sum(), m_var)])
    f_closed = pytensor.function([r_var, m_var, b_var], closed)
    for b, mean in [
        (1.0, 100.0),
        (3.0, 900.0),
        (40.0, 1650.0),
        (1.0, 0.01),
        (0.1, 0.64),
        (2.0, 1e4),
    ]:
        closed_form = b >= 1 and np.sqrt(mean) <= 10 * b
        reach = 40 if closed_form else 10
        released = mean + np.linspace(-reach, reach, 17) * (np.sqrt(mean) + b)
        k = np.arange(0, int(mean + 60 * np.sqrt(mean) + np.abs(released).max() + 100 * b + 100))
        terms = stats.poisson(mean).logpmf(k)[None, :] + stats.laplace(k[None, :], b).logpdf(
            released[:, None]
        )
        full = special.logsumexp(terms, axis=1)
        weights = np.exp(terms - full[:, None])
        derivative = weights @ (k / mean - 1)
        value, gradient = f(released, np.full_like(released, mean), b)
        np.testing.assert_allclose(value, full, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(gradient, derivative, rtol=1e-7, atol=1e-9)
        if closed_form:
            direct = f_closed(released, np.full_like(released, mean), b)
            np.testing.assert_allclose(direct, full, rtol=1e-10, atol=1e-9)


def test_poisson_window_marginal_respects_a_public_maximum():
    released, scale, mean = np.array([9.6]), np.array(0.7), np.array([9.0])
    capped = poisson_laplace_log_marginal(
        pt.as_tensor(released), pt.as_tensor(mean), pt.as_tensor(scale), np.array([10.0]), 1
    ).eval()
    k = np.arange(0, 11)
    expected = np.logaddexp.reduce(stats.poisson(9.0).logpmf(k) + stats.laplace(k, 0.7).logpdf(9.6))
    assert capped[0] == pytest.approx(expected, rel=1e-12)


def test_gaussian_release_density_given_the_noise_variances_is_the_normal_convolution():
    """Three or more released components (a regression's): given V, the weighted release
    c ⊙ T + noise is MvNormal(c ⊙ n·E t, (c cᵀ) ⊙ n·Cov t + diag V) (the scale mixture);
    checked against SciPy at a fixed V."""
    mean_w, cov_w, n = np.array([-0.1, 0.1]), np.array([[0.02, 0.005], [0.005, 0.03]]), 200.0
    mean_t, cov_t = gaussian_second_moments(mean_w, cov_w, 2)
    index = np.arange(1, 6)
    weights = np.array([0.0, 0.5, 2.0, 1.5, 0.7, 3.0])
    c = weights[index]
    released = (c * n * mean_t.eval()[index] + np.array([1.0, -2.0, 0.5, 3.0, -1.0]))[None, :]
    with pm.Model() as model:
        loglik = gaussian_release_log_likelihood(
            "x",
            mean_t,
            cov_t,
            pt.as_tensor(released),
            index,
            weights,
            pt.as_tensor(0.5),
            pt.as_tensor(np.array([n])),
        )
    variance = np.array([0.3, 1.1, 0.7, 0.2, 2.0])
    [graph] = model.replace_rvs_by_values([loglik])
    value = model.compile_fn(graph, point_fn=False, inputs=model.value_vars)(np.log(variance))
    mean = c * n * mean_t.eval()[index]
    cov = np.outer(c, c) * n * cov_t.eval()[index][:, index] + np.diag(variance)
    assert value == pytest.approx(stats.multivariate_normal(mean, cov).logpdf(released[0]))
    assert [v.name for v in model.free_RVs] == ["x_noise_variance"]
    prior = model["x_noise_variance"].owner.inputs[-1].eval()
    assert float(np.ravel(prior)[0]) == pytest.approx(2 * 0.5**2)  # Laplace(b): V ~ Exp(2b²)


@pytest.mark.parametrize(
    "x, variance, scale",
    [(0.3, 1.0, 1.0), (-4.0, 0.01, 2.0), (25.0, 4.0, 0.5), (3.0, 1e-9, 1.0), (-60.0, 50.0, 20.0)],
)
def test_normal_laplace_density_is_the_numerical_convolution(x, variance, scale):
    """log (N(0, c) ⊛ Laplace(0, b))(x) against adaptive quadrature of ∫ N(t; 0, c) L(x − t) dt
    (split at the Laplace kink); the tiny-c case against the Laplace density itself."""
    value = log_normal_laplace(*(pt.as_tensor(np.float64(v)) for v in (x, variance, scale))).eval()
    if variance < 1e-6:
        expected = stats.laplace(0, scale).logpdf(x)
    else:
        sd = np.sqrt(variance)
        pieces = [
            integrate.quad(
                lambda t: stats.norm(0, sd).pdf(t) * stats.laplace(t, scale).pdf(x),
                lo,
                hi,
                epsabs=0,
                epsrel=1e-12,
                limit=200,
            )[0]
            for lo, hi in ((-np.inf, x), (x, np.inf))
        ]
        expected = np.log(sum(pieces))
    assert value == pytest.approx(expected, abs=1e-8)


def _two_component_reference(values, mean, cov, scale):
    """log ∫ N(T₁; m₁, C₁₁) L(y₁ − T₁) (N(T₂ | T₁) ⊛ L)(y₂) dT₁ by adaptive quadrature (split
    at the kink T₁ = y₁), no scale mixture: an independent route to the same integral."""
    slope = cov[0, 1] / cov[0, 0]
    spread = cov[1, 1] - cov[0, 1] ** 2 / cov[0, 0]

    def convolved(centre):  # N(centre, spread) ⊛ Laplace(b) at y₂: the textbook Φ form, in logs
        x, sd = values[1] - centre, np.sqrt(spread)
        shift = spread / (2 * scale**2)
        return np.exp(
            np.logaddexp(
                shift - x / scale + special.log_ndtr((x - spread / scale) / sd),
                shift + x / scale + special.log_ndtr(-(x + spread / scale) / sd),
            )
        ) / (2 * scale)

    first = stats.norm(mean[0], np.sqrt(cov[0, 0]))

    def integrand(t1):
        return (
            first.pdf(t1)
            * stats.laplace(t1, scale).pdf(values[0])
            * convolved(mean[1] + slope * (t1 - mean[0]))
        )

    sd = np.sqrt(cov[0, 0])
    lo, hi = mean[0] - 12 * sd, mean[0] + 12 * sd
    pieces = [
        integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-10, limit=400)[0]
        for a, b in ((lo, min(max(values[0], lo), hi)), (min(max(values[0], lo), hi), hi))
        if b > a
    ]
    return np.log(sum(pieces))


@pytest.mark.parametrize(
    "n, m, s, scale, shift",
    [
        (1_000, 0.5, 0.04, 2.0, (3.0, -2.0)),  # noise and CLT alike
        (10_000, 0.3, 0.2, 20.0, (30.0, 10.0)),  # noise dominates
        (1_000, 0.5, 0.3, 0.05, (0.5, -0.4)),  # CLT dominates
        (100, 0.9, 0.1, 200.0, (100.0, -300.0)),  # ε tiny: nearly the prior
    ],
)
def test_two_released_components_are_read_exactly(n, m, s, scale, shift):
    """The Normal family's (Σu, Σu²) under Laplace noise: exp-sinh quadrature over the scale
    mixture of y₁ equals direct quadrature over T₁ to 1e-7 in the log; no latent variable."""
    mean_t, cov_t = gaussian_second_moments(np.array([m]), np.array([[s**2]]), 1)
    mean = n * mean_t.eval()[1:]
    cov = n * cov_t.eval()[1:, 1:]
    values = mean + np.array(shift)
    value = two_component_laplace_log_likelihood(
        pt.as_tensor(values), pt.as_tensor(mean), pt.as_tensor(cov), pt.as_tensor(np.float64(scale))
    ).eval()
    assert value == pytest.approx(_two_component_reference(values, mean, cov, scale), abs=1e-7)
    with pm.Model() as model:
        gaussian_release_log_likelihood(
            "x",
            mean_t,
            cov_t,
            pt.as_tensor(values[None, :]),
            np.array([1, 2]),
            np.ones(3),
            pt.as_tensor(scale),
            pt.as_tensor(np.array([float(n)])),
        )
    assert model.free_RVs == []


def test_two_released_components_agree_with_monte_carlo_where_the_clt_is_singular():
    """A nearly degenerate CLT covariance (σ ≈ 0: Σu² ≈ (Σu)²/n): the exact likelihood against
    a Monte Carlo average of the two Laplace densities over T ~ N(m, C), 4 standard errors."""
    n, m, s, scale = 10_000, 0.5, 1e-4, 0.2
    mean_t, cov_t = gaussian_second_moments(np.array([m]), np.array([[s**2]]), 1)
    mean, cov = n * mean_t.eval()[1:], n * cov_t.eval()[1:, 1:]
    values = mean + np.array([0.1, 0.3])
    value = two_component_laplace_log_likelihood(
        pt.as_tensor(values), pt.as_tensor(mean), pt.as_tensor(cov), pt.as_tensor(np.float64(scale))
    ).eval()
    rng = np.random.default_rng(0)
    t = rng.multivariate_normal(mean, cov, size=400_000, method="eigh")
    density = np.exp(stats.laplace(t, scale).logpdf(values).sum(axis=1))
    estimate, se = density.mean(), density.std() / np.sqrt(density.size)
    assert abs(np.exp(value) - estimate) < 4 * se


def test_two_component_gradient_is_finite_at_extremes():
    """Finite log density and gradient where one erfc branch would overflow (residuals of
    thousands of noise scales) and where the CLT covariance is singular (σ → 0)."""
    mu = pt.dscalar("mu")
    log_s = pt.dscalar("log_s")
    n, scale = 1_000.0, 2.0
    mean_t, cov_t = gaussian_second_moments(mu.reshape((1,)), pt.exp(2 * log_s).reshape((1, 1)), 1)
    released = pt.as_tensor(np.array([480.0, 270.0]))
    loglik = two_component_laplace_log_likelihood(
        released, n * mean_t[1:], n * cov_t[1:, 1:], scale
    )
    grads = pt.grad(loglik, [mu, log_s])
    fn = pytensor.function([mu, log_s], [loglik, *grads], mode="FAST_COMPILE")
    for point in [(0.5, np.log(0.04)), (0.5, -30.0), (0.01, np.log(0.3)), (0.99, -12.0)]:
        out = np.array(fn(*point))
        assert np.all(np.isfinite(out)), point


# --- a private record count integrated out (record_count_marginal) ------------------------


def _poisson_given_counts(released_sum, rate, scale_sum):
    r_v, n_v = pt.dvector("r"), pt.dvector("n")
    return pytensor.function(
        [r_v, n_v],
        poisson_laplace_log_marginal(r_v, n_v * rate, pt.as_tensor(scale_sum), None, None),
    )


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(
    ("n_true", "rate", "off"),
    [(1000, 0.5, 1.0), (1000, 5.0, 1.02), (100, 2.0, 1.0), (10, 1.0, 1.1), (2, 1.0, 1.0),
     (0, 1.0, 1.0), (5000, 8.0, 1.1)],
)  # fmt: skip
def test_a_record_count_integrated_out_matches_adaptive_quadrature(noise, n_true, rate, off):
    """∫_{n>0} p(r − n) Σ_k Poisson(k; nλ) Laplace(R − k) dn by the fixed rule against
    scipy.integrate.quad, from empty cells to 5,000 records and at rates 2-10% off the
    truth: log error below 3e-4 (the docstring's claim)."""
    from pymc_dp.families.bounded import record_count_marginal

    b, c = 4.0, 10.0
    rng = np.random.default_rng(1)
    draw = rng.laplace if noise == "laplace" else rng.normal
    r0 = n_true + draw(0.0, b)
    r1 = rng.poisson(n_true * rate) / c + rng.laplace(0.0, b)
    given = _poisson_given_counts(np.array([r1 * c]), rate * off, b * c)

    def density(n):
        noise_pdf = stats.laplace.pdf if noise == "laplace" else stats.norm.pdf
        return noise_pdf(r0, n, b) * np.exp(given(np.array([r1 * c]), np.array([n]))[0] - peak)

    peak = given(np.array([r1 * c]), np.array([max(r0, 1.0)]))[0]
    low, high = 0.0, max(r0, 0.0) + 60 * b
    exact, _ = integrate.quad(density, low, high, points=[max(r0, 1e-9)], limit=500)
    rule = record_count_marginal(
        lambda n: poisson_laplace_log_marginal(
            pt.repeat(pt.as_tensor([r1 * c]), n.shape[1]),
            (n * rate * off).reshape((-1,)),
            pt.as_tensor(b * c),
            None,
            None,
        ).reshape(n.shape),
        pt.as_tensor(np.array([r0])),
        pt.as_tensor(b),
        noise,
    )
    assert float(rule.eval()[0]) == pytest.approx(np.log(exact) + peak, abs=3e-4)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("released", [-30.0, -3.0, 0.0, 0.4, 7.0, 150.0, 1e6])
def test_record_count_weights_are_the_noise_mass_on_positive_counts(noise, released):
    """With g ≡ 1 the rule gives Pr(n > 0) under the noise density centred at the release,
    and every node is a positive count."""
    from pymc_dp.families.bounded import record_count_nodes

    scale = 2.5
    nodes, log_weights = record_count_nodes(pt.as_tensor([released]), pt.as_tensor(scale), noise)
    nodes, log_weights = nodes.eval(), log_weights.eval()
    assert np.all(nodes > 0)
    law = stats.laplace if noise == "laplace" else stats.norm
    expected = law.sf(0.0, released, scale)
    assert np.exp(special.logsumexp(log_weights)) == pytest.approx(expected, rel=1e-6, abs=1e-12)


def test_poisson_noise_aware_likelihood_integrates_each_private_count_at_the_release_scale():
    """PoissonFamily's noise-aware likelihood with private per-group counts is, group by
    group, ∫_{n>0} Laplace(r₀ − n; b) Σ_k Poisson(k; nλ) Laplace(c·r₁ − k; c·b) dn (adaptive
    quadrature): the count's noise scale is the release's b, not another (a mutant doubling
    it survived the other fast tests)."""
    rng = np.random.default_rng(9)
    groups = rng.integers(0, 3, 90)
    counts = np.minimum(rng.poisson(np.array([0.5, 2.0, 4.0])[groups]), 7)
    link = poisson_link(counts, groups, n_groups=3)
    c, scale = 7.0, 1.5
    released = POISSON.statistics(link) + rng.laplace(0.0, scale, (3, 2))
    rates = np.array([0.6, 1.8, 4.5])
    value = POISSON.noise_aware_log_likelihood(
        {"rate": pt.as_tensor(rates)},
        pt.as_tensor(released),
        pt.as_tensor(scale),
        None,
        link.structure,
        "add-remove-one",
    ).eval()
    k = np.arange(0, 1200)
    expected = 0.0
    for g in range(3):
        r0, r1 = released[g]

        def density(n, rate=rates[g], r0=r0, r1=r1):
            poisson = stats.poisson.pmf(k, n * rate)
            noise = stats.laplace.pdf(c * r1 - k, scale=c * scale)
            return stats.laplace.pdf(r0 - n, scale=scale) * np.sum(poisson * noise)

        top = max(r0, 0.0) + 60 * scale
        total, _ = integrate.quad(density, 0.0, top, points=[max(r0, 1e-9)], limit=400)
        expected += np.log(total)
    assert float(value) == pytest.approx(expected, abs=2e-3)
