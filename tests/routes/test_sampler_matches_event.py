"""On every route, the temperature or noise scale the sampler uses is the one the ledger records.

A route charges its event before it samples; the event's ``temperature`` (the tempered
mechanisms) or ``noise_scale`` (the releases read noise-aware) is the guarantee. If the sampler
ran at another temperature (T/2 doubles the spend) or read the release with another noise
scale, the ledger would misstate the run and no test of the event alone could see it
(issue 22, item 5: OPS on MCMC blocks and the HMM's OPS sampling at T/2 survived every fast
test). Here ``pm.sample`` is replaced by a stub that records what the route handed it (the
model in context and the step objects) and stops the run, so every case is fast and samples
nothing; what the sampler would use is read from those objects and compared with the
ledger's event. :data:`CASES` must cover every entry of :data:`pymc_dp.routes.ROUTES`.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import logsumexp

import pymc_dp
from pymc_dp import PrivacyLedger
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.errors import ReleasedRunFailedError
from pymc_dp.hmm import cell_counts
from pymc_dp.mechanisms.dirichlet import DP_RELEASES
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.routes import ROUTES, compiled

GROUP = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 0])
OUTCOME = np.array([1, 0, 1, 1, 0, 1, 1, 0, 0, 1])
ALPHA = np.array([1.0, 2.0, 0.5])
CATEGORIES = np.random.default_rng(0).integers(0, 3, size=30)


class _Stopped(Exception):
    """Raised by the stub in place of sampling."""


@contextlib.contextmanager
def _stopped():
    """The stub stopped the run: ``_Stopped`` itself, or chained in the
    :class:`~pymc_dp.errors.ReleasedRunFailedError` that ``pymc_dp.sample`` raises for a
    failure after the release (it was charged, so the user must hear that)."""
    with pytest.raises((_Stopped, ReleasedRunFailedError)) as caught:
        yield
    if caught.type is ReleasedRunFailedError:
        assert isinstance(caught.value.__cause__, _Stopped)
        assert caught.value.events


@dataclass
class _Handed:
    """What a route handed ``pm.sample``."""

    model: pm.Model
    step: object
    options: dict
    draws: int
    data: dict  # every data container's value when pm.sample was called

    def restored(self) -> pm.Model:
        """The model with its data containers as handed: a kept private model's released
        values are overwritten with NaN when the run ends (pymc_dp.routes.compiled)."""
        for name, value in self.data.items():
            self.model[name].set_value(value)
        return self.model


def _steps(step) -> list:
    if step is None:
        return []
    return list(step) if isinstance(step, list | tuple) else [step]


@pytest.fixture
def handed(monkeypatch) -> Iterator[list[_Handed]]:
    """Replace ``pm.sample`` (every route calls it as ``pm.sample``, keeping the signature
    pymc_dp checks options against) by a stub that records the model and steps, then stops."""
    calls: list[_Handed] = []

    @functools.wraps(pm.sample)
    def stub(*args, **kwargs):
        model = pm.modelcontext(kwargs.get("model"))
        data = {v.name: np.array(v.get_value(), copy=True) for v in model.data_vars}
        calls.append(_Handed(model, kwargs.get("step"), kwargs, args[0], data))
        raise _Stopped

    monkeypatch.setattr(pm, "sample", stub)

    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    yield calls
    compiled.clear_compiled_models()  # restored() put released values back into kept models


# --- models ------------------------------------------------------------------------------------


def _beta_bernoulli(truncated: bool):
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        if truncated:
            rate = TruncatedBeta("rate", 2.0, 1.0, 0.1, dims="group")
        else:
            rate = pm.Beta("rate", 2.0, 1.0, dims="group")
        pm.Bernoulli("y", p=rate[GROUP], observed=OUTCOME)
    return model


def _hyper_model():
    """A hyperprior: the blocks are sampled by MCMC (OPS releases the last draw per chain)."""
    with pm.Model() as model:
        a = pm.Gamma("a", 4.0, 2.0)
        p = pm.Truncated("p", pm.Beta.dist(a, 2.0), lower=0.05, upper=0.95)
        pm.Bernoulli("y", p=p, observed=np.r_[np.ones(30), np.zeros(70)])
    return model


def _dirichlet_model():
    with pm.Model() as model:
        p = pm.Dirichlet("p", a=pm.Data("alpha", ALPHA))
        pm.Categorical("x", p=p, observed=CATEGORIES)
    return model


def _hmm_counts():
    rng = np.random.default_rng(0)
    return cell_counts(
        rng.integers(0, 2, size=40),
        rng.integers(0, 3, size=40),
        rng.integers(0, 2, size=(40, 1)),
        regions=["r0", "r1"],
        times=["t0", "t1", "t2"],
        features=["f"],
        categories=[["a", "b"]],
    )


# --- what the sampler uses ---------------------------------------------------------------------


def _tempered_step_temperatures(call: _Handed, ledger: PrivacyLedger) -> None:
    """Every block of the tempered Gibbs step runs at the event's temperature."""
    [step] = _steps(call.step)
    [event] = ledger.events
    assert step.temperatures  # one per block
    for name, temperature in step.temperatures.items():
        assert temperature == pytest.approx(event.temperature, rel=1e-12), name


