"""PyMC step methods that sample from private releases."""

from pymc_dp.steps.conjugate_gibbs import PrivateConjugateGibbs
from pymc_dp.steps.hmm_gibbs import NaiveBayesHMMGibbs
from pymc_dp.steps.private_metropolis import PrivateMetropolis
from pymc_dp.steps.tempered_gibbs import TemperedConjugateGibbs

__all__ = [
    "NaiveBayesHMMGibbs",
    "PrivateConjugateGibbs",
    "PrivateMetropolis",
    "TemperedConjugateGibbs",
]
