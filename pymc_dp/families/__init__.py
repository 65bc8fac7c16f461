"""Conjugate exponential families: statistics, log-likelihood bounds Δ and tempered updates.

One module per family, each owning its statistics, the Δ of its likelihoods and its tempered
update: :mod:`~pymc_dp.families.beta` (Bernoulli, Binomial), :mod:`~pymc_dp.families.dirichlet`
(Categorical, Multinomial), :mod:`~pymc_dp.families.gamma` (Poisson) and
:mod:`~pymc_dp.families.normal` (Normal, known σ). :mod:`~pymc_dp.families.base` holds the
interface and shared helpers; :mod:`~pymc_dp.families.bounds` gathers the Δ and
:mod:`~pymc_dp.families.tempered` dispatches the tempered updates by kind.
"""

from pymc_dp.families.base import ConjugateFamily, RecordDomain, group_sums
from pymc_dp.families.beta import BetaBernoulli, BetaBinomial
from pymc_dp.families.dirichlet import DirichletCategorical, DirichletMultinomial

FAMILIES: dict[tuple[str, str], ConjugateFamily] = {
    (family.prior, family.likelihood): family
    for family in (BetaBernoulli(), BetaBinomial(), DirichletCategorical(), DirichletMultinomial())
}
"""The supported (prior, likelihood) pairs."""

__all__ = [
    "FAMILIES",
    "BetaBernoulli",
    "BetaBinomial",
    "ConjugateFamily",
    "DirichletCategorical",
    "DirichletMultinomial",
    "RecordDomain",
    "group_sums",
]
