"""PyMC step methods that sample from private releases."""

from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.hmm_gibbs import NaiveBayesHMMGibbs

__all__ = ["NaiveBayesHMMGibbs", "PrivateConjugateGibbs"]
