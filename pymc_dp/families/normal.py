"""The Normal family: Normal statistics (known σ), their Δ, and the tempered Normal update.

A Normal(μ, σ²) likelihood with σ a known constant and a Normal(μ₀, σ₀²) prior on μ.
Per-record statistic S(x) = (x/σ², 1/σ²); aggregate over the records of a group:
(Σx/σ², n/σ²). Posterior: Normal(m, 1/P) with P = 1/σ₀² + n/σ², m = (μ₀/σ₀² + Σx/σ²)/P.

Log-likelihood bound Δ (nats; :mod:`pymc_dp.families.bounds`) of one value x ∈ [a, b] with
μ ∈ [m_lo, m_hi]: :func:`normal_log_likelihood_bound`. Both the data bounds and the mean
truncation are needed; without either Δ = ∞ (Foulds et al. 2016, §3.2 note the Gaussian needs
bounded data; this bound follows their eq. 9 and 13).

Tempered update (Foulds et al. 2016, §3.1 eq. 14, §4.1 eq. 19):
:func:`normal_tempered_parameters` and :func:`normal_tempered_draw` (SciPy's ``truncnorm``).

**Laplace statistics, unknown mean and sd** (:class:`NormalFamily`; the bounded families of
:mod:`pymc_dp.families.bounded`). Values x ∈ [a, b] (declared) are centred and rescaled to
w = (x − a)/(b − a) − ½ ∈ [−½, ½] and released through (n, Σw, Σw²) with ε split 30/70
between Σw and Σw² (n public under replace-one; :mod:`pymc_dp.families.second_moments`,
which holds the statistics, their sensitivity, the plug-in likelihood and the exact
two-component noise-aware likelihood this family shares with linear regression). A mean read
per cell of private group labels (group means, :class:`NormalFamily`) releases
(n_c, Σw_c, Σw²_c) per cell with ε split by ``CELL_SHARES``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable
from pytensor.graph.traversal import ancestors

from pymc_dp.errors import InvalidPrivateDataError, NonPrivateModelError
from pymc_dp.families.base import group_sums
from pymc_dp.families.bounded import (
    BoundedFound,
    BoundedLink,
    BoundedStructure,
    Declarations,
    check_bounded_values,
    check_group_labels,
    latent_record_count,
    positive_counts,
    tempered_record_bounds,
    to_unit_interval,
)
from pymc_dp.families.recognition import (
    cell_covariates,
    cell_labels,
    covariate_bins_of,
    label_names,
    refuse_parameters_reading_records,
    refuse_unusable_constant_sigma,
    required_bounds,
    unsupported,
)
from pymc_dp.families.regression import linear_predictor
from pymc_dp.families.second_moments import (
    CENTRE,
    ROUND_UP,
    SecondMomentFamily,
    entry_sensitivity,
    project_second_moments,
    second_moment_names,
    second_moment_weights,
    two_component_laplace_log_likelihood,
)
from pymc_dp.graph.cells import cell_parameter, record_covariates, record_length
from pymc_dp.graph.reading import (
    OBSERVED,
    dask_records,
    describe_graph,
    deterministic_of,
    distribution_name,
    is_data,
    likelihoods,
    record_values,
    require_as_is,
    same_values,
    strip_expand_dims,
    variable_value,
    wrapped_parameter,
)
from pymc_dp.truncated import truncated_normal

__all__ = [
    "CELL_SHARES",
    "NormalFamily",
    "normal_log_likelihood_bound",
    "normal_record_statistics",
    "normal_tempered_draw",
    "normal_tempered_parameters",
    "normal_tempered_statistics",
]


def normal_tempered_statistics(
    name: str,
    data: np.ndarray,
    sigma: Variable,
    model: pm.Model,
    truncation: tuple[float, float],
    grouped: bool,
    bounds,
) -> tuple[np.ndarray, float]:
    """The per-record statistics (x/σ², 1/σ²) and Δ of a Normal likelihood with known σ on
    the posterior-sampling routes: σ one constant > 0 (it sets Δ), values validated against
    ``data_bounds``, the mean truncated to ``truncation``. **Private** (the statistics).

    Raises
    ------
    NonPrivateModelError
        Without declared bounds, or for a σ that is not one constant > 0.
    InvalidPrivateDataError
        For NaN or values outside the bounds (counted, never shown).
    """
    low, high = tempered_record_bounds(name, bounds, "values")
    if not is_data(sigma, model):
        raise NonPrivateModelError(f"{name}: the Normal σ must be a constant (it sets Δ)")
    sigmas = np.unique(variable_value(sigma))
    if sigmas.size != 1 or not sigmas[0] > 0:
        raise NonPrivateModelError(f"{name}: the Normal σ must be one constant > 0")
    known = float(sigmas[0])
    values = np.asarray(data, dtype=np.float64).reshape(-1)
    if np.isnan(values).any():
        raise InvalidPrivateDataError(f"{name}: values contain NaN. Nothing was released.")
    bad = (values < low) | (values > high) | ~np.isfinite(values)
    if bad.any():
        raise InvalidPrivateDataError(
            f"{name}: {int(bad.sum())} values outside the declared domain [{low}, {high}]. "
            "Nothing was released."
        )
    bound = normal_log_likelihood_bound(low, high, *truncation, known, grouped=grouped)
    return normal_record_statistics(values, known), bound


def normal_record_statistics(values: np.ndarray, sigma: float) -> np.ndarray:
    """Per-record statistics (x/σ², 1/σ²) of validated values, shape (n, 2), float64. Private."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    precision = 1.0 / sigma**2
    return np.column_stack([values * precision, np.full(values.size, precision)])


