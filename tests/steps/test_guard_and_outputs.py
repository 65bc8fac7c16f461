"""The private steps run only where a ledger is charged, and a run's outputs say what happened.

* the guard: ``TemperedConjugateGibbs`` and ``PrivateMetropolis`` step only when a route
  built them; ``NaiveBayesHMMGibbs`` steps outside a route only on counts that
  ``release_cell_counts`` returned (not on counts merely flagged noisy); each refusal says how
  to run that step;
* logs: a run that releases only the last draw of each chain logs nothing about the other
  sweeps;
* the trace's ledger lists the releases the trace is built from, each once;
* ``pm.sample`` options are checked before anything is charged;
* a budget error does not claim "nothing was released" when a provided step released.
"""

from __future__ import annotations

import inspect
import logging
import re

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import BudgetExceededError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis.rewrite import data_free_model
from pymc_dp.analysis.tempered import analyse_tempered_model
from pymc_dp.distributions import TruncatedBeta
from pymc_dp.hmm import cell_counts, release_cell_counts
from pymc_dp.hmm.cells import release_event_of
from pymc_dp.models import naive_bayes_hmm
from pymc_dp.steps.guard import route_context
from pymc_dp.traces import quiet_unreleased

RNG = np.random.default_rng(0)
N = 120
GROUP = RNG.integers(0, 3, size=N)
OUTCOME = RNG.binomial(1, np.array([0.1, 0.4, 0.7])[GROUP])
QUIET = {"progressbar": False, "chains": 1, "random_seed": 1}


def _beta_model():
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        rate = pm.Beta("rate", 1, 1, dims="group")
        pm.Bernoulli("outcome", p=rate[GROUP], observed=OUTCOME)
    return model


def _two_likelihood_model():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        q = pm.Beta("q", 1, 1)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
        pm.Bernoulli("z", p=q, observed=1 - OUTCOME)
    return model


def _truncated_model():
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, truncation=0.001, dims="group")
        pm.Bernoulli("outcome", p=rate[GROUP], observed=OUTCOME)
    return model


def _hyper_model():
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        conc = pm.HalfCauchy("conc", 0.1)
        mean = pm.Beta("mean", 1, 1)
        rate = pm.Truncated(
            "rate",
            pm.Beta.dist(mean * conc, (1 - mean) * conc),
            lower=0.01,
            upper=0.99,
            dims="group",
        )
        pm.Bernoulli("outcome", p=rate[GROUP], observed=OUTCOME)
    return model


def _counts():
    rng = np.random.default_rng(3)
    n = 150
    records = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 2, n)])
    return cell_counts(
        rng.integers(0, 2, n),
        rng.integers(0, 4, n),
        records,
        regions=["r0", "r1"],
        times=["t0", "t1", "t2", "t3"],
        features=["f0", "f1"],
        categories=[["a", "b", "c"], ["x", "y"]],
    )


# --- L7, L12: steps that always read exact private data need a route ------------------------


def test_tempered_step_with_analysis_on_a_data_free_model_refuses_outside_a_route():
    # the documented analysis= parameter on the data-free model: the step still carries the
    # exact statistics, so pm.sample at T = 1 would release them uncharged
    model = _truncated_model()
    analysis = analyse_tempered_model(model)
    with data_free_model(model):
        step = pymc_dp.TemperedConjugateGibbs(temperature=1.0, analysis=analysis)
        with pytest.raises(NonPrivateModelError, match=r"pymc_dp\.sample\(mechanism='ops'"):
            pm.sample(5, step=step, tune=0, compute_convergence_checks=False, **QUIET)


def test_private_metropolis_on_a_potential_likelihood_refuses_outside_a_route():
    with pm.Model():
        p = pm.Uniform("p", 0, 1)
        pm.Potential("ll", pm.logp(pm.Bernoulli.dist(p=p), OUTCOME).sum())
        step = pymc_dp.PrivateMetropolis(proposal_scale=0.05)
        with pytest.raises(NonPrivateModelError, match="mechanism='metropolis'"):
            pm.sample(5, step=step, tune=0, compute_convergence_checks=False, **QUIET)


