"""The options ``pymc_dp.sample`` passes on to ``pm.sample``, checked before any release.

``pm.sample`` rejects a bad option only once it runs, which on the Laplace and HMM routes is
after the release: the ε would be charged for a trace that is never returned. Every option is
therefore checked here first — names, types and ranges (:func:`validate_sample_kwargs`,
before the model is recognised), and which route or PyMC sampler would take a route keyword
or a step-method dict (:func:`check_route_options`, after recognition, still before any
release).
"""

from __future__ import annotations

import difflib
import inspect
import multiprocessing
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
from pymc.backends.arviz import to_inference_data
from pymc.backends.base import BaseTrace
from pymc.sampling.mcmc import STEP_METHODS
from pymc.step_methods.compound import Competence
from pymc.vartypes import discrete_types
from pytensor.compile.mode import get_mode

from pymc_dp.families.base import ConjugateLink, is_integer
from pymc_dp.graph.reading import rv_shape
from pymc_dp.routes.blackjax_nuts import check_blackjax_options
from pymc_dp.routes.nutpie_nuts import check_nutpie_options

__all__ = [
    "NUTS_SAMPLERS",
    "ROUTE_OPTIONS",
    "check_route_options",
    "default_nuts_sampler",
    "is_integer",
    "validate_sample_kwargs",
]

NUTS_SAMPLERS = ("pymc", "blackjax", "nutpie")
"""``nuts_sampler`` values :func:`pymc_dp.sample` takes: PyMC's NUTS, or BlackJAX's
(:mod:`pymc_dp.routes.blackjax_nuts`) or nutpie's (:mod:`pymc_dp.routes.nutpie_nuts`; the
default where it can run, :func:`default_nuts_sampler`) on a bounded family's private model."""


