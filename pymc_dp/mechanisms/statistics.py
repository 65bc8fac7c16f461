"""Release noisy sufficient statistics of a conjugate or bounded link, once.

Data path (Foulds et al. 2016, §3.2 eq. 16–17, §4.2): records → validation → sufficient
statistics per group (transformation) → Laplace noise (measurement; ledger event first) →
projection onto valid statistics (post-processing) → any amount of posterior sampling.

Sensitivity (L1, data-independent). Let C = sup_x ||S(x)||_1 be one record's largest
contribution (1 for Bernoulli/Categorical, ``max_trials`` for Binomial/Multinomial) and G the
number of groups. The released table is the (G, d) matrix of per-group sums.

* ``"add-remove-one"``: adding or removing a record changes one row by S(x): Δ = C.
* ``"replace-one"`` (n public): replacing x by x' moves S(x) out of one cell group and S(x')
  into another, ||S(x') − S(x)||_1 ≤ 2C: Δ = 2C — for the whole joint table at once, not per
  group (a contingency table of outcome × group costs ε once).
* ``"replace-one"`` with one group, two outcome components (d = 2) and public trials: the total
  Σ_i ||S(x_i)||_1 is public (n × trials), so releasing the first component alone suffices (the
  second is total − first); it changes by at most C: Δ = C, half the noise of the full vector.
  This is the LSHist k = 1 case for |X| = 2 of the Dirichlet/Hellinger note.

Projection: counts are clamped at 0 (Foulds eq. 16, "counts non-negative"); in the one-component
case the released count is clamped to [0, total]. Projection is post-processing and is free.

**Bounded families** (Poisson, Normal with unknown mean and sd, linear regression;
:mod:`pymc_dp.families.bounded`): records are rescaled to the unit interval with their declared
``data_bounds`` (clamped into them on opt-in, a per-record map that keeps every sensitivity),
and the family's per-group statistics are released by :func:`release_bounded`. The grouped-table
reasoning above carries over: with one record's statistic t(x) of declared range, add-remove-one
moves one row by ||t(x)||₁, replace-one moves one row by t(x') − t(x) or, when records can move
between groups (private labels, G > 1), two rows — so n_g is released under replace-one too,
and Δ doubles. A family may weight the released entries (public weights c, the release is
c ⊙ T + noise: the Normal and regression split ε this way,
:mod:`~pymc_dp.families.second_moments`); its sensitivities are those of the weighted vector.
The family states each Δ (:mod:`~pymc_dp.families.poisson`,
:mod:`~pymc_dp.families.second_moments`).

**Gaussian noise** (``noise="gaussian"``; :mod:`pymc_dp.mechanisms.gaussian`): the same
statistics, the same released components and the same projection, with N(0, σ²) noise
calibrated to the **L2** sensitivity of the whole released array (ρ-zCDP, reported as
(ε, δ)-DP). Conjugate tables: :func:`pymc_dp.families.base.table_l2_sensitivity` (C, √2·C or
C with C = max trials); bounded families: ``BoundedFamily.l2_sensitivity``. For many
statistics at once the L2 sensitivity is below the L1 one (a regression's weighted entries:
√Σ s_j² against Σ s_j = 1), so the Gaussian can add less noise per entry.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pymc_dp.errors import NonPrivateModelError, StaleReleaseError, value_free_repr
from pymc_dp.families import BOUNDED_FAMILIES
from pymc_dp.families.base import ConjugateLink, table_l2_sensitivity
from pymc_dp.families.bounded import BoundedLink, BoundedStructure
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, split_epsilon, validate_neighbouring
from pymc_dp.mechanisms.gaussian import (
    GAUSSIAN_SOURCE,
    release_gaussian,
    validate_gaussian_delta,
    validate_noise,
)
from pymc_dp.mechanisms.laplace import NoiseBackend, release_laplace

__all__ = [
    "BOUNDED_SOURCES",
    "BoundedRelease",
    "ReleasedStatistics",
    "release_all",
    "release_bounded",
    "release_sufficient_statistics",
    "released_components",
    "require_current_release",
    "statistics_digest",
    "sufficient_statistics",
    "sufficient_statistics_l2_sensitivity",
    "sufficient_statistics_sensitivity",
]

_SOURCE = "Foulds et al. 2016, §3.2, eq. (16)-(17); Laplace mechanism eq. (3)"
_DIGEST_KEY = secrets.token_bytes(32)  # this process's key: a digest proves nothing elsewhere


def statistics_digest(exact: np.ndarray) -> bytes:
    """A keyed digest (HMAC-SHA256, a random key of this process) of the exact statistics a
    release was computed from.

    Kept with the release (``ReleasedStatistics.records_digest``) so that a step built
    before ``pm.set_data`` can be checked against the model's records at sample time
    (:func:`require_current_release`), without keeping the records or the exact statistics:
    the key never leaves the process, so the digest reveals nothing about them. The records
    enter a release only through these statistics, so equal digests mean the release is a
    release of the current records.
    """
    array = np.ascontiguousarray(np.asarray(exact, dtype=np.float64))
    mac = hmac.new(_DIGEST_KEY, repr(array.shape).encode(), "sha256")
    mac.update(array.tobytes())
    return mac.digest()


def require_current_release(
    release: ReleasedStatistics | BoundedRelease, link: ConjugateLink | BoundedLink | None
) -> None:
    """Refuse a release whose records are no longer the model's (``pm.set_data`` after the
    step that made it was built): its posterior would be the old records' one.

    Raises
    ------
    StaleReleaseError
        Naming the observed variable, never a value.
    """
    if link is None:
        current = b""
    elif isinstance(link, BoundedLink):
        current = statistics_digest(link.statistics())
    else:
        current = statistics_digest(sufficient_statistics(link))
    if not current or not hmac.compare_digest(release.records_digest, current):
        raise StaleReleaseError(
            f"{release.observed}: the step's release was made from other records than the "
            "model now holds (pm.set_data after the step was built?), so its posterior would "
            "be the old records'. Build a new step (a new release, charged) for these records. "
            "Nothing was released or sampled."
        )


@value_free_repr
@dataclass(frozen=True, eq=False)
class ReleasedStatistics:
    """The public result of one Laplace release of a link's sufficient statistics.

    Attributes
    ----------
    observed, prior, family : str
        Observed variable, its conjugate parent, and the family name.
    noisy : ndarray, shape (G, r)
        The noisy statistics exactly as released (r = d, or 1 in the one-component case).
    table : ndarray, shape (G, d)
        Projected statistics used for the posterior (post-processing of ``noisy``).
    event : PrivacyEvent
        The ledger event of the release.
    scale : float
        Noise scale of every released component (public): Laplace b = sensitivity / epsilon,
        or the Gaussian standard deviation σ.
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation of the release.
    public_totals : ndarray, shape (G,), or None
        Per-group totals Σ_j table[g, j] when they are public (one group, replace-one, public
        trials: n × trials), else None (they are private and only released with noise).
        Noise-aware inference conditions on them.
    noise : {"laplace", "gaussian", "exponential"}
        The noise distribution of the release; ``"exponential"`` for a Dirichlet posterior
        drawn by the exponential mechanism (EHD, EHDS: :mod:`pymc_dp.routes.dirichlet`),
        whose ``scale`` is NaN.
    records_digest : bytes
        :func:`~pymc_dp.mechanisms.statistics.statistics_digest` of the exact statistics
        released (b"" when not made by
        :func:`release_sufficient_statistics`); never the records.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> released = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=ledger)
    >>> released.family, released.noisy.shape, released.scale, ledger.epsilon
    ('beta-bernoulli', (1, 1), 1.0, 1.0)
    """

    observed: str
    prior: str
    family: str
    noisy: np.ndarray
    table: np.ndarray
    event: PrivacyEvent
    scale: float = float("nan")
    neighbouring: str = "replace-one"
    public_totals: np.ndarray | None = None
    noise: str = "laplace"
    records_digest: bytes = field(default=b"", repr=False)


BOUNDED_SOURCES = {name: family.source for name, family in BOUNDED_FAMILIES.items()}
"""Paper, section and equation of each bounded family's release (for the ledger)."""


