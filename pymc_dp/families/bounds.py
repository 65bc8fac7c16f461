"""The log-likelihood bounds Δ of every supported likelihood, one record replaced.

In pymc_dp, a likelihood's *log-likelihood bound* (``log_likelihood_bound``, the
``*_log_likelihood_bound`` functions) always means Δ below; ``delta`` always means the δ of
(ε, δ)-DP. Posterior sampling at temperature T = 2Δ/ε is calibrated from Δ
(:func:`pymc_dp.mechanisms.exponential.calibrate_temperature`).

Foulds et al. (2016), §3.1 eq. (7), (9) and (13): the one-posterior-sample (OPS) mechanism
samples Pr(θ | X)^{1/T}. It is ε-DP with T = 2Δ/ε, where

    Δ = sup_{x, x', θ ∈ Θ} |log Pr(x' | θ) − log Pr(x | θ)|

is taken over single records x, x' (one record replaced) and the parameter space Θ. The
prior cancels (eq. 9). Every term of the log-likelihood is kept, including log h(x)
(eq. 13), so these are the paper's bounds, not tightened ones.

Each bound is exact for its family. Each needs a bounded parameter space and, for
count and continuous data, bounded data. Without them Δ = ∞ and the functions raise a
``ValueError`` that names the missing bound. They compute the supremum analytically
(endpoint arguments stated per function), never on a grid; a grid evaluation is only a test.

**Grouped parameters.** When records choose their parameter by a private group label
(``p[group]``), a replaced record may also move to another group, so x and x' are scored
under *different* parameter values θ_g and θ_g'. The supremum is then over θ_g and θ_g'
independently: Δ = sup_{x, θ} log Pr(x | θ) − inf_{x', θ'} log Pr(x' | θ'), the range of one
record's log-likelihood (``grouped=True``). For Bernoulli, Categorical and Multinomial records
this equals the shared-parameter bound; for Poisson and Normal records it is larger, because
the terms −λ and −(x − μ)² no longer cancel.

**Base measure h(x).** The tempered posterior ∝ [π(θ) ∏_i Pr(x_i | θ)]^{1/T} does not depend on
h(x_i): the exponential mechanism with utility log π(θ) + Σ_i (log Pr(x_i | θ) − c(x_i)) samples
the same distribution for any data-only c. So any bound on sup |log Pr(x'|θ) − c(x') −
log Pr(x|θ) + c(x)| is a valid Δ for the mechanism.
:func:`multinomial_log_likelihood_bound` uses c = log h, which gives a closed form; the other
functions keep h (c = 0), as the paper's eq. 13 does.

**Where they live.** Each family module owns the bounds of its likelihoods; this module
gathers them:

* :mod:`pymc_dp.families.beta` — :func:`bernoulli_log_likelihood_bound`,
  :func:`binomial_log_likelihood_bound`;
* :mod:`pymc_dp.families.dirichlet` — :func:`categorical_log_likelihood_bound`,
  :func:`multinomial_log_likelihood_bound`;
* :mod:`pymc_dp.families.gamma` — :func:`poisson_log_likelihood_bound`;
* :mod:`pymc_dp.families.normal` — :func:`normal_log_likelihood_bound`;
* :mod:`pymc_dp.families.base` — :func:`private_trials_log_likelihood_bound` (Binomial and
  Multinomial records whose number of trials is private).
"""

from __future__ import annotations

from pymc_dp.families.base import private_trials_log_likelihood_bound
from pymc_dp.families.beta import bernoulli_log_likelihood_bound, binomial_log_likelihood_bound
from pymc_dp.families.dirichlet import (
    categorical_log_likelihood_bound,
    multinomial_log_likelihood_bound,
)
from pymc_dp.families.gamma import poisson_log_likelihood_bound
from pymc_dp.families.normal import normal_log_likelihood_bound

__all__ = [
    "bernoulli_log_likelihood_bound",
    "binomial_log_likelihood_bound",
    "categorical_log_likelihood_bound",
    "multinomial_log_likelihood_bound",
    "normal_log_likelihood_bound",
    "poisson_log_likelihood_bound",
    "private_trials_log_likelihood_bound",
]
