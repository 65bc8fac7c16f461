"""Privacy mechanisms: measurements that turn a statistic into a noisy release."""

from pymc_dp.mechanisms.laplace import NOISE_BACKENDS, laplace_scale, release_laplace

__all__ = ["NOISE_BACKENDS", "laplace_scale", "release_laplace"]