@value_free_repr
@dataclass(frozen=True, eq=False)
class BoundedRelease:
    """The public result of one Laplace release of a bounded family's statistics.

    Attributes
    ----------
    observed, family : str
        Observed variable and family name (:data:`pymc_dp.families.BOUNDED_FAMILIES`).
    structure : BoundedStructure
        Public structure of the likelihood (declared bounds, parameter graphs, groups).
    noisy : ndarray, shape (G, r)
        The released components exactly as released: the family's weights times the
        statistics (:meth:`~pymc_dp.families.bounded.BoundedFamily.weights`), plus noise.
    table : ndarray, shape (G, D)
        Projected statistics, all D components (n first), un-weighted
        (post-processing of ``noisy`` and the public n).
    event : PrivacyEvent
    scale : float
        Noise scale of every released (weighted) component: Laplace b or Gaussian σ; the
        noise on statistic j is ``scale / weights[j]``.
    neighbouring : {"replace-one", "add-remove-one"}
    public_n : ndarray, shape (G,), or None
        Record counts when they are public (one group, replace-one), else None.
    noise : {"laplace", "gaussian"}
        The noise distribution of the release.
    records_digest : bytes
        :func:`statistics_digest` of the exact statistics released; never the records.
    """

    observed: str
    family: str
    structure: BoundedStructure
    noisy: np.ndarray
    table: np.ndarray
    event: PrivacyEvent
    scale: float
    neighbouring: str = "replace-one"
    public_n: np.ndarray | None = None
    noise: str = "laplace"
    records_digest: bytes = field(default=b"", repr=False)

    @property
    def released_index(self) -> np.ndarray:
        """Indices (into the D components) of the released ones."""
        return self.structure.family.released_components(self.structure, self.neighbouring)

    @property
    def component_names(self) -> list[str]:
        """Names of the D components of one group's statistics."""
        return self.structure.family.component_names(self.structure)

    @property
    def group_variable(self) -> str:
        """The model variable whose first dimension labels the groups ("" if none)."""
        return self.structure.group_variable


