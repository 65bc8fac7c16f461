"""Closed-form privacy calculators (pure functions, each citing its source), one module per paper.

* :mod:`~pymc_dp.theory.foulds2016` — Foulds et al. (UAI 2016): the temperature T = 2Δ/ε of
  one posterior sample and its inverse (:func:`~pymc_dp.theory.foulds2016.ops_temperature`,
  :func:`~pymc_dp.theory.foulds2016.ops_epsilon`);
* :mod:`~pymc_dp.theory.dimitrakakis2017` — Dimitrakakis et al. (JMLR): posterior sampling under
  Lipschitz likelihoods (Assumptions 1 and 2): ε = 2NL, the per-family Lipschitz constants,
  Example 1, the Assumption-2 constants and δ, robustness, distinguishability and utility;
* :mod:`~pymc_dp.theory.minami2016` — Minami et al. (NeurIPS 2016): the inverse temperature β
  of a Gibbs posterior with a Lipschitz convex loss and a strongly log-concave prior
  (Theorem 7, Corollary 8) and the δ of an approximate sampler (Proposition 12).

Where a paper's printed formula is wrong, the corrected form is implemented and the docstring
says so; where a printed formula is suspect but no correction is known, it is transcribed as
printed and flagged. Privacy losses under Dimitrakakis et al.'s generalised definition
(Definition 2) are *per unit of the dataset pseudo-metric ρ*; a classical-DP claim needs the
largest ρ between neighbouring datasets (e.g. ρ = 1 for Hamming distance).

The mechanisms own their calibration (:mod:`pymc_dp.mechanisms.exponential`) and never import
this package; the calculators here may delegate to them. Units are nats throughout; ``delta``
is always a δ of (ε, δ)-DP, and Δ is the *log-likelihood bound*.
"""

from pymc_dp.theory._checks import VacuousBoundWarning
from pymc_dp.theory.dimitrakakis2017 import (
    Assumption2Constants,
    bayesian_network_classical_epsilon,
    bayesian_network_lipschitz,
    bernoulli_lipschitz,
    bernoulli_lipschitz_bound,
    beta_binomial_assumption2_constants,
    binomial_lipschitz,
    categorical_lipschitz_bound,
    distinguishability_threshold,
    distinguishability_threshold_stochastic,
    example1_family,
    exponential_assumption2_constants,
    exponential_lipschitz,
    kl_robustness_bound,
    kl_robustness_bound_stochastic,
    laplace_lipschitz,
    lipschitz_mass,
    max_posterior_samples,
    multivariate_normal_lipschitz,
    normal_known_mean_assumption2_constants,
    normal_known_mean_lipschitz,
    posterior_sampling_epsilon,
    psaqr_utility_gap,
    random_dp_failure_probability,
    stochastic_lipschitz_c,
    stochastic_posterior_delta,
)
from pymc_dp.theory.foulds2016 import ops_epsilon, ops_temperature
from pymc_dp.theory.minami2016 import (
    approximate_sampling_delta,
    gaussian_prior_strong_convexity,
    logistic_regression_lipschitz,
    minami_beta,
    minami_corollary8_epsilon_max,
    minami_epsilon,
    minami_tail_bound,
)

__all__ = [
    "Assumption2Constants",
    "VacuousBoundWarning",
    "approximate_sampling_delta",
    "bayesian_network_classical_epsilon",
    "bayesian_network_lipschitz",
    "bernoulli_lipschitz",
    "bernoulli_lipschitz_bound",
    "beta_binomial_assumption2_constants",
    "binomial_lipschitz",
    "categorical_lipschitz_bound",
    "distinguishability_threshold",
    "distinguishability_threshold_stochastic",
    "example1_family",
    "exponential_assumption2_constants",
    "exponential_lipschitz",
    "gaussian_prior_strong_convexity",
    "kl_robustness_bound",
    "kl_robustness_bound_stochastic",
    "laplace_lipschitz",
    "lipschitz_mass",
    "logistic_regression_lipschitz",
    "max_posterior_samples",
    "minami_beta",
    "minami_corollary8_epsilon_max",
    "minami_epsilon",
    "minami_tail_bound",
    "multivariate_normal_lipschitz",
    "normal_known_mean_assumption2_constants",
    "normal_known_mean_lipschitz",
    "ops_epsilon",
    "ops_temperature",
    "posterior_sampling_epsilon",
    "psaqr_utility_gap",
    "random_dp_failure_probability",
    "stochastic_lipschitz_c",
    "stochastic_posterior_delta",
]
