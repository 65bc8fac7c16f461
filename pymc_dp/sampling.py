"""``pymc_dp.sample``: private posterior sampling of a PyMC model, with its privacy ledger.

This module checks the options, asks the one recogniser (:func:`pymc_dp.analysis.recognise`)
what the model is — refusing anything that reads private data outside a mechanism — looks the
route up in the one table (:data:`pymc_dp.routes.ROUTES`), and attaches this run's ledger to
the trace the route returns. The routes own the rest of the data path: check the budget,
record the event, release, sample, strip.
"""

from __future__ import annotations

import difflib
import inspect
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import xarray as xr
from pymc.backends.arviz import to_inference_data
from pymc.model import modelcontext
from pymc.sampling.mcmc import STEP_METHODS
from pymc.step_methods.compound import Competence
from pymc.vartypes import discrete_types

from pymc_dp.analysis import recognise
from pymc_dp.analysis.inputs import validate_public
from pymc_dp.errors import BudgetExceededError
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_delta, validate_neighbouring
from pymc_dp.mechanisms.laplace import NoiseBackend
from pymc_dp.routes import MECHANISMS, RunRequest, route_for
from pymc_dp.routes.laplace import private_trace, released_statistics_dataset
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
    epsilon: float | Mapping[str, float] | None = None,
    delta: float = 0.0,
    neighbouring: str = "replace-one",
    mechanism: str = "laplace",
    release: str | None = None,
    budget: float | tuple[float, float] | None = None,
    ledger: PrivacyLedger | None = None,
    noise_backend: NoiseBackend = "opendp",
    noise_rng: np.random.Generator | None = None,
    max_trials: Mapping[str, int] | None = None,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    tempering: str | None = None,
    step: PrivateConjugateGibbs | Sequence[PrivateConjugateGibbs] | None = None,
    public: Sequence[str] = (),
    assume_rejection_bound: bool = False,
    model: pm.Model | None = None,
    **kwargs,
) -> xr.DataTree:
    """Sample the posterior of the model in context, privately, and return a private trace.

    With ``mechanism="laplace"`` (default) every observed variable must be a supported
    conjugate likelihood (see :mod:`pymc_dp.analysis.conjugate`); its sufficient statistics are
    released once with the Laplace mechanism (Foulds et al. 2016, §3.2 eq. 16–17) and its
    conjugate parent is sampled by :class:`~pymc_dp.PrivateConjugateGibbs` (§4.2). Variables
    that read no private data are sampled by PyMC's samplers (e.g. NUTS) on the private model.
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
    epsilon : float or dict
        Total epsilon, split equally across the observed variables' releases, or
        ``{observed name: epsilon}`` (Laplace only). Not needed for releases made by ``step``.
    delta : float
        Delta allotted to the run (0 <= delta < 1). Only ``"metropolis"`` with
        ``release="chain"`` spends δ (its declared bound on rejections).
    neighbouring : {"replace-one", "add-remove-one"}
        "replace-one" (default; n public) or "add-remove-one" (Laplace only).
    mechanism : {"laplace", "ops", "gibbs-exponential", "metropolis"}
        ``"laplace"`` (default): Laplace-privatised sufficient statistics (count tensor for a
        naive-Bayes HMM).
        ``"ops"``: one posterior sample at T = 2Δ/ε per released draw (Foulds §3.1 eq. 14).
        Exact, independent draws when the model's blocks allow it; otherwise the last draw
        of each chain, flagged ``assumes_convergence``. For naive-Bayes HMMs see
        :func:`pymc_dp.routes.hmm.sample_hmm`.
        ``"gibbs-exponential"``: every Gibbs update is an exponential mechanism and every draw
        is released; all sweeps, tuning included, compose to ε (Foulds §4.1 eq. 19–20).
        ``"metropolis"``: random-walk Metropolis at T = 2Δ/ε_step with a public, fixed
        ``proposal_scale`` (Foulds Theorem C.1); under ``release="chain"`` ``delta`` is the
        declared bound on rejections.
        The three tempered mechanisms take models whose likelihoods read truncated priors
        (Bernoulli/Binomial ← truncated Beta, Categorical/Multinomial ← TruncatedDirichlet,
        Poisson ← truncated Gamma, Normal with constant σ ← truncated Normal), see
        :mod:`pymc_dp.analysis.tempered`.
    release : {"last", "chain"}, optional
        Which draws the tempered mechanisms release: the last draw of each chain (default for
        ``"ops"`` and ``"metropolis"``) or every draw (``"gibbs-exponential"`` always).
        The Laplace path releases statistics, so every draw is free and ``release`` must be
        None; the HMM's OPS supports "last" only.
    budget : float or (float, float), optional
        (epsilon, delta) budget for a new ledger; exclusive with ``ledger``.
    ledger : PrivacyLedger, optional
        Ledger to charge (e.g. shared across analyses of the same records). It is updated in
        place; the trace's ledger lists this run's events and the events of the releases made
        by ``step`` (each once, even when they were charged to this ledger before the call).
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
        chosen without looking at the data (tempered mechanisms; records outside raise).
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
    model : pm.Model, optional
    **kwargs
        Passed to ``pm.sample`` (``tune``, ``chains``, ``cores``, ``random_seed``,
        ``progressbar``, ``nuts={...}``, ...). Naive-Bayes HMMs also take
        ``hmm_method="ffbs" | "collapsed"`` and ``projection="cell" | "none"``. Options that
        would see unreleased draws are refused when only the last draw is released. Every
        option is checked before anything is released (:func:`validate_sample_kwargs`):
        unknown names, non-integer or out-of-range ``tune``/``chains``/``cores``,
        ``nuts_sampler`` other than ``"pymc"``, unknown ``var_names``, invalid ``random_seed``
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
        too many trials), before any noise is drawn.
    BudgetExceededError
        If the releases would exceed the budget (nothing is released by this call; a release
        that a provided ``step`` made when it was built has happened, and the message says so).
    ValueError
        For invalid epsilon, delta, neighbouring, mechanism or options.
    """
    model = modelcontext(model)
    validate_delta(delta)
    validate_neighbouring(neighbouring)
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    if not _is_int(draws) or int(draws) < 1:
        raise ValueError(f"need at least one draw (an integer), got {draws!r}")
    if kwargs.get("return_inferencedata", True) is False:
        raise ValueError("pymc_dp.sample always returns a DataTree (it carries the ledger)")
    if ledger is not None and budget is not None:
        raise ValueError("give either a ledger (with its own budget) or a budget, not both")
    if assume_rejection_bound and (mechanism, release) != ("metropolis", "chain"):
        raise ValueError("assume_rejection_bound is for mechanism='metropolis', release='chain'")
    validate_sample_kwargs(model, kwargs)
    public = validate_public(model, public)
    recognised = recognise(
        model,
        mechanism,
        public=public,
        max_trials=max_trials,
        data_bounds=data_bounds,
        disjoint=disjoint,
    )
    _check_route_options(model, kwargs, recognised, mechanism, step)
    run = route_for(recognised.kind, mechanism)
    run_ledger = ledger if ledger is not None else PrivacyLedger(budget=budget)
    spent_before = len(run_ledger)
    step_events = _step_events(step)
    request = RunRequest(
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
        sample_kwargs=kwargs,
    )
    try:
        idata = run(request, recognised)
    except BudgetExceededError as error:
        if not step_events:
            raise
        raise BudgetExceededError(_budget_message_with_step_releases(error, step_events)) from error
    return _run_ledger(run_ledger, spent_before, step_events).attach(idata)


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
    steps were built, possibly before this call) and this call's new events, each once."""
    events = list(step_events)
    events += [e for e in run_ledger.events[spent_before:] if not any(e is s for s in events)]
    this_run = PrivacyLedger(events=events)  # a subset of what was charged: no budget check
    this_run.budget = run_ledger.budget
    return this_run


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