def _exact_ops(chains: int, per_chain: int):
    """Exact OPS: the step's temperature is the event's, PyMC draws ``per_chain`` draws in
    each of ``chains`` chains, and the event composes exactly that many releases."""

    def check(call: _Handed, ledger: PrivacyLedger) -> None:
        _tempered_step_temperatures(call, ledger)
        [event] = ledger.events
        assert call.draws == per_chain and call.options["chains"] == chains
        assert event.compositions == chains * per_chain

    return check


def _hmm_step_temperature(call: _Handed, ledger: PrivacyLedger) -> None:
    """The HMM's Gibbs step runs at the temperature of every event of the run."""
    [step] = _steps(call.step)
    assert len(ledger) >= 1
    for event in ledger.events:
        assert step.temperature == pytest.approx(event.temperature, rel=1e-12)
    assert step.temperature > 1.0  # the cases are calibrated above the cap


def _metropolis_model_temperature(original: Callable[[], pm.Model]):
    """Private Metropolis samples the tempered model: its density (no Jacobian) is the
    untempered one raised to 1/T (joint tempering, no hyperprior), read at two points."""

    def check(call: _Handed, ledger: PrivacyLedger) -> None:
        [event] = ledger.events
        model, source = call.model, original()
        tempered_logp = model.compile_logp(jacobian=False, mode="FAST_COMPILE")
        source_logp = source.compile_logp(jacobian=False, mode="FAST_COMPILE")
        for value in (-1.0, 0.7):
            point = {k: np.full_like(v, value) for k, v in source.initial_point().items()}
            ratio = tempered_logp(point) / source_logp(point)
            assert 1.0 / ratio == pytest.approx(event.temperature, rel=1e-9)
        assert event.temperature > 1.0

    return check


def _conjugate_noise_scale(call: _Handed, ledger: PrivacyLedger) -> None:
    """The noise-aware conjugate step reads the release with the event's noise scale."""
    [step] = _steps(call.step)
    [event] = ledger.events
    scales = [latent.scale for update in step._updates for latent in update.latent]
    assert scales
    for scale in scales:
        np.testing.assert_allclose(scale, event.noise_scale, rtol=1e-12)


def _hmm_noise_scale(call: _Handed, ledger: PrivacyLedger) -> None:
    """The HMM's noise-aware sampler reads the counts with the release's noise scale."""
    [step] = _steps(call.step)
    [event] = ledger.events
    assert step._released.scale == pytest.approx(event.noise_scale, rel=1e-12)


def _dirichlet_release(mechanism: str, seed: int):
    """The Dirichlet route's step conditions on exactly the mechanism's release (α̃ − α), the
    same release the mechanism makes from the same secret generator; a Laplace release's
    scale is its event's."""

    def check(call: _Handed, ledger: PrivacyLedger) -> None:
        [step] = _steps(call.step)
        [release] = step.releases
        [event] = ledger.events
        again = PrivacyLedger()
        options = {"backend": "numpy"} if "-ls" in mechanism else {}
        expected = DP_RELEASES[mechanism](
            np.bincount(CATEGORIES, minlength=3),
            ALPHA,
            epsilon=1.0,
            ledger=again,
            variables=("x", "p"),
            rng=np.random.default_rng(seed),
            **options,
        )
        np.testing.assert_allclose(release.table[0], expected - ALPHA, rtol=0, atol=1e-12)
        [charged] = again.events
        assert event.epsilon == charged.epsilon == pytest.approx(1.0)
        if "-ls" in mechanism:
            assert release.scale == pytest.approx(event.noise_scale, rel=1e-12)

    return check


