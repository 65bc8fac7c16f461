"""The one model recogniser: classify every array a model reads, find the mechanism's blocks.

:func:`recognise` is the first step of every route of :func:`pymc_dp.sample` (the order is
refuse → validate → check the budget → record the event → release → sample → strip):

1. :func:`~pymc_dp.analysis.inputs.classify_inputs` — every graph input is private, declared
   public or a design constant (default deny; the line is drawn in
   :mod:`pymc_dp.analysis.inputs`);
2. the blocks the mechanism handles — conjugate links and bounded likelihoods (Poisson,
   Normal, linear regression with declared ``data_bounds``) for the Laplace statistics
   (:mod:`~pymc_dp.analysis.conjugate`, :mod:`~pymc_dp.analysis.bounded`), truncated-prior
   blocks with their log-likelihood bound Δ for posterior sampling at temperature T
   (:mod:`~pymc_dp.analysis.tempered`), or the naive-Bayes HMM's count tensor;
3. refusal of every other variable that reads a private array
   (:func:`~pymc_dp.analysis.inputs.refuse_private_reads`) and validation of every record.

Nothing here releases, charges or samples. Model rewrites (the private model, the data-free
model) are in :mod:`~pymc_dp.analysis.rewrite`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymc as pm

from pymc_dp.analysis.conjugate import analyse_model, find_dirichlet_posterior
from pymc_dp.analysis.inputs import ModelInputs, classify_inputs, refuse_private_reads
from pymc_dp.analysis.tempered import analyse_tempered_model
from pymc_dp.errors import value_free_repr
from pymc_dp.mechanisms.dirichlet import DP_RELEASES as DIRICHLET_RELEASES
from pymc_dp.models.naive_bayes_hmm import hmm_spec_of
from pymc_dp.records import refuse_dask_records, refuse_public

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

MODEL_KINDS: tuple[str, ...] = ("conjugate", "tempered", "hmm", "dirichlet")
HMM_HANDLED = frozenset({"cell_log_likelihood"})
"""The naive-Bayes HMM's potential that reads the private count tensor (its mechanism's)."""


@value_free_repr
@dataclass(frozen=True, eq=False)
class Recognised:
    """A model as one route sees it.

    Attributes
    ----------
    kind : {"conjugate", "tempered", "hmm", "dirichlet"}
    inputs : ModelInputs
        Every array the model reads, classified once.
    blocks : dict, TemperedModel, NaiveBayesHMMSpec or DirichletPosteriorBlock
        Links by observed name (``ConjugateLink`` or ``BoundedLink``), the tempered blocks with
        their Δ, the HMM spec, or the one Dirichlet–Categorical pair a Dirichlet mechanism
        releases.
    """

    kind: str
    inputs: ModelInputs
    blocks: Any


def model_kind(model: pm.Model, mechanism: str) -> str:
    """``"hmm"`` for a :func:`pymc_dp.models.naive_bayes_hmm` model, else ``"conjugate"``
    for the Laplace statistics, ``"dirichlet"`` for the Dirichlet posterior releases
    (:data:`pymc_dp.mechanisms.dirichlet.DP_RELEASES`) and ``"tempered"`` for the
    posterior-sampling mechanisms."""
    if hmm_spec_of(model) is not None:
        return "hmm"
    if mechanism in DIRICHLET_RELEASES:
        return "dirichlet"
    return "conjugate" if mechanism == "laplace" else "tempered"


def recognise(
    model: pm.Model,
    mechanism: str,
    *,
    public: Iterable[str] = (),
    max_trials: Mapping[str, int] | None = None,
    data_bounds: Mapping[str, tuple[float, float]] | None = None,
    disjoint: Sequence[Sequence[str]] = (),
    clamp_to_bounds: bool | Collection[str] = False,
    covariate_bins: Mapping[str, object] | None = None,
    neighbouring: str = "replace-one",
    progressbar: bool = False,
) -> Recognised:
    """Classify ``model``'s inputs, find the blocks ``mechanism`` handles, or refuse.

    Records in a Dask collection (:func:`pymc_dp.Data`) are summarised in one pass when the
    links are validated (``progressbar`` shows it); only the Laplace statistics and the
    Dirichlet posterior releases take them.

    ``data_bounds`` declares the record ranges of Poisson, Normal and regression likelihoods
    (Laplace statistics and tempered mechanisms alike); ``clamp_to_bounds`` (Laplace only)
    clamps records outside them instead of refusing them; ``covariate_bins`` (Laplace only)
    sets the bins of per-record covariates read per cell.

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
    refuse_public(model, public)
    if kind not in ("conjugate", "dirichlet"):
        refuse_dask_records(model, mechanism)
    if kind == "dirichlet":
        if max_trials or data_bounds or disjoint or clamp_to_bounds:
            raise ValueError(
                f"mechanism={mechanism!r} (one Dirichlet-Categorical pair) takes no max_trials, "
                "data_bounds, disjoint or clamp_to_bounds. Nothing was released."
            )
        inputs = classify_inputs(model, public, neighbouring)
        links = analyse_model(model, inputs=inputs, progressbar=progressbar)
        return Recognised(kind, inputs, find_dirichlet_posterior(model, links, mechanism))
    if covariate_bins and kind != "conjugate":
        raise ValueError(
            "covariate_bins is an option of the Laplace statistics (mechanism='laplace', "
            "likelihoods read per cell of binned covariates). Nothing was released."
        )
    if clamp_to_bounds and kind != "conjugate":
        raise ValueError(
            "clamp_to_bounds is an option of the Laplace statistics (mechanism='laplace'); "
            "the posterior-sampling mechanisms refuse records outside data_bounds"
        )
    inputs = classify_inputs(model, public, neighbouring)
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
        if disjoint:
            raise ValueError(
                "disjoint belongs to the posterior-sampling mechanisms (ops, "
                "gibbs-exponential, metropolis), not to the Laplace statistics"
            )
        links = analyse_model(
            model,
            max_trials,
            inputs=inputs,
            data_bounds=data_bounds,
            clamp_to_bounds=clamp_to_bounds,
            covariate_bins=covariate_bins,
            progressbar=progressbar,
        )
        return Recognised(kind, inputs, links)
    blocks = analyse_tempered_model(
        model, data_bounds=data_bounds, max_trials=max_trials, disjoint=disjoint, inputs=inputs
    )
    return Recognised(kind, inputs, blocks)
