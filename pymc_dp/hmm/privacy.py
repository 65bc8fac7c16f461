"""Privacy of the naive-Bayes HMM: Laplace count tensor and one posterior sample (OPS).

Unit of privacy: one record. Neighbouring datasets replace one record (default) — its
field values *and* its (region, time) cell may change — or add/remove one record.

**Laplace** (Foulds et al. 2016, §3.2 eq. 16–17 applied as in App. E.1). Replacing one
record removes 1 from one entry of every feature's count vector in its old cell and adds 1 in
its new cell: the L1 change of the whole tensor n[r, t, d, j] is at most 2·D (D under
add/remove). Foulds et al. state 2 per feature vector and spend ε = 1 on each of 5 features
(total 5); 2·D for the tensor is the same total and also covers a record that moves cells,
which the paper does not discuss. One release, one ledger event; everything sampled from the
noisy tensor afterwards is post-processing.

**OPS** (§3.1 eq. 10, 13–15; App. E.1). With emission Dirichlets truncated at
a0_d = 1/(M·K_d), one record's log-likelihood Σ_d log θ^{(z,d)}_{x_d} is bounded, and
replacing it changes the log-likelihood of any (θ, A, z) by at most

    Δ = Σ_d Δ_d,  Δ_d = log((1 - (K_d - 1)·a0_d) / a0_d) = log((M - 1)·K_d + 1),

so one draw of (θ, A, z) from the joint at temperature T = 2Δ/ε is ε-DP — *if* the Gibbs chain
producing it has converged. T is capped at 1 and only what is spent is charged
(:func:`pymc_dp.mechanisms.exponential.calibrate_temperature`). Without that assumption the
chain is a composition of exponential mechanisms: each FFBS state update is an exact draw at T
and costs 2Δ/T; each of the K_d - 1 pair updates of the truncated-Dirichlet kernel for feature
d changes a score whose range moves by at most 2Δ_d and costs 2Δ_d/T; transition updates read
no data. One sweep thus weighs W = 2Δ + Σ_d (K_d − 1)·2Δ_d at T = 1
(:func:`gibbs_sweep_weight`), and :func:`ops_worst_case_epsilon` composes W/T over every sweep,
tuning included (cf. Foulds' "ε^(Gibbs) <= 400ε", §5.2).

Ledger events. An OPS release is one event standing for one draw per chain
(``compositions`` = chains). An exponential-mechanism Gibbs run is one event per kind of update
(:func:`gibbs_sweep_events`): the state updates (n sweeps, each (2Δ/T)-DP), and for each value
of Δ_d the pair updates of the features with that Δ_d (n·Σ(K_d − 1) of them, each
(2Δ_d/T)-DP). Each update is an exponential mechanism, so its privacy loss ranges over an
interval of length 2Δ_l/T: bounded range (Dong, Durfee & Rogers 2020), which
:func:`pymc_dp.accounting.epsilon_at` composes update by update. The rows of the other states
read other records given z, so for one neighbouring pair only the row of the record's state
has a non-zero loss, as :func:`gibbs_sweep_weight` counts. The events' ε add up to n·W/T.

Δ and Δ_d are the *log-likelihood bounds* (:func:`log_likelihood_bound`,
:func:`feature_log_likelihood_bounds`), in nats.
"""

from __future__ import annotations

import math

import numpy as np

from pymc_dp.families.dirichlet import categorical_log_likelihood_bound
from pymc_dp.hmm.cells import CellCounts, _mark_released, validate_counts
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_epsilon, validate_neighbouring
from pymc_dp.mechanisms.exponential import TemperatureCalibration, calibrate_temperature
from pymc_dp.mechanisms.laplace import NoiseBackend, release_laplace

__all__ = [
    "OPSCost",
    "cell_counts_sensitivity",
    "emission_lower_bounds",
    "feature_log_likelihood_bounds",
    "gibbs_sweep_events",
    "gibbs_sweep_weight",
    "log_likelihood_bound",
    "ops_cost",
    "ops_release_event",
    "ops_worst_case_epsilon",
    "record_ops_release",
    "release_cell_counts",
]