ROUTE_OPTIONS = {
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
    integers (chains, cores >= 1, tune >= 0) or None, PyMC's default; ``nuts_sampler`` is
    ``"pymc"``, ``"blackjax"`` or ``"nutpie"`` (:data:`NUTS_SAMPLERS`; another sampler would
    run on the model outside the private steps; BlackJAX's and nutpie's options are checked by
    :func:`~pymc_dp.routes.blackjax_nuts.check_blackjax_options` and
    :func:`~pymc_dp.routes.nutpie_nuts.check_nutpie_options`);
    ``var_names`` names model variables;
    ``random_seed`` is None, an integer >= 0, a sequence of them or a NumPy Generator.

    Raises
    ------
    ValueError
        Naming the option. Nothing was released or charged.
    """
    sample_options = _parameters(pm.sample) - set(_OWN_ARGUMENTS)
    known = sample_options | set(_STEP_NAMES) | {"target_accept"} | set(ROUTE_OPTIONS)
    for name in kwargs:
        if name not in known:
            raise _unknown(name, known)
    for name in ("tune", "chains", "cores"):
        if name not in kwargs:
            continue
        value = kwargs[name]
        if value is None:  # PyMC's default
            continue
        if not is_integer(value):
            raise ValueError(f"{name} must be an integer, got {value!r}. Nothing was released.")
        floor = 0 if name == "tune" else 1
        if int(value) < floor:
            raise ValueError(f"{name} must be >= {floor}, got {value!r}. Nothing was released.")
    sampler = kwargs.get("nuts_sampler")
    if sampler is not None and sampler not in NUTS_SAMPLERS:
        raise ValueError(
            f"nuts_sampler must be one of {NUTS_SAMPLERS}, got {sampler!r}: another sampler "
            "would run on the model outside pymc_dp's private steps. Nothing was released."
        )
    if sampler == "blackjax":
        check_blackjax_options(kwargs)
    if sampler == "nutpie":
        check_nutpie_options(kwargs)
    for name in _BOOLEAN_OPTIONS:
        if name in kwargs and not isinstance(kwargs[name], bool | np.bool_):
            raise ValueError(f"{name} must be True or False, got {kwargs[name]!r}")
    if "return_inferencedata" in kwargs and kwargs["return_inferencedata"] is not True:
        # 0 or None would pass an `is False` check and make pm.sample return a MultiTrace
        raise ValueError(
            "pymc_dp.sample always returns a DataTree (it carries the ledger): drop "
            f"return_inferencedata (got {kwargs['return_inferencedata']!r}). Nothing was released."
        )
    _validate_var_names(model, kwargs.get("var_names"))
    _validate_random_seed(kwargs.get("random_seed"))
    _validate_initvals(model, kwargs.get("initvals"))
    initvals, chains = kwargs.get("initvals"), kwargs.get("chains")
    if isinstance(initvals, Sequence) and chains is not None and len(initvals) != int(chains):
        raise ValueError(
            f"initvals has {len(initvals)} dicts for {chains} chains: give one per chain or "
            "one dict for all. Nothing was released."
        )
    _validate_runtime_options(kwargs)
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
    nuts = kwargs.get("nuts") or kwargs.get("nuts_sampler_kwargs") or {}
    if "target_accept" in kwargs and "target_accept" in nuts:
        raise ValueError("target_accept was given twice (directly and in nuts={...})")
    given = {"target_accept": kwargs.get("target_accept", 0.8)}
    given["nuts={'target_accept': ...}"] = nuts.get("target_accept", 0.8)
    for where, value in given.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, numbers.Real)
            or not 0 < float(value) < 1
        ):
            raise ValueError(
                f"{where} must be a number in (0, 1), got {value!r}. Nothing was released."
            )
    depth = nuts.get("max_treedepth", 10)
    if not is_integer(depth) or int(depth) < 1:
        raise ValueError(
            f"nuts={{'max_treedepth': ...}} must be an integer >= 1, got {depth!r}. "
            "Nothing was released."
        )
    var_names = kwargs.get("var_names")
    if var_names is not None and kwargs.get("compute_convergence_checks", True):
        free = {rv.name for rv in model.free_RVs}
        if not free & set(var_names):
            raise ValueError(
                "var_names names no free variable, and the convergence checks (on by default) "
                "need one: add one, or pass compute_convergence_checks=False. Nothing was "
                "released."
            )


def _validate_runtime_options(kwargs: Mapping) -> None:
    """``mp_ctx``, ``blas_cores``, ``compile_kwargs["mode"]`` and ``trace``: options PyMC
    checks only once sampling starts, after a posterior-sampling route has charged."""
    mp_ctx = kwargs.get("mp_ctx")
    if mp_ctx is not None and isinstance(mp_ctx, str):
        if mp_ctx not in multiprocessing.get_all_start_methods():
            raise ValueError(
                f"mp_ctx must be one of {multiprocessing.get_all_start_methods()} or a context, "
                f"got {mp_ctx!r}. Nothing was released."
            )
    blas_cores = kwargs.get("blas_cores", "auto")
    if not (blas_cores is None or blas_cores == "auto" or is_integer(blas_cores)):
        raise ValueError(
            f"blas_cores must be an integer, 'auto' or None, got {blas_cores!r}. Nothing was "
            "released."
        )
    compile_kwargs = kwargs.get("compile_kwargs") or {}
    if isinstance(compile_kwargs, Mapping) and "mode" in compile_kwargs:
        try:
            get_mode(compile_kwargs["mode"])
        except Exception:
            raise ValueError(
                f"compile_kwargs['mode'] is not a PyTensor mode: {compile_kwargs['mode']!r}. "
                "Nothing was released."
            ) from None
    trace = kwargs.get("trace")
    if (
        trace is not None
        and not isinstance(trace, BaseTrace)
        and type(trace).__name__ != "ZarrTrace"
    ):
        raise ValueError(
            f"trace must be None or a PyMC trace backend, got {type(trace).__name__}. Nothing "
            "was released."
        )


def _validate_var_names(model: pm.Model, var_names) -> None:
    if var_names is None:
        return
    if isinstance(var_names, str) or not isinstance(var_names, Sequence | np.ndarray):
        raise ValueError(f"var_names must be a list of variable names, got {var_names!r}")
    if len(var_names) == 0:
        raise ValueError("var_names is empty: the trace would hold nothing. Nothing was released.")
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
    if is_integer(seed):
        if int(seed) < 0:
            raise ValueError(f"random_seed must be >= 0, got {seed!r}. Nothing was released.")
        return
    if isinstance(seed, Sequence | np.ndarray) and not isinstance(seed, str | bytes):
        values = list(np.asarray(seed, dtype=object).ravel())
        if values and all(is_integer(v) and int(v) >= 0 for v in values):
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
        _check_initval_shapes(model, point)


def _check_initval_shapes(model: pm.Model, point: Mapping) -> None:
    """Refuse an initial value that cannot take its variable's shape (pm.sample would fail
    after the release)."""
    shapes = {rv.name: rv_shape(model, rv) for rv in model.free_RVs}
    shapes |= {name: np.shape(value) for name, value in model.initial_point().items()}
    for key, value in point.items():
        name = key if isinstance(key, str) else key.name
        if np.shape(value) != tuple(shapes[name]):  # pm.sample neither broadcasts nor reshapes
            raise ValueError(
                f"initvals[{name!r}] has shape {np.shape(value)}; {name} has shape "
                f"{tuple(shapes[name])}. Nothing was released."
            )


def check_route_options(model: pm.Model, kwargs: Mapping, recognised, mechanism, step) -> None:
    """Refuse options that the run would reject only after the release: ``callback`` and a
    custom ``trace`` backend on the routes that sample the private records directly, a route's
    keyword given to another route, and step-method options (``nuts={...}``, ``target_accept``) that
    no PyMC sampler of the run would take."""
    if recognised.kind in ("tempered", "hmm") and mechanism != "laplace":
        # the temperature and HMM routes sample the private records themselves: draws
        # that are not released (release="last") must not reach a callback or backend
        for name in ("callback", "trace"):
            if kwargs.get(name) is not None:
                raise ValueError(
                    f"{name!r} would see every draw computed from the private records while "
                    f"mechanism={mechanism!r} samples, including draws it does not release; "
                    "drop it. Nothing was released."
                )
    for name in kwargs:
        route = ROUTE_OPTIONS.get(name)
        if route == "hmm" and recognised.kind != "hmm":
            raise ValueError(
                f"{name!r} is an option of naive-Bayes HMM models only. Nothing was released."
            )
        if route == "metropolis" and mechanism != "metropolis":
            raise ValueError(
                f"{name!r} is an option of mechanism='metropolis' only. Nothing was released."
            )
    if kwargs.get("nuts_sampler") == "blackjax":
        _check_blackjax_route(model, recognised, mechanism, step)
    if kwargs.get("nuts_sampler") == "nutpie":
        _check_nutpie_route(model, recognised, mechanism, step)
    _check_start(model, kwargs.get("initvals"))
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


def _check_start(model: pm.Model, initvals) -> None:
    """Starts the caller gives (``initvals``) must have a finite prior log density: else
    ``pm.sample`` fails only after the release (``SamplingError``). Reads the priors only
    (called after the recogniser, which refuses a prior that reads a private array); names the
    variables, never the values."""
    if not initvals:
        return
    from pymc.initial_point import make_initial_point_fn

    points = [initvals] if isinstance(initvals, Mapping) else [p for p in initvals if p]
    terms = model.logp(vars=model.free_RVs, sum=False)
    prior = model.compile_fn(terms, inputs=model.value_vars, on_unused_input="ignore")
    for overrides in points:
        start = make_initial_point_fn(
            model=model, overrides=overrides, jitter_rvs=set(), return_transformed=True
        )(0)
        values = prior(start)
        bad = [
            rv.name
            for rv, value in zip(model.free_RVs, values, strict=True)
            if not np.all(np.isfinite(value))
        ]
        if bad:
            raise ValueError(
                f"initvals starts {bad} where the prior density is zero or undefined (outside "
                "the support, or NaN): sampling would fail after the release. Nothing was "
                "released."
            )


def _check_blackjax_route(model: pm.Model, recognised, mechanism: str, step) -> None:
    """``nuts_sampler="blackjax"`` samples the private model of the bounded families whose
    log density compiles to JAX (``BoundedFamily.compiles_to_jax``: the Normal and linear
    regression) only: every likelihood one of them (no conjugate step, no HMM, no Dirichlet
    release), the statistics route (``mechanism="laplace"``), no ``step``, every free
    variable continuous, and the rest of the model (priors, potentials, deterministics)
    made of operations JAX compiles — all checked before the release."""
    from pymc_dp.families import BOUNDED_FAMILIES
    from pymc_dp.families.bounded import BoundedLink

    links = list(recognised.blocks.values()) if recognised.kind == "conjugate" else []
    found = sorted(
        {
            link.structure.family.name
            if isinstance(link, BoundedLink)
            else getattr(getattr(link, "family", None), "name", type(link).__name__)
            for link in links
        }
    )
    taken = sorted(f.name for f in BOUNDED_FAMILIES.values() if f.compiles_to_jax)
    compiles = bool(links) and all(
        isinstance(link, BoundedLink) and link.structure.family.compiles_to_jax for link in links
    )
    if not compiles or mechanism != "laplace" or step is not None:
        has = (
            "a private step"
            if step is not None
            else f"likelihoods of {found}"
            if found
            else f"a {recognised.kind} model"
        )
        raise ValueError(
            f"nuts_sampler='blackjax' samples the private models of {taken} only (with "
            f"data_bounds; mechanism='laplace', no step): this run has {has}"
            f"{'' if mechanism == 'laplace' else f' and mechanism={mechanism!r}'}. "
            "Nothing was released."
        )
    discrete = sorted(v.name for v in model.discrete_value_vars)
    if discrete:
        raise ValueError(
            f"nuts_sampler='blackjax' samples continuous variables only; {discrete} are "
            "discrete: use nuts_sampler='pymc'. Nothing was released."
        )
    _check_compiles_to_jax(model)


def default_nuts_sampler(model: pm.Model, kwargs: Mapping, recognised, mechanism, step) -> dict:
    """``kwargs`` with the NUTS sampler the run uses when the caller names none:
    ``"nutpie"`` (:mod:`pymc_dp.routes.nutpie_nuts`) where nutpie is installed and can run
    the whole private model — every likelihood a bounded family's, ``mechanism="laplace"``,
    no ``step``, every free variable continuous, every option one nutpie honours — else
    PyMC's. Called after :func:`check_route_options`, before the release. nutpie compiles
    the private model once per structure (7–40 s, announced); a second call then costs
    0.5× (Normal), 1.16× (linear regression) and 1.35× (Poisson regression, n = 10⁴) what
    ``pm.sample``'s second call costs on the raw records, against 2.6×, 6.4× and 2.8× with
    PyMC's NUTS (``docs/calibration.md``)."""
    from pymc_dp.routes.nutpie_nuts import nutpie_installed

    if kwargs.get("nuts_sampler") is not None or not nutpie_installed():
        return dict(kwargs)
    try:
        check_nutpie_options({**kwargs, "nuts_sampler": "nutpie"})
        _check_nutpie_route(model, recognised, mechanism, step)
    except ValueError:
        return dict(kwargs)
    return {**kwargs, "nuts_sampler": "nutpie"}