def test_steps_built_inside_a_route_context_still_step():
    # the routes' hook (and what the route tests use): unchanged
    original = _truncated_model()
    analysis = analyse_tempered_model(original)
    with data_free_model(original) as model, route_context():
        step = pymc_dp.TemperedConjugateGibbs(temperature=4.0, analysis=analysis)
        point, _ = step.step(model.initial_point())
    assert set(point) == set(model.initial_point())


# --- L8: released counts are unforgeable -------------------------------------------------------


@pytest.mark.parametrize("how", ["with_counts of a release", "flagged noisy"])
def test_hmm_step_refuses_raw_counts_that_merely_look_released(how):
    raw = _counts()
    if how == "flagged noisy":
        forged = raw.with_counts(raw.counts, noisy=True)
    else:
        released = release_cell_counts(raw, 1.0, ledger=PrivacyLedger(), backend="numpy")
        forged = released.with_counts(raw.counts)
    assert forged.noisy and release_event_of(forged) is None
    with naive_bayes_hmm(forged, 2):
        step = pymc_dp.NaiveBayesHMMGibbs()
        with pytest.raises(NonPrivateModelError, match="release_cell_counts"):
            pm.sample(3, step=step, tune=2, compute_convergence_checks=False, **QUIET)
    with pytest.raises(ValueError, match="release_cell_counts did not return"):
        pymc_dp.sample(3, model=naive_bayes_hmm(forged, 2), epsilon=1.0, tune=2, **QUIET)


@pytest.mark.integration
def test_released_counts_stay_usable_and_cannot_be_rewritten_in_place():
    ledger = PrivacyLedger()
    released = release_cell_counts(_counts(), 1.0, ledger=ledger, backend="numpy")
    assert release_event_of(released) is ledger.events[0]
    with pytest.raises(ValueError, match="read-only"):
        released.counts[...] = _counts().counts
    with naive_bayes_hmm(released, 2):  # post-processing: pm.sample runs
        idata = pm.sample(
            3,
            step=pymc_dp.NaiveBayesHMMGibbs(),
            tune=2,
            compute_convergence_checks=False,
            **QUIET,
        )
    assert idata["posterior"].sizes["draw"] == 3
    rewritten = released.counts.copy()
    rewritten.flags.writeable = True
    object.__setattr__(released, "counts", rewritten)
    rewritten[...] = _counts().counts  # not ordinary use, and still caught
    assert release_event_of(released) is None


# --- guard messages --------------------------------------------------------------------------


def test_each_step_refusal_names_its_own_route():
    with _beta_model():
        conj = pymc_dp.PrivateConjugateGibbs(epsilon=1.0)
    with _truncated_model():
        tempered = pymc_dp.TemperedConjugateGibbs(temperature=2.0)
        metropolis = pymc_dp.PrivateMetropolis(proposal_scale=0.1)
    with naive_bayes_hmm(_counts(), 2):
        hmm = pymc_dp.NaiveBayesHMMGibbs()
    expected = {
        conj: r"pymc_dp\.sample\(step=",
        tempered: r"mechanism='ops' \| 'gibbs-exponential'",
        metropolis: r"mechanism='metropolis'",
        hmm: r"release_cell_counts",
    }
    for step, pattern in expected.items():
        with pytest.raises(NonPrivateModelError, match=pattern) as info:
            step.step({})
        assert "(PrivateConjugateGibbs)" not in str(info.value)