PROJECTIONS = ("cell", "none")
LAPLACE_SOURCE = (
    "Foulds et al. 2016, §3.2 eq. (16)-(17) and App. E.1: Laplace noise on the count tensor "
    "n[r,t,d,j], L1 sensitivity 2·D (replace-one), projected to >= 0"
)
OPS_SOURCE = (
    "Foulds et al. 2016, §3.1 eq. (10), (13)-(15), §4 eq. (19) and App. E.1: one draw of "
    "(θ, A, z) at temperature T = 2Δ/ε, emissions truncated at a0_d = 1/(M·K_d)"
)


def cell_counts_sensitivity(n_features: int, neighbouring: str = "replace-one") -> float:
    """L1 sensitivity of the (R, T, D, J) count tensor: 2·D (replace-one) or D (add/remove)."""
    validate_neighbouring(neighbouring)
    if n_features < 1:
        raise ValueError("need at least one feature")
    return float((2 if neighbouring == "replace-one" else 1) * n_features)


def release_cell_counts(
    counts: CellCounts,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    variables: tuple[str, ...] = ("states", "emission"),
    projection: str = "cell",
) -> CellCounts:
    """Release the count tensor once with Laplace noise (and optionally project it to >= 0).

    Every entry of every declared category (padded entries j >= K_d are public zeros and stay
    0) gets Laplace(2·D/ε) noise (D/ε under add/remove). The ledger records one (ε, 0) event
    before the noisy counts are returned. Projection is post-processing (free):

    * ``projection="cell"`` clamps every entry at 0 (Foulds eq. 16, as in the paper). Each
      clamped entry is biased upwards by up to b/2 (b the noise scale), and the bias adds up
      over cells: at small ε it swamps the statistics that the sampler sums over cells.
    * ``projection="none"`` returns the unbiased noisy counts, negatives included. The HMM
      sampler then projects only the per-state sums it feeds to the Dirichlet updates
      (:func:`pymc_dp.hmm.gibbs.update_emission` clamps them at 0).

    Parameters
    ----------
    counts : CellCounts
        Raw counts (``noisy=False``), shape (R, T, D, J).
    epsilon : float
        Total ε of the release (not per feature).
    ledger : PrivacyLedger
    neighbouring : {"replace-one", "add-remove-one"}
    backend : {"opendp", "numpy"}
        Noise source (NumPy for tests and simulations only).
    rng : numpy.random.Generator, optional
        For the NumPy backend.
    variables : tuple of str
        Model variables the release feeds (for the ledger).

    Returns
    -------
    CellCounts
        Same grid, ``noisy=True``, float counts (>= 0 under ``projection="cell"``), read-only,
        marked as this release (:func:`pymc_dp.hmm.cells.release_event_of` gives its ledger
        event): the only counts ``pm.sample`` may run :class:`~pymc_dp.NaiveBayesHMMGibbs` on
        outside :func:`pymc_dp.sample`.

    Raises
    ------
    InvalidPrivateDataError
        If the counts are NaN, negative or non-zero outside a feature's categories.
    ValueError
        If the counts are already noisy, or epsilon/neighbouring/backend/projection/rng are
        invalid.
    TypeError
        If ``counts`` is not a :class:`~pymc_dp.hmm.CellCounts` or ``ledger`` cannot be
        charged (e.g. None).
    BudgetExceededError
        If the ledger's budget would be exceeded (nothing is released).
    """
    if not isinstance(counts, CellCounts):
        raise TypeError(
            f"counts must be a CellCounts (from cell_counts or cell_counts_from_frame), got "
            f"{type(counts).__name__}; nothing was released"
        )
    if ledger is None or not callable(getattr(ledger, "charge", None)):
        raise TypeError(
            "ledger must be a PrivacyLedger or a PrivacySession to charge the release to, got "
            f"{type(ledger).__name__}; nothing was released"
        )
    if counts.noisy:
        raise ValueError("these counts are already a private release")
    if projection not in PROJECTIONS:
        raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
    validate_counts(counts.counts, counts.n_categories, features=counts.features)
    mask = np.broadcast_to(counts.category_mask, counts.shape)
    n_regions, n_times, n_features, _ = counts.shape
    spent_before = len(ledger)
    noisy_entries = release_laplace(
        counts.counts[mask],
        sensitivity=cell_counts_sensitivity(n_features, neighbouring),
        epsilon=epsilon,
        ledger=ledger,
        neighbouring=neighbouring,
        variables=variables,
        statistic=(
            f"cell count tensor n[r,t,d,j]: {n_regions} regions x {n_times} time steps, "
            f"{n_features} features, {int(mask.sum())} entries"
        ),
        source=LAPLACE_SOURCE,
        backend=backend,
        rng=rng,
    )
    (event,) = ledger.events[spent_before:]
    noisy = np.zeros(counts.shape)
    noisy[mask] = np.maximum(noisy_entries, 0.0) if projection == "cell" else noisy_entries
    return _mark_released(counts.with_counts(noisy, noisy=True), event)


