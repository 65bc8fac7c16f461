"""The one model recogniser: classify every array a model reads, find the mechanism's blocks.

:func:`recognise` is the first step of every route of :func:`pymc_dp.sample` (the order is
refuse → validate → check the budget → record the event → release → sample → strip):

1. :func:`~pymc_dp.analysis.inputs.classify_inputs` — every graph input is private, declared
   public or a design constant (default deny; the line is drawn in
   :mod:`pymc_dp.analysis.inputs`);
2. the blocks the mechanism handles — conjugate links for the Laplace statistics
   (:mod:`~pymc_dp.analysis.conjugate`), truncated-prior blocks with their log-likelihood
   bound Δ for posterior sampling at temperature T (:mod:`~pymc_dp.analysis.tempered`), or
   the naive-Bayes HMM's count tensor;
3. refusal of every other variable that reads a private array
   (:func:`~pymc_dp.analysis.inputs.refuse_private_reads`) and validation of every record.

Nothing here releases, charges or samples. Model rewrites (the private model, the data-free
model) are in :mod:`~pymc_dp.analysis.rewrite`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymc as pm

from pymc_dp.analysis.conjugate import analyse_model
from pymc_dp.analysis.inputs import ModelInputs, classify_inputs, refuse_private_reads
from pymc_dp.analysis.tempered import analyse_tempered_model
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of

__all__ = [
    "HMM_HANDLED",
    "MODEL_KINDS",
    "ModelInputs",
    "Recognised",
    "classify_inputs",
    "model_kind",
    "recognise",
    "refuse_private_reads",
]

MODEL_KINDS: tuple[str, ...] = ("conjugate", "tempered", "hmm")
HMM_HANDLED = frozenset({"cell_log_likelihood"})
"""The naive-Bayes HMM's potential that reads the private count tensor (its mechanism's)."""


@dataclass(frozen=True, eq=False)
class Recognised:
    """A model as one route sees it.

    Attributes
    ----------
    kind : {"conjugate", "tempered", "hmm"}
    inputs : ModelInputs
        Every array the model reads, classified once.
    blocks : dict, TemperedModel or NaiveBayesHMMSpec
        Conjugate links by observed name, the tempered blocks with their Δ, or the HMM spec.
    """

    kind: str
    inputs: ModelInputs
    blocks: Any


def model_kind(model: pm.Model, mechanism: str) -> str:
    """``"hmm"`` for a :func:`pymc_dp.models.naive_bayes_hmm` model, else ``"conjugate"``
    for the Laplace statistics and ``"tempered"`` for the posterior-sampling mechanisms."""
    if hmm_spec_of(model) is not None:
        return "hmm"
    return "conjugate" if mechanism == "laplace" else "tempered"


def recognise(
    model: pm.Model,
    mechanism: str,
    *,
    public: Iterable[str] = (),
    max_trials: Mapping[str, int] | None = None,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
) -> Recognised:
    """Classify ``model``'s inputs, find the blocks ``mechanism`` handles, or refuse.

    Raises
    ------
    NonPrivateModelError
        If any variable outside the mechanism's blocks reads a private array, or a
        likelihood has no private mechanism here.
    InvalidPrivateDataError
        If a record lies outside its declared domain.
    ValueError
        For declarations that name unknown variables.
    """
    kind = model_kind(model, mechanism)
    inputs = classify_inputs(model, public)
    if kind == "hmm":
        if max_trials or data_bounds or disjoint:
            raise ValueError("a naive-Bayes HMM takes no max_trials, data_bounds or disjoint")
        refuse_private_reads(model, inputs, HMM_HANDLED)
        spec = hmm_spec_of(model)
        extra = sorted(set(model.named_vars) - set(spec.rebuild(spec.counts).named_vars))
        if extra:
            raise ValueError(
                f"{extra} were added to a naive-Bayes HMM model; its routes sample the model "
                "naive_bayes_hmm built (rebuilt on the released counts), so they would be "
                "dropped silently. Compute them from the released draws instead."
            )
        return Recognised(kind, inputs, spec)
    if kind == "conjugate":
        if data_bounds or disjoint:
            raise ValueError(
                "data_bounds and disjoint belong to the posterior-sampling mechanisms "
                "(ops, gibbs-exponential, metropolis), not to the Laplace statistics"
            )
        return Recognised(kind, inputs, analyse_model(model, max_trials, inputs=inputs))
    blocks = analyse_tempered_model(
        model, data_bounds=data_bounds, max_trials=max_trials, disjoint=disjoint, inputs=inputs
    )
    return Recognised(kind, inputs, blocks)
