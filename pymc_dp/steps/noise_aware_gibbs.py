"""Noise-aware conjugate Gibbs: posterior draws that account for the privacy noise.

Sources: Bernstein & Sheldon (NeurIPS 2018), §3 (the released statistics are observations of
latent true statistics through the Laplace mechanism); Ju, Awan, Gong & Rao (NeurIPS 2022), §3
(data augmentation MCMC: the mechanism's density is the likelihood of the release). The
numerics live in :mod:`pymc_dp.families.latent_counts`.

Guarantee: this step never releases anything. It reads only the releases attached to a
*private model* (:func:`pymc_dp.analysis.rewrite.build_private_model`): the noisy statistics as
published, their noise (Laplace, or Gaussian: :mod:`pymc_dp.mechanisms.gaussian`) and its
scale, and the public totals. Every draw is post-processing of the
release whose ledger event :func:`pymc_dp.sample` already recorded; its cost is 0 however
many chains or draws are run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_dp.analysis.rewrite import released_statistics_of
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.latent_counts import (
    DEFAULT_TOL,
    NOISE_AWARE_PRIORS,
    LatentCounts,
    OneComponentPosterior,
    concentration_matrix,
    initial_counts,
)
from pymc_dp.mechanisms.statistics import ReleasedStatistics
from pymc_dp.steps.conjugate_gibbs import _ConjugateUpdate, _make_update
from pymc_dp.steps.guard import check_route, sanctioned

__all__ = ["NoiseAwareConjugateGibbs"]


@dataclass(eq=False)
class _NoiseAwareUpdate:
    """One Beta/Dirichlet variable: its latent tables (one per release) and its θ draw.

    ``update`` (from :mod:`pymc_dp.steps.conjugate_gibbs`) supplies the family, the shapes,
    the prior parameters at the current point and the forward transform; its projected table
    is not used. With constant prior parameters (``update.constant_prior``) they and their
    concentration matrix are computed once, not at every draw.
    """

    update: _ConjugateUpdate
    latent: list[LatentCounts]
    exact: OneComponentPosterior | None  # one release, one component, constant prior

    def __post_init__(self) -> None:
        u = self.update
        self._params = self._prior = None
        if u.constant_prior:
            self._params = self._prior_params({})
            if self.latent:
                self._prior = self._concentration(self._params)

    def _prior_params(self, point: dict) -> tuple[np.ndarray, ...]:
        u = self.update
        return tuple(np.broadcast_to(p, u.param_shape) for p in u.prior_params(point))

    def _concentration(self, params: tuple[np.ndarray, ...]) -> np.ndarray:
        shape = self.latent[0].counts.shape
        return concentration_matrix(self.update.family.prior, params, shape)

    def reset(self) -> None:
        for latent in self.latent:
            latent.reset()

    def draw(self, rng: np.random.Generator, point: dict) -> np.ndarray:
        """Sweep every latent table, then draw θ | latent tables (post-processing).

        With several releases of one prior, release r's table is swept with concentration
        a + Σ_{r' ≠ r} n_r' (the Dirichlet–multinomial of all tables: θ integrated out), and
        θ | all tables ~ Beta/Dirichlet(a + Σ_r n_r).
        """
        u = self.update
        params = self._params if self._params is not None else self._prior_params(point)
        if self.exact is not None:
            table = self.exact.draw_table(rng, 1)[0]
        elif len(self.latent) == 1:
            prior = self._prior if self._prior is not None else self._concentration(params)
            table = self.latent[0].sweep(rng, prior)
        else:
            prior = self._prior if self._prior is not None else self._concentration(params)
            table = np.sum([latent.counts for latent in self.latent], axis=0)
            for latent in self.latent:
                table -= latent.counts
                table += latent.sweep(rng, prior + table)
        posterior = u.family.posterior_parameters(params, table)
        draw = u.family.sample_posterior(rng, posterior).reshape(u.shape)
        return np.asarray(u.forward(draw), dtype=np.float64)


class NoiseAwareConjugateGibbs(BlockedStep):
    """Gibbs step for the Beta/Dirichlet variables of a private model, noise-aware.

    Where :class:`~pymc_dp.PrivateConjugateGibbs` draws θ from the conjugate posterior of the
    *projected* noisy table as if it were exact (Foulds et al. 2016, §4.2), this step keeps the
    true counts n latent: the release ñ = n + Laplace(b) (or n + N(0, σ²) for a Gaussian
    release, ``ReleasedStatistics.noise``) is observed, n | θ follows the
    likelihood, and the draws are from p(θ | ñ) (Bernstein & Sheldon 2018, §3; Ju et al. 2022,
    §3), so credible intervals include the privacy noise.

    Per release (:mod:`pymc_dp.families.latent_counts` for the model of n and the numerics):

    * one group, public total, one released component (replace-one, Bernoulli/Binomial with
      public trials), constant prior parameters: exact independent draws of (s, θ), the
      posterior of s precomputed once
      (:class:`~pymc_dp.families.latent_counts.OneComponentPosterior`);
    * public total, K components, or prior parameters that depend on other free variables
      (read from the point, as PrivateConjugateGibbs does): collapsed pair moves with θ
      integrated out, then θ | n;
    * private totals (add-remove-one; several groups; per-record trials): collapsed cell
      updates of a Poisson model with Jeffreys' prior on the rate, then θ | n.

    The latent tables are state of the chain: each chain starts from a feasible rounding of the
    projected table (:meth:`setup_chain`).

    It never releases: it is built on a private model whose Beta/Dirichlet variables carry
    releases (``pymc_dp.sample(inference="noise-aware")`` builds it). Randomness comes from
    the generator PyMC gives the step.

    Parameters
    ----------
    vars : list of variables
        Beta/Dirichlet variables of a private model (or their value variables).
    model : pm.Model, optional
    tol : float
        Largest total-variation error of one latent-count conditional draw
        (:func:`pymc_dp.families.latent_counts.count_window`).
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.

    Attributes
    ----------
    releases : list of ReleasedStatistics
        The releases this step reads.
    events : tuple
        Always empty: the step spends nothing.

    Raises
    ------
    NonPrivateModelError
        If a variable carries no release (the model is not a private model of released
        statistics) or its family has no noise-aware update.
    ValueError
        If a release has no finite Laplace scale.

    Examples
    --------
    The step of the noise-aware reading (``inference="noise-aware"``, the default of
    :func:`pymc_dp.sample`), run on a private model:

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
    >>> from pymc_dp.steps.noise_aware_gibbs import NoiseAwareConjugateGibbs
    >>> with pymc_dp.build_private_model(model, [released], inference="noise-aware"):
    ...     idata = pm.sample(100, tune=100, chains=1, random_seed=1, progressbar=False,
    ...                       step=NoiseAwareConjugateGibbs())
    >>> idata.posterior["p"].shape, ledger.epsilon
    ((1, 100), 1.0)
    """

    name = "noise_aware_conjugate_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {"privacy_epsilon": (np.float64, [])}
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        model: pm.Model | None = None,
        tol: float = DEFAULT_TOL,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        value_vars = (
            get_value_vars_from_user_vars(vars, model)
            if vars is not None
            else [model.rvs_to_values[rv] for rv in model.free_RVs]
        )
        rvs = [model.values_to_rvs[v] for v in value_vars]
        missing = [rv.name for rv in rvs if not released_statistics_of(rv)]
        if missing:
            raise NonPrivateModelError(
                f"{missing} carry no released statistics: NoiseAwareConjugateGibbs never "
                "releases, it reads the releases of a private model. Use "
                "pymc_dp.sample(inference='noise-aware'), which releases once and builds it."
            )
        self.vars = value_vars
        self._sanctioned = sanctioned(bool(model.observed_RVs))
        self.releases: list[ReleasedStatistics] = [
            r for rv in rvs for r in released_statistics_of(rv)
        ]
        self.events: tuple = ()
        self._updates = [_make_noise_aware_update(model, rv, tol) for rv in rvs]
        self.rng = get_random_generator(rng)

    def setup_chain(self, rng, tune: int, draws: int) -> None:
        """Start a chain: its generator, and every latent table back at its initial rounding."""
        super().setup_chain(rng, tune, draws)
        for update in self._updates:
            update.reset()

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """Draw every assigned variable given the releases (post-processing)."""
        check_route(self)
        new_point = dict(point)
        for update in self._updates:
            new_point[update.update.value_name] = update.draw(self.rng, new_point)
        return new_point, [{"privacy_epsilon": 0.0}]

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for Beta/Dirichlet variables of a private model that carry releases."""
        return Competence.IDEAL if released_statistics_of(var) else Competence.INCOMPATIBLE


def _make_noise_aware_update(model: pm.Model, rv, tol: float) -> _NoiseAwareUpdate:
    releases = released_statistics_of(rv)
    update = _make_update(model, rv, releases)
    if update.family.prior not in NOISE_AWARE_PRIORS:
        raise NonPrivateModelError(
            f"{rv.name}: no noise-aware update for the {update.family.name} family; use "
            "inference='plugin'"
        )
    latent = []
    for release in releases:
        if not (np.isfinite(release.scale) and release.scale > 0):
            raise ValueError(
                f"{release.observed}: the release carries no noise scale; noise-aware "
                "inference needs it"
            )
        totals = release.public_totals
        latent.append(
            LatentCounts(
                release.noisy,
                release.scale,
                initial_counts(release.table, totals),
                totals,
                tol,
                release.noise,
            )
        )
    exact = None
    [first] = releases if len(releases) == 1 else [None]
    if first is not None and update.constant_prior and first.noisy.shape[1] == 1:
        params = tuple(np.broadcast_to(p, update.param_shape) for p in update.prior_params({}))
        prior = concentration_matrix(update.family.prior, params, first.table.shape)
        exact = OneComponentPosterior(
            first.noisy[:, 0],
            first.scale,
            first.public_totals,
            prior[:, 0],
            prior[:, 1],
            tol,
            first.noise,
        )
    return _NoiseAwareUpdate(update=update, latent=latent, exact=exact)
