"""``pymc_dp.sample`` with ``mechanism="ops" | "gibbs-exponential" | "metropolis"``.

Every mechanism here samples the model's posterior at a temperature T >= 1 and is calibrated
by Δ, the largest change of the log-likelihood when one record is replaced (Foulds et al.
2016, eq. 9 and 13; :mod:`pymc_dp.tempered.analysis`). Neighbours are replace-one.

``mechanism="ops"`` — one posterior sample (§2.2, §3.1 eq. 10 and 14). Each released draw is
one draw of the tempered joint Pr(θ, X)^{1/T} and costs 2Δ/T (the exponential mechanism).

* When the tempered joint factorises into exactly samplable blocks (truncated Beta, Gamma or
  Normal priors with constant parameters, no other free variable), every draw is an exact,
  independent draw: :class:`~pymc_dp.steps.TemperedConjugateGibbs` is run without tuning
  and no convergence is assumed. ``release="last"`` releases one draw per chain at
  ε/chains each; ``release="chain"`` releases every draw at ε/(chains·draws) each.
* Otherwise (hyperpriors, or a truncated Dirichlet block updated by the Fang et al. kernel)
  the draw comes from MCMC: only ``release="last"`` is offered, the last draw of each chain
  is kept, and its event is flagged ``assumes_convergence`` with the ``worst_case_epsilon``
  of composing every update of every sweep, tuning included (the paper's 400ε example).

``mechanism="gibbs-exponential"`` — exponential-mechanism Gibbs (§4.1 eq. 19–20). Every
update of every sweep is an exponential mechanism and every draw is released: n = chains ×
(tune + draws) sweeps compose, tuning included because every kept draw depends on it. One T
for all blocks, T = n·W/ε with W the per-record cost of one sweep at T = 1
(:meth:`~pymc_dp.tempered.TemperedModel.sweep_weight`). No convergence assumption.

``mechanism="metropolis"`` — private Metropolis (App. C.1, Theorem C.1), see
:mod:`pymc_dp.steps.private_metropolis`.

In every case: T is capped at 1 and only what is spent is charged (never a sharpened
posterior; §2.2 "cap ε at 2Δ"); the whole cost is checked against the budget before anything
is sampled (``BudgetExceededError``, nothing drawn); the event is recorded before the trace
is returned; hyperpriors are sampled by PyMC on the data-free model (:func:`pymc_dp.
private_model.data_free_model`) tempered at the same T, so no sampler other than the private
step reads a record, and the trace carries no raw data.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import pymc as pm
import xarray as xr

from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_epsilon
from pymc_dp.private_model import data_free_model
from pymc_dp.steps.private_metropolis import PrivateMetropolis
from pymc_dp.steps.tempered_gibbs import TemperedConjugateGibbs
from pymc_dp.tempered.analysis import TemperedModel, analyse_tempered_model
from pymc_dp.tempering import temper
from pymc_dp.theory import ops_temperature

__all__ = ["RELEASES", "TEMPERED_MECHANISMS", "sample_tempered"]

RELEASES = ("last", "chain")
TEMPERED_MECHANISMS = ("ops", "gibbs-exponential", "metropolis")
OPS_SOURCE = (
    "Foulds et al. 2016, §3.1 eq. (10), (14): one posterior sample at T = 2Δ/ε per draw, "
    "Δ of eq. (9)/(13) per pymc_dp.likelihood_bounds; sequential composition over draws"
)
GIBBS_SOURCE = (
    "Foulds et al. 2016, §4.1 eq. (19)-(20), Theorem 1: every Gibbs update is an exponential "
    "mechanism at temperature T costing 2Δ_l/T; all updates of all sweeps compose"
)
METROPOLIS_SOURCE = (
    "Foulds et al. 2016, App. C.1 eq. (62) and Theorem C.1: symmetric random-walk Metropolis at "
    "T = 2Δ/ε_step is (ε_step, δ_step)-DP per step if Pr(reject) <= δ_step (declared)"
)


def sample_tempered(
    model: pm.Model,
    draws: int,
    *,
    mechanism: str,
    epsilon: float,
    delta: float,
    release: str | None,
    ledger: PrivacyLedger,
    neighbouring: str,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    max_trials: Mapping[str, int] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    noise_seed: int | None = None,
    **kwargs,
) -> xr.DataTree:
    """Sample ``model`` privately at temperature T (see the module docstring).

    ``noise_seed`` is the secret entropy of the private step's draws
    (:mod:`pymc_dp.steps.noise`); ``random_seed`` in ``kwargs`` alone never reproduces them.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (and ``sample_stats`` when every draw is released); nothing that reads
        raw data. The caller attaches the ledger.

    Raises
    ------
    NonPrivateModelError
        If the model has no finite Δ (an untruncated prior, undeclared data bounds, ...).
    InvalidPrivateDataError
        For records outside their declared domain, before anything is charged.
    ValueError
        For add/remove-one neighbours, an unknown release, ``release="chain"`` with OPS through
        MCMC, or options a mechanism cannot honour.
    BudgetExceededError
        If the whole cost exceeds the budget (nothing is sampled).
    """
    if neighbouring != "replace-one":
        raise ValueError(
            "posterior sampling at temperature T is calibrated for replace-one neighbours "
            "(Δ bounds a replaced record; n is public)"
        )
    if mechanism not in TEMPERED_MECHANISMS:
        raise ValueError(f"mechanism must be one of {TEMPERED_MECHANISMS}, got {mechanism!r}")
    validate_epsilon(epsilon)
    analysis = analyse_tempered_model(
        model, data_bounds=data_bounds, max_trials=max_trials, disjoint=disjoint
    )
    if mechanism == "metropolis":
        return _sample_metropolis(
            model, analysis, draws, epsilon, delta, release, ledger, noise_seed, kwargs
        )
    if delta:
        raise ValueError(f"mechanism={mechanism!r} is pure ε-DP: delta must be 0")
    if "step" in kwargs:
        raise ValueError("pymc_dp.sample assigns the private step itself")
    kwargs["noise_seed"] = noise_seed
    if mechanism == "gibbs-exponential":
        if release not in (None, "chain"):
            raise ValueError("mechanism='gibbs-exponential' releases every draw: release='chain'")
        return _sample_gibbs(model, analysis, draws, epsilon, ledger, kwargs)
    release = release or "last"
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    if analysis.exact:
        return _sample_exact_ops(model, analysis, draws, epsilon, release, ledger, kwargs)
    if release == "chain":
        raise ValueError(
            "these blocks are sampled by MCMC (hyperpriors or a truncated Dirichlet), so its "
            "draws are not independent one-posterior samples: use release='last', or "
            "mechanism='gibbs-exponential' to release every draw"
        )
    return _sample_converged_ops(model, analysis, draws, epsilon, ledger, kwargs)


def _event(mechanism, analysis, *, epsilon, temperature, statistic, source, **fields):
    return PrivacyEvent(
        mechanism=mechanism,
        epsilon=epsilon,
        delta=fields.pop("delta", 0.0),
        sensitivity=analysis.record_delta(),
        neighbouring="replace-one",
        variables=analysis.priors,
        noise_backend="numpy",
        statistic=statistic
        + (f"; parallel over disjoint {list(map(list, analysis.disjoint))}"
           if analysis.disjoint else ""),
        source=source,
        temperature=temperature,
        **fields,
    )


def _run_private_step(model, analysis, temperature, draws, kwargs) -> xr.DataTree:
    """pm.sample with the tempered step on the blocks and PyMC on the data-free rest."""
    sampling_model = temper(data_free_model(model), temperature, part="joint")
    noise_seed = kwargs.pop("noise_seed")
    with sampling_model:
        step = TemperedConjugateGibbs(
            temperature=temperature, analysis=analysis, noise_seed=noise_seed
        )
        idata = pm.sample(draws, step=[step], **kwargs)
    return _keep(idata, ("posterior", "sample_stats", "warmup_posterior", "warmup_sample_stats"))


def _keep(idata: xr.DataTree, groups: Sequence[str]) -> xr.DataTree:
    for name in list(idata.children):
        if name not in groups:
            del idata[name]
    return idata


def _sample_gibbs(model, analysis: TemperedModel, draws, epsilon, ledger, kwargs):
    chains = int(kwargs.setdefault("chains", 1))
    n_sweeps = chains * (int(kwargs.setdefault("tune", 1000)) + int(draws))
    weight = analysis.sweep_weight()
    temperature = max(1.0, n_sweeps * weight / epsilon)
    total = n_sweeps * weight / temperature
    ledger.check(total)
    idata = _run_private_step(model, analysis, temperature, draws, kwargs)
    ledger.charge(
        _event(
            "exponential_mechanism_gibbs",
            analysis,
            epsilon=total,
            temperature=temperature,
            statistic=(
                f"every draw of {n_sweeps} Gibbs sweeps ({chains} chain(s), tuning included) "
                f"at T = {temperature:.4g}; one sweep costs {weight / temperature:.4g}"
            ),
            source=GIBBS_SOURCE,
        )
    )
    return idata


def _sample_exact_ops(model, analysis: TemperedModel, draws, epsilon, release, ledger, kwargs):
    if kwargs.get("tune"):
        raise ValueError("exact one-posterior-sample draws need no tuning: drop tune")
    chains = int(kwargs.setdefault("chains", 1))
    per_chain = 1 if release == "last" else int(draws)
    n_draws = chains * per_chain
    delta = analysis.record_delta()
    temperature = max(1.0, ops_temperature(delta, epsilon / n_draws))
    total = n_draws * 2 * delta / temperature
    ledger.check(total)
    kwargs.update(tune=0, compute_convergence_checks=False)
    with warnings.catch_warnings():
        if per_chain == 1:  # ArviZ and PyMC warn about one-draw chains
            warnings.simplefilter("ignore", UserWarning)
        idata = _run_private_step(model, analysis, temperature, per_chain, kwargs)
    ledger.charge(
        _event(
            "one_posterior_sample",
            analysis,
            epsilon=total,
            temperature=temperature,
            statistic=f"{n_draws} exact independent draw(s) at T = {temperature:.4g} ({release})",
            source=OPS_SOURCE,
        )
    )
    return _keep(idata, ("posterior",))


def _sample_converged_ops(model, analysis: TemperedModel, draws, epsilon, ledger, kwargs):
    _refuse_leaky_options(kwargs)
    chains = int(kwargs.setdefault("chains", 1))
    n_sweeps = chains * (int(kwargs.setdefault("tune", 1000)) + int(draws))
    delta = analysis.record_delta()
    temperature = max(1.0, ops_temperature(delta, epsilon / chains))
    total = chains * 2 * delta / temperature
    ledger.check(total)
    with warnings.catch_warnings():  # PyMC's warnings read every draw
        warnings.simplefilter("ignore")
        idata = _run_private_step(model, analysis, temperature, draws, kwargs)
    ledger.charge(
        _event(
            "one_posterior_sample",
            analysis,
            epsilon=total,
            temperature=temperature,
            statistic=(
                f"last Gibbs draw of {chains} chain(s) at T = {temperature:.4g} after "
                f"{n_sweeps // chains} sweeps each; the guarantee assumes each chain converged"
            ),
            source=OPS_SOURCE,
            assumes_convergence=True,
            worst_case_epsilon=n_sweeps * analysis.sweep_weight() / temperature,
        )
    )
    return _last_draw(idata)


def _refuse_leaky_options(kwargs) -> None:
    if kwargs.get("discard_tuned_samples", True) is False:
        raise ValueError("only the last draw is released: tuning draws cannot be kept")
    if kwargs.get("compute_convergence_checks"):
        raise ValueError("only the last draw is released: convergence checks read every draw")
    kwargs["compute_convergence_checks"] = False


def _last_draw(idata: xr.DataTree) -> xr.DataTree:
    """Only the last posterior draw of each chain; sampler statistics read earlier draws."""
    posterior = idata["posterior"].to_dataset().isel(draw=[-1])
    return xr.DataTree.from_dict({"posterior": posterior})


def _sample_metropolis(
    model, analysis: TemperedModel, draws, epsilon, delta, release, ledger, noise_seed, kwargs
):
    """Private Metropolis (Foulds Theorem C.1) at T from the model's Δ; see the module doc.

    Every step of every chain counts, tuning included: n = chains × (tune + draws).

    * ``release="chain"``: every step is released. Each runs at ε_s = ε/n and T = 2Δ/ε_s and is
      (ε_s, δ/n)-DP **if** its rejection probability is at most δ/n for every dataset and
      state — a declared assumption, rarely true for a random walk. Total (ε, δ).
    * ``release="last"``: the last draw of each chain at T = 2Δ/(ε/chains); if the chain has
      converged each is an exact tempered-posterior draw costing ε/chains with no δ. Flagged
      ``assumes_convergence``; ``worst_case_epsilon`` = n·2Δ/T (and the composed δ would be
      n·Pr(reject)).
    """
    release = release or "last"
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    if "proposal_scale" not in kwargs:
        raise ValueError("mechanism='metropolis' needs a public, fixed proposal_scale")
    proposal_scale = kwargs.pop("proposal_scale")
    chains = int(kwargs.setdefault("chains", 1))
    n_steps = chains * (int(kwargs.setdefault("tune", 1000)) + int(draws))
    bound = analysis.record_delta()
    if release == "chain":
        if not 0 < delta < 1:
            raise ValueError("release='chain' needs the declared δ in (0, 1) (Theorem C.1)")
        temperature = max(1.0, ops_temperature(bound, epsilon / n_steps))
        cost = (n_steps * 2 * bound / temperature, float(delta))
    else:
        _refuse_leaky_options(kwargs)
        temperature = max(1.0, ops_temperature(bound, epsilon / chains))
        cost = (chains * 2 * bound / temperature, 0.0)
    ledger.check(*cost)
    with temper(model, temperature, part="joint"), warnings.catch_warnings():
        if release == "last":
            warnings.simplefilter("ignore")
        step = PrivateMetropolis(proposal_scale=proposal_scale, noise_seed=noise_seed)
        idata = pm.sample(draws, step=step, **kwargs)
    statistic = (
        f"{'all' if release == 'chain' else 'the last'} of {n_steps} Metropolis steps at "
        f"T = {temperature:.4g}, proposal sd {proposal_scale:g}"
    )
    if release == "chain":
        statistic += f"; assumes Pr(reject) <= {delta / n_steps:.3g} per step"
    ledger.charge(
        _event(
            "private_metropolis" if release == "chain" else "one_posterior_sample",
            analysis,
            epsilon=cost[0],
            delta=cost[1],
            temperature=temperature,
            statistic=statistic,
            source=METROPOLIS_SOURCE,
            assumes_convergence=release == "last",
            worst_case_epsilon=n_steps * 2 * bound / temperature if release == "last" else None,
        )
    )
    if release == "last":
        return _last_draw(idata)
    return _keep(idata, ("posterior", "sample_stats"))