def _check_nutpie_route(model: pm.Model, recognised, mechanism: str, step) -> None:
    """``nuts_sampler="nutpie"`` samples the private model of bounded families' releases:
    every likelihood a bounded family's (no conjugate step, no HMM, no Dirichlet release),
    the statistics route (``mechanism="laplace"``), no ``step``, every free variable
    continuous — all checked before the release."""
    from pymc_dp.families.bounded import BoundedLink

    links = list(recognised.blocks.values()) if recognised.kind == "conjugate" else []
    bounded = bool(links) and all(isinstance(link, BoundedLink) for link in links)
    if not bounded or mechanism != "laplace" or step is not None:
        has = (
            "a private step"
            if step is not None
            else f"mechanism={mechanism!r}"
            if mechanism != "laplace"
            else f"a {recognised.kind} model"
            if not links
            else "a likelihood released as conjugate statistics"
        )
        raise ValueError(
            "nuts_sampler='nutpie' samples the private models of bounded families' releases "
            f"only (with data_bounds; mechanism='laplace', no step): this run has {has}. "
            "Nothing was released."
        )
    discrete = sorted(v.name for v in model.discrete_value_vars)
    if discrete:
        raise ValueError(
            f"nuts_sampler='nutpie' samples continuous variables only; {discrete} are "
            "discrete: use nuts_sampler='pymc'. Nothing was released."
        )