# --- the cases: every route of the table -------------------------------------------------------


@dataclass(frozen=True)
class Case:
    route: tuple[str, str]  # (model kind, mechanism), a key of ROUTES
    model: Callable[[], object]
    options: dict
    check: Callable[[_Handed, PrivacyLedger], None]


TEMPERED = {"progressbar": False}
CASES: dict[str, Case] = {
    "laplace noise-aware": Case(
        ("conjugate", "laplace"),
        lambda: _beta_bernoulli(False),
        {"mechanism": "laplace", "inference": "noise-aware"},
        _conjugate_noise_scale,
    ),
    "laplace gaussian noise-aware": Case(
        ("conjugate", "laplace"),
        lambda: _beta_bernoulli(False),
        {"mechanism": "laplace", "inference": "noise-aware", "noise": "gaussian", "delta": 1e-6},
        _conjugate_noise_scale,
    ),
    "ops exact last": Case(
        ("tempered", "ops"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "ops", "chains": 2},
        _exact_ops(chains=2, per_chain=1),
    ),
    "ops exact chain": Case(
        ("tempered", "ops"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "ops", "release": "chain"},
        _exact_ops(chains=1, per_chain=5),
    ),
    "ops exact tight": Case(
        ("tempered", "ops"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "ops", "release": "chain", "accounting": "tight", "delta": 1e-6},
        _tempered_step_temperatures,
    ),
    "ops converged last": Case(  # survivor (a)
        ("tempered", "ops"),
        _hyper_model,
        {"mechanism": "ops", "release": "last", "tune": 5, "chains": 2},
        _tempered_step_temperatures,
    ),
    "gibbs-exponential": Case(
        ("tempered", "gibbs-exponential"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "gibbs-exponential", "tune": 5},
        _tempered_step_temperatures,
    ),
    "gibbs-exponential tight": Case(
        ("tempered", "gibbs-exponential"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "gibbs-exponential", "tune": 5, "accounting": "tight", "delta": 1e-6},
        _tempered_step_temperatures,
    ),
    "metropolis last": Case(
        ("tempered", "metropolis"),
        lambda: _beta_bernoulli(True),
        {"mechanism": "metropolis", "tune": 5, "proposal_scale": 0.1},
        _metropolis_model_temperature(lambda: _beta_bernoulli(True)),
    ),
    "metropolis chain": Case(
        ("tempered", "metropolis"),
        lambda: _beta_bernoulli(True),
        {
            "mechanism": "metropolis",
            "tune": 5,
            "proposal_scale": 0.1,
            "release": "chain",
            "delta": 1e-3,
            "assume_rejection_bound": True,
        },
        _metropolis_model_temperature(lambda: _beta_bernoulli(True)),
    ),
    "hmm laplace noise-aware": Case(
        ("hmm", "laplace"),
        lambda: naive_bayes_hmm(_hmm_counts(), 2),
        {"mechanism": "laplace", "inference": "noise-aware", "tune": 5},
        _hmm_noise_scale,
    ),
    "hmm ops": Case(  # survivor (b)
        ("hmm", "ops"),
        lambda: naive_bayes_hmm(_hmm_counts(), 2, truncation=20.0),
        {"mechanism": "ops", "tune": 5, "chains": 2},
        _hmm_step_temperature,
    ),
    "hmm ops tight": Case(
        ("hmm", "ops"),
        lambda: naive_bayes_hmm(_hmm_counts(), 2, truncation=20.0),
        {"mechanism": "ops", "tune": 5, "accounting": "tight", "delta": 1e-6},
        _hmm_step_temperature,
    ),
    "hmm gibbs-exponential tight": Case(
        ("hmm", "gibbs-exponential"),
        lambda: naive_bayes_hmm(_hmm_counts(), 2, truncation=20.0),
        {"mechanism": "gibbs-exponential", "tune": 5, "accounting": "tight", "delta": 1e-6},
        _hmm_step_temperature,
    ),
    "hmm gibbs-exponential": Case(
        ("hmm", "gibbs-exponential"),
        lambda: naive_bayes_hmm(_hmm_counts(), 2, truncation=20.0),
        {"mechanism": "gibbs-exponential", "tune": 5},
        _hmm_step_temperature,
    ),
    **{
        mechanism: Case(
            ("dirichlet", mechanism),
            _dirichlet_model,
            {"mechanism": mechanism, "public": ["alpha"], "noise_backend": "numpy"},
            _dirichlet_release(mechanism, 3),
        )
        for mechanism in ("dirichlet-lsdim", "dirichlet-lshist", "dirichlet-ehd", "dirichlet-ehds")
    },
}


