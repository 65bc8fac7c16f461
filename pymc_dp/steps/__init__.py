"""PyMC step methods that sample from private releases."""

from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.hmm_gibbs import NaiveBayesHMMGibbs
from pymc_dp.steps.private_metropolis import PrivateMetropolis

__all__ = ["NaiveBayesHMMGibbs", "PrivateConjugateGibbs", "PrivateMetropolis"]
