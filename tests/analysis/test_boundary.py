"""Default deny: every leak of the adversarial review is refused on every route, before any
noise is drawn or any ledger is charged (issue: one data path behind a privacy boundary)."""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_dp
from pymc_dp import InvalidPrivateDataError, NonPrivateModelError, PrivacyLedger
from pymc_dp.analysis import classify_inputs
from pymc_dp.distributions import TruncatedBeta

GROUP = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2])
OUTCOME = np.array([1, 0, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0])
N = GROUP.size
QUIET = {"progressbar": False, "chains": 1}

# (mechanism, options) for every route that reads an ordinary model
ROUTES = [
    ("laplace", {"tune": 20}),
    ("ops", {}),
    ("gibbs-exponential", {"tune": 5}),
    ("metropolis", {"tune": 5, "proposal_scale": 0.05}),
]


def _model(mechanism, extra=None, data=OUTCOME, group=GROUP):
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        if mechanism == "laplace":
            rate = pm.Beta("rate", 2.0, 1.0, dims="group")
        else:
            rate = TruncatedBeta("rate", 2.0, 1.0, 0.1, dims="group")
        pm.Bernoulli("y", p=rate[group], observed=data)
        if extra is not None:
            extra(rate)
    return model


def _sample(model, mechanism, ledger, options, **kwargs):
    return pymc_dp.sample(
        5,
        epsilon=1.0,
        mechanism=mechanism,
        ledger=ledger,
        model=model,
        **options,
        **QUIET,
        **kwargs,
    )


LEAKS = {
    # the labels, one entry per record
    "deterministic_of_labels": lambda rate: pm.Deterministic("p_record", rate[GROUP]),
    # the exact mean of the outcomes from a raw-data constant
    "deterministic_of_constant": lambda rate: pm.Deterministic(
        "m", rate.sum() * 0 + pt.mean(pt.as_tensor(OUTCOME.astype(float)))
    ),
    # a likelihood on the raw data as a Potential for another free variable
    "potential_likelihood": lambda rate: pm.Potential(
        "lik",
        pm.logp(pm.Normal.dist(pm.Normal("mu", 0, 1), 1.0), OUTCOME.astype(float)).sum(),
    ),
    # a Deterministic reading the observed variable itself
    "deterministic_of_observed": lambda rate: pm.Deterministic(
        "copy", rate.sum() * 0 + pm.modelcontext(None)["y"].sum()
    ),
    # a free variable whose prior is centred on private records
    "record_shaped_prior": lambda rate: pm.Normal("z", mu=OUTCOME.astype(float), sigma=1.0),
    # a pm.Data container, not declared public, in a Deterministic
    "undeclared_data": lambda rate: pm.Deterministic(
        "d", rate.sum() + pm.Data("x", np.arange(5.0)).sum()
    ),
}


@pytest.mark.parametrize("mechanism, options", ROUTES, ids=[r[0] for r in ROUTES])
@pytest.mark.parametrize("leak", list(LEAKS))
def test_every_leak_is_refused_before_noise_or_charge(leak, mechanism, options):
    ledger = PrivacyLedger(budget=1.0)
    model = _model(mechanism, LEAKS[leak])
    with pytest.raises(NonPrivateModelError, match="Nothing was released") as info:
        _sample(model, mechanism, ledger, options)
    assert len(ledger) == 0
    message = str(info.value)
    assert "public=" in message  # the refusal teaches the fix
    # counts and shapes, never values
    assert str(OUTCOME.tolist()) not in message and str(GROUP.tolist()) not in message
    # the budget is intact: the next legitimate analysis runs
    idata = _sample(_model(mechanism), mechanism, ledger, options)
    assert PrivacyLedger.from_datatree(idata).epsilon <= 1.0 + 1e-12


def test_declared_public_data_may_be_read_anywhere():
    def extra(rate):
        pm.Deterministic("shifted", rate + pm.Data("offset", np.array([0.1, 0.2, 0.3])))

    model = _model("laplace", extra)
    idata = _sample(model, "laplace", PrivacyLedger(), {"tune": 20}, public=["offset"])
    shifted = idata["posterior"]["shifted"].values - idata["posterior"]["rate"].values
    np.testing.assert_allclose(shifted, np.broadcast_to([0.1, 0.2, 0.3], shifted.shape))