def _check_compiles_to_jax(model: pm.Model) -> None:
    """The model's priors, potentials and deterministics, translated to JAX (nothing is
    evaluated); the likelihoods are the families' own (``compiles_to_jax``)."""
    from pymc.sampling.jax import get_jaxified_graph

    outputs = [model.logp(vars=model.free_RVs), *model.potentials, *model.deterministics]
    outputs = model.replace_rvs_by_values(outputs)
    try:
        get_jaxified_graph(inputs=model.value_vars, outputs=outputs)
    except Exception as error:  # an operation JAX has no translation of
        raise ValueError(
            f"nuts_sampler='blackjax': the model's priors, potentials or deterministics use an "
            f"operation JAX cannot compile ({type(error).__name__}); use nuts_sampler='pymc'. "
            "Nothing was released."
        ) from None


def _pymc_step_names(model: pm.Model, recognised, mechanism: str, step) -> set[str]:
    """Names of the PyMC step methods ``pm.sample`` would assign to the free variables that
    the run's private step does not sample (as ``pm.sample`` picks them: best competence)."""
    if recognised.kind == "hmm" or mechanism == "metropolis":
        return set()  # one private step samples every variable
    if recognised.kind == "dirichlet":
        private = {recognised.blocks.link.prior}
    elif recognised.kind == "conjugate":
        # conjugate links have a private step; bounded likelihoods (Poisson, Normal,
        # regression) leave every parameter to PyMC (NUTS on the private model)
        private = {
            link.prior for link in recognised.blocks.values() if isinstance(link, ConjugateLink)
        }
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
