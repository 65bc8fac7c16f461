"""``pymc_dp.sample``: private posterior sampling of a PyMC model, with its privacy ledger.

This module checks the options, asks the one recogniser (:func:`pymc_dp.analysis.recognise`)
what the model is — refusing anything that reads private data outside a mechanism — looks the
route up in the one table (:data:`pymc_dp.routes.ROUTES`), and attaches this run's ledger to
the trace the route returns. The routes own the rest of the data path: check the budget,
record the event, release, sample, strip. The route runs inside the ledger's
:meth:`~pymc_dp.PrivacyLedger.hold`, which for a persisted
:class:`~pymc_dp.session.PrivacySession` is its file lock: no other process charges the
session between the route's budget check and its last charge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model import modelcontext
from pymc.util import RandomState

from pymc_dp.analysis import recognise
from pymc_dp.analysis.inputs import validate_public
from pymc_dp.certificate import certify_stripped
from pymc_dp.errors import BudgetExceededError, ReleasedRunFailedError
from pymc_dp.inference import INFERENCES
from pymc_dp.ledger import (
    LEDGER_GROUP,
    PrivacyEvent,
    PrivacyLedger,
    validate_delta,
    validate_neighbouring,
)
from pymc_dp.mechanisms.exponential import ACCOUNTINGS
from pymc_dp.mechanisms.gaussian import validate_gaussian_delta, validate_noise
from pymc_dp.mechanisms.laplace import NoiseBackend
from pymc_dp.routes import MECHANISMS, route_for
from pymc_dp.routes.base import RunRequest
from pymc_dp.routes.laplace import (
    private_trace,
    released_statistics_dataset,
)
from pymc_dp.sample_options import (
    check_route_options,
    default_nuts_sampler,
    is_integer,
    validate_sample_kwargs,
)
from pymc_dp.session import PrivacySession
from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.traces import RELEASED_GROUP, SAFE_GROUPS

__all__ = [
    "MECHANISMS",
    "RELEASED_GROUP",
    "SAFE_GROUPS",
    "private_trace",
    "released_statistics_dataset",
    "sample",
]


def sample(
    draws: int = 1000,
    *,
    tune: int | None = None,
    chains: int | None = None,
    cores: int | None = None,
    random_seed: RandomState = None,
    epsilon: float | Mapping[str, float] | None = None,
    delta: float = 0.0,
    neighbouring: str = "replace-one",
    mechanism: str = "laplace",
    noise: str = "laplace",
    accounting: str = "basic",
    release: str | None = None,
    budget: float | tuple[float, float] | None = None,
    ledger: PrivacyLedger | None = None,
    session: PrivacySession | None = None,
    noise_backend: NoiseBackend = "opendp",
    noise_rng: np.random.Generator | None = None,
    max_trials: Mapping[str, int] | None = None,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    tempering: str | None = None,
    step: PrivateConjugateGibbs | Sequence[PrivateConjugateGibbs] | None = None,
    public: Sequence[str] = (),
    assume_rejection_bound: bool = False,
    inference: str | None = None,
    clamp_to_bounds: bool | Sequence[str] = False,
    covariate_bins: Mapping[str, int | str | Sequence] | None = None,
    model: pm.Model | None = None,
    **kwargs,
) -> xr.DataTree:
    """Sample the posterior of the model in context, privately, and return a private trace.

    With ``mechanism="laplace"`` (default) every observed variable must be a supported
    conjugate likelihood (see :mod:`pymc_dp.analysis.conjugate`) or a Poisson, Normal (unknown
    mean and sd) or linear-regression likelihood with declared ``data_bounds``
    (:mod:`pymc_dp.analysis.bounded`); its sufficient statistics are released once with the
    Laplace mechanism (Foulds et al. 2016, §3.2 eq. 16–17; Bernstein & Sheldon 2018, 2019), or
    with the Gaussian mechanism (``noise="gaussian"``).
    A conjugate parent is sampled by :class:`~pymc_dp.PrivateConjugateGibbs` (§4.2); the
    bounded likelihoods become potentials of the private model (plug-in or noise-aware,
    ``inference``) whose parameters PyMC's NUTS samples, as it samples every variable that
    reads no private data.
    The other mechanisms sample the posterior at a temperature T set from ε and the
    log-likelihood bound Δ (:mod:`pymc_dp.routes.tempered`). A model is refused — never
    sampled non-privately — if any observed variable cannot be handled.

    Guarantee: the returned trace is (ε, δ)-DP under ``neighbouring``, with (ε, δ) the
    composition of this run's ledger events. For ``"laplace"`` draws, chains and cores are
    post-processing; for the other mechanisms their cost is in the ledger, and an event flagged
    ``assumes_convergence`` holds only for a converged chain (its ``worst_case_epsilon``, when
    given, holds without that assumption).

    Parameters
    ----------
    draws : int
        Draws per chain (as ``pm.sample``).
    tune, chains, cores, random_seed
        As ``pm.sample``: the same names, places (keyword-only) and defaults. None is PyMC's
        default on the Laplace route; the posterior-sampling mechanisms (whose chains and
        sweeps cost ε) then run one chain with 1000 tuning sweeps.
        ``random_seed`` seeds the sampler only, never the privacy noise (``noise_rng``).
    epsilon : float or dict
        Total epsilon, split equally across the observed variables' releases, or
        ``{observed name: epsilon}`` (Laplace only). Not needed for releases made by ``step``.
    delta : float
        Delta allotted to the run (0 <= delta < 1). Spent by ``noise="gaussian"`` (required
        there, 0 < δ < 1, split equally across the releases) and by ``"metropolis"`` with
        ``release="chain"`` (its declared bound on rejections); ignored otherwise.
    neighbouring : {"replace-one", "add-remove-one"}
        "replace-one" (default; n public) or "add-remove-one" (Laplace only).
    mechanism : {"laplace", "ops", "gibbs-exponential", "metropolis", "dirichlet-lsdim", \
"dirichlet-lshist", "dirichlet-ehd", "dirichlet-ehds"}
        ``"laplace"`` (default): Laplace-privatised sufficient statistics (count tensor for a
        naive-Bayes HMM).
        ``"dirichlet-*"``: one release of a Dirichlet–Categorical posterior (the note on
        Dirichlet/Hellinger mechanisms, 2020, Algorithms 1, 2, 3, 5; Theorem 3.1), for a model
        with one observed ``pm.Categorical`` whose probability is one ungrouped Dirichlet with
        constant concentrations α: LSDim/LSHist add Laplace noise to the first k − 1 counts,
        EHD/EHDS draw one candidate posterior by the exponential mechanism with Hellinger
        utility (global or γ = 1 smooth sensitivity). (ε, 0)-DP, replace-one only; the trace's
        draws are exact draws from the released Dir(α̃) and free (see
        :mod:`pymc_dp.routes.dirichlet`; EHDL is not differentially private and not offered).
        ``"ops"``: one posterior sample at T = 2Δ/ε per released draw (Foulds §3.1 eq. 14).
        Exact, independent draws when the model's blocks allow it; otherwise the last draw
        of each chain, flagged ``assumes_convergence``. For naive-Bayes HMMs see
        :func:`pymc_dp.routes.hmm.run_hmm`.
        ``"gibbs-exponential"``: every Gibbs update is an exponential mechanism and every draw
        is released; all sweeps, tuning included, compose to ε (Foulds §4.1 eq. 19–20).
        ``"metropolis"``: random-walk Metropolis at T = 2Δ/ε_step with a public, fixed
        ``proposal_scale`` (Foulds Theorem C.1); under ``release="chain"`` ``delta`` is the
        declared bound on rejections.
        The three tempered mechanisms take models whose likelihoods read truncated priors
        (Bernoulli/Binomial ← truncated Beta, Categorical/Multinomial ← TruncatedDirichlet,
        Poisson ← truncated Gamma, Normal with constant σ ← truncated Normal), see
        :mod:`pymc_dp.analysis.tempered`.
    noise : {"laplace", "gaussian"}
        Noise of the statistics route (``mechanism="laplace"`` only). ``"laplace"`` (default):
        Laplace noise calibrated to the L1 sensitivity, (ε, 0)-DP. ``"gaussian"``: the
        Gaussian mechanism through OpenDP (:mod:`pymc_dp.mechanisms.gaussian`), calibrated to
        the L2 sensitivity of each release (the family's ``l2_sensitivity``): ρ-zCDP with
        ρ = Δ₂²/(2σ²) (Bun & Steinke 2016, Prop. 1.6), σ the smallest scale whose conversion
        is (ε, δ)-DP (Canonne, Kamath & Steinke 2020, Cor. 13, as OpenDP converts). Needs
        ``delta`` > 0. Far less noisy than Laplace when one record moves many released
        statistics at once (a regression's XᵀX with p covariates: L2 √D against L1 D, D =
        (p + 2)(p + 3)/2; per-entry noise 2.7× smaller at p = 10, ε = 1, δ = 1e-6); noisier
        for one or two statistics and for a single count table, where a record moves at most
        two cells (docs/privacy.md, "The Gaussian mechanism"). Every family is supported in
        both ``inference`` modes (noise-aware: the release given the statistics is exactly
        Normal(T, σ²I), σ known, so no ``<y>_noise_variance`` is added). Each event
        records mechanism ``"gaussian"``, (ε, δ), the L2 sensitivity, σ and ρ;
        ``ledger.epsilon_at(delta)`` composes Gaussian events tightly (PLD/RDP). Not offered
        for naive-Bayes HMMs (NotImplementedError).
    accounting : {"basic", "tight"}
        How ``mechanism="ops"`` and ``"gibbs-exponential"`` (ordinary and naive-Bayes HMM
        models) calibrate their temperature. ``"basic"`` (default): the releases' ε add up to
        ``epsilon``, pure ε-DP. ``"tight"`` (needs 0 < ``delta`` < 1): the lowest temperature
        whose releases compose to ``epsilon`` at ``delta`` by the tightest valid accounting
        (:meth:`PrivacyLedger.epsilon_at`: bounded-range composition of the exponential
        mechanisms, Dong, Durfee & Rogers 2020), so the run is (ε, δ)-DP; its ledger's basic
        total is above ε, and the ledger made for a ``budget`` is a tight-budget ledger
        (``PrivacyLedger(tight_budget=True)``); a session always checks basic totals and
        refuses such runs unless its budget covers them (docs/accounting.md).
    release : {"last", "chain"}, optional
        Which draws the tempered mechanisms release: the last draw of each chain (default for
        ``"ops"`` and ``"metropolis"``) or every draw (``"gibbs-exponential"`` always).
        The Laplace path releases statistics, so every draw is free and ``release`` must be
        None; the HMM's OPS supports "last" only.
    budget : float or (float, float), optional
        (epsilon, delta) budget for a new ledger; exclusive with ``ledger`` and ``session``.
    ledger : PrivacyLedger, optional
        Ledger to charge (e.g. shared across analyses of the same records). It is updated in
        place; the trace's ledger lists this run's events and the events of the releases made
        by ``step`` (each once, even when they were charged to this ledger before the call).
        Exclusive with ``session`` and ``budget``.
    session : PrivacySession, optional
        Persisted budget of the dataset (:class:`~pymc_dp.session.PrivacySession`), shared by
        every process that analyses it; exclusive with ``ledger`` and ``budget`` (the session
        carries its own budget). The run holds the session's file lock for the whole route
        (budget check, charges, releases and sampling: every route charges before it
        releases or samples), so another process's run on the same session waits; the cost
        is checked against every event in the file, and each event is written and fsynced
        before its noise is drawn or its first draw is sampled. If
        the run would exceed the budget it raises ``BudgetExceededError`` and writes nothing.
        The trace's ledger lists this run's events (as for ``ledger``) and
        names the session and its cumulative spend after the run
        (:attr:`PrivacyLedger.session`, attributes ``session_*`` of ``privacy_ledger``).
        Passing the session as ``ledger=`` does the same.
    noise_backend : {"opendp", "numpy"}
        OpenDP (default, floating-point safe) or NumPy (tests only).
    noise_rng : numpy.random.Generator, optional
        Source of the privacy noise when it is not OpenDP's: the NumPy Laplace backend, and
        the secret seed of the sampler's draws for the posterior-sampling mechanisms (whose
        draws are the noise, :mod:`pymc_dp.steps.noise`). Default: fresh OS entropy. Keep it
        independent of ``random_seed``: a published sampling seed must never reproduce the
        privacy noise.
    max_trials : dict, optional
        ``{observed name: M}`` for Binomial/Multinomial likelihoods with per-record trials.
    data_bounds : dict, optional
        ``{observed name: (low, high)}``: declared range of Poisson counts or Normal values,
        chosen without looking at the data (records outside raise, unless clamped). For a
        linear regression also ``{covariates name: (low, high)}``, keyed by the covariates'
        ``pm.Data`` name (``"<observed>_covariates"`` for a constant matrix), with one pair for
        every column or arrays of one bound per column. Every mechanism; on the Laplace path
        the statistics are rescaled to [0, 1] by these bounds, which set their sensitivity.
    clamp_to_bounds : bool or sequence of str
        Laplace only. False (default): a record outside its declared bounds is bad input and
        raises before anything is released. True (every ``data_bounds`` key) or a list of keys:
        such records are clamped into the bounds before the statistics are computed (a
        per-record map, so the sensitivity and the guarantee hold); the ledger event records
        which variables were clamped to which bounds (``PrivacyEvent.clamping``), never how
        many records. NaN and infinite values are always refused.
    covariate_bins : dict, optional
        Laplace only. ``{covariates name: bins}`` for per-record covariates read per cell: a
        Bernoulli/Binomial/Categorical probability or a Poisson rate that reads a ``pm.Data``
        array of covariates (logistic and Poisson regression, ``logit_p=alpha + X @ beta``,
        alone or with group labels) has its records' counts released per cell of the group
        labels and of public bins of every covariate column's declared ``data_bounds``.
        A value per key: an integer number of bins (default 10 for floating-point arrays), the
        string ``"levels"`` (whole-number values low..high read exactly, the default for
        integer arrays; use it for 0/1 indicators), or a list of these, one per column. Within
        a bin the parameter is averaged over the bin (the covariate taken as uniform there):
        see :mod:`pymc_dp.graph.cells` for where that approximation holds.
    disjoint : sequence of sequences of str, optional
        Groups of observed variables that hold different people by a public split (tempered
        mechanisms): each group composes in parallel instead of adding.
    step : PrivateConjugateGibbs or list, optional
        Already-constructed private steps; their releases are reused (no new release).
    public : sequence of str, optional
        Names of ``pm.Data`` containers that hold public arrays (no information about
        individuals), which any variable may read. Every other array the model reads is
        private, except single numbers and prior hyperparameters
        (:mod:`pymc_dp.analysis.inputs` says where the line is).
    assume_rejection_bound : bool
        Opt in to ``mechanism="metropolis", release="chain"``, whose (ε, δ) holds only if
        every step rejects with probability at most δ/n — an assumption its own chain
        usually contradicts. The event records it in ``unverified_assumption`` and is not a
        guarantee (``PrivacyLedger.guaranteed`` is False).
    inference : {"noise-aware", "plugin"}, optional
        How the Laplace route reads its released statistics (post-processing either way: the
        same release, the same ledger event). ``"noise-aware"``: the true statistics are latent
        and the Laplace noise is the likelihood of the release, so intervals account for the
        privacy noise (Bernstein & Sheldon 2018; Ju et al. 2022); for Poisson, Normal and
        regression likelihoods the private model gains latent variables named after the
        observed variable (a regression's ``<y>_noise_variance`` and
        ``<y>_covariate_mean``/``_spread``/``_sd``/``_corr_chol``, ``<y>_n_records`` when n
        is private; the Normal's noise-aware likelihood has none of its own; see
        :mod:`pymc_dp.analysis.rewrite`). ``"plugin"``: the projected noisy statistics are used
        as if exact (Foulds et al. 2016, §4.2); intervals are too narrow at small n·ε.
        Default (None): the route's default, see
        :data:`pymc_dp.inference.DEFAULT_INFERENCE`. Only for ``mechanism="laplace"``.
    model : pm.Model, optional
    **kwargs
        Passed to ``pm.sample`` (``progressbar``, ``nuts={...}``, ...). Naive-Bayes HMMs also take
        ``hmm_method="ffbs" | "collapsed"`` and ``projection="cell" | "none"``. When every
        likelihood is a bounded family's (with ``data_bounds``; ``mechanism="laplace"``, no
        ``step``) and every option is one nutpie honours, the private model is sampled by
        nutpie's NUTS, compiled once per model structure (:mod:`pymc_dp.routes.nutpie_nuts`;
        :func:`pymc_dp.sample_options.default_nuts_sampler`); ``nuts_sampler="pymc"`` asks
        for PyMC's NUTS. Normal and linear-regression likelihoods also take
        ``nuts_sampler="blackjax"``: BlackJAX's NUTS on the private model, compiled once per
        model structure (:mod:`pymc_dp.routes.blackjax_nuts`; optional ``jax`` and
        ``blackjax``). Options that
        would see unreleased draws are refused when only the last draw is released. Every
        option is checked before anything is released
        (:func:`pymc_dp.sample_options.validate_sample_kwargs`):
        unknown names, non-integer or out-of-range ``tune``/``chains``/``cores``,
        ``nuts_sampler`` other than ``"pymc"``, ``"blackjax"`` or ``"nutpie"``, unknown
        ``var_names``,
        invalid ``random_seed``
        raise ValueError and charge nothing.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``sample_stats`` (and warm-up groups if kept),
        ``released_statistics`` and ``privacy_ledger``; root attribute ``pymc_dp_ledger``
        (JSON). No ``observed_data``, ``constant_data`` or ``log_likelihood``.

    Raises
    ------
    NonPrivateModelError
        If some observed variable cannot be released privately.
    InvalidPrivateDataError
        If a record lies outside its declared domain (NaN, out of support, unknown category,
        too many trials, outside ``data_bounds`` without ``clamp_to_bounds``), before any
        noise is drawn.
    BudgetExceededError
        If the releases would exceed the budget (nothing is released by this call; a release
        that a provided ``step`` made when it was built has happened, and the message says so).
    SessionCorruptedError
        If the session's file fails verification (nothing is released).
    ValueError
        For invalid epsilon, delta, neighbouring, mechanism, noise or options (including
        ``data_bounds`` or ``clamp_to_bounds`` naming unknown variables; ``noise="gaussian"``
        with δ = 0 or another mechanism), or more than one of ``session``, ``ledger`` and
        ``budget``.
    NotImplementedError
        For ``noise="gaussian"`` on a naive-Bayes HMM (before anything is released).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> rng = np.random.default_rng(0)
    >>> group = rng.integers(0, 3, size=1_000)  # private: each record's group ...
    >>> outcome = rng.binomial(1, np.array([0.1, 0.3, 0.6])[group])  # ... and its 0/1 outcome
    >>> with pm.Model(coords={"group": ["a", "b", "c"]}) as model:
    ...     rate = pm.Beta("rate", 1, 1, dims="group")
    ...     y = pm.Bernoulli("outcome", p=rate[group], observed=outcome)
    ...     idata = pymc_dp.sample(200, epsilon=1.0, tune=100, chains=1, random_seed=1,
    ...                            progressbar=False)
    >>> sorted(idata.children)  # no observed_data, constant_data or log_likelihood
    ['posterior', 'privacy_ledger', 'released_statistics', 'sample_stats']
    >>> idata.posterior["rate"].dims
    ('chain', 'draw', 'group')
    >>> pymc_dp.PrivacyLedger.from_datatree(idata)  # one release, ε = 1
    PrivacyLedger(events=1, epsilon=1, delta=0, budget=none, composition=...)
    """
    model = modelcontext(model)
    sampler = {"tune": tune, "chains": chains, "cores": cores, "random_seed": random_seed}
    kwargs.update({name: value for name, value in sampler.items() if value is not None})
    validate_delta(delta)
    validate_neighbouring(neighbouring)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    validate_noise(noise)
    if accounting not in ACCOUNTINGS:
        raise ValueError(f"accounting must be one of {ACCOUNTINGS}, got {accounting!r}")
    if accounting == "tight" and mechanism not in ("ops", "gibbs-exponential"):
        raise ValueError(
            "accounting='tight' calibrates the temperature of mechanism='ops' or "
            f"'gibbs-exponential', not mechanism={mechanism!r}. Nothing was released."
        )
    if noise == "gaussian":
        if mechanism != "laplace":
            raise ValueError(
                f"noise='gaussian' is the noise of the statistics route (mechanism='laplace'); "
                f"mechanism={mechanism!r} calibrates its own randomness (a temperature, or the "
                "Dirichlet release's Laplace noise or exponential mechanism). Nothing was "
                "released."
            )
        validate_gaussian_delta(delta)
    if not is_integer(draws) or int(draws) < 1:
        raise ValueError(f"need at least one draw (an integer), got {draws!r}")
    if kwargs.get("return_inferencedata", True) is False:
        raise ValueError("pymc_dp.sample always returns a DataTree (it carries the ledger)")
    if ledger is not None and budget is not None:
        raise ValueError("give either a ledger (with its own budget) or a budget, not both")
    if session is not None:
        if not isinstance(session, PrivacySession):
            raise TypeError(
                f"session must be a pymc_dp.PrivacySession, got {type(session).__name__}"
            )
        if ledger is not None or budget is not None:
            raise ValueError(
                "give a session (it carries its own budget), a ledger or a budget, not several: "
                "the session's file holds the dataset's budget and every spend. Nothing was "
                "released."
            )
    if assume_rejection_bound and (mechanism, release) != ("metropolis", "chain"):
        raise ValueError("assume_rejection_bound is for mechanism='metropolis', release='chain'")
    if inference is not None and (mechanism != "laplace" or inference not in INFERENCES):
        raise ValueError(
            f"inference must be one of {INFERENCES} with mechanism='laplace' (the other "
            "mechanisms sample or release the posterior itself), got "
            f"{inference!r} with {mechanism!r}"
        )
    if noise_backend not in ("opendp", "numpy"):
        raise ValueError(f"noise_backend must be 'opendp' or 'numpy', got {noise_backend!r}")
    if noise_rng is not None and not isinstance(noise_rng, np.random.Generator):
        raise TypeError(
            f"noise_rng must be a numpy.random.Generator or None, got {type(noise_rng).__name__}"
        )
    _refuse_initial_values(model)
    validate_sample_kwargs(model, kwargs)
    public = validate_public(model, public)
    recognised = recognise(
        model,
        mechanism,
        public=public,
        max_trials=max_trials,
        data_bounds=data_bounds,
        disjoint=disjoint,
        clamp_to_bounds=clamp_to_bounds,
        covariate_bins=covariate_bins,
        neighbouring=neighbouring,
        progressbar=bool(kwargs.get("progressbar", True)),
    )
    check_route_options(model, kwargs, recognised, mechanism, step)
    kwargs = default_nuts_sampler(model, kwargs, recognised, mechanism, step)
    if noise == "gaussian" and recognised.kind == "hmm":
        raise NotImplementedError(
            "noise='gaussian' is not implemented for naive-Bayes HMM models (their count tensor "
            "and noise-aware sampler are Laplace-only); use noise='laplace'. Nothing was "
            "released."
        )
    run = route_for(recognised.kind, mechanism)
    if session is not None:
        run_ledger = session
    else:
        run_ledger = (
            ledger
            if ledger is not None
            else PrivacyLedger(budget=budget, tight_budget=accounting == "tight")
        )
    step_events = _step_events(step)
    request = RunRequest(
        noise=noise,
        accounting=accounting,
        model=model,
        draws=int(draws),
        mechanism=mechanism,
        epsilon=epsilon,
        delta=delta,
        neighbouring=neighbouring,
        release=release,
        ledger=run_ledger,
        noise_backend=noise_backend,
        noise_rng=noise_rng,
        max_trials=max_trials,
        data_bounds=data_bounds,
        disjoint=disjoint,
        tempering=tempering,
        step=step,
        public=public,
        assume_rejection_bound=assume_rejection_bound,
        inference=inference,
        sample_kwargs=kwargs,
    )
    # A session's hold is its file lock: no other process charges it between the route's
    # budget check and its last charge, and len() counts only what was there before this run.
    with run_ledger.hold():
        spent_before = len(run_ledger)
        try:
            idata = run(request, recognised)
        except BudgetExceededError as error:
            if not step_events:
                raise
            message = _budget_message_with_step_releases(error, step_events)
            raise BudgetExceededError(message) from error
        except Exception as error:
            spent = _run_ledger(run_ledger, spent_before, ()).events
            if not spent:  # refused before anything was charged: the error says so
                raise
            raise ReleasedRunFailedError(_failed_after_release(error, spent), spent) from error
        trace_ledger = _run_ledger(run_ledger, spent_before, step_events)
    # the one place a trace is certified: stripped by its route, with this run's ledger
    try:
        return certify_stripped(
            trace_ledger.attach(idata), (*SAFE_GROUPS, RELEASED_GROUP, LEDGER_GROUP)
        )
    except Exception as error:  # after the release: the spend stands and says so
        spent = trace_ledger.events
        raise ReleasedRunFailedError(_failed_after_release(error, spent), spent) from error


def _refuse_initial_values(model: pm.Model) -> None:
    """Refuse ``initval=`` on model variables before anything is released: the routes rebuild
    the model around the releases, which PyMC cannot do with non-default initial values."""
    named = [rv.name for rv, value in model.rvs_to_initial_values.items() if value is not None]
    if named:
        raise ValueError(
            f"{named} have initval=...; pymc_dp rebuilds the model around the released "
            "statistics and cannot carry them. Drop initval and pass "
            "initvals={name: value} to pymc_dp.sample. Nothing was released."
        )


def _step_events(step) -> tuple[PrivacyEvent, ...]:
    """The ledger events of the releases the provided steps made when they were built."""
    if step is None:
        return ()
    steps = [step] if not isinstance(step, Sequence) else list(step)
    events: list[PrivacyEvent] = []
    for s in steps:
        for event in getattr(s, "events", ()) or ():
            if isinstance(event, PrivacyEvent) and not any(event is e for e in events):
                events.append(event)
    return tuple(events)


def _run_ledger(
    run_ledger: PrivacyLedger, spent_before: int, step_events: tuple[PrivacyEvent, ...]
) -> PrivacyLedger:
    """The ledger of what the trace is built from: the provided steps' releases (made when the
    steps were built, possibly before this call) and this call's new events, each once; and,
    for a session, the session's name and cumulative spend after the run."""
    events = list(step_events)
    events += [e for e in run_ledger.events[spent_before:] if not any(e is s for s in events)]
    this_run = PrivacyLedger(events=events)  # a subset of what was charged: no budget check
    this_run.budget = run_ledger.budget
    this_run.tight_budget = run_ledger.tight_budget
    # only a session names one: a ledger rebuilt from an old trace keeps that trace's record
    this_run.session = run_ledger.session if isinstance(run_ledger, PrivacySession) else None
    return this_run


