"""Poisson counts with a declared bound, released through their per-group sums.

A Poisson(λ) likelihood, λ any positive graph of free variables (a Gamma or HalfNormal prior,
a hyperprior, ...), used directly or indexed by constant group labels (``lam[group]``). Counts
y ∈ [low, c] are declared (``data_bounds={"y": (0, c)}``) and rescaled to y/c ∈ [0, 1]. Per
group g the statistics are (n_g, Σ_{i ∈ g} y_i/c) — the record count and the scaled sum.

Sensitivity (L1, data-independent; the grouped-table reasoning of
:mod:`pymc_dp.mechanisms.statistics`): one record contributes (1, y/c) ∈ [0, 1]² to its
group's row.

* replace-one, one group: n is public, only Σy/c is released; y → y' moves it by ≤ 1: Δ = 1.
* add-remove-one: a record adds (1, y/c) to one row: Δ = 2 (n_g released).
* replace-one, G > 1 groups: group labels are private, so n_g is private and released; a
  record may leave one row and enter another: Δ = 2 · 2 = 4.

L2 sensitivity (Gaussian noise, same reasoning): replace-one, one group: 1; add-remove-one:
||(1, y/c)||₂ ≤ √2; replace-one, G > 1: ||(1, y/c)||² + ||(1, y'/c)||² ≤ 4, so 2.

Scaling the sum by 1/c balances the two components: both have sensitivity 1 per row, so n_g
is not drowned in noise calibrated to c.

Plug-in likelihood (Foulds et al. 2016, §4.2 applied to the Poisson exponential family):
Σ_g (Σy_g log λ_g − n_g λ_g), the model's log-likelihood up to the data-only −Σ log y_i!
(which is not released). Noise-aware likelihood (Bernstein & Sheldon 2018, §4, with the
exact discrete law instead of the CLT): Σy_g | n_g, λ_g ~ Poisson(n_g λ_g) exactly, and the
release of the sum has Laplace noise of scale c·b in count units, so

    p(released sum | λ) = Σ_k Poisson(k; n_g λ_g) · Laplace(c·r − k; c·b),

summed over every whole k within 25·c·b + 10 of the released value (the Laplace tail beyond
is below e⁻²⁵ of its peak), or within 12 Poisson sds of n_g λ_g when that window is narrower
(:func:`poisson_laplace_log_marginal`); k ≥ 0 and, with n public, k ≤ n·c. Without that
upper limit the same sum has a closed form in regularised incomplete gamma functions, used
where it is accurate (:func:`poisson_laplace_closed_form`). A private n_g (flat prior on
n_g > 0, continuous; released as Laplace(n_g, b) exactly) is integrated out by quadrature,
32 nodes per group (:func:`~pymc_dp.families.bounded.record_count_marginal`): NUTS samples
the rates only. As a latent variable sampled with them (``<y>_n_records``, as the group
means keep it) it made a Poisson regression's NUTS take 26 leapfrog steps per draw, against
3.6 with the counts integrated out (n = 10⁴, 10 cells, ε = 1).

With Gaussian noise (σ in unit-scale counts; :mod:`pymc_dp.mechanisms.gaussian`) the same
sum runs against the normal density, N(c·r − k; 0, (c·σ)²)
(:func:`poisson_gaussian_log_marginal`), and a private n_g's release is Normal(n_g, σ²).
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.gradient import zero_grad
from pytensor.graph.basic import Variable

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.base import group_sums, require_integers
from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedFound,
    BoundedLink,
    BoundedStructure,
    Declarations,
    check_bounded_values,
    check_group_labels,
    record_count_marginal,
)
from pymc_dp.families.recognition import (
    cell_covariates,
    cell_labels,
    covariate_bins_of,
    label_names,
    refuse_parameters_reading_records,
    required_bounds,
    vector_length,
)
from pymc_dp.graph.cells import cell_parameter, record_length
from pymc_dp.graph.reading import (
    OBSERVED,
    dask_records,
    deterministic_of,
    distribution_name,
    likelihoods,
    record_values,
    require_as_is,
    split_parameter,
    strip_expand_dims,
    wrapped_parameter,
)

__all__ = [
    "CLOSED_FORM_SPREAD",
    "GAUSSIAN_WINDOW_SCALES",
    "WINDOW_SCALES",
    "PoissonFamily",
    "poisson_gaussian_log_marginal",
    "poisson_laplace_closed_form",
    "poisson_laplace_log_marginal",
]

WINDOW_SCALES = 25.0
"""Half-width of the noise-aware summation window, in Laplace scales (plus 10 counts)."""
CLOSED_FORM_SPREAD = 10.0
"""The closed form of the Poisson–Laplace sum is used where the Poisson sd is at most this
many Laplace scales (and the scale is at least one count): there its incomplete gamma
factors are far from underflow, and it matches the whole sum to 1e-10 (tested)."""
GAUSSIAN_WINDOW_SCALES = 8.0
"""Half-width of the window for Gaussian noise, in standard deviations (plus 10 counts): the
Gaussian factor beyond it is below e⁻³² of its peak."""


class PoissonFamily(BoundedFamily):
    """Poisson(λ or λ[group]) counts in a declared [low, c]; see the module docstring."""

    name = "poisson"
    likelihood = "poisson"
    pattern = (
        "Poisson(mu=lam, lam[group], exp(a[g1] + b[g2]) or exp(alpha + X @ beta)), lam a "
        "positive graph, with data_bounds on the counts (and on X, read in bins)"
    )
    source = (
        "Laplace mechanism (Dwork et al. 2006) on per-group Poisson sums of counts in a "
        "declared range; grouped-table sensitivity as Foulds et al. 2016, §3.2, eq. "
        "(16)-(17)"
    )
    """Paper, section and equation of this family's release, as the ledger records it."""

    # --- recognition -----------------------------------------------------------------------

    def claims(self, model: pm.Model, rv: Variable) -> bool:
        """Every observed Poisson."""
        return distribution_name(rv, _LIKELIHOOD) is not None

    def recognise(self, model: pm.Model, rv: Variable, declarations: Declarations) -> BoundedFound:
        """``mu=lam`` (a scalar graph) or ``mu=lam[group]`` (one rate per group): the (n_g,
        Σy_g/c) per group; any other graph of group-level rates picked by labels and of
        binned covariates is read per cell (``_recognise_cells``). Needs
        ``data_bounds={"y": (low, c)}``, whole counts ≥ 0."""
        name = rv.name
        mu = rv.owner.op.dist_params(rv.owner)[0]
        values = model.rvs_to_values[rv]
        container = require_as_is(values, name, OBSERVED)
        # labels or covariates that are the records themselves (lam[y] with observed=y)
        refuse_parameters_reading_records(name, {"rate": mu}, [container])
        try:
            rate, index = split_parameter(mu, model, name)
        except NonPrivateModelError:  # lam[g1, g2], exp(a + X @ b), …: read per cell below
            rate, index = strip_expand_dims(mu), None
        if index is None and rate.ndim != 0:
            deterministic = deterministic_of(rate, model)
            if deterministic is None:
                return self._recognise_cells(model, name, rate, container, values, declarations)
            raise wrapped_parameter(name, "rate", deterministic)
        if index is not None and rate.ndim != 1:
            raise NonPrivateModelError(
                f"{name}: its Poisson rate lam in lam[group] must be a vector (one rate per group)"
            )
        sources = [container]
        if index is not None:
            sources.append(require_as_is(index, name, "group labels"))
        low, high = _count_bounds(declarations.data_bounds, name)
        data = record_values(values, name, OBSERVED).reshape(-1)
        groups = None
        n_groups = 1
        if index is not None:
            groups = record_values(index, name, "group labels").reshape(-1)
            n_groups = vector_length(model, rate)
        refuse_parameters_reading_records(name, {"rate": rate}, sources)
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=(low, high),
            parameters={"rate": rate},
            n_groups=n_groups,
            grouped=index is not None and n_groups > 1,
            group_variable=rate.name if rate.name in model.named_vars else "",
            clamp=frozenset(k for k in declarations.clamp if k == name),
            labels=() if index is None else label_names(model, [index], name),
        )
        return BoundedFound(BoundedLink(structure, data, groups=groups), (), (name,))

    def _recognise_cells(self, model, name, rate, container, values, declarations) -> BoundedFound:
        """A rate that is any graph of group-level rates picked by group labels and of binned
        covariates (``exp(a[g1] + b[g2])``, ``lam[g1, g2]``, ``exp(a + X @ beta)``, …): the
        per-cell (n_c, Σy_c/c), one row per cell (:func:`pymc_dp.graph.cells.cell_parameter`);
        ``container`` is the records' container, read as is."""
        if dask_records(container) is not None:
            raise NonPrivateModelError(
                f"{name}: records in a Dask collection are not supported for a rate read per "
                "cell of several labels, of covariates or through a link; give the records in "
                "memory. Nothing was released."
            )
        n_records = record_length(container.reshape((-1,)))
        bins = covariate_bins_of(
            model, name, rate, n_records, declarations.data_bounds, declarations.covariate_bins
        )
        cells = cell_parameter(rate, model, name, n_records, bins=bins)
        low, high = _count_bounds(declarations.data_bounds, name)
        data = record_values(values, name, OBSERVED).reshape(-1)
        keys = tuple(b.key for b in cells.covariate_bins)
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=(low, high),
            parameters={"rate": cells.graph},
            n_groups=cells.n_cells,
            grouped=cells.n_cells > 1,
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
        counts = require_integers(np.asarray(link.data).reshape(-1), link.observed, "counts")
        counts = check_bounded_values(
            counts, *structure.bounds, link.observed, "counts", link.observed in structure.clamp
        )
        return counts, check_group_labels(link)

    def statistics(self, link: BoundedLink) -> np.ndarray:
        counts, groups = self.records(link)
        per_record = np.column_stack([np.ones(counts.size), counts / link.structure.bounds[1]])
        return group_sums(per_record, groups, link.structure.n_groups)

    def component_names(self, structure: BoundedStructure) -> list[str]:
        return ["n", f"sum({structure.observed})/{structure.bounds[1]:g}"]

    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        if neighbouring == "replace-one" and not structure.grouped:
            return np.array([1])
        return np.array([0, 1])

    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        if neighbouring == "add-remove-one":
            return 2.0
        return 4.0 if structure.grouped else 1.0

    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """√2 (add-remove: (1, y/c) in one row), 1 (replace-one, one group: Σy/c only),
        2 (replace-one, groups: (1, y/c) leaves one row and (1, y'/c) enters another,
        √(2 + 2) at most; within one row only Σy/c moves, by ≤ 1)."""
        if neighbouring == "add-remove-one":
            return math.sqrt(2.0)
        return 2.0 if structure.grouped else 1.0

    def project(
        self, full: np.ndarray, structure: BoundedStructure, scale: float, neighbouring: str
    ) -> np.ndarray:
        """n_g ≥ 0 and 0 ≤ Σy_g/c ≤ n_g (post-processing)."""
        n = np.maximum(full[:, 0], 0.0)
        return np.column_stack([n, np.clip(full[:, 1], 0.0, n)])

    def _rates(self, parameters, structure) -> Variable:
        return pt.as_tensor(parameters["rate"]).reshape((structure.n_groups,))

    def plugin_log_likelihood(self, parameters, table, structure) -> Variable:
        rate = self._rates(parameters, structure)
        total = table[:, 1] * structure.bounds[1]
        loglik = pt.sum(total * pt.log(rate) - table[:, 0] * rate)
        return pt.switch(pt.all(rate > 0), loglik, -np.inf)

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ) -> Variable:
        rate = self._rates(parameters, structure)
        c = structure.bounds[1]
        marginal = (
            poisson_gaussian_log_marginal if noise == "gaussian" else poisson_laplace_log_marginal
        )
        if public_n is not None:
            released_sum = released[:, 0]
            return pt.sum(
                marginal(released_sum * c, public_n * rate, scale * c, public_n * c, public_n)
            )
        released_sum = released[:, 1]

        def given_counts(n):  # (G, M) quadrature counts → log p(released sum | n, rate)
            m = n.shape[1]
            values = marginal(
                pt.repeat(released_sum * c, m),
                (n * rate[:, None]).reshape((-1,)),
                scale * c,
                None,
                None,
            )
            return values.reshape(n.shape)

        return pt.sum(record_count_marginal(given_counts, released[:, 0], scale, noise))

    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        c = structure.bounds[1]
        groups = f"{structure.n_groups} groups" if structure.grouped else "one group"
        if neighbouring == "replace-one" and not structure.grouped:
            return f"poisson sum Σy/{c:g} ({groups}; n public)"
        return f"poisson (n_g, Σy_g/{c:g}) per group ({groups})"