def emission_lower_bounds(n_categories, truncation: float) -> np.ndarray:
    """a0_d = 1/(M·K_d) for each feature (Foulds App. E.1), shape (D,).

    Raises
    ------
    ValueError
        If M <= 1 (then a0_d >= 1/K_d and the truncated simplex is a point or empty).
    """
    truncation = float(truncation)
    if not math.isfinite(truncation) or truncation <= 1:
        raise ValueError(f"truncation M must be a finite number > 1, got {truncation!r}")
    return 1.0 / (truncation * np.asarray(n_categories, dtype=np.float64))


def feature_log_likelihood_bounds(n_categories, lower) -> np.ndarray:
    """Δ_d = log((1 - (K_d - 1)·a0_d) / a0_d) per feature, in nats, shape (D,).

    Each is :func:`pymc_dp.families.dirichlet.categorical_log_likelihood_bound`; a feature
    with a single category has Δ_d = 0.

    Raises
    ------
    ValueError
        If ``lower`` is None (untruncated: Δ = ∞) or some a0_d is not in (0, 1/K_d).
    """
    if lower is None:
        raise ValueError(
            "the emission Dirichlets are not truncated, so one record's log-likelihood is "
            "unbounded (Δ = ∞); build the model with truncation=M (a0_d = 1/(M·K_d))"
        )
    n_categories = np.asarray(n_categories)
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), n_categories.shape)
    return np.array(
        [
            categorical_log_likelihood_bound(a0, k) if k > 1 else 0.0
            for a0, k in zip(lower, n_categories, strict=True)
        ]
    )


def log_likelihood_bound(n_categories, lower) -> float:
    """Δ = Σ_d Δ_d (:func:`feature_log_likelihood_bounds`), nats (Foulds eq. 15 generalised).

    The largest change of one record's log-likelihood Σ_d log θ^{(z,d)}_{x_d} when the record
    is replaced, over the truncated parameter space.

    Raises
    ------
    ValueError
        If ``lower`` is None (untruncated: Δ = ∞) or some a0_d is not in (0, 1/K_d).
    """
    return float(np.sum(feature_log_likelihood_bounds(n_categories, lower)))


def gibbs_sweep_weight(n_categories, lower) -> float:
    """W = 2Δ + Σ_d (K_d − 1)·2Δ_d: one record's cost of one Gibbs sweep at T = 1, nats.

    The FFBS state update is one exponential mechanism of sensitivity Δ; the truncated
    Dirichlet of feature d is updated by K_d − 1 pair updates, each of sensitivity Δ_d;
    transition updates read no data (Foulds et al. 2016, §4.1 eq. 19-20, App. E.1; module
    docstring). A sweep at temperature T costs W/T.

    Raises
    ------
    ValueError
        If ``lower`` is None (untruncated: Δ = ∞), some a0_d is not in (0, 1/K_d), or every
        feature has one category (Δ = 0: the records do not enter the likelihood).
    """
    per_feature = feature_log_likelihood_bounds(n_categories, lower)
    _require_data_dependence(per_feature)
    pair_updates = np.asarray(n_categories) - 1  # per feature, per sweep
    return 2.0 * float(per_feature.sum()) + float(np.sum(pair_updates * 2.0 * per_feature))


def _require_data_dependence(per_feature: np.ndarray) -> None:
    """Refuse Δ = 0 (every feature has one category): nothing to calibrate or to charge."""
    if not per_feature.sum() > 0:
        raise ValueError(
            "every feature has a single category, so the records do not enter the likelihood "
            "(Δ = 0): there is nothing to calibrate a posterior-sampling release to"
        )