# --- pm.sample options, checked before anything is released --------------------------------

_ROUTE_OPTIONS = {
    "hmm_method": "hmm",  # naive-Bayes HMM routes
    "projection": "hmm",
    "proposal_scale": "metropolis",  # mechanism='metropolis'
}
"""Keywords of pymc_dp.sample that its routes consume (not passed to pm.sample)."""
_OWN_ARGUMENTS = ("draws", "step", "model", "kwargs")
_STEP_NAMES = {method.name: method for method in STEP_METHODS}
_INITS = (
    "auto",
    "adapt_diag",
    "jitter+adapt_diag",
    "jitter+adapt_diag_grad",
    "advi+adapt_diag",
    "advi",
    "advi_map",
    "map",
    "jitter+map",
    "adapt_full",
    "jitter+adapt_full",
)
_BOOLEAN_OPTIONS = (
    "discard_tuned_samples",
    "compute_convergence_checks",
    "keep_warning_stat",
    "quiet",
)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _parameters(function) -> set[str]:
    return {
        name
        for name, p in inspect.signature(function).parameters.items()
        if p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    }


def _step_parameters(step_class) -> set[str]:
    """Named keyword arguments of a PyMC step class (its ``__init__`` chain)."""
    names: set[str] = set()
    for klass in step_class.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            names |= _parameters(init)
    # pm.sample passes these itself
    return names - {"self", "vars", "model", "initial_point", "compile_kwargs"}