def poisson_laplace_log_marginal(
    released: Variable, mean: Variable, scale: Variable, max_total, public_n
) -> Variable:
    """log Σ_k Poisson(k; mean) Laplace(released − k; scale), per group, in count units.

    The sum runs over whole k ≥ 0 in a window that holds all but a negligible part of it:

    * when the Poisson is the narrower factor (its half-width ⌈12·√mean⌉ + 12, largest mean
      over the groups, below the Laplace half-width ⌈25·scale⌉ + 10), ⌊mean⌋ ± that
      half-width: the Laplace factor tilts the Poisson mass by mean/scale < 2.1·√mean, well
      inside it;
    * otherwise from min(⌊r⌋, ⌊mean⌋) − H to max(⌊r⌋, ⌊mean⌋) + H, H the Laplace
      half-width: the product's mass lies between the Poisson mode and r, and the Laplace tail
      beyond H is below e⁻²⁵ of its peak. The gap |r − mean| counted is capped at 20·H (far
      from the posterior, where only the direction of the gradient matters).

    With a public record count, k ≤ ``max_total``. The window is a discrete choice: no
    gradient flows through it (the terms it sums are exact).

    Without a public record count the whole sum has a closed form
    (:func:`poisson_laplace_closed_form`, two incomplete gamma functions per group instead of
    hundreds of terms), used when every group's Poisson sd is at most
    :data:`CLOSED_FORM_SPREAD` Laplace scales and the scale is at least one count (both
    forms agree to 1e-10 there); the window elsewhere, shrunk to one term while the closed
    form is in use (compiled backends such as Numba evaluate both sides of a switch).
    """
    if public_n is not None:
        window = _poisson_laplace_window(released, mean, scale, max_total, public_n)
        return _at_zero_mean(window, released, mean, scale)
    fixed_mean = pt.maximum(zero_grad(mean), 0.0)
    accurate = pt.and_(
        pt.ge(scale, 1.0), pt.le(pt.sqrt(pt.max(fixed_mean)), CLOSED_FORM_SPREAD * scale)
    )
    window = _poisson_laplace_window(released, mean, scale, max_total, public_n, accurate)
    closed = pt.switch(mean > 0, poisson_laplace_closed_form(released, mean, scale), -np.inf)
    return _at_zero_mean(pt.switch(accurate, closed, window), released, mean, scale)