def normal_log_likelihood_bound(
    data_lower: float,
    data_upper: float,
    mean_lower: float,
    mean_upper: float,
    sigma: float,
    *,
    grouped: bool = False,
) -> float:
    """Δ of one Normal(μ, σ²) record x ∈ [a, b], known σ, μ ∈ [m_lo, m_hi].

    log Pr(x | μ) = −(x − μ)²/(2σ²) + const, so
    Δ = sup_μ (max_x (x − μ)² − min_x (x − μ)²) / (2σ²). Outside [a, b] the bracket is linear
    in μ, and inside it max_x (x − μ)² is convex, so the supremum is at m_lo, m_hi, or at a or
    b when they lie in [m_lo, m_hi].

    With ``grouped=True`` (x and x' scored under different means) Δ = (max (x − μ)² −
    min (x − μ)²)/(2σ²) over x ∈ [a, b] and μ ∈ [m_lo, m_hi] independently: the maximum is at
    a corner, the minimum is the squared gap between the intervals (0 if they overlap).

    Raises
    ------
    ValueError
        If the data or mean bounds are missing or infinite (Δ = ∞), out of order, or σ <= 0.
    """
    bounds = {"data": (data_lower, data_upper), "mean": (mean_lower, mean_upper)}
    for name, (low, high) in bounds.items():
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(
                f"normal: Δ is infinite without finite {name} bounds; got [{low!r}, {high!r}]"
            )
        if low > high:
            raise ValueError(f"normal: {name} bounds out of order: [{low}, {high}]")
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"normal: sigma must be finite and > 0, got {sigma!r}")
    a, b = float(data_lower), float(data_upper)
    if grouped:
        furthest = max((b - mean_lower) ** 2, (a - mean_upper) ** 2)
        gap = max(0.0, mean_lower - b, a - mean_upper)
        return (furthest - gap**2) / (2 * sigma**2)
    candidates = [mean_lower, mean_upper, *(v for v in (a, b) if mean_lower <= v <= mean_upper)]

    def spread(mu: float) -> float:
        furthest = max((a - mu) ** 2, (b - mu) ** 2)
        nearest = 0.0 if a <= mu <= b else min((a - mu) ** 2, (b - mu) ** 2)
        return furthest - nearest

    return max(spread(float(mu)) for mu in candidates) / (2 * sigma**2)