# --- L9: last-draw runs log nothing about unreleased sweeps ----------------------------------


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def pymc_debug_log():
    names = ("pymc", "pymc.sampling.mcmc", "pymc.stats.convergence", "pytensor")
    handler = _Records()
    loggers = [logging.getLogger(name) for name in names]
    saved = [(lg, lg.level) for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
    for name in ("pymc", "pytensor"):
        logging.getLogger(name).addHandler(handler)
    yield handler
    for name in ("pymc", "pytensor"):
        logging.getLogger(name).removeHandler(handler)
    for lg, level in saved:
        lg.setLevel(level)


def _leaky(records):
    words = ("energy", "took", "seconds", "divergen")
    return [
        r.getMessage()
        for r in records
        if (r.name == "pymc" or r.name.startswith("pymc."))
        and any(w in r.getMessage().lower() for w in words)
    ]


@pytest.mark.integration
@pytest.mark.parametrize("route", ["ops", "metropolis", "hmm-ops"])
def test_last_draw_runs_log_nothing_about_unreleased_sweeps(route, pymc_debug_log):
    if route == "ops":
        pymc_dp.sample(5, model=_hyper_model(), epsilon=1.0, mechanism="ops", tune=200, **QUIET)
    elif route == "metropolis":
        pymc_dp.sample(
            5,
            model=_truncated_model(),
            epsilon=1.0,
            mechanism="metropolis",
            proposal_scale=0.1,
            tune=5,
            **QUIET,
        )
    else:
        model = naive_bayes_hmm(_counts(), 2, truncation=10)
        pymc_dp.sample(5, model=model, epsilon=1.0, mechanism="ops", tune=5, **QUIET)
    assert _leaky(pymc_debug_log.records) == []
    # the levels are restored afterwards
    assert logging.getLogger("pymc.stats.convergence").level == logging.DEBUG
    assert logging.getLogger("pymc").level == logging.DEBUG


def test_quiet_unreleased_restores_levels():
    child = logging.getLogger("pymc.some.child")
    child.setLevel(logging.DEBUG)
    with quiet_unreleased():
        assert not child.isEnabledFor(logging.WARNING)
        assert child.isEnabledFor(logging.ERROR)
    assert child.level == logging.DEBUG
    child.setLevel(logging.NOTSET)


# --- L11: the trace's ledger lists the releases it is built from ----------------------------


def test_trace_ledger_includes_a_provided_steps_release_on_a_shared_ledger():
    ledger = PrivacyLedger(budget=2.0)
    with _beta_model():
        step = pymc_dp.PrivateConjugateGibbs(epsilon=1.0, ledger=ledger)
        idata = pymc_dp.sample(5, step=step, ledger=ledger, tune=5, **QUIET)
    trace_ledger = PrivacyLedger.from_datatree(idata)
    assert [e.epsilon for e in trace_ledger.events] == [1.0]
    assert len(ledger) == 1  # not charged twice


def test_trace_ledger_counts_each_release_once():
    # a step with its own ledger: adopted into the run's ledger, listed once in the trace
    with _beta_model():
        step = pymc_dp.PrivateConjugateGibbs(epsilon=1.0)
        idata = pymc_dp.sample(5, step=step, tune=5, **QUIET)
    assert len(PrivacyLedger.from_datatree(idata)) == 1
    # a step on the shared ledger releases one likelihood, the run releases the other
    ledger = PrivacyLedger()
    model = _two_likelihood_model()
    with model:
        step = pymc_dp.PrivateConjugateGibbs([model["p"]], epsilon=0.5, ledger=ledger)
        idata = pymc_dp.sample(5, step=step, ledger=ledger, epsilon=0.25, tune=5, **QUIET)
    trace_ledger = PrivacyLedger.from_datatree(idata)
    assert sorted(e.epsilon for e in trace_ledger.events) == [0.25, 0.5]
    assert trace_ledger.epsilon == pytest.approx(0.75) and len(ledger) == 2


# --- L10: pm.sample options are checked before anything is charged --------------------------


def test_sample_names_the_sampler_arguments_of_pm_sample_in_its_places_with_its_defaults():
    ours = inspect.signature(pymc_dp.sample).parameters
    theirs = inspect.signature(pm.sample).parameters
    names = ["draws", "tune", "chains", "cores", "random_seed"]
    assert list(ours)[:5] == list(theirs)[:5] == names
    for name in names:
        assert (ours[name].kind, ours[name].default) == (theirs[name].kind, theirs[name].default)
    assert ours["tune"].kind is inspect.Parameter.KEYWORD_ONLY and ours["tune"].default is None


def test_none_sampler_arguments_are_pymc_defaults_and_named_ones_are_checked():
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match="chains must be >= 1"):
        pymc_dp.sample(5, chains=0, model=_beta_model(), epsilon=1.0, ledger=ledger)
    with pytest.raises(ValueError, match="random_seed"):
        pymc_dp.sample(5, random_seed=-3, model=_beta_model(), epsilon=1.0, ledger=ledger)
    assert len(ledger) == 0