def _at_zero_mean(value: Variable, released: Variable, mean: Variable, scale: Variable):
    """``value``, with the exact log Laplace(r; b) where the Poisson mean is 0 (every k is 0:
    a probability of exactly 0 or 1 in a cell, or a rate that underflowed)."""
    return pt.switch(pt.eq(mean, 0.0), -pt.abs(released) / scale - pt.log(2.0 * scale), value)


def poisson_laplace_closed_form(released: Variable, mean: Variable, scale: Variable) -> Variable:
    """log Σ_{k ≥ 0} Poisson(k; μ) Laplace(r − k; b), in closed form (μ = ``mean`` > 0,
    r = ``released``, b = ``scale``; count units, per group).

    Split the sum at m = ⌊r⌋: for k ≤ m the Laplace factor is e^{−(r−k)/b}/2b, and
    Poisson(k; μ) e^{k/b} = e^{μ(e^{1/b} − 1)} Poisson(k; μe^{1/b}); for k > m it is
    e^{−(k−r)/b}/2b, and Poisson(k; μ) e^{−k/b} = e^{μ(e^{−1/b} − 1)} Poisson(k; μe^{−1/b}).
    So the sum is

        [e^{−r/b + μ(e^{1/b}−1)} Q(m + 1, μe^{1/b})
         + e^{r/b + μ(e^{−1/b}−1)} P(m + 1, μe^{−1/b})] / 2b,

    with P and Q the regularised lower and upper incomplete gamma functions (the Poisson
    CDF: Pr(K ≤ m) = Q(m + 1, λ)); for r < 0 the first term is 0 and P is 1. Exact, with no
    window; accurate while Q and P stay far from underflow where their terms matter (the
    Poisson sd at most a few tens of Laplace scales, b ≥ 1: :data:`CLOSED_FORM_SPREAD`).
    Gradients flow to μ (and b), not through ⌊r⌋.
    """
    r, b = released, scale
    m = pt.floor(zero_grad(r))
    a = pt.maximum(m + 1.0, 1.0)
    has_lower = pt.ge(m, 0.0)
    upper = pt.gammaincc(a, mean * pt.exp(1.0 / b))  # Pr(K ≤ m), K ~ Poisson(μe^{1/b})
    lower = pt.gammainc(a, mean * pt.exp(-1.0 / b))  # Pr(K > m), K ~ Poisson(μe^{−1/b})
    upper_ok = pt.and_(has_lower, pt.gt(upper, 0.0))
    lower_ok = pt.or_(pt.lt(m, 0.0), pt.gt(lower, 0.0))
    # the inner switches keep log's argument (and its gradient) finite where a term is 0
    below = -r / b + mean * pt.expm1(1.0 / b) + pt.log(pt.switch(upper_ok, upper, 1.0))
    above = r / b + mean * pt.expm1(-1.0 / b) + pt.log(pt.switch(has_lower & lower_ok, lower, 1.0))
    below = pt.switch(upper_ok, below, -np.inf)
    above = pt.switch(lower_ok, above, -np.inf)
    return pt.logaddexp(below, above) - pt.log(2.0 * b)


