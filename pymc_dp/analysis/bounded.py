"""Recognise the likelihoods of the bounded families, by asking each family in turn.

Every family with declared record bounds (:data:`pymc_dp.families.BOUNDED_FAMILIES`) owns
its recognition (:meth:`~pymc_dp.families.bounded.BoundedFamily.claims` and
:meth:`~pymc_dp.families.bounded.BoundedFamily.recognise`): which observed variables are
its to take, the shapes it takes, the declared bounds it needs and its refusals. This module
only loops over the registry: :func:`bounded_family_of` finds the one family that claims a
variable, :func:`find_bounded_link` refuses a latent-name clash and lets that family
recognise it. Anything no family claims goes to the conjugate recogniser
(:mod:`pymc_dp.analysis.conjugate`), which takes it or refuses it as unsupported.

What the families take today: Poisson counts (one rate, a rate per group, or any graph of
group-level rates and binned covariates), the Normal (scalar mean and sd, or group means and
sds), linear regression (``X @ beta + alpha``), and Bernoulli / Binomial / Categorical counts
whose probability reads the records only through private group labels and binned
covariates. The records, group labels and covariates must be the arrays or ``pm.Data``
containers themselves, used as is (:func:`pymc_dp.graph.reading.require_as_is`); no parameter
graph may read a record, a covariate or a group label; a handled likelihood claims its
records, labels and covariates (:func:`~pymc_dp.analysis.inputs.refuse_private_reads`).

The privacy unit is one element of the observed vector, with its group labels or its row of
covariates.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pymc as pm
from pytensor.graph.basic import Variable

from pymc_dp.families import BOUNDED_FAMILIES
from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedFound,
    Declarations,
    refuse_latent_name_clash,
)

__all__ = ["bounded_data_bounds_keys", "bounded_family_of", "find_bounded_link"]


def bounded_family_of(model: pm.Model, rv: Variable) -> BoundedFamily | None:
    """The registered bounded family that claims the observed ``rv``, or None.

    Raises
    ------
    RuntimeError
        If two families claim it (a registry error, not a user's).
    """
    claiming = [family for family in BOUNDED_FAMILIES.values() if family.claims(model, rv)]
    if len(claiming) > 1:
        names = [family.name for family in claiming]
        raise RuntimeError(f"{rv.name}: claimed by several bounded families {names}")
    return claiming[0] if claiming else None


def find_bounded_link(
    model: pm.Model,
    observed_rv: Variable,
    data_bounds: Mapping[str, object],
    clamp: Collection[str] = (),
    covariate_bins: Mapping[str, object] | None = None,
) -> BoundedFound:
    """Recognise one likelihood a bounded family claims, with its declared bounds.

    Parameters
    ----------
    model : pm.Model
    observed_rv : TensorVariable
        An observed variable of ``model`` that a family claims (:func:`bounded_family_of`).
    data_bounds : dict
        Every declared bound of the run (``{key: (low, high)}``).
    clamp : collection of str
        ``data_bounds`` keys whose records are clamped (opt-in).
    covariate_bins : dict, optional
        ``{covariates key: bins}`` for per-record covariates read per cell
        (:func:`pymc_dp.families.recognition.covariate_bins_of`).

    Raises
    ------
    NonPrivateModelError
        For a model variable named like one of the private model's latent variables, a
        shape the family does not take, a parameter that reads the records, or a missing
        bound (the message names the variable and the bound to declare).
    ValueError
        For an invalid bound, or a variable no family claims.
    """
    family = bounded_family_of(model, observed_rv)
    if family is None:
        raise ValueError(f"{observed_rv.name}: no bounded family takes this likelihood")
    refuse_latent_name_clash(model, observed_rv.name)
    declarations = Declarations(
        data_bounds=dict(data_bounds),
        clamp=frozenset(clamp),
        covariate_bins=dict(covariate_bins or {}),
    )
    return family.recognise(model, observed_rv, declarations)


def bounded_data_bounds_keys(found: Mapping[str, BoundedFound]) -> set[str]:
    """Every ``data_bounds`` key the recognised likelihoods read."""
    return {key for f in found.values() for key in f.keys}
