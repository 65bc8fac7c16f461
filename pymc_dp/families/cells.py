"""Count likelihoods with any link over group labels: released per-cell tables of counts.

A Bernoulli, Binomial (one public number of trials m) or Categorical likelihood whose
probability reads the records only through private group labels — ``logit_p=theta[g]``,
``logit_p=mu + tau * z[g]``, ``logit_p=a[g1] + b[g2]``, ``p=softmax(eta[g])``
(:mod:`pymc_dp.graph.cells`) — depends on the data only through the table of counts per
cell and category: n_{c,k}, the number of trials in cell c with outcome k (Bernoulli and
Binomial: k = 0 failures, k = 1 successes). That table is released once with Laplace (or
Gaussian) noise; PyMC then samples every parameter above it with NUTS (hierarchies,
non-centred parameterisations and links are post-processing).

Sensitivity (data-independent; one record is one element of the observed vector with its
labels): a record adds the vector v = (m − y, y) (Binomial; m = 1 for Bernoulli) or the
indicator e_y (Categorical) to its cell's row, ‖v‖₁ = m (1 for a Categorical).

* add-remove-one: one row gains or loses v: L1 = m, L2 ≤ m.
* replace-one: v leaves a row and v' enters one, perhaps another (the labels are private and
  may change): L1 ≤ 2m, L2 ≤ √(‖v‖₂² + ‖v'‖₂²) ≤ √2·m (within one row ‖v' − v‖₂ ≤ √2·m too).

Every entry of the (C, K) table is released, the record counts per cell included through the
row sums (they are private: labels may change under either relation).

Plug-in likelihood (Foulds et al. 2016, §4.2): Σ_{c,k} ñ_{c,k} log p_{c,k} with the projected
table ñ (negative counts set to 0). Noise-aware likelihood, exact given the table's law, by
the Poisson device (Baker 1994): with a latent size μ_c per cell, n_{c,k} ~ Poisson(μ_c
p_{c,k}) independently is the multinomial of each cell's counts given its total times a law
of the totals that does not involve p (for any prior on the sizes that does not involve p),
so the release's likelihood is a product of one-dimensional Poisson–Laplace sums
(:func:`~pymc_dp.families.poisson.poisson_laplace_log_marginal`: in closed form, or exact up
to its e⁻²⁵ window)
with no latent count. μ_c is sampled as ``<y>_cell_log_size`` = log μ_c − log max(row sum of
the release, 1), so its scale is that of the cell's relative error whatever the cell's size.
The sizes' prior: shares μ_c/T ~ Dirichlet(1, …, 1) and a flat prior on the total T = Σ μ_c,
p(μ) ∝ T^{−(C−1)}. (A flat prior on every μ_c is T^{C−1} on the total: with many cells and
entries the noise dominates, it drags the sizes up, the noise looks smaller than it is, and
the intervals under-cover — 0.80 for a logistic slope at n = 10³, ε = 0.1, 20 cells.)

Per-record covariates read in public bins of their declared range
(:class:`~pymc_dp.families.bounded.CovariateBins`: logistic regression, ``alpha + X @ beta``)
add axes of cells, and the cell's probability is the model's probability averaged over the
bin. Records in one cell then have (slightly) different probabilities, and their count of
successes is Poisson-binomial rather than binomial with the cell's mean probability: same
mean, variance at most the binomial's, so the likelihood is an approximation on the
conservative side, as fine as the bins are (measured in ``docs/calibration.md``)."""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.basic import Variable

from pymc_dp.distributions import TruncatedDirichletRV
from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families.base import group_sums, reject_out_of_range, require_integers
from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedFound,
    BoundedLink,
    BoundedStructure,
    Declarations,
    record_cells,
)
from pymc_dp.families.poisson import poisson_gaussian_log_marginal, poisson_laplace_log_marginal
from pymc_dp.families.recognition import (
    cell_covariates,
    cell_labels,
    covariate_bins_of,
    label_names,
    refuse_parameters_reading_records,
)
from pymc_dp.graph.cells import cell_parameter
from pymc_dp.graph.reading import (
    OBSERVED,
    dask_records,
    deterministic_of,
    distribution_name,
    is_data,
    likelihoods,
    record_values,
    require_as_is,
    split_parameter,
    strip_expand_dims,
    variable_value,
)

__all__ = ["CELL_LIKELIHOODS", "MAX_CELL_TRIALS", "CellCountsFamily"]

MAX_CELL_TRIALS = 10_000
"""Most trials per record of a Binomial read per cell (public; checked before any release)."""
CELL_LIKELIHOODS = ("bernoulli", "binomial", "categorical")
"""Likelihoods this family takes when their probability is not a conjugate prior."""
_CELL_TABLE = likelihoods(CELL_LIKELIHOODS)
_CONJUGATE_PRIORS = {"beta": pm.Beta, "dirichlet": pm.Dirichlet}