def test_every_route_of_the_table_has_a_case():
    """A new route without a sampler-versus-event case fails here."""
    assert set(ROUTES) <= {case.route for case in CASES.values()}


@pytest.mark.parametrize("name", list(CASES))
def test_the_sampler_uses_the_temperature_or_noise_scale_of_the_event(handed, name):
    case = CASES[name]
    ledger = PrivacyLedger()
    options = dict(case.options)
    if options["mechanism"].startswith("dirichlet"):
        options["noise_rng"] = np.random.default_rng(3)
    with case.model() as model, _stopped():
        pymc_dp.sample(5, model=model, epsilon=1.0, ledger=ledger, **options)
    assert len(handed) == 1  # the run was charged, then handed to the sampler once
    assert len(ledger) >= 1
    case.check(handed[0], ledger)


def test_hmm_ops_runs_one_chain_unless_asked_and_the_event_says_so(handed):
    """The chains PyMC runs are the chains the event charges (each released last draw costs
    ε/chains); without ``chains`` it is one."""
    ledger = PrivacyLedger()
    with naive_bayes_hmm(_hmm_counts(), 2, truncation=20.0), _stopped():
        pymc_dp.sample(5, epsilon=1.0, mechanism="ops", ledger=ledger, tune=5, progressbar=False)
    [event] = ledger.events
    assert handed[0].options["chains"] == 1 == event.compositions


def test_noise_aware_bounded_release_gets_its_familys_sampler_options(handed):
    """A noise-aware Normal release is sampled with the family's target_accept (0.9) unless
    the caller chose one (post-processing options, but the ones the family was checked with)."""
    x = np.clip(np.random.default_rng(0).normal(3.0, 1.5, 50), 0, 10)
    for given, expected in (({}, 0.9), ({"target_accept": 0.99}, 0.99)):
        with pm.Model() as model:
            pm.Normal("mu", 5, 5)
            pm.HalfNormal("sigma", 5)
            pm.Normal("x", model["mu"], model["sigma"], observed=x)
        with _stopped():
            pymc_dp.sample(
                5,
                model=model,
                epsilon=1.0,
                data_bounds={"x": (0, 10)},
                inference="noise-aware",
                **given,
            )
        assert handed[-1].options["target_accept"] == expected


# --- the bounded families' noise-aware likelihood reads the release's noise scale -------------


def test_poisson_noise_aware_likelihood_uses_the_events_laplace_scale(handed):
    """Survivor (e): the noise-aware likelihood of a bounded family, read as a function of the
    parameter, is the Poisson–Laplace convolution at the event's noise scale b:
    log p(r | λ) = log Σ_{k ≤ n·c} Poisson(k; nλ) Laplace(c·r − k; c·b) (counts in [0, c],
    one group, n public under replace-one). Behaviour only: whatever latent variables or
    names the likelihood uses, the private model's density less the prior is this."""
    rng = np.random.default_rng(1)
    counts = np.minimum(rng.poisson(2.0, size=40), 10)
    c, n = 10.0, counts.size
    with pm.Model() as model:
        pm.Gamma("lam", 2.0, 0.5)
        pm.Poisson("y", mu=model["lam"], observed=counts)
    ledger = PrivacyLedger()
    with _stopped():
        pymc_dp.sample(
            5,
            model=model,
            epsilon=0.5,
            ledger=ledger,
            data_bounds={"y": (0, c)},
            inference="noise-aware",
            noise_backend="numpy",
            noise_rng=np.random.default_rng(2),
        )
    [event] = ledger.events
    private = handed[0].restored()
    released = float(private["y_released_statistics"].get_value()[0, 0])  # sum(y)/c, noisy
    assert np.isfinite(released)
    b = float(event.noise_scale)
    assert b == pytest.approx(1.0 / 0.5)  # Δ = 1 on the unit scale, ε = 0.5
    extra = [v for v in private.value_vars if v.name != "lam_log__"]
    assert not extra  # n is public: the convolution is exact, nothing latent to integrate
    density = private.compile_logp(jacobian=False, mode="FAST_COMPILE")
    prior = private.compile_logp(vars=[private["lam"]], jacobian=False, mode="FAST_COMPILE")
    k = np.arange(0, n * c + 1)
    rates = (0.5, 1.0, 2.0, 4.0)

    def expected(lam):
        return logsumexp(
            stats.poisson.logpmf(k, n * lam) + stats.laplace.logpdf(c * released - k, 0, c * b)
        )

    # differences across λ: any constant (units of the density) cancels, the scale does not
    got = [density({"lam_log__": np.log(lam)}) - prior({"lam_log__": np.log(lam)}) for lam in rates]
    want = [expected(lam) for lam in rates]
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(want))
    np.testing.assert_allclose(np.diff(got), np.diff(want), rtol=1e-9, atol=1e-9)