def release_bounded(
    link: BoundedLink,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
) -> BoundedRelease:
    """Validate, then release a bounded family's statistics with Laplace or Gaussian noise.

    Guarantee: (epsilon, 0)-DP (Laplace) or (epsilon, delta)-DP and ρ-zCDP (Gaussian) under
    ``neighbouring`` for the records of ``link.observed`` (each element of the observed vector
    with its group label or its row of covariates), with the data-independent L1 (Laplace) or
    L2 (Gaussian) sensitivity the family states from the declared bounds
    (:meth:`~pymc_dp.families.bounded.BoundedFamily.sensitivity`,
    :meth:`~pymc_dp.families.bounded.BoundedFamily.l2_sensitivity`). Sources:
    :data:`BOUNDED_SOURCES`; Gaussian: :mod:`pymc_dp.mechanisms.gaussian`.

    Parameters
    ----------
    link : BoundedLink
    epsilon : float
        Cost of this release (> 0).
    ledger : PrivacyLedger
        Charged (budget checked) before the noise is drawn.
    neighbouring : {"replace-one", "add-remove-one"}
    backend : {"opendp", "numpy"}
    rng : numpy.random.Generator, optional
        Only for the NumPy backend.
    noise : {"laplace", "gaussian"}
    delta : float
        δ of a Gaussian release (0 < δ < 1); must be 0 for Laplace.

    Returns
    -------
    BoundedRelease
        ``noisy`` (G, r): the family's public weights times the statistics, plus noise
        (:meth:`~pymc_dp.families.bounded.BoundedFamily.weights`); ``table`` (G, D) projected,
        un-weighted.

    Raises
    ------
    InvalidPrivateDataError
        If a record is NaN, infinite, fractional (counts), outside its declared bounds
        without the clamping opt-in, or has a bad group label (before any noise).
    BudgetExceededError
        If the ledger's budget would be exceeded (nothing released).
    """
    validate_neighbouring(neighbouring)
    _check_noise(noise, delta)
    family, structure = link.family, link.structure
    exact = link.statistics()  # validates (and clamps, on opt-in) the records
    index = family.released_components(structure, neighbouring)
    weights = family.weights(structure, neighbouring)[index]
    variables = tuple(
        dict.fromkeys(
            (link.observed,)
            + ((structure.covariates,) if structure.covariates else ())
            + tuple(binned.key for binned in structure.covariate_bins)
            + structure.labels
        )
    )
    bins = "; ".join(binned.describe() for binned in structure.covariate_bins)
    noisy = _release(
        exact[:, index] * weights,
        noise=noise,
        l1=lambda: family.sensitivity(structure, neighbouring),
        l2=lambda: family.l2_sensitivity(structure, neighbouring),
        epsilon=epsilon,
        delta=delta,
        ledger=ledger,
        neighbouring=neighbouring,
        variables=variables,
        statistic=(
            f"{family.describe(structure, neighbouring)}; released shape "
            f"{(exact.shape[0], index.size)}"
            + (f"; cells by covariate bins: {bins}" if bins else "")
            + (f"; records clamped: {structure.clamping()}" if structure.clamping() else "")
        ),
        source=family.source,
        backend=backend,
        rng=rng,
        clamping=structure.clamping(),
    )
    event = ledger.events[-1]
    public_n = family.public_n(link, neighbouring)
    return BoundedRelease(
        link.observed,
        family.name,
        structure,
        noisy,
        project_bounded(structure, noisy, float(event.noise_scale), neighbouring, public_n),
        event,
        scale=float(event.noise_scale),
        neighbouring=neighbouring,
        public_n=public_n,
        noise=noise,
        records_digest=statistics_digest(exact),
    )


