"""Release Laplace-privatised sufficient statistics of a conjugate link, once.

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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pymc_dp.errors import NonPrivateModelError
from pymc_dp.families import group_sums
from pymc_dp.families.base import ConjugateLink
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, split_epsilon, validate_neighbouring
from pymc_dp.mechanisms.laplace import NoiseBackend, release_laplace

__all__ = [
    "ReleasedStatistics",
    "release_all",
    "release_sufficient_statistics",
    "released_components",
    "sufficient_statistics",
    "sufficient_statistics_sensitivity",
]

_SOURCE = "Foulds et al. 2016, §3.2, eq. (16)-(17); Laplace mechanism eq. (3)"


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
        Laplace scale b = sensitivity / epsilon of every released component (public).
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation of the release.
    public_totals : ndarray, shape (G,), or None
        Per-group totals Σ_j table[g, j] when they are public (one group, replace-one, public
        trials: n × trials), else None (they are private and only released with noise).
        Noise-aware inference conditions on them.
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


def sufficient_statistics(link: ConjugateLink) -> np.ndarray:
    """Exact per-group sufficient statistics of ``link``, shape (G, d). Not private."""
    stats = link.family.record_statistics(link.data, link.domain)
    groups = None if link.groups is None else np.asarray(link.groups, dtype=np.int64)
    return group_sums(stats, groups, link.n_groups)


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
    """Data-independent L1 sensitivity of the released statistics (see module docstring)."""
    bound = link.family.record_l1_bound(link.domain)
    if neighbouring == "add-remove-one" or released_components(link, neighbouring) == 1:
        return bound
    return 2.0 * bound


def release_sufficient_statistics(
    link: ConjugateLink,
    epsilon: float,
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
) -> ReleasedStatistics:
    """Validate, then release the link's sufficient statistics with the Laplace mechanism.

    Guarantee: (epsilon, 0)-DP under ``neighbouring`` for the records of ``link.observed``
    (each element of the observed vector with its group label and trials). Source: Foulds et
    al. 2016, §3.2, eq. (16)–(17).

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
    """
    if link.truncation is not None:
        raise NonPrivateModelError(
            f"{link.prior} has a truncated prior: sample it with mechanism='ops' (the Laplace "
            "path's conjugate step draws untruncated posteriors)"
        )
    link.validate()
    exact = sufficient_statistics(link)
    n_released = released_components(link, neighbouring)
    sensitivity = sufficient_statistics_sensitivity(link, neighbouring)
    what = "first component (rest public)" if n_released == 1 else "table"
    noisy = release_laplace(
        exact[:, :n_released],
        sensitivity=sensitivity,
        epsilon=epsilon,
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
        public_totals = np.array([float(link.family.record_totals(link.data, link.domain).sum())])
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
    )


def release_all(
    links: Sequence[ConjugateLink],
    epsilon: float | Mapping[str, float],
    *,
    ledger: PrivacyLedger,
    neighbouring: str = "replace-one",
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
) -> list[ReleasedStatistics]:
    """Release several links' statistics, all or nothing.

    Every link is validated and the *combined* cost is checked against the budget before the
    first noise is drawn, so a bad record or an overspend releases nothing. ``epsilon`` is a
    total split equally across the links (sequential composition: a record may appear in
    every release) or a dict ``{observed name: epsilon}``.

    Raises
    ------
    InvalidPrivateDataError, BudgetExceededError, ValueError
    """
    validate_neighbouring(neighbouring)
    for link in links:
        link.validate()
    epsilons = split_epsilon(epsilon, [link.observed for link in links])
    ledger.check_all((eps, 0.0) for eps in epsilons.values())
    return [
        release_sufficient_statistics(
            link,
            epsilons[link.observed],
            ledger=ledger,
            neighbouring=neighbouring,
            backend=backend,
            rng=rng,
        )
        for link in links
    ]