def _poisson_laplace_window(
    released: Variable, mean: Variable, scale: Variable, max_total, public_n, unused=None
) -> Variable:
    """The window sum of :func:`poisson_laplace_log_marginal` (one term when ``unused``)."""
    fixed_mean, fixed_released = pt.maximum(zero_grad(mean), 0.0), zero_grad(released)
    laplace_half = pt.cast(pt.ceil(WINDOW_SCALES * scale), "int64") + 10
    poisson_half = pt.cast(pt.ceil(12.0 * pt.sqrt(pt.max(fixed_mean))), "int64") + 12
    use_poisson = pt.lt(poisson_half, laplace_half)
    half = pt.switch(use_poisson, poisson_half, laplace_half)
    if unused is not None:
        half = pt.switch(unused, 0, half)
    mode = pt.cast(pt.floor(fixed_mean), "int64")
    centre = pt.cast(pt.floor(fixed_released), "int64")
    gap = pt.minimum(pt.max(pt.abs(centre - mode)), 20 * half)
    span = pt.switch(use_poisson, 0, gap)
    if unused is not None:
        span = pt.switch(unused, 0, span)
    low = pt.switch(use_poisson, mode, pt.minimum(centre, mode))
    start = pt.maximum(low - half, 0)
    k = pt.cast(start[:, None] + pt.arange(2 * half + span + 1)[None, :], "float64")
    log_poisson = k * pt.log(mean)[:, None] - mean[:, None] - pt.gammaln(k + 1)
    log_laplace = -pt.abs(released[:, None] - k) / scale - pt.log(2 * scale)
    terms = log_poisson + log_laplace
    if public_n is not None:
        terms = pt.switch(k <= pt.as_tensor(max_total)[:, None], terms, -np.inf)
    return pt.switch(mean > 0, pt.logsumexp(terms, axis=1), -np.inf)