def _unknown(name: str, known) -> ValueError:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(
        f"pymc_dp.sample got an unknown option {name!r}{hint}: it is neither an option of "
        f"pymc_dp.sample or pm.sample nor a PyMC step name ({sorted(_STEP_NAMES)}) or "
        "target_accept. Nothing was released."
    )


def validate_sample_kwargs(model: pm.Model, kwargs: Mapping) -> None:
    """Check the options meant for ``pm.sample`` before anything is released.

    An option ``pm.sample`` would reject after the release — an unknown name, a bad number of
    chains, another NUTS sampler, an unknown variable, a bad seed — would leave ε charged for
    a trace that is never returned. So every option is checked first: names against
    ``pm.sample``'s parameters, its step-method keyword dicts (``nuts={...}``, ...; their keys
    against the step's constructor) and ``target_accept``, and the routes' own keywords
    (``hmm_method``, ``projection`` for HMMs, ``proposal_scale`` for
    ``mechanism="metropolis"``; which route takes them is checked once the model is
    recognised, still before any release); ``tune``, ``chains`` and ``cores`` are
    integers (chains, cores >= 1, tune >= 0); ``nuts_sampler`` is ``"pymc"`` (another sampler
    would run on the model outside the private steps); ``var_names`` names model variables;
    ``random_seed`` is None, an integer >= 0, a sequence of them or a NumPy Generator.

    Raises
    ------
    ValueError
        Naming the option. Nothing was released or charged.
    """
    sample_options = _parameters(pm.sample) - set(_OWN_ARGUMENTS)
    known = sample_options | set(_STEP_NAMES) | {"target_accept"} | set(_ROUTE_OPTIONS)
    for name in kwargs:
        if name not in known:
            raise _unknown(name, known)
    for name in ("tune", "chains", "cores"):
        value = kwargs.get(name)
        if value is None:
            continue
        if not _is_int(value):
            raise ValueError(f"{name} must be an integer, got {value!r}. Nothing was released.")
        floor = 0 if name == "tune" else 1
        if int(value) < floor:
            raise ValueError(f"{name} must be >= {floor}, got {value!r}. Nothing was released.")
    sampler = kwargs.get("nuts_sampler")
    if sampler is not None and sampler != "pymc":
        raise ValueError(
            f"nuts_sampler must be 'pymc', got {sampler!r}: another sampler would run on the "
            "model outside pymc_dp's private steps. Nothing was released."
        )
    for name in _BOOLEAN_OPTIONS:
        if name in kwargs and not isinstance(kwargs[name], bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {kwargs[name]!r}")
    _validate_var_names(model, kwargs.get("var_names"))
    _validate_random_seed(kwargs.get("random_seed"))
    _validate_initvals(model, kwargs.get("initvals"))
    init = kwargs.get("init", "auto")
    if not isinstance(init, str) or init.lower() not in _INITS:
        raise ValueError(f"init must be one of {_INITS}, got {init!r}. Nothing was released.")
    idata_kwargs = kwargs.get("idata_kwargs")
    if idata_kwargs is not None:
        if not isinstance(idata_kwargs, Mapping):
            raise ValueError(f"idata_kwargs must be a dict, got {idata_kwargs!r}")
        allowed = _parameters(to_inference_data) - {"trace"}
        for key in idata_kwargs:
            if key not in allowed:
                raise ValueError(
                    f"idata_kwargs has an unknown key {key!r} (pm.to_inference_data takes "
                    f"{sorted(allowed)}). Nothing was released."
                )
    for name in ("compile_kwargs", "nuts_sampler_kwargs"):
        if kwargs.get(name) is not None and not isinstance(kwargs[name], Mapping):
            raise ValueError(f"{name} must be a dict, got {kwargs[name]!r}")
    if kwargs.get("nuts_sampler_kwargs") is not None and "nuts" in kwargs:
        raise ValueError("give NUTS options once, as nuts={...}, not also nuts_sampler_kwargs")
    for name, step_class in _STEP_NAMES.items():
        options = kwargs.get("nuts_sampler_kwargs") if name == "nuts" else None
        options = kwargs.get(name, options)
        if options is None:
            continue
        if not isinstance(options, Mapping):
            raise ValueError(f"{name} must be a dict of {step_class.__name__} options")
        allowed = _step_parameters(step_class)
        for key in options:
            if key not in allowed:
                raise ValueError(
                    f"{name}={{...}} has an unknown key {key!r} ({step_class.__name__} takes "
                    f"{sorted(allowed)}). Nothing was released."
                )
    if "target_accept" in kwargs:
        nuts = kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {}
        if "target_accept" in nuts:
            raise ValueError("target_accept was given twice (directly and in nuts={...})")
        value = kwargs["target_accept"]
        if not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
            raise ValueError(f"target_accept must be in (0, 1), got {value!r}")


def _validate_var_names(model: pm.Model, var_names) -> None:
    if var_names is None:
        return
    if isinstance(var_names, str) or not isinstance(var_names, Sequence | np.ndarray):
        raise ValueError(f"var_names must be a list of variable names, got {var_names!r}")
    names = {v.name for v in model.unobserved_RVs}
    unknown = [v for v in var_names if not isinstance(v, str) or v not in names]
    if unknown:
        raise ValueError(
            f"var_names must name free or deterministic variables of the model; unknown "
            f"{unknown}. Nothing was released."
        )


def _validate_random_seed(seed) -> None:
    if seed is None or isinstance(seed, np.random.Generator):
        return
    if _is_int(seed):
        if int(seed) < 0:
            raise ValueError(f"random_seed must be >= 0, got {seed!r}. Nothing was released.")
        return
    if isinstance(seed, Sequence | np.ndarray) and not isinstance(seed, str | bytes):
        values = list(np.asarray(seed, dtype=object).ravel())
        if values and all(_is_int(v) and int(v) >= 0 for v in values):
            return
    raise ValueError(
        f"random_seed must be None, an integer >= 0, a sequence of them or a "
        f"numpy.random.Generator, got {seed!r}. Nothing was released."
    )


def _validate_initvals(model: pm.Model, initvals) -> None:
    if initvals is None:
        return
    points = [initvals] if isinstance(initvals, Mapping) else initvals
    if not isinstance(points, Sequence):
        raise ValueError("initvals must be a dict, or one dict (or None) per chain")
    names = {rv.name for rv in model.free_RVs} | {v.name for v in model.value_vars}
    for point in points:
        if point is None:
            continue
        if not isinstance(point, Mapping):
            raise ValueError("initvals must be a dict, or one dict (or None) per chain")
        unknown = [
            key
            for key in point
            if (key if isinstance(key, str) else getattr(key, "name", None)) not in names
        ]
        if unknown:
            raise ValueError(
                f"initvals names no free variable of the model: {unknown}. Nothing was released."
            )


def _check_route_options(model: pm.Model, kwargs: Mapping, recognised, mechanism, step) -> None:
    """Refuse options that the run would reject only after the release: a route's keyword
    given to another route, and step-method options (``nuts={...}``, ``target_accept``) that
    no PyMC sampler of the run would take."""
    for name in kwargs:
        route = _ROUTE_OPTIONS.get(name)
        if route == "hmm" and recognised.kind != "hmm":
            raise ValueError(
                f"{name!r} is an option of naive-Bayes HMM models only. Nothing was released."
            )
        if route == "metropolis" and mechanism != "metropolis":
            raise ValueError(
                f"{name!r} is an option of mechanism='metropolis' only. Nothing was released."
            )
    asked = [name for name in _STEP_NAMES if name in kwargs]
    if kwargs.get("nuts_sampler_kwargs") is not None:
        asked.append("nuts")
    if "target_accept" in kwargs:
        asked.append("nuts")
    if not asked:
        return
    used = _pymc_step_names(model, recognised, mechanism, step)
    for name in dict.fromkeys(asked):
        if name not in used:
            what = "target_accept / nuts" if name == "nuts" else name
            raise ValueError(
                f"{what} options were given, but no variable of this run is sampled by "
                f"PyMC's {_STEP_NAMES[name].__name__}: the private step samples "
                f"{'every variable' if not used else 'the released blocks'}"
                f"{'' if not used else f' and PyMC uses {sorted(used)}'}. "
                "Nothing was released."
            )


def _pymc_step_names(model: pm.Model, recognised, mechanism: str, step) -> set[str]:
    """Names of the PyMC step methods ``pm.sample`` would assign to the free variables that
    the run's private step does not sample (as ``pm.sample`` picks them: best competence)."""
    if recognised.kind == "hmm" or mechanism == "metropolis":
        return set()  # one private step samples every variable
    if recognised.kind == "conjugate":
        private = {link.prior for link in recognised.blocks.values()}
    else:
        private = set(recognised.blocks.priors)
    names = set()
    for rv in model.free_RVs:
        if rv.name in private:
            continue
        value = model.rvs_to_values[rv]
        has_gradient = value.dtype not in discrete_types
        competence = {m: m._competence(rv, has_gradient)[0] for m in STEP_METHODS}
        best = max(STEP_METHODS, key=competence.__getitem__)  # as pm.sample picks
        if competence[best] > Competence.INCOMPATIBLE:
            names.add(best.name)
    return names
