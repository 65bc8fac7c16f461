"""Conjugate exponential families: statistics, log-likelihood bounds Δ and tempered updates.

One module per family, each owning its statistics, the Δ of its likelihoods and its tempered
update: :mod:`~pymc_dp.families.beta` (Bernoulli, Binomial), :mod:`~pymc_dp.families.dirichlet`
(Categorical, Multinomial), :mod:`~pymc_dp.families.gamma` (Poisson) and
:mod:`~pymc_dp.families.normal` (Normal, known σ). :mod:`~pymc_dp.families.base` holds the
interface and shared helpers; :mod:`~pymc_dp.families.bounds` gathers the Δ and
:mod:`~pymc_dp.families.tempered` dispatches the tempered updates by kind.

Families with declared record bounds on the Laplace statistics
(:mod:`~pymc_dp.families.bounded`): :mod:`~pymc_dp.families.poisson` (Poisson counts),
:mod:`~pymc_dp.families.normal` (Normal with unknown mean and sd) and
:mod:`~pymc_dp.families.regression` (linear regression), in :data:`BOUNDED_FAMILIES`.
"""

from pymc_dp.families.base import ConjugateFamily, RecordDomain, group_sums
from pymc_dp.families.beta import BetaBernoulli, BetaBinomial
from pymc_dp.families.bounded import BoundedFamily, BoundedLink, BoundedStructure
from pymc_dp.families.cells import CellCountsFamily
from pymc_dp.families.dirichlet import DirichletCategorical, DirichletMultinomial
from pymc_dp.families.normal import NormalFamily
from pymc_dp.families.poisson import PoissonFamily
from pymc_dp.families.regression import LinearRegressionFamily

FAMILIES: dict[tuple[str, str], ConjugateFamily] = {
    (family.prior, family.likelihood): family
    for family in (BetaBernoulli(), BetaBinomial(), DirichletCategorical(), DirichletMultinomial())
}
"""The supported (prior, likelihood) pairs."""

BOUNDED_FAMILIES: dict[str, BoundedFamily] = {
    family.name: family
    for family in (
        PoissonFamily(),
        NormalFamily(),
        LinearRegressionFamily(),
        CellCountsFamily(),
    )
}
"""The families with declared record bounds, by name (as releases and the ledger spell it)."""

LAPLACE_PATTERNS: tuple[str, ...] = tuple(
    family.pattern for family in (*FAMILIES.values(), *BOUNDED_FAMILIES.values())
)
"""Every likelihood the Laplace statistics take, one pattern per family: the list a refusal
of an unsupported likelihood gives (no other copy)."""

__all__ = [
    "BOUNDED_FAMILIES",
    "FAMILIES",
    "LAPLACE_PATTERNS",
    "BetaBernoulli",
    "BetaBinomial",
    "BoundedFamily",
    "BoundedLink",
    "BoundedStructure",
    "CellCountsFamily",
    "ConjugateFamily",
    "DirichletCategorical",
    "DirichletMultinomial",
    "LinearRegressionFamily",
    "NormalFamily",
    "PoissonFamily",
    "RecordDomain",
    "group_sums",
]