def project_bounded(
    structure: BoundedStructure,
    noisy: np.ndarray,
    scale: float,
    neighbouring: str,
    public_n: np.ndarray | None,
) -> np.ndarray:
    """All D components per group (the public n filled in), projected (post-processing).

    Reads only released values and public facts, so it can be re-run on any release (e.g.
    :func:`pymc_dp.analysis.rewrite.set_released_statistics`).
    """
    family = structure.family
    noisy = np.asarray(noisy, dtype=np.float64).reshape(structure.n_groups, -1)
    index = family.released_components(structure, neighbouring)
    full = np.zeros((structure.n_groups, len(family.component_names(structure))))
    full[:, index] = noisy / family.weights(structure, neighbouring)[index]
    if public_n is not None:
        full[:, 0] = np.asarray(public_n, dtype=np.float64).reshape(-1)
    return family.project(full, structure, scale, neighbouring)


def sufficient_statistics(link: ConjugateLink) -> np.ndarray:
    """Exact per-group sufficient statistics of ``link``, shape (G, d). **Private**: the
    records are validated first (:meth:`~pymc_dp.ConjugateLink.statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> pymc_dp.sufficient_statistics(link)  # (successes, failures); private until released
    array([[37., 63.]])
    """
    return link.statistics()


def released_components(link: ConjugateLink, neighbouring: str) -> int:
    """How many of the d components per group are released (1 when the rest is public)."""
    validate_neighbouring(neighbouring)
    one_component = (
        neighbouring == "replace-one"
        and link.n_groups == 1
        and link.domain.n_categories == 2
        and link.domain.trials_public
    )
    return 1 if one_component else link.domain.n_categories


