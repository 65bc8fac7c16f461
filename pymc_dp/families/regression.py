"""Linear regression: y ~ Normal(X β + α, σ) released through its sufficient statistics.

Source: Bernstein & Sheldon, "Differentially Private Bayesian Linear Regression", NeurIPS 2019
(§3: sufficient statistics perturbation; §4: noise-aware inference with a normal model of the
covariates). Records are (x_i, y_i), x_i ∈ R^p; every coordinate has a declared range
(``data_bounds={"y": (a, b), "X": (lo, hi)}``, per column or one for all columns) and is
rescaled to the unit interval: x̃ = (x − lo)/(hi − lo), ỹ = (y − a)/(b − a). With
z = (1, x̃ − ½, ỹ − ½) (q = p + 1 variables centred on their declared midpoints), the
statistics are the D = (p + 2)(p + 3)/2 entries of the upper triangle of Σ z zᵀ — n, Σx̃, Σỹ,
X̃ᵀX̃, X̃ᵀỹ, ỹᵀỹ, all centred — released with ε split by block, most of it (46%) on X̃ᵀỹ, which
the slopes are read from (:mod:`pymc_dp.families.second_moments`: the entries' ranges, the
shares, the L1 sensitivity 1 of the weighted vector).

On the unit scale the model reads ỹ = α̃ + x̃ᵀβ̃ + N(0, σ̃²) with
α̃ = (α + loᵀβ − a)/(b − a), β̃_j = (hi_j − lo_j) β_j/(b − a), σ̃ = σ/(b − a): the plug-in
likelihood −n log σ − (yᵀy − 2θᵀZᵀy + θᵀZᵀZθ)/(2σ²), θ = (α, β), is written there and equals
it in the original units (:func:`~pymc_dp.families.second_moments.gaussian_plugin_log_likelihood`).

Noise-aware inference needs the law of the covariates: as Bernstein & Sheldon (2019, §4) the
covariates get a normal model x̃ ~ N(μ_x, Σ_x) with its own prior, as extra variables of the
private model (post-processing of the release, so they may appear in the posterior). The prior
respects the declared bounds: a variable on [0, 1] with mean m has standard deviation at most
√(m(1 − m)) (Bhatia–Davis), reached by a 0/1 covariate, so the sd is a fraction of that bound:

* ``<y>_covariate_mean`` (p,) ~ Beta(2, 2): the covariates' mean m on the unit scale;
* ``<y>_covariate_spread`` (p,) ~ Uniform(0, 1): s, the sd as a fraction of √(m(1 − m));
* ``<y>_covariate_sd`` (p,), deterministic: s·√(m(1 − m)), the sd on the unit scale;
* ``<y>_covariate_corr_chol`` (p, p), p > 1 only ~ LKJ(η = 2): the lower Cholesky factor of
  their correlation matrix.

An unbounded prior (a HalfNormal sd) lets the latent XᵀX wander where no bounded data set can
be, and the coefficients' intervals with it: in the calibration study (docs/calibration.md)
slopes covered 0.82–0.89 with ``mean ~ N(0.5, 0.5)``, ``sd ~ HalfNormal(0.5)``.

Then w = (x̃, ỹ) is jointly normal with mean (μ_x, α̃ + μ_xᵀβ̃) and covariance
[[Σ_x, Σ_x β̃], [β̃ᵀΣ_x, β̃ᵀΣ_xβ̃ + σ̃²]], and the moments of z zᵀ follow from Isserlis' theorem
(:func:`~pymc_dp.families.second_moments.gaussian_second_moments`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.scalar.basic import Add
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError
from pymc_dp.families.bounded import (
    BoundedFound,
    BoundedLink,
    BoundedStructure,
    Declarations,
    check_bounded_values,
)
from pymc_dp.families.recognition import (
    refuse_parameters_reading_records,
    refuse_unusable_constant_sigma,
    required_bounds,
)
from pymc_dp.families.second_moments import SecondMomentFamily, second_moment_names
from pymc_dp.graph.reading import (
    OBSERVED,
    distribution_name,
    likelihoods,
    record_values,
    require_as_is,
    strip_expand_dims,
)

__all__ = ["LinearRegressionFamily", "linear_predictor"]


class LinearRegressionFamily(SecondMomentFamily):
    """Normal(X β + α, σ) records (x, y), bounded coordinates; β (p,), α and σ scalar graphs.

    The intercept α is optional (``X @ beta`` alone); the unit-scale intercept α̃ is then
    loᵀβ − a over (b − a), still read from n, Σx̃ and Σỹ.
    """

    name = "linear-regression"
    likelihood = "normal"
    pattern = (
        "Normal(mu=X @ beta (+ alpha), sigma), X a data matrix, with data_bounds on the values "
        "and on X"
    )
    source = (
        "Bernstein & Sheldon 2019 (NeurIPS), §3: sufficient statistics perturbation of the "
        "upper triangle of Σ z zᵀ, z = (1, x, y) rescaled by the declared bounds and "
        "centred on the midpoints, each entry weighted by its share of ε over its range; "
        "exact replace-one sensitivity of the weighted vector "
        "(pymc_dp.families.second_moments)"
    )
    """Paper, section and equation of this family's release, as the ledger records it."""

    # --- recognition -----------------------------------------------------------------------

    def claims(self, model: pm.Model, rv: Variable) -> bool:
        """An observed Normal whose mean is ``X @ beta``, ``X @ beta + alpha`` or
        ``alpha + X @ beta`` (:func:`~pymc_dp.families.regression.linear_predictor`)."""
        if distribution_name(rv, _LIKELIHOOD) is None:
            return False
        mu = strip_expand_dims(rv.owner.op.dist_params(rv.owner)[0])
        return mu.ndim != 0 and linear_predictor(mu) is not None

    def recognise(self, model: pm.Model, rv: Variable, declarations: Declarations) -> BoundedFound:
        """``X`` a ``pm.Data`` container or constant matrix (n, p) of covariates (private,
        read only by this likelihood), ``beta`` a graph of shape (p,), ``alpha`` and ``sigma``
        scalar graphs; ``data_bounds={"y": (a, b), "X": (lo, hi)}`` with per-column or common
        covariate bounds, keyed by the container's name (for a constant matrix:
        ``"<y>_covariates"``)."""
        name = rv.name
        mu, sigma = (strip_expand_dims(p) for p in rv.owner.op.dist_params(rv.owner))
        if sigma.ndim != 0:
            raise NonPrivateModelError(
                f"{name}: a regression's Normal sigma must be one scalar (a free variable or a "
                "constant). Nothing was released."
            )
        refuse_unusable_constant_sigma(name, sigma, model)
        covariates, beta, alpha = linear_predictor(mu)
        values = model.rvs_to_values[rv]
        data_bounds = declarations.data_bounds
        leaf = require_as_is(covariates, name, "covariates")  # the container itself
        container = require_as_is(values, name, OBSERVED)
        x = record_values(covariates, name, "covariates")
        data_names = {v.name for v in model.data_vars}
        key = leaf.name if leaf.name in data_names else f"{name}_covariates"
        if x.ndim != 2:
            raise NonPrivateModelError(
                f"{name}: its covariates {key!r} must be a matrix (records × covariates), got "
                f"{x.ndim} dimension(s)"
            )
        p = int(x.shape[1])
        if beta.type.shape[0] not in (None, p):
            raise NonPrivateModelError(
                f"{name}: beta has {beta.type.shape[0]} coefficients for {p} covariates"
            )
        bounds = required_bounds(data_bounds, name, name, "values")
        covariate_bounds = required_bounds(data_bounds, key, name, f"covariates {key!r}", width=p)
        data = record_values(values, name, OBSERVED)
        if data.ndim != 1:
            raise NonPrivateModelError(
                f"{name}: a regression's observed values must be a vector (one per row of {key!r})"
            )
        parameters = {"beta": beta, "sigma": sigma}
        if alpha is not None:
            parameters["alpha"] = alpha
        refuse_parameters_reading_records(name, parameters, [container, leaf])
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=bounds,
            parameters=parameters,
            covariates=key,
            covariate_bounds=covariate_bounds,
            clamp=frozenset(k for k in declarations.clamp if k in (name, key)),
        )
        return BoundedFound(BoundedLink(structure, data, covariates=x), (leaf,), (name, key))

    # --- statistics, sensitivity, likelihoods ----------------------------------------------
    # α and β are strongly correlated when the release identifies only some combinations of
    # them: a dense mass matrix cuts the tree depth from ~8 to ~5 (ESS/s ×9 at ε = 5)
    noise_aware_sampler: ClassVar[Mapping[str, object]] = {
        "target_accept": 0.95,
        "init": "jitter+adapt_full",
    }

    def records(self, link: BoundedLink) -> tuple[np.ndarray, ...]:
        structure = link.structure
        y = check_bounded_values(
            np.asarray(link.data).reshape(-1),
            *structure.bounds,
            link.observed,
            "values",
            link.observed in structure.clamp,
        )
        x = np.asarray(link.covariates, dtype=np.float64)
        p = structure.n_covariates
        if x.ndim != 2 or x.shape != (y.size, p):
            raise InvalidPrivateDataError(
                f"{link.observed}: its covariates {structure.covariates!r} have shape "
                f"{x.shape}, expected ({y.size}, {p}) (one row per record)"
            )
        x = check_bounded_values(
            x,
            *structure.covariate_bounds,
            structure.covariates,
            "covariate values",
            structure.covariates in structure.clamp,
        )
        return y, x

    def component_names(self, structure: BoundedStructure) -> list[str]:
        columns = [f"{structure.covariates}[{j}]" for j in range(structure.n_covariates)]
        return second_moment_names([*columns, structure.observed])

    def unit_coefficients(self, parameters, structure) -> tuple[Variable, Variable]:
        low_y, high_y = structure.bounds
        width_y = high_y - low_y
        low_x, high_x = structure.covariate_bounds
        beta = pt.as_tensor(parameters["beta"]).reshape((structure.n_covariates,))
        alpha = parameters.get("alpha")
        alpha = 0.0 if alpha is None else alpha
        intercept = (alpha + pt.dot(pt.as_tensor(low_x), beta) - low_y) / width_y
        slopes = pt.as_tensor(high_x - low_x) * beta / width_y
        theta = pt.concatenate([pt.as_tensor(intercept).reshape((1,)), slopes])
        return theta, parameters["sigma"] / width_y

    def unit_moments(self, parameters, structure, name) -> tuple[Variable, Variable]:
        p = structure.n_covariates
        theta, sigma = self.unit_coefficients(parameters, structure)
        mean_x = pm.Beta(f"{name}_covariate_mean", 2.0, 2.0, shape=p)
        spread = pm.Uniform(f"{name}_covariate_spread", 0.0, 1.0, shape=p)
        sd_x = pm.Deterministic(f"{name}_covariate_sd", spread * pt.sqrt(mean_x * (1.0 - mean_x)))
        if p > 1:
            chol = pm.LKJCorr(f"{name}_covariate_corr_chol", n=p, eta=2.0)
            cov_x = (sd_x[:, None] * pt.dot(chol, chol.T)) * sd_x[None, :]
        else:
            cov_x = (sd_x**2).reshape((1, 1))
        slopes = theta[1:]
        cov_xy = pt.dot(cov_x, slopes)
        var_y = pt.dot(slopes, cov_xy) + sigma**2
        mean_w = pt.concatenate([mean_x, (theta[0] + pt.dot(mean_x, slopes)).reshape((1,))])
        top = pt.concatenate([cov_x, cov_xy[:, None]], axis=1)
        bottom = pt.concatenate([cov_xy, var_y.reshape((1,))])[None, :]
        return mean_w, pt.concatenate([top, bottom], axis=0)

    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        p = structure.n_covariates
        n_entries = (p + 2) * (p + 3) // 2
        low, high = structure.bounds
        public = "; n public, not released" if neighbouring == "replace-one" else ""
        return (
            f"linear regression sufficient statistics: upper triangle of Σ z zᵀ "
            f"({n_entries} entries), z = (1, x̃, ỹ), x̃ = ({structure.covariates} − lo)/(hi − lo) "
            f"per column ({p} covariates), ỹ = (y − {low:g})/({high:g} − {low:g}), both − ½"
            f"{public}; {self.describe_split(structure, neighbouring)}"
        )


