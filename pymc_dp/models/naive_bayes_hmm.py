"""The naive-Bayes HMM of Foulds et al. (2016, §5, App. E, Table 2, eq. 67) as a PyMC model.

Regions r = 1..R each run a Markov chain over time steps t = 1..T with K latent states and a
dummy initial state; all records of cell (r, t) share the state z_{r,t} and draw each of their
D categorical features independently (naive Bayes):

    A_k ~ Dirichlet(α·1_K),                      k = 0 (initial), 1..K      ``transition``
    θ^{(k,d)} ~ Dirichlet(β·1_{K_d})  [θ_j >= a0_d], k = 1..K, d = 1..D        ``emission_<d>``
    z_{r,1} ~ A_0,  z_{r,t} ~ A_{z_{r,t-1}}                                    ``states``
    log Pr(X | z, θ) = Σ_{r,t,d,j} n[r,t,d,j] log θ_j^{(z_{r,t},d)}  (eq. 70–71)  potential

The data enter only through the count tensor n (a :class:`~pymc_dp.hmm.CellCounts`, raw or
released), as a constant of the ``cell_log_likelihood`` potential: never as ``observed``
data or ``pm.Data``, so PyMC never copies it into a trace. K = 1 is the naive-Bayes model.

Sample it with :class:`~pymc_dp.steps.NaiveBayesHMMGibbs` (FFBS or the paper's collapsed
sampler), or privately with :func:`pymc_dp.sample` (``mechanism="laplace"`` or ``"ops"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pymc_dp.errors import value_free_repr
from pymc_dp.hmm.cells import CellCounts
from pymc_dp.hmm.gibbs import simulate_chains
from pymc_dp.hmm.privacy import emission_lower_bounds

__all__ = ["HMM_SPEC_ATTR", "NaiveBayesHMMSpec", "hmm_spec_of", "naive_bayes_hmm"]

HMM_SPEC_ATTR = "pymc_dp_hmm"
"""Attribute of the ``pm.Model`` that holds its :class:`NaiveBayesHMMSpec`."""
_RESERVED_DIMS = ("region", "time", "state", "from_state")


@value_free_repr
@dataclass(frozen=True)
class NaiveBayesHMMSpec:
    """How a naive-Bayes HMM model was built (enough to rebuild it on released counts)."""

    counts: CellCounts
    n_states: int
    alpha: float
    beta: float
    truncation: float | None

    @property
    def lower(self) -> np.ndarray | None:
        """a0_d = 1/(M·K_d) per feature, or None when untruncated."""
        if self.truncation is None:
            return None
        return emission_lower_bounds(self.counts.n_categories, self.truncation)

    @property
    def emission_names(self) -> tuple[str, ...]:
        return tuple(f"emission_{f}" for f in self.counts.features)

    @property
    def variable_names(self) -> tuple[str, ...]:
        return ("states", "transition", *self.emission_names)

    def rebuild(self, counts: CellCounts) -> pm.Model:
        """The same model on other counts (e.g. the released ones), as a top-level model.

        The new model never nests in the active model context: :func:`pymc_dp.sample` runs
        inside ``with model:``, and a child of ``model`` would share its variables (PyMC then
        fails with "Variable name transition already exists").
        """
        return _build(counts, self.n_states, self.alpha, self.beta, self.truncation, top_level=True)


def hmm_spec_of(model: pm.Model) -> NaiveBayesHMMSpec | None:
    """The spec of a model built by :func:`naive_bayes_hmm`, else None."""
    return getattr(model, HMM_SPEC_ATTR, None)


def _markov_chain_logp(value, transition):
    """Σ_t log A[z_{t-1}, z_t] per cell, with the dummy initial state in row 0 of A."""
    while transition.ndim > 2:  # PyMC broadcasts the parameter over the (region, time) batch
        transition = transition[(0,) * (transition.ndim - 2)]
    previous = pt.concatenate(
        [pt.zeros((value.shape[0], 1), dtype="int64"), value[:, :-1] + 1], axis=1
    )
    return pt.log(transition[previous, value])


def _markov_chain_random(transition, rng=None, size=None):
    """Simulate R chains of length T from A (prior predictive); ``size`` = (R, T)."""
    transition = np.asarray(transition)
    transition = transition.reshape(-1, *transition.shape[-2:])[0]
    n_regions, n_times = size
    return simulate_chains(transition, n_regions, n_times, rng)


def naive_bayes_hmm(
    counts: CellCounts,
    n_states: int,
    alpha: float = 1.0,
    beta: float = 1.0,
    *,
    truncation: float | None = None,
) -> pm.Model:
    """Build the naive-Bayes HMM on a count tensor.

    Parameters
    ----------
    counts : CellCounts
        n[r, t, d, j], shape (R, T, D, J), with its grid and category labels (from
        :func:`pymc_dp.hmm.cell_counts_from_frame` or a release).
    n_states : int
        K >= 1 (K = 1: naive Bayes).
    alpha, beta : float
        Symmetric Dirichlet concentrations of the transition rows and of the emissions
        (Foulds et al. do not report theirs; 1 is uniform).
    truncation : float, optional
        M > 1: emission probabilities are bounded below by a0_d = 1/(M·K_d) (Foulds App.
        E.1; M = 10 or 100). Required for the one-posterior-sample mechanism.

    Returns
    -------
    pm.Model
        Variables ``transition`` (dims from_state, state), ``emission_<feature>`` (dims state,
        <feature>), ``states`` (dims region, time; int) and the potentials
        ``cell_log_likelihood`` and, with truncation, ``emission_truncation``. Coordinates
        name the regions, time steps, states (0..K-1) and every feature's categories.

    Raises
    ------
    ValueError
        If K < 1, alpha or beta is not > 0, M <= 1, a feature is named like a reserved
        dimension, or the grid has fewer than one region or time step.
    """
    return _build(counts, n_states, alpha, beta, truncation, top_level=False)


def _build(
    counts: CellCounts,
    n_states: int,
    alpha: float,
    beta: float,
    truncation: float | None,
    *,
    top_level: bool,
) -> pm.Model:
    """:func:`naive_bayes_hmm`; ``top_level`` ignores any active model context.

    A ``pm.Model`` created while another model is the context becomes that model's child
    (PyMC's default parent is the enclosing context), sharing its variable names;
    ``model=None`` makes it a root model whatever the context.
    """
    if int(n_states) != n_states or n_states < 1:
        raise ValueError(f"n_states must be an integer >= 1, got {n_states!r}")
    n_states = int(n_states)
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    clash = sorted(set(counts.features) & set(_RESERVED_DIMS))
    if clash:
        raise ValueError(f"feature names {clash} clash with the model's dimensions")
    n_regions, n_times, _, _ = counts.shape
    if n_regions < 1 or n_times < 1:
        raise ValueError("the grid needs at least one region and one time step")
    spec = NaiveBayesHMMSpec(counts, n_states, float(alpha), float(beta), truncation)
    lower = spec.lower
    coords = {
        "region": list(counts.regions),
        "time": list(counts.times),
        "state": list(range(n_states)),
        "from_state": ["initial", *(str(k) for k in range(n_states))],
        **{f: list(c) for f, c in zip(counts.features, counts.categories, strict=True)},
    }
    flat_counts = counts.counts.reshape(n_regions * n_times, -1)
    parent = {"model": None} if top_level else {}
    with pm.Model(coords=coords, **parent) as model:
        transition = pm.Dirichlet(
            "transition", a=np.full((n_states + 1, n_states), alpha), dims=("from_state", "state")
        )
        emissions = [
            pm.Dirichlet(name, a=np.full((n_states, len(cats)), beta), dims=("state", feature))
            for name, feature, cats in zip(
                spec.emission_names, counts.features, counts.categories, strict=True
            )
        ]
        states = pm.CustomDist(
            "states",
            transition,
            logp=_markov_chain_logp,
            random=_markov_chain_random,
            dtype="int64",
            signature="(s,k)->()",
            dims=("region", "time"),
        )
        width = counts.max_categories
        padded = pt.stack(
            [
                pt.concatenate([pt.log(e), pt.zeros((n_states, width - e.shape[1]))], axis=1)
                for e in emissions
            ],
            axis=1,
        ).reshape((n_states, -1))  # (K, D·J); padded entries multiply zero counts
        per_cell = pt.as_tensor(flat_counts) * padded[states.ravel()]
        pm.Potential("cell_log_likelihood", per_cell.sum())
        if lower is not None:
            inside = pt.all([pt.all(e >= a0) for e, a0 in zip(emissions, lower, strict=True)])
            pm.Potential("emission_truncation", pt.switch(inside, 0.0, -np.inf))
    setattr(model, HMM_SPEC_ATTR, spec)
    return model
