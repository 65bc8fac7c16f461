"""``pymc_dp.sample(..., mechanism="ops")`` for ordinary PyMC models with truncated Beta priors.

Supported models: every free variable is a Beta prior truncated to [a0, a1] with
``pm.Truncated`` / :func:`pymc_dp.distributions.TruncatedBeta` and constant parameters, used
directly (p) or by group (p[group]) by exactly one Bernoulli or Binomial likelihood. Then
the tempered joint Pr(θ, X)^{1/T} factorises into independent truncated Betas, one per group:

    θ_g ~ Beta((s_g + α − 1)/T + 1, (f_g + β − 1)/T + 1) truncated to [a0, a1],

with s_g and f_g the successes and failures of group g (Foulds et al. 2016, §3.1 eq. 10 and
14). These are sampled **exactly** (inverse CDF, :func:`pymc_dp.truncated.truncated_beta`),
so no MCMC is involved and no draw depends on convergence.

Privacy (replace-one; the unit is one element of every observed vector, as for the Laplace
path). One record changes the log-likelihood by at most Δ = Σ over observed variables of
Δ_v, where Δ_v = sup over θ ∈ [a0, a1] of the Bernoulli or Binomial bound
(:mod:`pymc_dp.likelihood_bounds`). A changed group label is covered too: θ of both groups
lies in [a0, a1]. Each exact draw at T = 2Δ/ε_d is ε_d-DP, and draws compose sequentially.

* ``release="last"``: one draw, ε_d = ε.
* ``release="chain"``: ``draws`` draws, ε_d = ε / draws.

If ε_d > 2Δ, T is capped at 1 and only 2Δ is charged per draw. The whole cost is checked
against the budget before any draw (``BudgetExceededError``, nothing drawn) and recorded in
the ledger before the trace is returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr

from pymc_dp.conjugacy import ConjugateLink, analyse_model, variable_value
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_epsilon
from pymc_dp.likelihood_bounds import binomial_delta
from pymc_dp.mechanisms.ops import tempered_beta_parameters
from pymc_dp.release import sufficient_statistics
from pymc_dp.steps.private_metropolis import PrivateMetropolis
from pymc_dp.tempering import temper
from pymc_dp.theory import ops_temperature
from pymc_dp.truncated import truncated_beta

__all__ = ["RELEASES", "log_likelihood_bound_of", "sample_ops"]

RELEASES = ("last", "chain")
SOURCE = (
    "Foulds et al. 2016, §3.1 eq. (10), (14), (15): exact draws of independent truncated Betas "
    "at T = 2Δ/ε per draw, sequential composition over draws"
)


def _link_delta(link: ConjugateLink) -> float:
    """Δ of one record of ``link``: the Binomial bound at the declared trials, at both ends."""
    if link.truncation is None:
        raise NonPrivateModelError(
            f"{link.prior}: OPS needs a truncated prior (e.g. TruncatedBeta(..., truncation=a0)); "
            "an untruncated Beta gives Δ = ∞"
        )
    lower, upper = link.truncation
    if not 0 < lower < upper < 1:
        raise NonPrivateModelError(
            f"{link.prior}: truncation [{lower}, {upper}] must lie in (0, 1)"
        )
    trials = int(link.domain.max_trials)
    # Δ over [a0, a1] is the Binomial bound at the end further from 1/2
    end = min(lower, 1 - upper)
    return binomial_delta(trials, end) if trials > 1 else math.log((1 - end) / end)


def log_likelihood_bound_of(links: Mapping[str, ConjugateLink]) -> float:
    """Δ of one record that appears in every observed variable: the sum of the Δ_v."""
    return float(sum(_link_delta(link) for link in links.values()))


def _prior_parameters(model: pm.Model, name: str, n_groups: int) -> tuple[np.ndarray, ...]:
    """The Beta prior's (α, β), one per group; refused unless constant."""
    rv = model[name]
    try:
        values = [np.asarray(variable_value(v), dtype=np.float64) for v in rv.owner.inputs[2:4]]
    except Exception as error:  # a parameter that depends on another variable
        raise NonPrivateModelError(f"{name}: OPS needs constant prior parameters") from error
    return tuple(np.broadcast_to(v.reshape(-1) if v.ndim else v, (n_groups,)) for v in values)