def poisson_gaussian_log_marginal(
    released: Variable, mean: Variable, scale: Variable, max_total, public_n
) -> Variable:
    """log Σ_k Poisson(k; mean) N(released − k; 0, scale²), per group, in count units.

    The release of a Gaussian-noised sum (:mod:`pymc_dp.mechanisms.gaussian`), σ = ``scale``.
    Both factors are log-concave, so the product's mass lies between the Poisson mode and r
    (shrunk towards each by the other's precision); the sum runs over whole k ≥ 0 from
    min(⌊r⌋, ⌊mean⌋) − H to max(⌊r⌋, ⌊mean⌋) + H, H = min(⌈8σ⌉ + 10, ⌈12·√mean⌉ + 12)
    (the product of two log-concave factors is no wider than the narrower; the larger of
    the two, used before, made a far-off proposal of the mean allocate a window of millions
    of terms), the gap |r − mean| capped at 20·H (far from the posterior, where only
    the direction of the gradient matters), as :func:`poisson_laplace_log_marginal`. With a
    public record count, k ≤ ``max_total``. No gradient flows through the window.
    """
    fixed_mean, fixed_released = pt.maximum(zero_grad(mean), 0.0), zero_grad(released)
    # the product of the two log-concave factors is no wider than the narrower one
    half = pt.minimum(
        pt.cast(pt.ceil(GAUSSIAN_WINDOW_SCALES * scale), "int64") + 10,
        pt.cast(pt.ceil(12.0 * pt.sqrt(pt.max(fixed_mean))), "int64") + 12,
    )
    mode = pt.cast(pt.floor(fixed_mean), "int64")
    centre = pt.cast(pt.floor(fixed_released), "int64")
    span = pt.minimum(pt.max(pt.abs(centre - mode)), 20 * half)
    start = pt.maximum(pt.minimum(centre, mode) - half, 0)
    k = pt.cast(start[:, None] + pt.arange(2 * half + span + 1)[None, :], "float64")
    log_poisson = k * pt.log(mean)[:, None] - mean[:, None] - pt.gammaln(k + 1)
    log_gaussian = -0.5 * ((released[:, None] - k) / scale) ** 2 - pt.log(
        scale * np.sqrt(2.0 * np.pi)
    )
    terms = log_poisson + log_gaussian
    if public_n is not None:
        terms = pt.switch(k <= pt.as_tensor(max_total)[:, None], terms, -np.inf)
    value = pt.switch(mean > 0, pt.logsumexp(terms, axis=1), -np.inf)
    at_zero = -0.5 * (released / scale) ** 2 - pt.log(scale * np.sqrt(2.0 * np.pi))
    return pt.switch(pt.eq(mean, 0.0), at_zero, value)  # every k is 0


_LIKELIHOOD = likelihoods(("poisson",))


def _count_bounds(data_bounds, name: str) -> tuple[float, float]:
    """The declared (low, high) of Poisson counts: whole numbers, low ≥ 0."""
    low, high = required_bounds(data_bounds, name, name, "counts")
    if low < 0 or low != int(low) or high != int(high):
        raise ValueError(
            f"data_bounds[{name!r}] of Poisson counts must be whole counts >= 0, got "
            f"{data_bounds[name]!r}"
        )
    return low, high
