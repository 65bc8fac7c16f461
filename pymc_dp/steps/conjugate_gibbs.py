"""Private conjugate Gibbs: exact conjugate draws from Laplace-privatised statistics.

Source: Foulds et al. (UAI 2016), §4.2 ("Gibbs with the Laplace mechanism"), with the release
of §3.2 eq. (16)–(17) and the posterior of §3.1 eq. (11).

Guarantee: the statistics are released once, at construction, in the parent process, through
the Laplace mechanism ((epsilon, 0)-DP under the chosen neighbouring relation). Every draw is
post-processing of that release and costs nothing, however many chains or draws are run, and
the chain does not need to converge for the guarantee to hold (unlike OPS).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_dp.analysis.conjugate import find_conjugate_link
from pymc_dp.analysis.inputs import classify_inputs, refuse_private_reads
from pymc_dp.analysis.rewrite import released_statistics_of
from pymc_dp.errors import NonPrivateModelError, value_free_repr
from pymc_dp.families import FAMILIES, ConjugateFamily
from pymc_dp.graph.reading import (
    check_conjugate_dependents,
    observed_children,
    reject_imputation,
    rv_shape,
)
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger
from pymc_dp.mechanisms.laplace import NoiseBackend
from pymc_dp.mechanisms.statistics import ReleasedStatistics, release_all
from pymc_dp.steps.guard import check_route, sanctioned
from pymc_dp.steps.parameters import parameter_function
from pymc_dp.steps.transforms import forward_transform

__all__ = ["PrivateConjugateGibbs"]


@value_free_repr
@dataclass(eq=False)
class _ConjugateUpdate:
    """Everything one variable's conjugate update needs; no raw data."""

    value_name: str
    family: ConjugateFamily
    table: np.ndarray  # (G, d): sum of the projected released tables
    shape: tuple[int, ...]  # shape of the variable: () or (G,) for Beta, (K,) or (G, K)
    param_shape: tuple[int, ...]  # (G,) for Beta, (G, K) for Dirichlet
    prior_params: Callable[[dict], tuple[np.ndarray, ...]]
    forward: Callable[[np.ndarray], np.ndarray]
    constant_prior: bool = False

    def __post_init__(self) -> None:
        # With constant prior parameters the posterior parameters never change: compute once.
        self._fixed = self._posterior_parameters({}) if self.constant_prior else None

    def _posterior_parameters(self, point: dict) -> tuple[np.ndarray, ...]:
        params = tuple(np.broadcast_to(p, self.param_shape) for p in self.prior_params(point))
        return self.family.posterior_parameters(params, self.table)

    def draw(self, rng: np.random.Generator, point: dict) -> np.ndarray:
        params = self._fixed if self._fixed is not None else self._posterior_parameters(point)
        draw = self.family.sample_posterior(rng, params).reshape(self.shape)
        return np.asarray(self.forward(draw), dtype=np.float64)