def sufficient_statistics_sensitivity(link: ConjugateLink, neighbouring: str) -> float:
    """Data-independent L1 sensitivity of the released statistics (see module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> pymc_dp.sufficient_statistics_sensitivity(link, "replace-one")
    1.0
    """
    bound = link.family.record_l1_bound(link.domain)
    if neighbouring == "add-remove-one" or released_components(link, neighbouring) == 1:
        return bound
    return 2.0 * bound


def sufficient_statistics_l2_sensitivity(link: ConjugateLink, neighbouring: str) -> float:
    """Data-independent L2 sensitivity of the released statistics: C (add-remove-one, or one
    released component) or √2·C (replace-one, full table), C = max trials
    (:func:`pymc_dp.families.base.table_l2_sensitivity`)."""
    one_component = released_components(link, neighbouring) == 1
    return table_l2_sensitivity(
        link.family.record_l2_bound(link.domain), neighbouring, one_component
    )


def release_sufficient_statistics(
    link: ConjugateLink,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
) -> ReleasedStatistics:
    """Validate, then release the link's sufficient statistics with Laplace or Gaussian noise.

    Guarantee: (epsilon, 0)-DP (Laplace, L1 sensitivity) or (epsilon, delta)-DP and ρ-zCDP
    (Gaussian, L2 sensitivity) under ``neighbouring`` for the records of ``link.observed``
    (each element of the observed vector with its group label and trials). Source: Foulds et
    al. 2016, §3.2, eq. (16)–(17); Gaussian: :mod:`pymc_dp.mechanisms.gaussian`.

    Parameters
    ----------
    link : ConjugateLink
    epsilon : float
        Cost of this release (> 0).
    ledger : PrivacyLedger
        Charged (budget checked) before the noise is drawn.
    neighbouring : {"replace-one", "add-remove-one"}
    backend : {"opendp", "numpy"}
    rng : numpy.random.Generator, optional
        Only for the NumPy backend.
    noise : {"laplace", "gaussian"}
    delta : float
        δ of a Gaussian release (0 < δ < 1); must be 0 for Laplace.

    Returns
    -------
    ReleasedStatistics

    Raises
    ------
    InvalidPrivateDataError
        If any record is outside the declared domain (before any noise).
    NonPrivateModelError
        If the prior is truncated: the conjugate Gibbs step draws untruncated posteriors, so
        truncated priors are released with ``mechanism="ops"``.
    BudgetExceededError
        If the ledger's budget would be exceeded (nothing released).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> import pymc_dp
    >>> outcome = np.random.default_rng(0).binomial(1, 0.3, size=100)  # private 0/1 records
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 1, 1)
    ...     y = pm.Bernoulli("y", p=p, observed=outcome)
    >>> link = pymc_dp.analyse_model(model)["y"]
    >>> ledger = pymc_dp.PrivacyLedger(budget=1.0)
    >>> released = pymc_dp.release_sufficient_statistics(link, 1.0, ledger=ledger)
    >>> released.family, released.noisy.shape, released.scale, ledger.epsilon
    ('beta-bernoulli', (1, 1), 1.0, 1.0)
    """
    if link.truncation is not None:
        raise NonPrivateModelError(
            f"{link.prior} has a truncated prior: sample it with mechanism='ops' (the Laplace "
            "path's conjugate step draws untruncated posteriors)"
        )
    _check_noise(noise, delta)
    exact = sufficient_statistics(link)  # validates the records first
    n_released = released_components(link, neighbouring)
    what = "first component (rest public)" if n_released == 1 else "table"
    noisy = _release(
        exact[:, :n_released],
        noise=noise,
        l1=lambda: sufficient_statistics_sensitivity(link, neighbouring),
        l2=lambda: sufficient_statistics_l2_sensitivity(link, neighbouring),
        epsilon=epsilon,
        delta=delta,
        ledger=ledger,
        neighbouring=neighbouring,
        variables=(link.observed, link.prior),
        statistic=f"{link.family.name} sufficient statistics {what}, shape {exact.shape}",
        source=_SOURCE,
        backend=backend,
        rng=rng,
    )
    event = ledger.events[-1]
    public_totals = None
    if neighbouring == "replace-one" and link.n_groups == 1 and link.domain.trials_public:
        # one group: the table's row sums to the number of trials, public here
        public_totals = np.array([float(exact.sum())])
    if n_released == 1:
        total = float(public_totals[0])
        first = np.clip(noisy[:, 0], 0.0, total)
        table = np.column_stack([first, total - first])
    else:
        table = np.clip(noisy, 0.0, None)
    return ReleasedStatistics(
        link.observed,
        link.prior,
        link.family.name,
        noisy,
        table,
        event,
        scale=float(event.noise_scale),
        neighbouring=neighbouring,
        public_totals=public_totals,
        noise=noise,
        records_digest=statistics_digest(exact),
    )