def test_public_declaration_is_checked():
    model = _model("laplace", LEAKS["undeclared_data"])
    with pytest.raises(
        ValueError,
        match=r"not pm\.Data containers .*wrapping it as pm\.Data\('name', array\) and naming "
        r"it in public=\[\.\.\.\]$",
    ):
        _sample(model, "laplace", PrivacyLedger(), {"tune": 20}, public=["nope"])
    with pm.Model() as observed_public:
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=pm.Data("y_data", OUTCOME))
    with pytest.raises(NonPrivateModelError, match="cannot be declared public"):
        pymc_dp.sample(5, epsilon=1.0, model=observed_public, public=["y_data"], **QUIET)
    with pm.Model() as aliased:  # a "public" copy of the records
        p = pm.Beta("p", 1, 1)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
        pm.Deterministic("copy", p + pm.Data("copy_of_y", OUTCOME.copy()).sum())
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=r"\['copy_of_y'\] hold observed values"):
        pymc_dp.sample(5, epsilon=1.0, model=aliased, public=["copy_of_y"], ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_one_number_arrays_are_design_constants_and_distinct_values_are_private():
    with pm.Model() as model:
        alpha = pm.Dirichlet("alpha", a=np.ones(3))
        mu = pm.Normal("mu", mu=np.zeros(3), sigma=np.full(3, 2.0))
        pm.Deterministic("scaled", 2.0 * alpha + mu)
        pm.Categorical("c", p=alpha, observed=np.array([0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 2, 0]))
    inputs = classify_inputs(model)
    kinds = {inputs.labels[v]: k for v, k in inputs.kinds.items()}
    assert kinds["the observed values of 'c'"] == "private"
    assert not inputs.private_reads("alpha") and not inputs.private_reads("scaled")
    # an informative prior of distinct values could be records: private until declared public
    with pm.Model() as informative:
        theta = pm.Dirichlet("theta", a=np.array([1.0, 2.0, 3.0]))
        pm.Categorical("c", p=theta, observed=np.array([0, 1, 2, 2, 1]))
    with pytest.raises(
        NonPrivateModelError, match=r"'theta' reads a constant array of shape \(3,\)"
    ):
        pymc_dp.sample(5, epsilon=1.0, model=informative, **QUIET)
    with pm.Model() as declared:
        theta = pm.Dirichlet("theta", a=pm.Data("prior_counts", np.array([1.0, 2.0, 3.0])))
        pm.Categorical("c", p=theta, observed=np.array([0, 1, 2, 2, 1]))
    idata = pymc_dp.sample(5, tune=5, epsilon=1.0, model=declared, public=["prior_counts"], **QUIET)
    assert idata["posterior"]["theta"].shape[-1] == 3


def test_record_shaped_prior_parameter_is_private():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        pm.Normal("z", mu=np.linspace(0, 1, N), sigma=1.0)
        pm.Bernoulli("y", p=p, observed=OUTCOME)
    inputs = classify_inputs(model)
    assert inputs.private_reads("z") == [f"a constant array of shape ({N},)"]


@pytest.mark.parametrize("mechanism", ["laplace", "ops"])
def test_fractional_records_in_pm_data_and_trials_are_refused(mechanism):
    """PyMC casts float pm.Data to the likelihood's integers inside the graph (0.5 → 0); the
    recogniser reads the values the user gave and refuses them, before any release."""
    prior = pm.Beta if mechanism == "laplace" else None

    def rate(name):
        if prior is not None:
            return prior(name, 1, 1)
        return TruncatedBeta(name, 1.0, 1.0, 0.1)

    with pm.Model() as fractional_trials:
        trials = pm.Data("trials", np.full(N, 3.5))
        pm.Binomial("k", n=trials, p=rate("p"), observed=np.ones(N, dtype=int))
    with pm.Model() as fractional_records:
        pm.Bernoulli("y", p=rate("p"), observed=pm.Data("y_data", np.r_[OUTCOME[:-1], 0.5]))
    ledger = PrivacyLedger()
    for model, match, options in (
        (fractional_trials, "trials", {"max_trials": {"k": 4}}),
        (fractional_records, "y", {}),
    ):
        with pytest.raises(InvalidPrivateDataError, match=match) as info:
            pymc_dp.sample(
                5,
                epsilon=1.0,
                mechanism=mechanism,
                model=model,
                ledger=ledger,
                **options,
                **QUIET,
            )
        assert "0.5" not in str(info.value) and "3.5" not in str(info.value)
    assert len(ledger) == 0


def test_private_step_in_pm_sample_directly_is_refused():
    model = _model("laplace")
    with model:
        step = pymc_dp.PrivateConjugateGibbs([model["rate"]], epsilon=1.0)
        with pytest.raises(NonPrivateModelError, match="observed_data"):
            pm.sample(5, tune=0, step=step, **QUIET)
    # its release can still be used through pymc_dp.sample, once
    idata = pymc_dp.sample(5, tune=5, step=step, model=model, **QUIET)
    assert "observed_data" not in idata.children


def test_tempered_step_in_pm_sample_directly_is_refused():
    model = _model("ops")
    with model:
        step = pymc_dp.TemperedConjugateGibbs(temperature=4.0)
        with pytest.raises(NonPrivateModelError, match="observed_data"):
            pm.sample(5, tune=0, step=step, **QUIET)


@pytest.mark.integration
@pytest.mark.parametrize("mechanism", ["ops", "metropolis"])
def test_last_draw_routes_show_no_unreleased_progress_or_timing(mechanism):
    with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
        a = pm.HalfNormal("a", 2.0)
        rate = pm.Truncated("rate", pm.Beta.dist(a + 1, 1.0), lower=0.1, upper=0.9, dims="group")
        pm.Bernoulli("y", p=rate[GROUP], observed=OUTCOME)
    options = {"tune": 10}
    if mechanism == "metropolis":
        options["proposal_scale"] = 0.05
    with pytest.raises(ValueError, match="progress bar"):
        pymc_dp.sample(
            5, epsilon=1.0, mechanism=mechanism, model=model, progressbar=True, chains=1, **options
        )
    idata = pymc_dp.sample(5, epsilon=1.0, mechanism=mechanism, model=model, chains=1, **options)
    assert idata["posterior"].sizes["draw"] == 1
    assert "sampling_time" not in idata["posterior"].attrs
    assert "sample_stats" not in idata.children


@pytest.mark.integration
def test_metropolis_chain_is_an_explicit_opt_in_and_not_a_guarantee():
    model = _model("metropolis")
    # a wide proposal leaves the truncated prior's support often: the chain rejects. The
    # mechanism's proposals are its privacy noise, drawn from a secure source that
    # random_seed does not fix: over 5 draws a chain accepted every move (CI saw it twice,
    # seeded or not); over 40 draws, with 0-2 of 5 moves accepted in six local runs, it has
    # probability of order 0.4**40 ~ 1e-16.
    options = {
        "tune": 10,
        "proposal_scale": 2.0,
        "delta": 1e-6,
        "release": "chain",
    }
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match="assume_rejection_bound"):
        _sample(model, "metropolis", ledger, options)
    assert len(ledger) == 0
    with pytest.warns(UserWarning, match="the released chain rejected .* not a guarantee"):
        idata = pymc_dp.sample(
            40,
            epsilon=1.0,
            mechanism="metropolis",
            ledger=ledger,
            model=model,
            assume_rejection_bound=True,
            **options,
            **QUIET,
        )
    run = PrivacyLedger.from_datatree(idata)
    (event,) = run.events
    assert event.mechanism == "metropolis" and event.unverified_assumption
    assert "rejection rate is in the trace" in event.statistic
    stats = idata["sample_stats"]
    rate = 1.0 - float(stats["accepted"].mean())
    assert stats.attrs["rejection_rate"] == pytest.approx(rate)
    assert stats.attrs["assumed_rejection_bound"] == pytest.approx(1e-6 / event.compositions)
    assert rate > stats.attrs["assumed_rejection_bound"]  # its own chain contradicts it
    assert not run.guaranteed and "NOT A GUARANTEE" in repr(run)


