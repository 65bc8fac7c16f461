"""One posterior sample (OPS) of a truncated Beta–Bernoulli model, drawn exactly.

Foulds et al. (2016), §3.1 eq. (10), (14) and (15). The mechanism draws θ from the joint
density tempered at T, Pr(θ, X)^{1/T}, over the truncated parameter space
θ ∈ [a0, 1 − a0]. With T = 2Δ/ε and Δ = log((1 − a0)/a0) (eq. 15), the draw is ε-DP under
replace-one neighbours. For a Beta(α, β) prior and s successes in N trials the tempered density
is the Beta((s + α − 1)/T + 1, (N − s + β − 1)/T + 1) density truncated to [a0, 1 − a0]. It is
sampled exactly by the inverse CDF (:func:`pymc_dp.truncated.truncated_beta`): no MCMC, so no
convergence assumption.

If ε > 2Δ, T is capped at 1 (the exact truncated posterior) and only 2Δ is charged; the
posterior is never sharpened (Foulds §2.2: "cap ε at 2Δ";
:func:`pymc_dp.mechanisms.exponential.calibrate_temperature`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from pymc_dp.errors import InvalidPrivateDataError
from pymc_dp.families.beta import bernoulli_log_likelihood_bound
from pymc_dp.families.tempered import tempered_parameters
from pymc_dp.ledger import PrivacyEvent, PrivacyLedger, validate_neighbouring
from pymc_dp.mechanisms.exponential import calibrate_temperature
from pymc_dp.truncated import truncated_beta

__all__ = [
    "beta_bernoulli_local_epsilon",
    "beta_bernoulli_ops",
    "greedy_adversary",
    "tempered_beta_parameters",
]

SOURCE = "Foulds et al. 2016, §3.1 eq. (10), (14), (15): one posterior sample at T = 2Δ/ε"


def tempered_beta_parameters(
    successes, trials, alpha, beta, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """Parameters of Beta(s + α, N − s + β) raised to the power 1/T: ((c − 1)/T + 1) each.

    :func:`pymc_dp.families.tempered.tempered_parameters` for a Beta block with counts
    (s, N − s).
    """
    successes, trials = np.broadcast_arrays(np.asarray(successes, float), trials)
    statistics = np.stack([successes, trials - successes], axis=-1).reshape(-1, 2)
    a, b = tempered_parameters("beta", (alpha, beta), statistics, temperature)
    return a.reshape(successes.shape), b.reshape(successes.shape)


def beta_bernoulli_ops(
    data: np.ndarray,
    *,
    epsilon: float,
    truncation: float,
    ledger: PrivacyLedger,
    alpha: float = 1.0,
    beta: float = 1.0,
    rng: np.random.Generator | None = None,
    neighbouring: str = "replace-one",
) -> float:
    """Release one exact draw of θ from the tempered, truncated Beta–Bernoulli posterior.

    Parameters
    ----------
    data : array of 0/1, shape (N,)
        The private records (N is public under replace-one).
    epsilon : float
        Budget of the release; at most 2Δ is charged.
    truncation : float
        a0 in (0, 1/2): the prior and the released θ lie in [a0, 1 − a0].
    ledger : PrivacyLedger
        Charged (one event, not flagged "assumes convergence") before the draw is returned.
    alpha, beta : float
        Beta prior parameters (> 0).
    rng : numpy.random.Generator, optional
        Source of the draw.
    neighbouring : {"replace-one"}
        Δ bounds a replaced record; add/remove-one is refused.

    Returns
    -------
    float
        θ in [a0, 1 − a0]. Guarantee: (min(ε, 2Δ), 0)-DP, replace-one.

    Raises
    ------
    InvalidPrivateDataError
        If a record is not 0 or 1 (NaN included), before anything is charged.
    ValueError
        If a0 is missing (Δ = ∞) or invalid, ε or the prior are invalid, or neighbours are
        add/remove-one.
    BudgetExceededError
        If the ledger's budget would be exceeded (nothing is drawn).
    """
    records = np.asarray(data, dtype=np.float64).ravel()
    if not np.all((records == 0) | (records == 1)):
        raise InvalidPrivateDataError("Bernoulli records must be 0 or 1 (no NaN); nothing released")
    if validate_neighbouring(neighbouring) != "replace-one":
        raise ValueError("OPS with Δ = log((1 − a0)/a0) is calibrated for replace-one neighbours")
    if not (alpha > 0 and beta > 0):
        raise ValueError(f"alpha and beta must be > 0, got {alpha!r}, {beta!r}")
    bound = bernoulli_log_likelihood_bound(truncation)
    calibration = calibrate_temperature(2 * bound, epsilon)
    temperature = calibration.temperature
    a, b = tempered_beta_parameters(records.sum(), records.size, alpha, beta, temperature)
    ledger.charge(
        PrivacyEvent(
            mechanism="ops",
            epsilon=calibration.epsilon,
            delta=0.0,
            sensitivity=bound,
            neighbouring=neighbouring,
            variables=("theta",),
            noise_backend="numpy",
            statistic=(
                f"one exact draw of θ ∈ [{truncation:g}, {1 - truncation:g}] "
                f"at T = {temperature:.4g}"
            ),
            source=SOURCE,
            temperature=temperature,
        )
    )
    generator = rng if rng is not None else np.random.default_rng()
    return float(truncated_beta(a, b, truncation, 1 - truncation, generator))


def _log_truncated_normaliser(a: float, b: float, truncation: float) -> float:
    """log ∫_{a0}^{1−a0} θ^{a−1}(1−θ)^{b−1} dθ, by the regularised incomplete beta function."""
    lower, upper = special.betainc(a, b, truncation), special.betainc(a, b, 1 - truncation)
    if upper - lower > 0.5:
        inside = math.log(upper - lower)
    else:  # mass near a boundary: subtract in the tail with full relative precision
        inside = math.log(
            special.betaincc(a, b, truncation) - special.betaincc(a, b, 1 - truncation)
        )
    return float(special.betaln(a, b)) + inside


def beta_bernoulli_local_epsilon(
    successes: int,
    trials: int,
    *,
    truncation: float,
    temperature: float,
    alpha: float = 1.0,
    beta: float = 1.0,
) -> float:
    """Dataset-specific ε of one OPS draw: the largest privacy loss against any neighbour.

    Foulds et al. (2016), App. A and Fig. 8. For a dataset with s successes in N trials, the
    replace-one neighbours have s ± 1 successes. With log p_T(θ | s) =
    ((s + α − 1) log θ + (N − s + β − 1) log(1 − θ))/T − log Z_T(s), the log density ratio
    against s − 1 is logit(θ)/T − log(Z_T(s)/Z_T(s − 1)). Its supremum over θ ∈ [a0, 1 − a0]
    is Δ/T + |log(Z_T(s)/Z_T(s − 1))|, with Δ = log((1 − a0)/a0). The local ε is the larger
    of the two neighbours. It is at most 2Δ/T (the mechanism's ε), and it approaches that
    bound when the data push the posterior against the truncation.

    Raises
    ------
    ValueError
        For inconsistent counts or invalid a0 or T.
    """
    if not (0 <= successes <= trials) or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes}/{trials}")
    if temperature < 1:
        raise ValueError(f"temperature must be >= 1, got {temperature!r}")
    bound = bernoulli_log_likelihood_bound(truncation)

    def log_z(s: int) -> float:
        a, b = tempered_beta_parameters(s, trials, alpha, beta, temperature)
        return _log_truncated_normaliser(float(a), float(b), truncation)

    here = log_z(successes)
    neighbours = [s for s in (successes - 1, successes + 1) if 0 <= s <= trials]
    return max(bound / temperature + abs(here - log_z(s)) for s in neighbours)


def greedy_adversary(
    n_records: int, *, truncation: float, temperature: float, alpha: float = 1.0, beta: float = 1.0
) -> np.ndarray:
    """Local ε after each record added by Foulds et al.'s greedy adversary (App. A, Fig. 8).

    Starting from one success, the adversary adds, one at a time, whichever of a success or a
    failure gives the larger :func:`beta_bernoulli_local_epsilon`.

    Returns
    -------
    ndarray, shape (n_records,)
        Local ε of the datasets of size 1..n_records.
    """
    successes, path = (
        1,
        [
            beta_bernoulli_local_epsilon(
                1, 1, truncation=truncation, temperature=temperature, alpha=alpha, beta=beta
            )
        ],
    )
    for n in range(2, n_records + 1):
        options = [
            (
                beta_bernoulli_local_epsilon(
                    s, n, truncation=truncation, temperature=temperature, alpha=alpha, beta=beta
                ),
                s,
            )
            for s in (successes, successes + 1)
        ]
        best, successes = max(options)
        path.append(best)
    return np.array(path)
