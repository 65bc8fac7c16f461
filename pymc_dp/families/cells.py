"""Count likelihoods with any link over group labels: released per-cell tables of counts.

A Bernoulli, Binomial (one public number of trials m) or Categorical likelihood whose
probability reads the records only through private group labels — ``logit_p=theta[g]``,
``logit_p=mu + tau * z[g]``, ``logit_p=a[g1] + b[g2]``, ``p=softmax(eta[g])``
(:mod:`pymc_dp.analysis.cells`) — depends on the data only through the table of counts per
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

from pymc_dp.families.base import group_sums, reject_out_of_range, require_integers
from pymc_dp.families.bounded import BoundedFamily, BoundedLink, BoundedStructure, record_cells
from pymc_dp.families.poisson import poisson_gaussian_log_marginal, poisson_laplace_log_marginal

__all__ = ["CellCountsFamily"]


class CellCountsFamily(BoundedFamily):
    """Bernoulli / Binomial / Categorical counts per cell of private labels, any link."""

    name = "cell-counts"
    likelihood = "bernoulli"
    pattern = (
        "Bernoulli/Binomial/Categorical(p or logit_p = any graph of group-level variables "
        "picked by group labels and of covariates with data_bounds (read in bins), e.g. "
        "invlogit(mu + tau * z[group]), a[g1] + b[g2] or alpha + z[group] + X @ beta)"
    )

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