class OPSCost:
    """Temperature and costs of one OPS draw of the HMM (see the module docstring).

    Attributes
    ----------
    log_likelihood_bound : float
        Δ, nats (:func:`log_likelihood_bound`).
    calibration : TemperatureCalibration
        :func:`~pymc_dp.mechanisms.exponential.calibrate_temperature` of one draw (cost 2Δ
        at T = 1) at the requested ε.
    temperature : float
        T = max(1, 2Δ/ε): above ε = 2Δ the exact posterior is used (never sharpened).
    epsilon : float
        ε charged for one converged draw: 2Δ/T, computed from the temperature the sampler
        runs at (not copied from the calibration), which is min(ε requested, 2Δ).
    sweep_weight : float
        W, one record's cost of one full Gibbs sweep at T = 1 (:func:`gibbs_sweep_weight`).
    sweep_epsilon : float
        Worst-case cost of one full Gibbs sweep (states + emissions) at T, by composition: W/T.
    """

    def __init__(self, n_categories, lower, epsilon: float) -> None:
        validate_epsilon(epsilon)
        self.sweep_weight = gibbs_sweep_weight(n_categories, lower)
        self.log_likelihood_bound = log_likelihood_bound(n_categories, lower)
        self.calibration: TemperatureCalibration = calibrate_temperature(
            2.0 * self.log_likelihood_bound, epsilon
        )
        self.temperature = self.calibration.temperature
        self.epsilon = 2.0 * self.log_likelihood_bound / self.temperature
        self.sweep_epsilon = self.sweep_weight / self.temperature

    def __repr__(self) -> str:
        return (
            f"OPSCost(log_likelihood_bound={self.log_likelihood_bound:.4g}, "
            f"temperature={self.temperature:.4g}, epsilon={self.epsilon:.4g}, "
            f"sweep_epsilon={self.sweep_epsilon:.4g})"
        )


def ops_cost(n_categories, lower, epsilon: float) -> OPSCost:
    """The :class:`OPSCost` of a model with these features and truncations at ε."""
    return OPSCost(n_categories, lower, epsilon)


def ops_worst_case_epsilon(cost: OPSCost, n_sweeps: int, n_chains: int = 1) -> float:
    """Composed ε of ``n_sweeps`` sweeps (tuning included) in each of ``n_chains`` chains."""
    if n_sweeps < 1 or n_chains < 1:
        raise ValueError("need at least one sweep and one chain")
    return cost.sweep_epsilon * n_sweeps * n_chains


