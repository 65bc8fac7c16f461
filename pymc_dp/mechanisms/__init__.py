"""Privacy mechanisms: measurements that turn private data into a release, and their calibration.

* :mod:`~pymc_dp.mechanisms.laplace` — Laplace noise on a statistic of bounded L1 sensitivity;
* :mod:`~pymc_dp.mechanisms.gaussian` — Gaussian noise on a statistic of bounded L2
  sensitivity, ρ-zCDP converted to (ε, δ) (OpenDP);
* :mod:`~pymc_dp.mechanisms.statistics` — the Laplace or Gaussian release of sufficient
  statistics;
* :mod:`~pymc_dp.mechanisms.exponential` — the temperature of posterior sampling (the
  exponential mechanism) and of a Gibbs posterior: the one place T is calibrated and capped;
* :mod:`~pymc_dp.mechanisms.ops` — one exact posterior sample of a truncated Beta–Bernoulli;
* :mod:`~pymc_dp.mechanisms.dirichlet` — releases of a Dirichlet–Categorical posterior
  (LSDim, LSHist, EHD, EHDS) with the Hellinger distance between Dirichlets; its
  ``ehdl_non_private`` baseline is not differentially private and is not exported here.
"""

from pymc_dp.mechanisms.dirichlet import DP_RELEASES as DIRICHLET_RELEASES
from pymc_dp.mechanisms.dirichlet import (
    release_ehd,
    release_ehds,
    release_lsdim,
    release_lshist,
)
from pymc_dp.mechanisms.exponential import (
    TemperatureCalibration,
    calibrate_temperature,
    gibbs_posterior_inverse_temperature,
)
from pymc_dp.mechanisms.gaussian import (
    NOISES,
    GaussianCalibration,
    gaussian_calibration,
    release_gaussian,
)
from pymc_dp.mechanisms.laplace import NOISE_BACKENDS, laplace_scale, release_laplace

__all__ = [
    "DIRICHLET_RELEASES",
    "NOISES",
    "NOISE_BACKENDS",
    "GaussianCalibration",
    "TemperatureCalibration",
    "calibrate_temperature",
    "gaussian_calibration",
    "gibbs_posterior_inverse_temperature",
    "laplace_scale",
    "release_ehd",
    "release_ehds",
    "release_gaussian",
    "release_laplace",
    "release_lsdim",
    "release_lshist",
]