class CellCountsFamily(BoundedFamily):
    """Bernoulli / Binomial / Categorical counts per cell of private labels, any link."""

    name = "cell-counts"
    likelihood = "bernoulli"
    pattern = (
        "Bernoulli/Binomial/Categorical(p or logit_p = any graph of group-level variables "
        "picked by group labels and of covariates with data_bounds (read in bins), e.g. "
        "invlogit(mu + tau * z[group]), a[g1] + b[g2] or alpha + z[group] + X @ beta)"
    )
    source = (
        "Laplace mechanism (Dwork et al. 2006) on the table of counts per cell of the group "
        "labels and outcome; grouped-table sensitivity as Foulds et al. 2016, §3.2, eq. "
        "(16)-(17)"
    )
    """Paper, section and equation of this family's release, as the ledger records it."""

    # --- recognition ----------------------------------------------------------------------

    def claims(self, model: pm.Model, rv: Variable) -> bool:
        """An observed Bernoulli, Binomial or Categorical whose probability is not a
        Beta/Dirichlet free variable (or one indexed by group labels): those go to the
        conjugate families; the rest are read per cell here, or refused with the reason."""
        if distribution_name(rv, _CELL_TABLE) is None:
            return False
        prob = rv.owner.op.dist_params(rv.owner)[-1]
        try:
            prior, _ = split_parameter(prob, model, rv.name)
        except NonPrivateModelError:
            return True
        if prior in model.free_RVs and distribution_name(prior, _CONJUGATE_PRIORS) is not None:
            return False
        if prior.owner is not None and isinstance(prior.owner.op, TruncatedDirichletRV):
            return False  # refused by the conjugate recogniser, with its reason
        return deterministic_of(prior, model) is None or not _wraps_conjugate(prior, model)

    def recognise(self, model: pm.Model, rv: Variable, declarations: Declarations) -> BoundedFound:
        """The table of counts per cell and outcome, or a refusal.

        The declarations' ``data_bounds``, ``clamp`` and ``covariate_bins`` declare the
        per-record covariates the probability reads
        (:func:`~pymc_dp.families.recognition.covariate_bins_of`): logistic regression, alone
        or with varying intercepts and slopes by private groups.

        Raises
        ------
        NonPrivateModelError
            For per-record or random trials, records in a Dask collection, records or labels
            computed in the graph, a covariate without declared bounds, or a probability
            that is not a cell parameter (:func:`~pymc_dp.graph.cells.cell_parameter`).
        """
        name = rv.name
        likelihood = distribution_name(rv, _CELL_TABLE)
        params = rv.owner.op.dist_params(rv.owner)
        values = model.rvs_to_values[rv]
        container = require_as_is(values, name, OBSERVED)
        # labels or covariates that are the records themselves (a[y] with observed=y)
        refuse_parameters_reading_records(name, {"probability": params[-1]}, [container])
        if dask_records(container) is not None:
            raise NonPrivateModelError(
                f"{name}: records in a Dask collection are not supported for a probability read "
                "per cell; give the records in memory. Nothing was released."
            )
        data = record_values(values, name, OBSERVED).reshape(-1)
        trials = 1
        if likelihood == "binomial":
            trials_var = params[0]
            value = variable_value(trials_var) if is_data(trials_var, model) else None
            if value is None or np.size(value) != 1:
                raise NonPrivateModelError(
                    f"{name}: a Binomial whose probability is read per cell needs one public "
                    "number of trials (a constant), not per-record or random trials. Nothing was "
                    "released."
                )
            trials = int(require_integers(np.asarray(value).reshape(()), name, "trials"))
            if not 1 <= trials <= MAX_CELL_TRIALS:
                raise NonPrivateModelError(
                    f"{name}: a Binomial read per cell needs between 1 and {MAX_CELL_TRIALS:,} "
                    f"trials per record (it has {trials}): the noise grows with the trials, and "
                    "the noise-aware likelihood sums over that many counts per entry. Nothing was "
                    "released."
                )
        prob = strip_expand_dims(params[-1])
        if likelihood == "categorical":
            n_categories = prob.type.shape[-1]
            n_categories = int(n_categories if n_categories is not None else prob.shape[-1].eval())
        else:
            n_categories = 2
        bins = covariate_bins_of(
            model, name, prob, data.size, declarations.data_bounds, declarations.covariate_bins
        )
        event_ndim = 1 if likelihood == "categorical" else 0
        cells = cell_parameter(prob, model, name, data.size, event_ndim=event_ndim, bins=bins)
        keys = tuple(b.key for b in cells.covariate_bins)
        structure = BoundedStructure(
            observed=name,
            family=self,
            bounds=(0.0, float(trials)),
            parameters={"probability": cells.graph},
            n_groups=cells.n_cells,
            grouped=cells.n_cells > 1,
            likelihood=likelihood,
            n_categories=n_categories,
            label_sizes=cells.sizes,
            covariate_bins=cells.covariate_bins,
            clamp=frozenset(k for k in declarations.clamp if k in keys),
            labels=label_names(model, cells.labels, name),
        )
        groups, covariates = cell_labels(cells, name), cell_covariates(cells, name)
        link = BoundedLink(structure, data, groups=groups, covariates=covariates)
        return BoundedFound(link, (*cells.labels, *cells.covariates), keys)

    # --- records (private) --------------------------------------------------------------

    def records(self, link: BoundedLink) -> tuple[np.ndarray, ...]:
        structure = link.structure
        trials = int(structure.bounds[1])
        k = structure.n_categories
        values = require_integers(np.asarray(link.data).reshape(-1), link.observed, "values")
        high = (k - 1) if structure.likelihood == "categorical" else trials
        reject_out_of_range(values, 0, high, link.observed, "values")
        if not structure.label_sizes:
            return values, np.zeros(values.size, dtype=np.int64)
        return values, record_cells(link)

    def statistics(self, link: BoundedLink) -> np.ndarray:
        values, cells = self.records(link)
        structure = link.structure
        if structure.likelihood == "categorical":
            per_record = np.eye(structure.n_categories)[values]
        else:
            trials = structure.bounds[1]
            per_record = np.column_stack([trials - values, values]).astype(np.float64)
        return group_sums(per_record, cells, structure.n_groups)

    # --- the release (public) ------------------------------------------------------------

    def component_names(self, structure: BoundedStructure) -> list[str]:
        if structure.likelihood == "categorical":
            return [f"count({structure.observed}={k})" for k in range(structure.n_categories)]
        return [f"failures({structure.observed})", f"successes({structure.observed})"]

    def released_components(self, structure: BoundedStructure, neighbouring: str) -> np.ndarray:
        return np.arange(structure.n_categories)

    def public_n(self, link: BoundedLink, neighbouring: str) -> np.ndarray | None:
        return None  # the cells' sizes are private: the labels may change

    def _trials(self, structure: BoundedStructure) -> float:
        return 1.0 if structure.likelihood == "categorical" else float(structure.bounds[1])

    def sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """m (add-remove-one), 2m (replace-one); m the trials (1 for a Categorical)."""
        m = self._trials(structure)
        return m if neighbouring == "add-remove-one" else 2.0 * m

    def l2_sensitivity(self, structure: BoundedStructure, neighbouring: str) -> float:
        """m (add-remove-one), √2·m (replace-one)."""
        m = self._trials(structure)
        return m if neighbouring == "add-remove-one" else math.sqrt(2.0) * m

    def project(
        self, full: np.ndarray, structure: BoundedStructure, scale: float, neighbouring: str
    ) -> np.ndarray:
        """Counts ≥ 0 (post-processing)."""
        return np.maximum(full, 0.0)

    # --- readings in the private model ---------------------------------------------------

    def _probabilities(self, parameters, structure) -> Variable:
        p = pt.as_tensor(parameters["probability"])
        if structure.likelihood == "categorical":
            return p.reshape((structure.n_groups, structure.n_categories))
        p = p.reshape((structure.n_groups,))
        return pt.stack([1.0 - p, p], axis=1)

    def plugin_log_likelihood(self, parameters, table, structure) -> Variable:
        p = self._probabilities(parameters, structure)
        terms = pt.switch(pt.gt(table, 0), table * pt.log(p), 0.0)
        return pt.sum(terms)

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ) -> Variable:
        p = self._probabilities(parameters, structure)
        base = pt.log(pt.maximum(pt.sum(released, axis=1), 1.0))
        log_ratio = pm.Flat(f"{structure.observed}_cell_log_size", shape=(structure.n_groups,))
        log_size = base + log_ratio
        mean = pt.exp(log_size)[:, None] * p
        marginal = (
            poisson_gaussian_log_marginal if noise == "gaussian" else poisson_laplace_log_marginal
        )
        loglik = pt.sum(marginal(released.reshape((-1,)), mean.reshape((-1,)), scale, None, None))
        # prior on the sizes: shares μ/T ~ Dirichlet(1, …, 1) and a flat prior on the total
        # T = Σ μ_c, i.e. p(μ) ∝ T^{-(C-1)} (times the Jacobian of μ_c = exp(log_size))
        n_cells = structure.n_groups
        return loglik + pt.sum(log_size) - (n_cells - 1) * pt.logsumexp(log_size)

    def describe(self, structure: BoundedStructure, neighbouring: str) -> str:
        cells = " × ".join(str(s) for s in structure.label_sizes) if structure.label_sizes else "1"
        return (
            f"{structure.likelihood} counts per cell and outcome ({structure.n_groups} cells = "
            f"{cells} label values, {structure.n_categories} outcomes; cell sizes private)"
        )


def _wraps_conjugate(variable: Variable, model: pm.Model) -> bool:
    """A Deterministic that only renames a Beta/Dirichlet free variable (the conjugate
    recogniser asks to remove it)."""
    inner = variable.owner.inputs[0] if variable.owner is not None else None
    return inner in model.free_RVs and distribution_name(inner, _CONJUGATE_PRIORS) is not None