_LIKELIHOOD = likelihoods(("normal",))


def linear_predictor(mu: Variable):
    """(X, beta, alpha or None) when ``mu`` is X @ beta, X @ beta + alpha or alpha + X @ beta."""
    product = _matrix_vector(mu)
    if product is not None:
        return (*product, None)
    node = mu.owner
    if (
        node is None
        or not isinstance(node.op, Elemwise)
        or not isinstance(node.op.scalar_op, Add)
        or len(node.inputs) != 2
    ):
        return None
    first, second = (strip_expand_dims(i) for i in node.inputs)
    for term, other in ((first, second), (second, first)):
        product = _matrix_vector(term)
        if product is not None and other.ndim == 0:
            return (*product, other)
    return None


def _matrix_vector(term: Variable):
    """(X, beta) when ``term`` is X @ beta (Dot or Matmul of a matrix and a vector)."""
    node = term.owner
    if node is None:
        return None
    if isinstance(node.op, DimShuffle) and node.op.input_ndim == 2 and node.op.new_order == (0,):
        inner = node.inputs[0].owner  # squeeze(X @ expand_dims(beta, 1), 1)
        if inner is None or not _is_dot(inner.op) or len(inner.inputs) != 2:
            return None
        matrix, column = inner.inputs
        vector = column.owner.inputs[0] if _is_column(column) else None
        if vector is None or matrix.ndim != 2:
            return None
        return matrix, vector
    if _is_dot(node.op) and len(node.inputs) == 2:
        matrix, vector = node.inputs
        if matrix.ndim == 2 and vector.ndim == 1:
            return matrix, vector
    return None


def _is_dot(op) -> bool:
    return isinstance(op, Dot) or (isinstance(op, Blockwise) and isinstance(op.core_op, Dot))


def _is_column(variable: Variable) -> bool:
    node = variable.owner
    return (
        node is not None
        and isinstance(node.op, DimShuffle)
        and node.op.input_ndim == 1
        and node.op.new_order == (0, "x")
    )