def test_normal_noise_aware_likelihood_is_the_laplace_convolution_at_the_events_scale(handed):
    """Survivor (e), on the Normal family: the private model's density less the prior is the
    release's density, the CLT law of the true statistics T = (Σu, Σu²), u = x/10 − ½,
    weighted by the budget split's c = (0.3, 2.8) and convolved with Laplace noise at the
    event's b on each component, p(r | μ, σ) = ∫ N(t; n·E t, n·Cov t) Π_j Laplace(r_j −
    c_j t_j; b) dt (a fine grid in t), at three means: its values and their differences (the
    noise scale and the weights change both)."""
    x = np.clip(np.random.default_rng(0).normal(3.0, 1.5, 400), 0, 10)
    with pm.Model() as model:
        pm.Normal("mu", 5, 5)
        pm.HalfNormal("sigma", 5)
        pm.Normal("x", model["mu"], model["sigma"], observed=x)
    ledger = PrivacyLedger()
    with _stopped():
        pymc_dp.sample(
            5,
            model=model,
            epsilon=1.0,
            ledger=ledger,
            data_bounds={"x": (0, 10)},
            inference="noise-aware",
            noise_backend="numpy",
            noise_rng=np.random.default_rng(2),
        )
    [event] = ledger.events
    b, n, sd = float(event.noise_scale), x.size, 1.5 / 10
    assert b == pytest.approx(3.1**2 / 11.2)  # Δ = (c₁ + c₂)²/(4c₂) under replace-one, ε = 1
    c = np.array([0.3, 2.8])
    private = handed[0].restored()
    released = private["x_released_statistics"].get_value()[0]  # c ⊙ (Σu, Σu²) + noise
    assert np.all(np.isfinite(released))
    # the likelihood integrates the noise itself: nothing latent
    assert {v.name for v in private.value_vars} == {"mu", "sigma_log__"}
    density = private.compile_logp(jacobian=False, mode="FAST_COMPILE")
    prior = private.compile_logp(
        vars=[private["mu"], private["sigma"]], jacobian=False, mode="FAST_COMPILE"
    )

    def model_marginal(mean):
        point = {"mu": np.asarray(mean), "sigma_log__": np.asarray(np.log(sd * 10))}
        return density(point) - prior(point)

    def release_density(mean):
        m = mean / 10 - 0.5
        centre = n * np.array([m, m**2 + sd**2])
        cov = n * np.array([[sd**2, 2 * m * sd**2], [2 * m * sd**2, 4 * m**2 * sd**2 + 2 * sd**4]])
        spread = 12 * np.sqrt(np.diag(cov))
        t1 = np.linspace(centre[0] - spread[0], centre[0] + spread[0], 801)
        t2 = np.linspace(centre[1] - spread[1], centre[1] + spread[1], 801)
        grid_t = np.stack(np.meshgrid(t1, t2, indexing="ij"), axis=-1)
        log_t = stats.multivariate_normal(centre, cov).logpdf(grid_t)
        log_noise = stats.laplace.logpdf(released[0] - c[0] * grid_t[..., 0], 0, b)
        log_noise = log_noise + stats.laplace.logpdf(released[1] - c[1] * grid_t[..., 1], 0, b)
        cell = (t1[1] - t1[0]) * (t2[1] - t2[0])
        return logsumexp(log_t + log_noise) + np.log(cell)

    means = (2.8, 3.0, 3.2)
    got = [model_marginal(mean) for mean in means]
    want = [release_density(mean) for mean in means]
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, atol=2e-3)
    np.testing.assert_allclose(np.diff(got), np.diff(want), atol=2e-3)
