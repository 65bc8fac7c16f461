"""The naive-Bayes HMM of Foulds et al. (2016, §5, App. E): cells, updates and privacy.

* :mod:`~pymc_dp.hmm.cells` — the public region × time grid and the count tensor n[r,t,d,j];
* :mod:`~pymc_dp.hmm.gibbs` — FFBS, the collapsed single-site sampler and conjugate updates;
* :mod:`~pymc_dp.hmm.privacy` — Laplace release of the tensor, the log-likelihood bound Δ and
  the OPS temperature and costs;
* :mod:`~pymc_dp.hmm.noise_aware` — noise-aware Gibbs sampling from the Laplace-released tensor
  (latent true counts, post-processing of the same release);
* :mod:`~pymc_dp.hmm.relabel` — relabelling of states across chains (post-processing);
* :mod:`~pymc_dp.routes.hmm` — the private sampling behind :func:`pymc_dp.sample`.

The PyMC model is :func:`pymc_dp.models.naive_bayes_hmm`; its step method is
:class:`pymc_dp.NaiveBayesHMMGibbs`.
"""

from pymc_dp.hmm.cells import CellCounts, cell_counts, cell_counts_from_frame, validate_counts
from pymc_dp.hmm.privacy import (
    OPSCost,
    cell_counts_sensitivity,
    emission_lower_bounds,
    feature_log_likelihood_bounds,
    gibbs_sweep_weight,
    log_likelihood_bound,
    ops_cost,
    ops_worst_case_epsilon,
    release_cell_counts,
)
from pymc_dp.hmm.simulate import SimulatedHMM, simulate_records

__all__ = [
    "CellCounts",
    "OPSCost",
    "SimulatedHMM",
    "cell_counts",
    "cell_counts_from_frame",
    "cell_counts_sensitivity",
    "emission_lower_bounds",
    "feature_log_likelihood_bounds",
    "gibbs_sweep_weight",
    "log_likelihood_bound",
    "ops_cost",
    "ops_worst_case_epsilon",
    "release_cell_counts",
    "simulate_records",
    "validate_counts",
]