def _dims(model: pm.Model, name: str) -> tuple[str, ...]:
    """The variable's named dims, or ``<name>_dim_0`` for an unnamed vector."""
    dims = model.named_vars_to_dims.get(name)
    if dims:
        return tuple(dims)
    return (f"{name}_dim_0",) if model[name].ndim == 1 else ()


def _analyse(model: pm.Model, epsilon: float, neighbouring: str):
    """Links, prior names and Δ of a truncated-Beta model, or a refusal."""
    if neighbouring != "replace-one":
        raise ValueError(
            "posterior sampling with a log-likelihood bound is calibrated for replace-one"
        )
    validate_epsilon(epsilon)
    links = analyse_model(model)
    priors = [link.prior for link in links.values()]
    if len(set(priors)) != len(priors):
        raise NonPrivateModelError("OPS here needs each truncated prior to feed one likelihood")
    others = sorted({rv.name for rv in model.free_RVs} - set(priors))
    if others:
        raise NonPrivateModelError(f"OPS cannot sample other free variables: {others}")
    if any(link.family.prior != "beta" for link in links.values()):
        raise NonPrivateModelError("OPS here supports truncated Beta priors only")
    return links, priors, log_likelihood_bound_of(links)


def sample_ops(
    model: pm.Model,
    draws: int,
    *,
    epsilon: float,
    release: str,
    ledger: PrivacyLedger,
    neighbouring: str,
    random_seed=None,
) -> tuple[xr.DataTree, PrivacyEvent]:
    """Exact OPS draws of a truncated Beta–Bernoulli/Binomial model (see the module docstring).

    Returns
    -------
    (DataTree, PrivacyEvent)
        ``posterior`` (chain 1, ``draw`` 1 or ``draws``) and the charged event.

    Raises
    ------
    NonPrivateModelError
        If a free variable is not a released truncated Beta with constant parameters, a prior
        feeds two likelihoods, or a likelihood is not Bernoulli/Binomial.
    InvalidPrivateDataError
        For records outside their domain (before anything is charged).
    ValueError
        For an unknown ``release``, ε, or add/remove-one neighbours.
    BudgetExceededError
        If the total cost exceeds the budget (nothing is drawn).
    """
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    links, priors, delta = _analyse(model, epsilon, neighbouring)
    n_draws = 1 if release == "last" else int(draws)
    if n_draws < 1:
        raise ValueError("need at least one draw")
    temperature = max(1.0, ops_temperature(delta, epsilon / n_draws))
    per_draw = 2.0 * delta / temperature
    ledger.check(n_draws * per_draw)
    rng = np.random.default_rng(random_seed)
    posterior = {}
    for link in links.values():
        stats = sufficient_statistics(link)  # (G, 2): successes, failures
        alpha, beta = _prior_parameters(model, link.prior, link.n_groups)
        a, b = tempered_beta_parameters(stats[:, 0], stats.sum(axis=1), alpha, beta, temperature)
        lower, upper = link.truncation
        shape = (n_draws, link.n_groups)
        draw = truncated_beta(
            np.broadcast_to(a, shape), np.broadcast_to(b, shape), lower, upper, rng
        )
        dims = _dims(model, link.prior)
        value = draw if dims else draw[:, 0]
        posterior[link.prior] = (("chain", "draw", *dims), value[None])
    event = ledger.charge(
        PrivacyEvent(
            mechanism="one_posterior_sample",
            epsilon=n_draws * per_draw,
            delta=0.0,
            sensitivity=delta,
            neighbouring=neighbouring,
            variables=tuple(priors),
            noise_backend="numpy",
            statistic=f"{n_draws} exact draw(s) at temperature {temperature:.4g} ({release})",
            source=SOURCE,
            temperature=temperature,
        )
    )
    coords = {
        d: list(model.coords[d])
        for link in links.values()
        for d in _dims(model, link.prior)
        if model.coords.get(d) is not None
    }
    dataset = xr.Dataset(posterior, coords={"chain": [0], "draw": np.arange(n_draws), **coords})
    return xr.DataTree.from_dict({"posterior": dataset}), event