def gibbs_sweep_events(
    n_categories,
    lower,
    *,
    temperature: float,
    n_sweeps: int,
    neighbouring: str = "replace-one",
    variable_names: tuple[str, ...] = (),
    source: str = "",
) -> list[PrivacyEvent]:
    """The events of ``n_sweeps`` exponential-mechanism Gibbs sweeps at temperature T.

    One ``"gibbs-exponential"`` event for the state updates (``compositions`` = n, each
    update 2Δ/T, Δ = :func:`log_likelihood_bound`), and one for the emission pair updates of
    each distinct Δ_d (``compositions`` = n·Σ(K_d − 1) over the features with that Δ_d, each
    2Δ_d/T); transitions read no data. Their ε add up to n·W/T
    (:func:`gibbs_sweep_weight`). See the module docstring.

    Parameters
    ----------
    n_categories, lower
        K_d and a0_d per feature.
    temperature : float
        T >= 1.
    n_sweeps : int
        n >= 1: every sweep of every chain, tuning included.
    neighbouring : {"replace-one"}
    variable_names : tuple of str
        ``("states", "transition", emission names...)`` (the model's), for the events'
        ``variables``; default: none named.
    source : str

    Raises
    ------
    ValueError
        If T < 1, n < 1, neighbours are add/remove-one, or Δ = 0 or ∞.
    """
    if validate_neighbouring(neighbouring) != "replace-one":
        raise ValueError("the HMM's exponential-mechanism Gibbs is calibrated for replace-one")
    if not math.isfinite(temperature) or temperature < 1:
        raise ValueError(f"temperature must be a finite number >= 1, got {temperature!r}")
    if int(n_sweeps) != n_sweeps or n_sweeps < 1:
        raise ValueError(f"n_sweeps must be an integer >= 1, got {n_sweeps!r}")
    n_sweeps = int(n_sweeps)
    per_feature = feature_log_likelihood_bounds(n_categories, lower)
    _require_data_dependence(per_feature)
    bound = float(per_feature.sum())
    names = tuple(variable_names)
    emission_names = names[2:] if len(names) == 2 + per_feature.size else ()

    def event(epsilon, sensitivity, k, variables, what):
        return PrivacyEvent(
            mechanism="gibbs-exponential",
            epsilon=epsilon,
            delta=0.0,
            sensitivity=sensitivity,
            neighbouring=neighbouring,
            variables=variables,
            noise_backend="numpy",
            statistic=(
                f"{what} of every draw of {n_sweeps} Gibbs sweeps (tuning included) at "
                f"T = {temperature:.4g}: {k} exponential mechanisms"
            ),
            source=source,
            temperature=temperature,
            compositions=k,
        )

    events = [
        event(
            n_sweeps * 2.0 * bound / temperature,
            bound,
            n_sweeps,
            names[:1],
            "state updates (FFBS, one per sweep)",
        )
    ]
    pair_updates = np.asarray(n_categories) - 1
    groups: dict[float, list[int]] = {}
    for d, value in enumerate(per_feature):
        if pair_updates[d] > 0 and value > 0:
            groups.setdefault(float(value), []).append(d)
    for value, features in groups.items():
        k = n_sweeps * int(sum(pair_updates[d] for d in features))
        events.append(
            event(
                k * 2.0 * value / temperature,
                value,
                k,
                tuple(emission_names[d] for d in features) if emission_names else (),
                f"emission pair updates of {len(features)} feature(s) with Δ_d = {value:.4g}",
            )
        )
    return events


def ops_release_event(
    cost: OPSCost,
    *,
    n_sweeps: int,
    n_chains: int,
    neighbouring: str,
    variables: tuple[str, ...],
) -> PrivacyEvent:
    """The event of releasing the last draw of each chain (:func:`record_ops_release`).

    Raises
    ------
    ValueError
        As :func:`record_ops_release`.
    """
    if validate_neighbouring(neighbouring) != "replace-one":
        raise ValueError("the HMM OPS release is calibrated for replace-one neighbours only")
    return PrivacyEvent(
        mechanism="ops",
        epsilon=n_chains * cost.epsilon,
        delta=0.0,
        sensitivity=cost.log_likelihood_bound,
        neighbouring=neighbouring,
        variables=variables,
        noise_backend="numpy",
        statistic=(
            f"last Gibbs draw of {n_chains} chain(s) at temperature {cost.temperature:.4g} "
            f"after {n_sweeps} sweeps each; the guarantee assumes each chain has converged"
        ),
        source=OPS_SOURCE,
        temperature=cost.temperature,
        assumes_convergence=True,
        worst_case_epsilon=ops_worst_case_epsilon(cost, n_sweeps, n_chains),
        compositions=n_chains,
    )


def record_ops_release(
    ledger: PrivacyLedger,
    cost: OPSCost,
    *,
    n_sweeps: int,
    n_chains: int,
    neighbouring: str,
    variables: tuple[str, ...],
) -> PrivacyEvent:
    """Charge ``ledger`` for releasing the last draw of each chain (one OPS draw per chain).

    The event's ε is ``n_chains × cost.epsilon``, flagged ``assumes_convergence``, with
    ``compositions`` = ``n_chains`` (one converged draw per chain); its
    ``worst_case_epsilon`` is the composition of every update of every chain.

    Raises
    ------
    ValueError
        Under add/remove-one neighbours: Δ bounds a replaced record; adding one record moves
        the log-likelihood by up to max_d |log a0_d| per feature, which this release does not
        calibrate for.
    BudgetExceededError
        If the ledger's budget would be exceeded (then nothing may be released).
    """
    event = ops_release_event(
        cost,
        n_sweeps=n_sweeps,
        n_chains=n_chains,
        neighbouring=neighbouring,
        variables=variables,
    )
    return ledger.charge(event)