@pytest.mark.integration
def test_mechanism_names_are_the_same_in_the_api_and_the_ledger():
    for mechanism, options in ROUTES:
        idata = _sample(_model(mechanism), mechanism, PrivacyLedger(), options)
        (event,) = PrivacyLedger.from_datatree(idata).events
        assert event.mechanism == mechanism


def test_private_posterior_predictive_never_reads_records():
    model = _model("laplace")
    idata = _sample(model, "laplace", PrivacyLedger(), {"tune": 20})
    with model:
        out = pymc_dp.sample_posterior_predictive(idata, records_per_group=4, random_seed=1)
    assert "observed_data" not in out.children and "constant_data" not in out.children
    pred = out["posterior_predictive"]["y"]
    assert pred.dims == ("chain", "draw", "group", "y_record")
    assert pred.shape[2:] == (3, 4)  # groups × new records, never one per private record
    rate = idata["posterior"]["rate"].mean(("chain", "draw")).values
    # mean of 4·draws Bernoulli(rate_g) per group: within 5 standard errors
    se = np.sqrt(rate * (1 - rate) / (4 * pred.sizes["draw"]))
    np.testing.assert_array_less(np.abs(pred.mean(("chain", "draw", "y_record")) - rate), 5 * se)
    assert PrivacyLedger.from_datatree(out).epsilon == PrivacyLedger.from_datatree(idata).epsilon


