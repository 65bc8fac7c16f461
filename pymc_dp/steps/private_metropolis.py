"""Random-walk Metropolis with a fixed, public proposal scale (Foulds et al. 2016, App. C.1).

Theorem C.1 (proof in App. D): a Metropolis update that leaves the posterior at temperature
T = 2Δ/ε invariant, with a symmetric proposal f, is (ε, δ)-DP **if** its rejection
probability ∫ f(θ, θ')(1 − Pr(accept)) dθ' is at most δ for every dataset and every θ.
Accepted moves have log-probability ratios within ε between neighbouring datasets. Rejections
are covered only by δ, and a random-walk proposal is rejected with probability close to its
typical rejection rate, often 0.3–0.8. So δ must be a bound the user can justify, and Foulds
et al. note this "may not typically correspond to a practical privacy-preserving sampling
algorithm". Use it for study, not for releases.

The proposal scale is fixed and public: PyMC's adaptive tuning reads the acceptance rate,
which depends on the data, so this step never tunes. It samples whatever model it is given,
so it steps only when :func:`pymc_dp.sample` with ``mechanism="metropolis"`` built it
(:func:`pymc_dp.steps.guard.route_context`): the route passes a model tempered at T
(:func:`pymc_dp.tempering.temper`) and charges the ledger. Built anywhere else it refuses to
step.
"""

from __future__ import annotations

import math
import numbers
from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_value_vars_from_user_vars

from pymc_dp.steps.guard import check_route, in_route
from pymc_dp.steps.noise import SecretNoise

__all__ = ["PrivateMetropolis"]


def validate_proposal_scale(proposal_scale) -> float:
    """The public random-walk sd as a float, or ``ValueError``: a real number (not a bool, not
    an array), finite and > 0. Checked by the route before anything is charged."""
    if isinstance(proposal_scale, bool | np.bool_) or not isinstance(proposal_scale, numbers.Real):
        raise ValueError(
            f"proposal_scale must be one real number > 0, got {type(proposal_scale).__name__}"
        )
    value = float(proposal_scale)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"proposal_scale must be finite and > 0, got {value!r}")
    return value


class PrivateMetropolis(SecretNoise, BlockedStep):
    """Gaussian random-walk Metropolis on all (transformed) value variables, no tuning.

    Parameters
    ----------
    vars : list, optional
        Value variables to update jointly (default: all free variables).
    proposal_scale : float
        Standard deviation of the Gaussian proposal in value space (public, data-independent).
    model : pm.Model, optional
    noise_seed : int, optional
        Secret entropy mixed into every chain's generator (:mod:`pymc_dp.steps.noise`).
        Default: fresh OS entropy.
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.

    Raises
    ------
    ValueError
        If the proposal scale is not finite and > 0, or a variable is discrete.
    NonPrivateModelError
        From ``step``, if the step was not built by :func:`pymc_dp.sample`.

    Examples
    --------
    ``pymc_dp.sample(mechanism="metropolis")`` runs this step with a public, fixed
    ``proposal_scale``:

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> from pymc_dp.distributions import TruncatedBeta
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=1_000)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = TruncatedBeta("p", 1.0, 1.0, truncation=0.01)  # p in [0.01, 0.99]: Δ is finite
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> idata = pymc_dp.sample(10, tune=10, model=model, epsilon=1.0, mechanism="metropolis",
    ...                        proposal_scale=0.05, chains=1, random_seed=1, progressbar=False)
    >>> [event.mechanism for event in pymc_dp.PrivacyLedger.from_datatree(idata).events]
    ['metropolis']
    """

    name = "private_metropolis"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {"accepted": (bool, [])}
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        proposal_scale: float,
        model: pm.Model | None = None,
        noise_seed: int | None = None,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
    ) -> None:
        model = modelcontext(model)
        # it samples whatever density the model defines (a Potential over records too): only
        # a route, which tempers the model and charges the ledger, may run it
        self._sanctioned = in_route()
        proposal_scale = validate_proposal_scale(proposal_scale)
        self.vars = (
            get_value_vars_from_user_vars(vars, model)
            if vars is not None
            else list(model.value_vars)
        )
        if any(v.dtype.startswith("int") for v in self.vars):
            raise ValueError("PrivateMetropolis updates continuous variables only")
        self.proposal_scale = float(proposal_scale)
        self._names = [v.name for v in self.vars]
        self._logp = model.compile_logp(**(compile_kwargs or {}))
        self._init_noise(noise_seed, rng)

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """One symmetric proposal, accepted with probability min(1, p(θ')/p(θ))."""
        check_route(self)
        proposal = dict(point)
        for name in self._names:
            value = np.asarray(point[name], dtype=np.float64)
            step = self.rng.normal(0.0, self.proposal_scale, size=value.shape)
            proposal[name] = np.asarray(value + step)  # keep 0-d arrays arrays
        log_ratio = float(self._logp(proposal)) - float(self._logp(point))
        accepted = bool(np.log(self.rng.uniform()) < log_ratio)
        return (proposal if accepted else point), [{"accepted": accepted}]

    @staticmethod
    def competence(var, has_grad):
        """Never chosen automatically."""
        return Competence.INCOMPATIBLE