def normal_tempered_parameters(
    prior_parameters: tuple[np.ndarray, ...], statistics: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """(mean, sd) of Normal(μ₀, σ₀²) × statistics (Σx/σ², n/σ²), raised to 1/T.

    Normal(m, T/P) with P = 1/σ₀² + n/σ² and m = (μ₀/σ₀² + Σx/σ²)/P: the conjugate posterior
    with its log density divided by T (Foulds et al. 2016, §3.1 eq. 14). ``prior_parameters``
    is (μ₀, σ₀), broadcast to (G,); ``statistics`` has shape (G, 2).
    """
    mu, sigma = prior_parameters
    precision = 1 / sigma**2 + statistics[:, 1]
    mean = (mu / sigma**2 + statistics[:, 0]) / precision
    return mean, np.sqrt(float(temperature) / precision)


def normal_tempered_draw(
    parameters: tuple[np.ndarray, ...], bounds: tuple[float, float], rng: np.random.Generator
) -> np.ndarray:
    """Exact draw of Normal(mean, sd) truncated to bounds = (m_lo, m_hi), elementwise."""
    mean, sd = parameters
    return truncated_normal(mean, sd, bounds[0], bounds[1], rng)


CELL_SHARES = np.array([0.2, 0.3, 0.5])
"""Shares of ε of (n_c, Σw_c, Σw²_c) when the mean is read per cell (public constants). Every
cell's count is private and its relative error moves the cell's mean and sd with it; at
5% (the ungrouped add-remove-one share) a cell of 250 records had a count noise sd of 57 at
ε = 1 and a chain stuck where a count was a quarter of its true value."""


class NormalFamily(SecondMomentFamily):
    """Normal(μ, σ) records x ∈ [a, b] (declared); μ and σ scalar graphs, or graphs of
    group-level means and sds picked by private group labels (any priors).

    Statistics (n, Σw, Σw²) of w = (x − a)/(b − a) − ½ (see the module docstring); per cell
    of the labels when μ is read per group (``theta[g]``, ``mu + tau * z[g]``,
    ``a[g1] + b[g2]``: :func:`pymc_dp.graph.cells.cell_parameter`), and of the levels of any
    whole-number covariate μ reads (``a[g] + b * floor``: one more axis of cells, exact).

    **Per cell.** Labels are private, so every cell's count n_c is released with its sums,
    with ε split by ``CELL_SHARES`` (n 20%, Σw 30%, Σw² 50%), weights
    c = (c₀, c₁, c₂) = shares over the ranges (1, ½, ¼). A record
    adds (c₀, c₁w, c₂w²) to its cell's row, of L1 norm at most c₀ + c₁/2 + c₂/4 = 1:
    add-remove-one changes one row by that (Δ₁ = 1); replace-one may move a record from one
    cell to another, one row losing a vector and another gaining one (Δ₁ = 2), and within a
    cell changes (Σw, Σw²) by at most (c₁, c₂/4), less. L2: ‖v‖₂ ≤ A = √(c₀² + c₁²/4 + c₂²/16)
    under add-remove-one, √2·A under replace-one (or √(c₁² + c₂²/16) within a cell, if larger).
    The noise-aware likelihood takes every cell's count as latent (``<y>_n_records``, flat
    prior, non-centred) and the exact two-component density of its (Σw, Σw²) given the count
    (:func:`~pymc_dp.families.second_moments.two_component_laplace_log_likelihood`), the CLT
    law of the sums given n_c, μ_c and σ: an approximation for cells of a few records, as
    for the ungrouped model at small n (``docs/calibration.md``).
    """

    name = "normal"
    likelihood = "normal"
    pattern = (
        "Normal(mu, sigma), each a scalar graph or group-level values picked by group labels "
        "(theta[group], mu + tau * z[group], a[g1] + b[g2], sigma[group]; the mean may add "
        "whole-number covariates read at their levels, a[group] + b * floor), with data_bounds "
        "on the values and covariates"
    )
    source = (
        "Bernstein & Sheldon 2018 (NeurIPS), §3: Laplace mechanism on the sufficient "
        "statistics (n, Σu, Σu²) of values rescaled by their declared bounds and centred on "
        "the midpoint, each weighted by its share of ε over its range; one group: exact "
        "replace-one sensitivity of the weighted vector "
        "(pymc_dp.families.second_moments.replace_one_maximiser); group means: (n_c, Σu_c, "
        "Σu²_c) per cell of the labels, grouped-table sensitivity (a record leaves one row "
        "and enters another) as Foulds et al. 2016, §3.2, eq. (16)-(17)"
    )
    """Paper, section and equation of this family's release, as the ledger records it."""
    # the exact two-component likelihood has no latent variable; the posterior's own curved
    # ridge (the release pins m² + s²) still diverged 0–14 per 1,000 at PyMC's 0.8, none at
    # 0.9 on the calibration study's designs (docs/calibration.md)
    noise_aware_sampler: ClassVar[Mapping[str, object]] = {"target_accept": 0.9}

    # --- recognition -----------------------------------------------------------------------

    def claims(self, model: pm.Model, rv: Variable) -> bool:
        """Every observed Normal but a linear regression's
        (:class:`~pymc_dp.families.regression.LinearRegressionFamily`)."""
        if distribution_name(rv, _LIKELIHOOD) is None:
            return False
        mu = strip_expand_dims(rv.owner.op.dist_params(rv.owner)[0])
        return mu.ndim == 0 or linear_predictor(mu) is None

    def recognise(self, model: pm.Model, rv: Variable, declarations: Declarations) -> BoundedFound:
        """``mu`` and ``sigma`` scalar graphs (free variables with any priors, or
        constants): the (n, Σw, Σw²) of all records. Or group means: ``mu`` any graph of
        group-level means picked by private group labels, ``sigma`` one scalar or read by the
        same labels (``_recognise_cells``). Needs ``data_bounds={"y": (a, b)}``."""
        name = rv.name
        mu, sigma = (strip_expand_dims(p) for p in rv.owner.op.dist_params(rv.owner))
        values = model.rvs_to_values[rv]
        if sigma.ndim != 0:
            deterministic = deterministic_of(sigma, model)
            if deterministic is not None:
                raise wrapped_parameter(name, "sd", deterministic)
            return self._recognise_cells(model, name, mu, sigma, values, declarations)
        refuse_unusable_constant_sigma(name, sigma, model)
        if mu.ndim != 0:
            deterministic = deterministic_of(mu, model)
            if deterministic is not None:
                raise wrapped_parameter(name, "mean", deterministic)
            return self._recognise_cells(model, name, mu, sigma, values, declarations)
        container = require_as_is(values, name, OBSERVED)
        parameters = {"mu": mu, "sigma": sigma}
        # before the bounds: a parameter read from the records is refused whatever is declared
        refuse_parameters_reading_records(name, parameters, [container])
        bounds = required_bounds(declarations.data_bounds, name, name, "values")
        data = record_values(values, name, OBSERVED).reshape(-1)
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=bounds,
            parameters=parameters,
            clamp=frozenset(k for k in declarations.clamp if k == name),
        )
        return BoundedFound(BoundedLink(structure, data), (), (name,))

    def _recognise_cells(self, model, name, mu, sigma, values, declarations) -> BoundedFound:
        """A Normal whose mean, sd or both are graphs of group-level quantities picked by group
        labels (``theta[g]``, ``mu + tau * z[g]``, ``a[g1] + b[g2]``, ``sigma[g]``; the other a
        scalar, or both reading the same labels): the per-cell (n_c, Σu_c, Σu²_c) of
        this family, one row per cell
        (:func:`~pymc_dp.graph.cells.cell_parameter`). The mean may also read per-record
        covariates at their whole-number levels (``a[county] + b * floor``, declared with
        ``data_bounds`` and ``covariate_bins={"floor": "levels"}``, the default for an integer
        array): each level is a cell, exactly. A covariate cut into bins is refused (within a
        bin the records are a mixture of Normals, not the Normal of its midpoint), as is an sd
        that reads any covariate or an sd per group beside a mean that reads covariates."""
        container = require_as_is(values, name, OBSERVED)
        n_records = record_length(container.reshape((-1,)))
        found_cells = {}
        for role, param in (("mean", mu), ("sd", sigma)):
            if param.ndim == 0:
                continue
            bins = {}
            if record_covariates(param, model, n_records):
                if role == "sd":
                    found = (
                        "a Normal whose sd reads per-record covariates (one sd, or one per "
                        f"group, is supported): {describe_graph(param)}"
                    )
                    raise unsupported(name, found)
                bins = covariate_bins_of(
                    model,
                    name,
                    param,
                    n_records,
                    declarations.data_bounds,
                    declarations.covariate_bins,
                )
                cut = sorted(b.key for b in bins.values() if not np.all(b.levels))
                if cut:
                    found = (
                        "a Normal whose mean reads per-record covariates in another form than "
                        f"X @ beta (+ alpha), with {cut} cut into bins: within a bin the records "
                        "are a mixture of Normals, not the Normal of the bin's midpoint. Read a "
                        "whole-number covariate at its levels "
                        "(covariate_bins={key: 'levels'}), or a continuous one as X @ beta + alpha "
                        f"(linear regression): {describe_graph(param)}"
                    )
                    raise unsupported(name, found)
            try:
                cells = cell_parameter(param, model, name, n_records, bins=bins)
            except NonPrivateModelError as error:
                found = (
                    f"a Normal whose {role} is neither a scalar, nor group-level values picked by "
                    f"group labels ({error}): {describe_graph(param)}"
                )
                raise unsupported(name, found) from None
            if not cells.labels and not cells.covariates:
                found = (
                    f"a Normal whose {role} varies by record without group labels: "
                    f"{describe_graph(param)}"
                )
                raise unsupported(name, found)
            found_cells[role] = cells
        if len(found_cells) == 2 and found_cells["mean"].covariates:
            raise NonPrivateModelError(
                f"{name}: its Normal sd is read per group while its mean reads per-record "
                "covariates; give the Normal one sd (a scalar). Nothing was released."
            )
        if len(found_cells) == 2 and not _same_labels(
            found_cells["mean"].labels, found_cells["sd"].labels, name
        ):
            raise NonPrivateModelError(
                f"{name}: its Normal mean and sd read different group labels (or the same in "
                "another order); read both per the same labels, e.g. theta[g] and sigma[g]. "
                "Nothing was released."
            )
        cells = found_cells.get("mean") or found_cells["sd"]
        keys = tuple(b.key for b in cells.covariate_bins)
        if dask_records(container) is not None:
            raise NonPrivateModelError(
                f"{name}: records in a Dask collection are not supported for a Normal read per "
                "group; give the records in memory. Nothing was released."
            )
        # the labels may not be the records themselves (a parameter that reads its own values);
        # refused before the bounds are looked up, whatever is declared
        refuse_parameters_reading_records(name, {"mean": mu, "sigma": sigma}, [container])
        for role, key, param in (("mean", "mean", mu), ("sigma", "sd", sigma)):
            if key not in found_cells:  # a scalar may not read the labels or covariates either
                readers = [*cells.labels, *cells.covariates]
                refuse_parameters_reading_records(name, {role: param}, readers)
        bounds = required_bounds(declarations.data_bounds, name, name, "values")
        data = record_values(values, name, OBSERVED).reshape(-1)
        parameters = {
            role: found_cells[key].graph if key in found_cells else param
            for role, key, param in (("mu", "mean", mu), ("sigma", "sd", sigma))
        }
        if "sd" in found_cells and not any(
            v in model.free_RVs for v in ancestors([found_cells["sd"].graph])
        ):  # a public constant per group: checked here, or the run would fail after its charge
            value = np.asarray(found_cells["sd"].graph.eval(), dtype=np.float64)
            if not np.all(np.isfinite(value) & (value > 0)):
                raise NonPrivateModelError(
                    f"{name}: its Normal sigma per group is a constant with values that are not "
                    "finite and > 0. Nothing was released."
                )
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=bounds,
            parameters=parameters,
            n_groups=cells.n_cells,
            grouped=True,
            clamp=frozenset(k for k in declarations.clamp if k in (name, *keys)),
            label_sizes=cells.sizes,
            covariate_bins=cells.covariate_bins,
            labels=label_names(model, cells.labels, name),
        )
        groups, covariates = cell_labels(cells, name), cell_covariates(cells, name)
        link = BoundedLink(structure, data, groups=groups, covariates=covariates)
        return BoundedFound(link, (*cells.labels, *cells.covariates), (name, *keys))

    # --- statistics, sensitivity, likelihoods ----------------------------------------------

    def records(self, link: BoundedLink) -> tuple[np.ndarray, ...]:
        structure = link.structure
        values = check_bounded_values(
            np.asarray(link.data).reshape(-1),
            *structure.bounds,
            link.observed,
            "values",
            link.observed in structure.clamp,
        )
        if structure.grouped:
            return values, check_group_labels(link)
        return (values,)

    def statistics(self, link: BoundedLink) -> np.ndarray:
        structure = link.structure
        if not structure.grouped:
            return super().statistics(link)
        values, cells = self.records(link)
        w = to_unit_interval(values, *structure.bounds) - CENTRE
        per_record = np.column_stack([np.ones(w.size), w, w**2])
        return group_sums(per_record, cells, structure.n_groups)

    def component_names(self, structure: BoundedStructure) -> list[str]:
        return second_moment_names(["u"])

    def _relation(self, structure: BoundedStructure, neighbouring: str) -> str:
        """Per cell the counts are private under either relation: add-remove-one's split."""
        return "add-remove-one" if structure.grouped else neighbouring

    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        return super().released_components(structure, self._relation(structure, neighbouring))

    def weights(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        if structure.grouped:
            return CELL_SHARES / entry_sensitivity(1, "add-remove-one")
        return second_moment_weights(1, neighbouring)

    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """L1 of the weighted (G, 3) release per cell: 1 (add-remove-one), 2 (replace-one:
        a record leaves one cell's row and enters another's); see the class docstring."""
        if not structure.grouped:
            return super().sensitivity(structure, neighbouring)
        one_row = float(np.sum(CELL_SHARES)) * ROUND_UP
        return one_row if neighbouring == "add-remove-one" else 2.0 * one_row

    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        if not structure.grouped:
            return super().l2_sensitivity(structure, neighbouring)
        one_row = math.sqrt(float(np.sum(CELL_SHARES**2))) * ROUND_UP
        if neighbouring == "add-remove-one":
            return one_row
        _, c1, c2 = self.weights(structure, neighbouring)
        within = math.sqrt(c1**2 + c2**2 / 16.0) * ROUND_UP
        return max(math.sqrt(2.0) * one_row, within)

    def project(
        self, full: np.ndarray, structure: BoundedStructure, scale: float, neighbouring: str
    ) -> np.ndarray:
        if not structure.grouped:
            return super().project(full, structure, scale, neighbouring)
        floor = float(scale) / float(self.weights(structure, neighbouring)[2])
        rows = np.zeros_like(np.asarray(full, dtype=np.float64))
        for g, row in enumerate(np.asarray(full, dtype=np.float64)):
            if row[0] >= 1.0:  # a cell released with under one record reads as empty
                rows[g] = project_second_moments(row, 1, floor=floor)
        return rows

    def unit_coefficients(self, parameters, structure):
        low, high = structure.bounds
        width = high - low
        return (parameters["mu"] - low) / width, parameters["sigma"] / width

    def _per_cell(self, parameters, structure) -> tuple[Variable, Variable]:
        """The unit-scale mean and sd of every cell, each (G,) (a scalar broadcast)."""
        mean, sd = self.unit_coefficients(parameters, structure)
        cells = (structure.n_groups,)
        return (
            pt.broadcast_to(pt.as_tensor(mean).reshape((-1,)), cells),
            pt.broadcast_to(pt.as_tensor(sd).reshape((-1,)), cells),
        )

    def unit_moments(self, parameters, structure, name):
        mean, sd = self.unit_coefficients(parameters, structure)
        return mean.reshape((1,)), (sd**2).reshape((1, 1))

    def plugin_log_likelihood(self, parameters, table, structure) -> Variable:
        if not structure.grouped:
            return super().plugin_log_likelihood(parameters, table, structure)
        mean, sd = self._per_cell(parameters, structure)
        theta = mean - CENTRE
        n, first, second = table[:, 0], table[:, 1], table[:, 2]
        low, high = structure.bounds
        squares = second - 2.0 * theta * first + theta**2 * n
        return pt.sum(
            -0.5 * n * math.log(2 * math.pi) - n * pt.log(sd * (high - low)) - squares / (2 * sd**2)
        )

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ) -> Variable:
        if not structure.grouped:
            return super().noise_aware_log_likelihood(
                parameters, released, scale, public_n, structure, neighbouring, noise
            )
        cells = structure.n_groups
        c0, c1, c2 = self.weights(structure, neighbouring)
        n = latent_record_count(structure.observed, released[:, 0] / c0, scale / c0, cells, noise)
        mean, sd = self._per_cell(parameters, structure)
        m = mean - CENTRE
        s2 = sd**2
        # the CLT law of (c₁Σw, c₂Σw²) in each cell: n·E and n·Cov of (w, w²), w ~ N(m, s²)
        mean_t = pt.stack([n * m * c1, n * (s2 + m**2) * c2], axis=-1)
        var_1 = n * s2 * c1**2
        cov_12 = n * 2.0 * m * s2 * c1 * c2
        var_2 = n * (4.0 * m**2 * s2 + 2.0 * s2**2) * c2**2
        values = released[:, 1:]
        if noise == "gaussian":  # + N(0, σ²I), σ = scale: bivariate normal per cell
            a, b, d = var_1 + scale**2, cov_12, var_2 + scale**2
            r1, r2 = values[:, 0] - mean_t[:, 0], values[:, 1] - mean_t[:, 1]
            det = a * d - b**2
            loglik = (
                -math.log(2 * math.pi)
                - 0.5 * pt.log(det)
                - 0.5 * (d * r1**2 - 2.0 * b * r1 * r2 + a * r2**2) / det
            )
        else:
            cov = pt.stack(
                [pt.stack([var_1, cov_12], axis=-1), pt.stack([cov_12, var_2], axis=-1)], axis=-2
            )
            loglik = two_component_laplace_log_likelihood(values, mean_t, cov, scale)
        return positive_counts(n, pt.sum(loglik))

    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        low, high = structure.bounds
        unit = f"u = (x − {low:g})/({high:g} − {low:g}) − ½"
        split = self.describe_split(structure, self._relation(structure, neighbouring))
        if structure.grouped:
            return (
                f"normal sufficient statistics (n_c, Σu_c, Σu²_c) per cell "
                f"({structure.n_groups} cells) of {unit}; {split}"
            )
        what = "(Σu, Σu²)" if neighbouring == "replace-one" else "(n, Σu, Σu²)"
        public = "; n public" if neighbouring == "replace-one" else ""
        return f"normal sufficient statistics {what} of {unit}{public}; {split}"


def _same_labels(first: tuple, second: tuple, name: str) -> bool:
    """Whether a mean and an sd read the same label arrays in the same order: the same graph
    variables, or equal values (one NumPy array indexed twice becomes two constants)."""
    def values(label):
        return record_values(label, name, "group labels")

    return len(first) == len(second) and all(
        a is b or same_values(values(a), values(b)) for a, b in zip(first, second, strict=True)
    )


_LIKELIHOOD = likelihoods(("normal",))