def _hmm(truncation=None):
    from pymc_dp.hmm import simulate_records
    from pymc_dp.models import naive_bayes_hmm

    sim = simulate_records(3, 6, 2, [2, 3], 200, np.random.default_rng(8))
    return sim.counts, naive_bayes_hmm(sim.counts, 2, truncation=truncation)


@pytest.mark.parametrize("mechanism", ["laplace", "ops", "gibbs-exponential"])
def test_hmm_deterministic_of_the_counts_is_refused(mechanism):
    counts, model = _hmm(truncation=10)
    with model:
        pm.Deterministic("cell_totals", pt.as_tensor(counts.counts).sum(axis=(2, 3)))
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match="cell_totals") as info:
        pymc_dp.sample(
            5, tune=5, epsilon=5.0, mechanism=mechanism, model=model, ledger=ledger, **QUIET
        )
    assert len(ledger) == 0 and "Nothing was released" in str(info.value)


@pytest.mark.parametrize("mechanism", ["ops", "gibbs-exponential"])
def test_hmm_posterior_sampling_under_add_remove_one_is_refused_before_sampling(
    mechanism, monkeypatch
):
    _, model = _hmm(truncation=10)
    ledger = PrivacyLedger()

    @functools.wraps(pm.sample)  # keeps pm.sample's signature for the option checks
    def no_sampling(*args, **kwargs):
        raise AssertionError("pm.sample ran before the refusal")

    monkeypatch.setattr(pm, "sample", no_sampling)

    monkeypatch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
    with pytest.raises(ValueError, match="replace-one"):
        pymc_dp.sample(
            5,
            tune=5,
            epsilon=5.0,
            mechanism=mechanism,
            model=model,
            neighbouring="add-remove-one",
            ledger=ledger,
            **QUIET,
        )
    assert len(ledger) == 0


@pytest.mark.parametrize("mechanism, options", ROUTES, ids=[r[0] for r in ROUTES])
def test_sample_inside_the_model_context(mechanism, options):
    with _model(mechanism):
        idata = pymc_dp.sample(5, epsilon=1.0, mechanism=mechanism, **options, **QUIET)
    assert PrivacyLedger.from_datatree(idata).events[0].mechanism == mechanism


def test_hmm_variables_added_by_the_user_are_refused_not_dropped():
    _, model = _hmm()
    with model:
        pm.Deterministic("doubled", 2.0 * model["transition"])
    ledger = PrivacyLedger()
    with pytest.raises(ValueError, match=r"\['doubled'\] were added"):
        pymc_dp.sample(5, tune=5, epsilon=5.0, model=model, ledger=ledger, **QUIET)
    assert len(ledger) == 0


@pytest.mark.parametrize("repeated", [0, 1])
def test_all_equal_labels_or_records_are_still_private(repeated):
    """Whether an array is private never depends on its values: labels that are all 0 (or
    records all 1) read by a Deterministic are refused like any others. (A repeated number was
    a design constant anywhere, so these models were accepted and published the labels.)"""
    labels = np.full(12, repeated)
    records = np.full(12, repeated)
    for extra in (
        lambda rate: pm.Deterministic("d", rate[labels]),
        lambda rate: pm.Deterministic("d", rate.sum() + pt.as_tensor(records).mean()),
        lambda rate: pm.Potential("p", pt.as_tensor(records).sum() * rate.sum()),
    ):
        with pm.Model(coords={"group": list("abc")}) as model:
            rate = pm.Beta("rate", 1.0, 1.0, dims="group")
            pm.Bernoulli("y", p=rate[labels], observed=records)
            extra(rate)
        ledger = PrivacyLedger()
        with pytest.raises(NonPrivateModelError, match=r"reads a constant array of shape \(12,\)"):
            pymc_dp.sample(5, epsilon=1.0, model=model, ledger=ledger, **QUIET)
        assert len(ledger) == 0


