"""Model builders for private Bayesian analyses."""

from pymc_dp.models.naive_bayes_hmm import NaiveBayesHMMSpec, hmm_spec_of, naive_bayes_hmm

__all__ = ["NaiveBayesHMMSpec", "hmm_spec_of", "naive_bayes_hmm"]