class PrivateConjugateGibbs(BlockedStep):
    """Gibbs step for Beta/Dirichlet variables from Laplace-privatised sufficient statistics.

    Each assigned variable p must be a Beta or Dirichlet free variable whose observed children
    are Bernoulli/Binomial (Beta) or Categorical/Multinomial (Dirichlet) likelihoods with
    probability ``p`` or ``p[group]`` (see :mod:`pymc_dp.analysis.conjugate`), and which
    feeds no other random variable. Prior parameters may depend on other (non-private) free
    variables: the update reads them from the current point.

    At construction (in the parent process, before any chain starts) the step validates the
    records, releases the sufficient statistics of every observed child **once** through the
    Laplace mechanism (Foulds et al. 2016, §3.2 eq. 16–17) and records one
    :class:`~pymc_dp.ledger.PrivacyEvent` per child in ``ledger``. ``step`` then draws
    each variable from its conjugate posterior given the noisy statistics (§3.1 eq. 11, §4.2):
    pure post-processing, 0 privacy cost per draw, valid for any number of chains (worker
    processes receive only the released statistics).

    On a *private model* built by :func:`pymc_dp.sample` the releases already exist and are
    reused; no epsilon is needed and nothing new is released. A step built on the user's model
    (which still holds the raw records) is for ``pymc_dp.sample(step=...)`` only: given to
    ``pm.sample`` directly it refuses to step (:mod:`pymc_dp.steps.guard`), because
    ``pm.sample`` would copy the records into ``observed_data``.

    Parameters
    ----------
    vars : list of variables
        Beta/Dirichlet random variables (or their value variables).
    epsilon : float or dict, optional
        Total epsilon for this step's releases, split equally (sequential composition), or
        ``{observed name: epsilon}``. Required unless the model is a private model.
    model : pm.Model, optional
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation of the guarantee (default replace-one, n public).
    ledger : PrivacyLedger, optional
        Ledger to charge (a new one without budget by default); see ``ledger``.
    noise_backend : {"opendp", "numpy"}
        Noise source; NumPy only for tests and simulations.
    noise_rng : numpy.random.Generator, optional
        Generator for the NumPy backend. Never derive it from a published seed.
    max_trials : dict, optional
        ``{observed name: M}`` bound on trials per record for Binomial/Multinomial children
        with per-record trials.
    public : sequence of str
        ``pm.Data`` containers declared public (:mod:`pymc_dp.analysis.inputs`).
    noise : {"laplace", "gaussian"}
        Noise of the release (:mod:`pymc_dp.mechanisms.gaussian` for ``"gaussian"``, which
        needs ``delta``).
    delta : float
        δ of a Gaussian release, 0 < δ < 1, split equally across the children; 0 for Laplace.
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.

    Attributes
    ----------
    releases : list of ReleasedStatistics
        The released statistics this step samples from.
    events : tuple of PrivacyEvent
        What constructing this step spent (empty when reusing a private model's releases).
    ledger : PrivacyLedger
        The ledger charged at construction.

    Raises
    ------
    NonPrivateModelError
        If a variable is not a conjugate prior of supported private likelihoods.
    InvalidPrivateDataError
        If a record is outside its declared domain (before any noise is drawn).
    ValueError
        For an unknown ``noise``, or a ``delta`` that does not fit it (before any release).
    BudgetExceededError
        If the releases would exceed the ledger's budget (nothing is released).

    Examples
    --------
    On a private model (released statistics, no records) the step is free post-processing;
    no epsilon is given and nothing new is released:

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=1_000)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> released = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=ledger)
    >>> with pymc_dp.build_private_model(model, [released]):
    ...     idata = pm.sample(100, tune=100, chains=1, random_seed=1, progressbar=False,
    ...                       step=pymc_dp.PrivateConjugateGibbs())
    >>> idata.posterior["p"].shape, ledger.epsilon
    ((1, 100), 1.0)
    """

    name = "private_conjugate_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {"privacy_epsilon": (np.float64, [])}
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        epsilon: float | Mapping[str, float] | None = None,
        *,
        model: pm.Model | None = None,
        neighbouring: str = "replace-one",
        ledger: PrivacyLedger | None = None,
        noise_backend: NoiseBackend = "opendp",
        noise_rng: np.random.Generator | None = None,
        max_trials: Mapping[str, int] | None = None,
        public: Sequence[str] = (),
        noise: str = "laplace",
        delta: float = 0.0,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        self._sanctioned = sanctioned(bool(model.observed_RVs))
        value_vars = (
            get_value_vars_from_user_vars(vars, model)
            if vars is not None
            else [model.rvs_to_values[rv] for rv in model.free_RVs]
        )
        self.vars = value_vars
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        spent_before = len(self.ledger)
        rvs = [model.values_to_rvs[v] for v in value_vars]
        existing = {rv.name: released_statistics_of(rv) for rv in rvs}
        pending = [rv for rv in rvs if not existing[rv.name]]
        self.releases: list[ReleasedStatistics] = [r for rs in existing.values() for r in rs]
        if pending:
            if epsilon is None:
                raise ValueError(
                    "epsilon is required: PrivateConjugateGibbs releases the sufficient "
                    f"statistics of {[rv.name for rv in pending]} when it is constructed"
                )
            links = _links_of(model, pending, dict(max_trials or {}), public, neighbouring)
            self.releases += release_all(
                links,
                epsilon,
                ledger=self.ledger,
                neighbouring=neighbouring,
                backend=noise_backend,
                rng=noise_rng,
                noise=noise,
                delta=delta,
            )
        elif epsilon is not None:
            raise ValueError("these variables were already released; epsilon must be None")
        self.events: tuple[PrivacyEvent, ...] = self.ledger.events[spent_before:]
        self._updates = [
            _make_update(model, rv, [r for r in self.releases if r.prior == rv.name]) for rv in rvs
        ]
        self.rng = get_random_generator(rng)

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """Draw every assigned variable from its conjugate posterior (post-processing)."""
        check_route(self)
        new_point = dict(point)
        for update in self._updates:
            new_point[update.value_name] = update.draw(self.rng, new_point)
        return new_point, [{"privacy_epsilon": 0.0}]

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for Beta/Dirichlet variables of a private model that carry releases."""
        return Competence.IDEAL if released_statistics_of(var) else Competence.INCOMPATIBLE


def _links_of(
    model: pm.Model, rvs: Sequence, max_trials: dict, public: Sequence[str], neighbouring: str
):
    reject_imputation(model)
    # the one classification of pymc_dp.analysis: nothing but a likelihood reads private data
    refuse_private_reads(
        model,
        classify_inputs(model, public, neighbouring),
        {rv.name for rv in model.observed_RVs},
    )
    links = []
    for rv in rvs:
        children = observed_children(model, rv)
        if not children:
            raise NonPrivateModelError(f"{rv.name}: has no observed likelihood to release")
        for child in children:
            link = find_conjugate_link(model, child, max_trials.pop(child.name, None))
            if link.prior != rv.name:
                raise NonPrivateModelError(
                    f"{child.name}: depends on {rv.name} but its conjugate parent is {link.prior}"
                )
            links.append(link)
        check_conjugate_dependents(model, rv, {c.name for c in children})
    if max_trials:
        raise ValueError(f"max_trials names variables this step does not handle: {max_trials}")
    return links


def _make_update(model: pm.Model, rv, releases: list[ReleasedStatistics]) -> _ConjugateUpdate:
    family = next(f for f in FAMILIES.values() if f.name == releases[0].family)
    table = np.sum([r.table for r in releases], axis=0)  # same family prior: same shape
    shape = rv_shape(model, rv)
    prior_params, constant = parameter_function(model, rv.owner.op.dist_params(rv.owner))
    return _ConjugateUpdate(
        value_name=model.rvs_to_values[rv].name,
        family=family,
        table=table,
        shape=shape,
        param_shape=table.shape if family.prior == "dirichlet" else table.shape[:1],
        prior_params=prior_params,
        forward=forward_transform(model, rv),
        constant_prior=constant,
    )
