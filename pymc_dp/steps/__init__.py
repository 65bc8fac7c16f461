"""PyMC step methods that sample from private releases."""

from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs

__all__ = ["PrivateConjugateGibbs"]
