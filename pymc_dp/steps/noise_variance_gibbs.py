"""Gibbs step for the latent Laplace noise variances of released second moments.

The noise-aware reading of a Normal release
(:func:`pymc_dp.families.normal.gaussian_release_log_likelihood`) writes the Laplace(b) noise
on each released component as N(0, V) with V ~ Exponential(mean 2b²), and integrates the true
statistics T out: release y | θ, V ~ MvNormal(m(θ), C(θ) + diag V), m = n·E t, C = n·Cov t.
Sampled jointly by NUTS, (θ, V) is a funnel: where V is small and C nearly singular (a small
σ) the density is sharp along directions it is flat along elsewhere. NUTS diverged on the
calibration study's Normal designs (13–53 per 1,000 draws at ``target_accept`` 0.8, 1–29 at
0.95; ``scripts/count_divergences.py``, ``docs/calibration.md``).

This step takes V out of NUTS, with the scale-mixture updates of Bernstein & Sheldon
(NeurIPS 2018, the Laplace noise as a normal scale mixture, its variances drawn given the
statistics). With the current θ and V it

1. draws the true statistics, T | θ, V, y ~ N(m + C S⁻¹(y − m), C − C S⁻¹ C), S = C + diag V,
   by Matheron's rule: T₀ ~ N(m, C), e ~ N(0, diag V), T = T₀ + C S⁻¹(y − T₀ − e) (no
   factorisation of the nearly singular posterior covariance);
2. draws every V_j | T, y from its conditional, a generalised inverse Gaussian
   GIG(½, 1/b², r_j²) with r = y − T: 1/V_j ~ InverseGaussian(mean 1/(b|r_j|), shape 1/b²)
   (NumPy's ``wald``);

and discards T. NUTS then moves θ given V with T integrated out, so every sweep is a
partially collapsed Gibbs sampler (van Dyk & Park 2008): θ | V, y (T marginalised) is
followed by T | θ, V, y then V | T, y, which leaves p(θ, V | y) invariant.

:class:`~pymc_dp.families.normal.NormalFamily` asks for it
(``BoundedFamily.gibbs_noise_variances``); the regression family does not (with it, the
regression's divergences rose from 0–3.7 to 4.5–7 per 1,000 at 0.95 and its steps per draw
doubled: its remaining trouble is not V).

It never releases and reads no record: it reads the released values, the noise scale and the
graphs of m(θ) and C(θ) of a private model (``pymc_dp.sample`` builds it), so its draws are
post-processing. Randomness comes from the generator PyMC gives the step.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pymc as pm
from pymc.model import modelcontext
from pymc.step_methods.compound import BlockedStep, Competence, StepMethodState
from pymc.util import get_random_generator, get_value_vars_from_user_vars

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.bounded import noise_variance_parts

__all__ = ["NoiseVarianceGibbs", "draw_noise_variances"]


class NoiseVarianceGibbs(BlockedStep):
    """Gibbs updates of the latent Laplace noise variances of a noise-aware private model.

    See the module docstring for the update. The default step of
    ``pymc_dp.sample(inference="noise-aware")`` for the Normal family under Laplace noise,
    beside NUTS on every other free variable; its function is compiled once per model
    structure with the rest (:mod:`pymc_dp.routes.compiled`).

    Parameters
    ----------
    vars : list of variables, optional
        Latent noise variances ``<observed>_noise_variance`` of a private model (default:
        every one in ``model``).
    model : pm.Model, optional
    rng, initial_point, compile_kwargs, blocked
        As for PyMC step methods.
    parts_function : callable, optional
        ``parts_function`` of an earlier step on the same model (compiled once; the
        routes keep it with the compiled model, :mod:`pymc_dp.routes.compiled`).

    Raises
    ------
    NonPrivateModelError
        If a variable is not a latent noise variance of a released likelihood.

    Examples
    --------
    On a noise-aware private model of a Normal release (``pymc_dp.sample`` builds and runs
    the same):

    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> from pymc_dp.analysis import recognise
    >>> from pymc_dp.mechanisms.statistics import release_bounded
    >>> from pymc_dp.steps.noise_variance_gibbs import NoiseVarianceGibbs
    >>> values = np.random.default_rng(0).normal(1.0, 2.0, size=1_000)  # private records
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 5.0)
    ...     sigma = pm.HalfNormal("sigma", 5.0)
    ...     y = pm.Normal("y", mu, sigma, observed=values)
    >>> link = recognise(model, "laplace", data_bounds={"y": (-10.0, 10.0)}).blocks["y"]
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> release = release_bounded(link, 1.0, ledger=ledger)
    >>> with pymc_dp.build_private_model(model, [release], inference="noise-aware") as private:
    ...     step = NoiseVarianceGibbs()
    ...     idata = pm.sample(100, tune=100, chains=1, step=[step], random_seed=1,
    ...                       progressbar=False)
    >>> [v.name for v in step.vars], idata.posterior["mu"].shape, ledger.epsilon
    (['y_noise_variance_log__'], (1, 100), 1.0)
    """

    name = "noise_variance_gibbs"
    default_blocked = True
    stats_dtypes_shapes: ClassVar = {}
    _state_class = StepMethodState

    def __init__(
        self,
        vars=None,
        *,
        model: pm.Model | None = None,
        blocked: bool = True,
        rng=None,
        initial_point=None,
        compile_kwargs: dict | None = None,
        parts_function=None,
    ) -> None:
        model = modelcontext(model)
        if vars is None:
            rvs = [rv for rv in model.free_RVs if noise_variance_parts(rv) is not None]
        else:
            rvs = [model.values_to_rvs[v] for v in get_value_vars_from_user_vars(vars, model)]
        missing = [rv.name for rv in rvs if noise_variance_parts(rv) is None]
        if missing or not rvs:
            raise NonPrivateModelError(
                f"{missing or 'no variable'}: NoiseVarianceGibbs updates the latent noise "
                "variances of a noise-aware private model; pymc_dp.sample builds them"
            )
        self.vars = [model.rvs_to_values[rv] for rv in rvs]
        self._names = [v.name for v in self.vars]
        transforms = [model.rvs_to_transforms.get(rv) for rv in rvs]
        self._log_scale = [t is not None for t in transforms]
        if parts_function is None:
            outputs = []
            for rv in rvs:
                parts = noise_variance_parts(rv)
                outputs += [parts.mean, parts.cov, parts.released, parts.scale]
            parts_function = model.compile_fn(
                model.replace_rvs_by_values(outputs),
                inputs=model.value_vars,
                on_unused_input="ignore",
                point_fn=True,
                **(compile_kwargs or {}),
            )
        self.parts_function = parts_function
        self.rng = get_random_generator(rng)

    def step(self, point: dict) -> tuple[dict, list[dict]]:
        """Draw every assigned noise variance given θ and the release (post-processing)."""
        new_point = dict(point)
        values = self.parts_function(point)
        for i, name in enumerate(self._names):
            mean, cov, released, scale = values[4 * i : 4 * i + 4]
            stored = np.asarray(point[name], dtype=np.float64)
            variance = np.exp(stored) if self._log_scale[i] else stored
            drawn = draw_noise_variances(
                self.rng,
                np.asarray(mean),
                np.asarray(cov),
                np.asarray(released),
                float(scale),
                variance,
            )
            new_point[name] = np.log(drawn) if self._log_scale[i] else drawn
        return new_point, [{}]

    @staticmethod
    def competence(var, has_grad):
        """IDEAL for latent noise variances of a private model, else INCOMPATIBLE."""
        if noise_variance_parts(var) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE


def draw_noise_variances(
    rng: np.random.Generator,
    mean: np.ndarray,
    cov: np.ndarray,
    released: np.ndarray,
    scale: float,
    variance: np.ndarray,
) -> np.ndarray:
    """One draw of V | θ, y through the true statistics T (module docstring, steps 1–2).

    ``mean`` (r,) and ``cov`` (r, r): the CLT law N(m, C) of T; ``released`` (r,): y;
    ``scale``: the Laplace scale b; ``variance`` (r,): the current V. Returns the new V (r,).
    """
    # T₀ ~ N(m, C) through a symmetric square root (C may be singular to rounding)
    eigenvalues, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))
    t0 = mean + root @ rng.standard_normal(mean.size)
    e = np.sqrt(variance) * rng.standard_normal(mean.size)
    t = t0 + cov @ np.linalg.solve(cov + np.diag(variance), released - t0 - e)
    residual = np.maximum(np.abs(released - t), 1e-300)
    precision = rng.wald(1.0 / (scale * residual), 1.0 / scale**2)
    return 1.0 / precision
