"""Conjugate exponential families: sufficient statistics, domains and posterior updates."""

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