def test_repeated_number_hyperparameters_stay_design_constants_only_as_priors():
    with pm.Model() as model:
        weights = pm.Dirichlet("weights", a=np.ones(3))
        pm.Normal("mu", mu=np.zeros(3), sigma=np.full(3, 2.0))
        pm.Categorical("c", p=weights, observed=np.array([0, 1, 2, 2, 1, 0]))
    inputs = classify_inputs(model)
    assert not inputs.private_reads("weights") and not inputs.private_reads("mu")
    with pm.Model() as model:
        weights = pm.Dirichlet("weights", a=np.ones(3))
        pm.Deterministic("shifted", weights + np.ones(3))  # not a prior: private
        pm.Categorical("c", p=weights, observed=np.array([0, 1, 2, 2, 1, 0]))
    assert classify_inputs(model).private_reads("shifted") == ["a constant array of shape (3,)"]


@pytest.mark.parametrize("values", [[3.0, 5.0], [4.0, 4.0]])
def test_two_element_arrays_read_by_a_deterministic_are_private(values):
    """The boundary is one number: an array of two elements (two records, or two labels)
    read by a Deterministic is private, whether its values differ or not; a single number
    is a design constant. (A mutant letting arrays of size 2 through as design constants
    survived every boundary test: none had two elements.)"""
    pair = np.array(values)
    with pm.Model() as model:
        rate = pm.Beta("rate", 1.0, 1.0)
        pm.Bernoulli("y", p=rate, observed=OUTCOME)
        pm.Deterministic("published", rate + pt.as_tensor(pair).sum())
        pm.Deterministic("scaled", 2.5 * rate)
    inputs = classify_inputs(model)
    assert inputs.private_reads("published") == ["a constant array of shape (2,)"]
    assert not inputs.private_reads("scaled")
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=r"'published' reads a constant array of shape"):
        pymc_dp.sample(5, epsilon=1.0, model=model, ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_an_opaque_python_op_is_refused_naming_it():
    """What a ``wrap_py`` op reads is invisible to the graph: a Deterministic through one is
    refused, and the message says so (not "observed values")."""
    from pytensor import wrap_py

    @wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
    def shifted(value):
        return np.asarray(value + 1.0)

    with pm.Model() as model:
        rate = pm.Beta("rate", 1.0, 1.0)
        pm.Bernoulli("y", p=rate, observed=OUTCOME)
        pm.Deterministic("opaque", shifted(rate))
    [read] = classify_inputs(model).private_reads("opaque")
    assert read.startswith("an opaque Python op (") and read.endswith(
        ") whose reads pymc_dp cannot see"
    )
    ledger = PrivacyLedger()
    with pytest.raises(NonPrivateModelError, match=r"'opaque' reads an opaque Python op \("):
        pymc_dp.sample(5, epsilon=1.0, model=model, ledger=ledger, **QUIET)
    assert len(ledger) == 0


def test_a_literal_size_of_two_dimensions_is_a_design_constant():
    """A shape given as a distribution's size is public (the constant (2, 3) has two distinct
    values, yet reads nothing about a record)."""
    with pm.Model() as model:
        rate = pm.Beta("rate", 1.0, 1.0)
        pm.Normal("z", 0.0, 1.0, size=(2, 3))
        pm.Bernoulli("y", p=rate, observed=OUTCOME)
    inputs = classify_inputs(model)
    assert not inputs.private_reads("z")
    assert "a constant of shape (2,)" in inputs.labels.values()


def test_hmm_noise_aware_inference_with_the_collapsed_sampler_is_refused_before_release():
    _, model = _hmm(truncation=10)
    ledger = PrivacyLedger()
    with pytest.raises(
        ValueError, match=r"^inference='noise-aware' samples the states by FFBS: use hmm_method"
    ):
        pymc_dp.sample(
            5,
            epsilon=1.0,
            model=model,
            ledger=ledger,
            inference="noise-aware",
            hmm_method="collapsed",
            **QUIET,
        )
    assert len(ledger) == 0