METROPOLIS_SOURCE = (
    "Foulds et al. 2016, App. C.1 eq. (62) and Theorem C.1: symmetric random-walk Metropolis at "
    "T = 2Δ/ε_step is (ε_step, δ_step)-DP per step if Pr(reject) <= δ_step (declared)"
)


def sample_metropolis(
    model: pm.Model,
    draws: int,
    *,
    epsilon: float,
    delta: float,
    release: str,
    ledger: PrivacyLedger,
    neighbouring: str,
    proposal_scale: float,
    **kwargs,
) -> xr.DataTree:
    """Private Metropolis (Foulds Theorem C.1) on a truncated-Beta model; see the module doc.

    Every step of every chain counts, tuning included: n = chains × (tune + draws).

    * ``release="chain"``: every step is released. Each runs at ε_s = ε/n and
      T = 2Δ/ε_s, and is (ε_s, δ/n)-DP **if** its rejection probability is at most δ/n for
      every dataset and state. That is a declared assumption, rarely true for a random walk.
      Total (ε, δ).
    * ``release="last"``: the last draw of each chain, at T = 2Δ/(ε/chains). If the chain
      converged, each draw is an exact tempered-posterior draw and costs ε/chains with no δ.
      The event is flagged ``assumes_convergence``; its ``worst_case_epsilon`` is n·2Δ/T.
      Without convergence the composed δ would also be n·Pr(reject).

    Raises
    ------
    ValueError
        Under ``release="chain"`` with δ not in (0, 1); for an unknown release.
    BudgetExceededError
        Before any step, if the cost exceeds the budget.
    """

    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    links, priors, bound = _analyse(model, epsilon, neighbouring)
    for link in links.values():
        link.validate()
    chains = int(kwargs.setdefault("chains", 1))
    tune = int(kwargs.setdefault("tune", 1000))
    n_steps = chains * (tune + int(draws))
    if release == "chain":
        if not 0 < delta < 1:
            raise ValueError("release='chain' needs the declared δ in (0, 1) (Theorem C.1)")
        temperature = max(1.0, ops_temperature(bound, epsilon / n_steps))
        cost = (n_steps * 2 * bound / temperature, float(delta))
    else:
        if kwargs.get("discard_tuned_samples", True) is False:
            raise ValueError("release='last' keeps the last draw only")
        kwargs["compute_convergence_checks"] = False  # computed from every draw: would leak
        temperature = max(1.0, ops_temperature(bound, epsilon / chains))
        cost = (chains * 2 * bound / temperature, 0.0)
    ledger.check(*cost)
    with temper(model, temperature, part="joint") as tempered:
        step = PrivateMetropolis(proposal_scale=proposal_scale)
        idata = pm.sample(draws, step=step, **kwargs)
    ledger.charge(
        PrivacyEvent(
            mechanism="private_metropolis" if release == "chain" else "one_posterior_sample",
            epsilon=cost[0],
            delta=cost[1],
            sensitivity=bound,
            neighbouring=neighbouring,
            variables=tuple(priors),
            noise_backend="numpy",
            statistic=(
                f"{'all' if release == 'chain' else 'the last'} of {n_steps} Metropolis steps at "
                f"T = {temperature:.4g}, proposal sd {proposal_scale:g}"
                + (
                    f"; assumes Pr(reject) <= {delta / n_steps:.3g} per step"
                    if release == "chain"
                    else ""
                )
            ),
            source=METROPOLIS_SOURCE,
            temperature=temperature,
            assumes_convergence=release == "last",
            worst_case_epsilon=n_steps * 2 * bound / temperature if release == "last" else None,
        )
    )
    del tempered
    for name in list(idata.children):
        if name not in ("posterior", "sample_stats"):
            del idata[name]
    if release == "last":
        for name in ("posterior", "sample_stats"):
            idata[name] = idata[name].to_dataset().isel(draw=[-1])
    return idata
