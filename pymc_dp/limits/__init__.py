"""Inferential limits: what a released ε-DP result can and cannot tell anyone.

Bailie & Gong (2023/2024), "General Inferential Limits Under Differential and Pufferfish
Privacy" (IJAR 172, 109242; arXiv 2401.15491; ISIPTA 2023). Pure ε-DP is a Lipschitz
condition in the multiplicative distance: every output law P_x lies within e^{±ε·d(x, x')} of
every other (Thm 3.5). Whoever reads the release — an analyst or an attacker — is therefore
bounded, under *any* data model and prior, by factors e^{±εΔ}, where Δ is the dataset
distance in records over which they are uncertain:

* posterior probabilities and densities (Thm 6.4): :func:`posterior_bounds`,
  :func:`posterior_density_bounds`, :func:`ratio_bounds`; from prior draws and a run's
  ledger: :func:`from_datatree`;
* densities of the release under a data model or the prior predictive (Thm 4.1, 6.2):
  :func:`privatised_data_bounds`, :func:`prior_predictive_bounds`;
* power of hypothesis tests (Thm 5.1, Cor. 5.3, Thm 8.7): :func:`power_bounds`;
* Pufferfish odds and density-ratio neighbourhoods (eq. 17, Thm 8.5):
  :func:`pufferfish_odds_bounds`, :func:`pufferfish_posterior_check`;
* distances: Δ between datasets (:func:`dataset_distance`, :func:`support_diameter`,
  :func:`data_diameter`) and d_MULT, d_R between measures (:func:`multiplicative_distance`,
  :func:`density_ratio_distance`, :func:`measure_distances`);
* the paper's examples (Fig. 2, eq. 8, Example 6.7): :mod:`pymc_dp.limits.examples`.

Every function takes ε as a number or reads it from a ledger or trace
(:func:`pure_epsilon`: the ledger's total; refused when its δ > 0, since none of these bounds
follows from (ε, δ)-DP). Δ = ∞ gives vacuous bounds, not an error. The bounds are pointwise
tight over all models (§9) and therefore wide for any one model: they are limits, not
credible intervals. See ``docs/limits.md``.
"""

from pymc_dp.limits._common import SOURCE, Bounds
from pymc_dp.limits.bounds import (
    posterior_bounds,
    posterior_density_bounds,
    power_bounds,
    prior_predictive_bounds,
    privatised_data_bounds,
    ratio_bounds,
)
from pymc_dp.limits.datatree import from_datatree
from pymc_dp.limits.distances import (
    MeasureDistances,
    data_diameter,
    dataset_distance,
    density_ratio_distance,
    measure_distances,
    multiplicative_distance,
    support_diameter,
)
from pymc_dp.limits.examples import (
    laplace_sum_bounds,
    privatised_count_loglikelihood,
    privatised_count_model,
    privatised_count_posterior,
    randomised_response_bounds,
    randomised_response_pmf,
)
from pymc_dp.limits.privacy import (
    METRICS,
    UnverifiedEpsilonWarning,
    neighbouring_metric,
    pure_epsilon,
)
from pymc_dp.limits.pufferfish import (
    PufferfishCheck,
    pufferfish_odds_bounds,
    pufferfish_posterior_check,
)

__all__ = [
    "METRICS",
    "SOURCE",
    "Bounds",
    "MeasureDistances",
    "PufferfishCheck",
    "UnverifiedEpsilonWarning",
    "data_diameter",
    "dataset_distance",
    "density_ratio_distance",
    "from_datatree",
    "laplace_sum_bounds",
    "measure_distances",
    "multiplicative_distance",
    "neighbouring_metric",
    "posterior_bounds",
    "posterior_density_bounds",
    "power_bounds",
    "prior_predictive_bounds",
    "privatised_count_loglikelihood",
    "privatised_count_model",
    "privatised_count_posterior",
    "privatised_data_bounds",
    "pufferfish_odds_bounds",
    "pufferfish_posterior_check",
    "pure_epsilon",
    "randomised_response_bounds",
    "randomised_response_pmf",
    "ratio_bounds",
    "support_diameter",
]