def release_all(
    links: Sequence[ConjugateLink | BoundedLink],
    epsilon: float | Mapping[str, float],
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    noise: str = "laplace",
    delta: float = 0.0,
) -> list[ReleasedStatistics | BoundedRelease]:
    """Release several links' statistics, all or nothing.

    Every link is validated and the *combined* cost is checked against the budget before the
    first noise is drawn, so a bad record or an overspend releases nothing. ``epsilon`` is a
    total split equally across the links (sequential composition: a record may appear in
    every release) or a dict ``{observed name: epsilon}``; with Gaussian noise the total
    ``delta`` is split equally too (each release is (ε_i, δ/L)-DP; the ledger's tight
    accounting composes the Gaussian releases more tightly than this sum). Conjugate links
    are released by :func:`~pymc_dp.release_sufficient_statistics`, bounded links by
    :func:`release_bounded`; one event per link.

    Raises
    ------
    InvalidPrivateDataError, BudgetExceededError
    ValueError
        Also for two links of the same observed variable.
    """
    validate_neighbouring(neighbouring)
    _check_noise(noise, delta)
    names = [link.observed for link in links]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"release_all got several links named {repeated}: each observed variable is released "
            "once (its budget share and δ are split by name). Nothing was released."
        )
    for link in links:
        link.validate()
    epsilons = split_epsilon(epsilon, names)
    deltas = dict.fromkeys(epsilons, float(delta) / max(len(epsilons), 1))
    ledger.check_all((eps, deltas[name]) for name, eps in epsilons.items())
    return [
        (release_bounded if isinstance(link, BoundedLink) else release_sufficient_statistics)(
            link,
            epsilons[link.observed],
            ledger=ledger,
            neighbouring=neighbouring,
            backend=backend,
            rng=rng,
            noise=noise,
            delta=deltas[link.observed],
        )
        for link in links
    ]


def _check_noise(noise: str, delta: float) -> None:
    """Raise ``ValueError`` for an unknown noise, a Gaussian δ outside (0, 1) or a Laplace
    release given a δ (Laplace spends none: a δ would be recorded for nothing)."""
    validate_noise(noise)
    if noise == "gaussian":
        validate_gaussian_delta(delta)
    elif float(delta) != 0.0:
        raise ValueError(
            f"delta={delta!r} was given for a Laplace release, which is (ε, 0)-DP and spends no "
            "δ; use noise='gaussian' to spend δ. Nothing was released."
        )


def _release(values, *, noise, l1, l2, epsilon, delta, source, **kwargs) -> np.ndarray:
    """The Laplace (L1 sensitivity ``l1()``) or Gaussian (L2 ``l2()``) release of ``values``."""
    if noise == "gaussian":
        return release_gaussian(
            values,
            sensitivity=l2(),
            epsilon=epsilon,
            delta=delta,
            source=f"{GAUSSIAN_SOURCE}; statistics: {source}",
            **kwargs,
        )
    return release_laplace(values, sensitivity=l1(), epsilon=epsilon, source=source, **kwargs)