@pytest.mark.parametrize(
    "options",
    [
        {"nuts_sampler": "numpyro"},
        {"tunee": 10},
        {"chains": 0},
        {"chains": 1.5},
        {"tune": -1},
        {"cores": 0},
        {"var_names": ["nope"]},
        {"random_seed": "x"},
        {"random_seed": -3},
        {"init": "nonsense"},
        {"nuts": {"bogus": 1}},
        {"nuts": {"target_accept": 0.9}},  # no variable of this model is sampled by NUTS
        {"target_accept": 0.9},
        {"idata_kwargs": {"bogus": 1}},
        {"initvals": {"nope": 0.5}},
        {"hmm_method": "ffbs"},  # an HMM option on a conjugate model
        {"proposal_scale": 0.1},  # a Metropolis option under Laplace
    ],
    ids=repr,
)
def test_bad_sample_options_raise_before_anything_is_charged(options):
    ledger = PrivacyLedger(budget=1.0)
    kwargs = {"tune": 5, **QUIET, **options}
    (name,) = options  # every message names the option it refuses
    with pytest.raises(ValueError, match=re.escape(name)):
        pymc_dp.sample(5, model=_beta_model(), epsilon=1.0, ledger=ledger, **kwargs)
    assert len(ledger) == 0


@pytest.mark.parametrize(
    "options", [{"hmm_method": "gibbs"}, {"projection": "round"}, {"tunee": 3}], ids=repr
)
def test_bad_hmm_options_raise_before_the_counts_are_released(options):
    ledger = PrivacyLedger(budget=1.0)
    (name,) = options
    with pytest.raises(ValueError, match=re.escape(name)):
        pymc_dp.sample(
            3, model=naive_bayes_hmm(_counts(), 2), epsilon=1.0, ledger=ledger, **QUIET, **options
        )
    assert len(ledger) == 0


def test_bad_draws_and_metropolis_options_raise_before_anything_is_charged():
    ledger = PrivacyLedger(budget=1.0)
    with pytest.raises(ValueError, match="draw"):
        pymc_dp.sample(2.5, model=_beta_model(), epsilon=1.0, ledger=ledger, **QUIET)
    with pytest.raises(ValueError, match="nuts"):
        pymc_dp.sample(
            5,
            model=_truncated_model(),
            epsilon=1.0,
            ledger=ledger,
            mechanism="metropolis",
            proposal_scale=0.1,
            nuts={"target_accept": 0.9},
            **QUIET,
        )
    assert len(ledger) == 0


@pytest.mark.integration
def test_valid_step_options_still_run():
    # NUTS samples the hyperpriors on the data-free model: its options are accepted
    idata = pymc_dp.sample(
        5,
        model=_hyper_model(),
        epsilon=1.0,
        mechanism="gibbs-exponential",
        tune=5,
        target_accept=0.9,
        random_seed=[1, 2],
        var_names=["rate", "mean"],
        progressbar=False,
        chains=1,
    )
    assert set(idata["posterior"].data_vars) == {"rate", "mean"}


# --- a budget error after a provided step released --------------------------------------------


def test_budget_error_does_not_deny_a_provided_steps_release():
    ledger = PrivacyLedger(budget=0.5)
    with _beta_model():
        step = pymc_dp.PrivateConjugateGibbs(epsilon=1.0)  # its own ledger: released now
        with pytest.raises(BudgetExceededError, match=r"release of") as info:
            pymc_dp.sample(5, step=step, ledger=ledger, tune=5, **QUIET)
    message = str(info.value)
    assert "nothing was released" not in message
    assert "already released" in message and len(ledger) == 0
    # without a provided step the message is unchanged
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        pymc_dp.sample(5, model=_beta_model(), epsilon=1.0, ledger=ledger, tune=5, **QUIET)