def _failed_after_release(error: Exception, spent: tuple[PrivacyEvent, ...]) -> str:
    """What a run that failed after charging spent: its events, ε and δ (no value of the
    records or the draws; the cause is chained)."""
    epsilon, delta = math.fsum(e.epsilon for e in spent), math.fsum(e.delta for e in spent)
    listed = "; ".join(f"{e.mechanism} on {', '.join(e.variables) or '-'}" for e in spent)
    return (
        f"the run failed after its release ({type(error).__name__}, chained below): "
        f"{len(spent)} event(s) were charged, epsilon={epsilon:g}, delta={delta:g} ({listed}). "
        "That spend stands (the ledger or session records it) and no trace was returned; "
        "a new run is a new release."
    )


def _budget_message_with_step_releases(
    error: BudgetExceededError, step_events: tuple[PrivacyEvent, ...]
) -> str:
    """The budget error, corrected: the provided steps' releases did happen (at construction)."""
    message = str(error).removesuffix("; nothing was released").rstrip(".")
    spent = sum(e.epsilon for e in step_events)
    return (
        f"{message}. This call released nothing and sampled nothing, but the step(s) passed "
        f"as step= already released their statistics when they were built "
        f"({len(step_events)} event(s), epsilon={spent:g}, recorded in the steps' own ledger): "
        "that release happened and is not undone."
    )
