"""The Gaussian mechanism on a vector of statistics, accounted in zero-concentrated DP.

Sources:

* Bun & Steinke (2016), "Concentrated Differential Privacy: Simplifications, Extensions, and
  Lower Bounds", Proposition 1.6: adding N(0, σ²) noise to every coordinate of a statistic
  h with L2 sensitivity Δ₂ = sup ||h(X) − h(X')||₂ over neighbouring X, X' is ρ-zCDP with
  ρ = Δ₂² / (2σ²). Proposition 1.3: ρ-zCDP implies (ρ + 2√(ρ log(1/δ)), δ)-DP for every
  δ > 0 (the conversion every textbook states; not the one used here).
* Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy",
  Corollary 13: ρ-zCDP implies (ε, δ)-DP with
  δ = inf_{α > 1} exp((α − 1)(αρ − ε)) / (α − 1) · (1 − 1/α)^α, tighter than Prop. 1.3.
  OpenDP implements it (``opendp.combinators.make_zCDP_to_approxDP``, module ``cks20``,
  derived from Steinke's reference implementation); this module uses OpenDP's conversion,
  with ``make_fix_delta``, and keeps no copy of it.

Guarantee: if ``sensitivity`` bounds ``||h(X) − h(X')||₂`` over every pair of neighbouring
datasets (under the stated neighbouring relation) and does not depend on the data, then
``h(X) + N(0, σ²)^d`` with σ from :func:`gaussian_calibration` is ρ-zCDP and (ε, δ)-DP.

Calibration (:func:`gaussian_calibration`): for the requested (ε, δ), σ is the smallest noise
scale for which OpenDP's chain ``make_fix_delta(make_zCDP_to_approxDP(make_gaussian(σ)), δ)``
certifies ``map(Δ₂) <= (ε, δ)`` (``opendp.binary_search_param``): equivalently ρ is the largest
ρ whose Corollary 13 conversion is at most ε at δ, and σ = Δ₂/√(2ρ). The ρ recorded is
OpenDP's own (rounded-up) privacy map of ``make_gaussian`` at Δ₂.

Noise comes from OpenDP by default (``opendp.measurements.make_gaussian`` on a vector of
floats with the L2 distance, which samples exactly on the floating-point grid and so avoids
floating-point attacks; Mironov, CCS 2012). The NumPy backend is for reproducible tests and
simulations only, like the Laplace one: not floating-point safe, and seeded noise is no noise
to anyone who knows the seed.

Order of operations of :func:`release_gaussian`: validate → check the budget and record the
event → draw → return. Bad input raises before anything is charged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pymc_dp.ledger import (
    PrivacyEvent,
    PrivacyLedger,
    seeded_noise_assumption,
    validate_delta,
    validate_epsilon,
)
from pymc_dp.mechanisms.laplace import NoiseBackend, _opendp, check_release_inputs

__all__ = [
    "GAUSSIAN_SOURCE",
    "NOISES",
    "GaussianCalibration",
    "gaussian_calibration",
    "release_gaussian",
    "validate_gaussian_delta",
    "validate_noise",
]

NOISES: tuple[str, ...] = ("laplace", "gaussian")
"""The noise distributions of the statistics route (``pymc_dp.sample(noise=...)``)."""

GAUSSIAN_SOURCE = (
    "Gaussian mechanism: Bun & Steinke 2016, Prop. 1.6 (ρ = Δ₂²/(2σ²)-zCDP); "
    "(ε, δ) by Canonne, Kamath & Steinke 2020, Cor. 13 (OpenDP make_zCDP_to_approxDP)"
)
"""Paper, section and equation of the Gaussian release (for the ledger)."""


def validate_noise(noise: str) -> str:
    """Return ``noise`` or raise ``ValueError`` unless it is one of :data:`NOISES`."""
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}. Nothing was released.")
    return noise


def validate_gaussian_delta(delta: float, name: str = "delta") -> float:
    """Return ``delta`` as a float, or raise ``ValueError`` unless 0 < δ < 1.

    The Gaussian mechanism is never pure DP: every (ε, δ) guarantee it has needs δ > 0.
    """
    return validate_delta(
        delta,
        name,
        positive=True,
        reason=(
            f" for the Gaussian mechanism (it is never (ε, 0)-DP: give e.g. {name}=1e-6, well "
            "below 1/n; nothing was released)"
        ),
    )


@dataclass(frozen=True)
class GaussianCalibration:
    """The noise of one Gaussian release and the guarantees OpenDP certifies for it.

    Attributes
    ----------
    scale : float
        σ, the standard deviation of the noise on every coordinate.
    rho : float
        ρ = Δ₂²/(2σ²) (OpenDP's rounded-up privacy map of ``make_gaussian``): the release is
        ρ-zCDP (Bun & Steinke 2016, Prop. 1.6).
    epsilon, delta : float
        The release is (epsilon, delta)-DP: OpenDP's conversion of ρ at δ (Canonne, Kamath &
        Steinke 2020, Cor. 13), at most the requested ε.
    sensitivity : float
        Δ₂, the L2 sensitivity the noise is calibrated to.

    Examples
    --------
    >>> from pymc_dp.mechanisms import gaussian_calibration
    >>> calibration = gaussian_calibration(sensitivity=1.0, epsilon=1.0, delta=1e-5)
    >>> round(calibration.scale, 3), round(calibration.rho, 4)  # σ, and ρ = Δ₂²/(2σ²)
    (4.045, 0.0306)
    """

    scale: float
    rho: float
    epsilon: float
    delta: float
    sensitivity: float


def _gaussian_measurement(scale: float):
    dp = _opendp()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    return dp.m.make_gaussian(*space, scale=scale)


def _approx_measurement(scale: float, delta: float):
    dp = _opendp()
    zcdp = _gaussian_measurement(scale)
    return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(zcdp), delta)


def gaussian_calibration(sensitivity: float, epsilon: float, delta: float) -> GaussianCalibration:
    """σ and ρ of an (epsilon, delta)-DP Gaussian release of a statistic with L2 ``sensitivity``.

    σ is the smallest scale whose OpenDP chain (zCDP Gaussian, converted to (ε, δ) by
    Canonne, Kamath & Steinke 2020, Cor. 13, at fixed δ) certifies (ε, δ) at Δ₂; ρ is then the
    largest ρ with conversion ≤ ε, and σ = Δ₂/√(2ρ) (Bun & Steinke 2016, Prop. 1.6). Cached:
    the same (Δ₂, ε, δ) always gives the same σ.

    Examples: Δ₂ = 1, δ = 1e-6 gives σ ≈ 4.53 at ε = 1 and ≈ 0.71 at ε = 10 (Prop. 1.3's
    conversion would need σ ≈ 5.35 at ε = 1).

    Raises
    ------
    ValueError
        If ``sensitivity`` or ``epsilon`` is not finite and > 0, or ``delta`` is not in (0, 1).

    Examples
    --------
    >>> from pymc_dp.mechanisms import gaussian_calibration
    >>> calibration = gaussian_calibration(sensitivity=1.0, epsilon=1.0, delta=1e-5)
    >>> round(calibration.scale, 3), round(calibration.rho, 4)  # σ, and ρ = Δ₂²/(2σ²)
    (4.045, 0.0306)
    """
    epsilon = validate_epsilon(epsilon)
    sensitivity = validate_epsilon(sensitivity, "sensitivity")
    delta = validate_gaussian_delta(delta)
    return _calibrate(sensitivity, epsilon, delta)


@lru_cache(maxsize=256)
def _calibrate(sensitivity: float, epsilon: float, delta: float) -> GaussianCalibration:
    dp = _opendp()
    scale = dp.binary_search_param(
        lambda s: _approx_measurement(s, delta), d_in=sensitivity, d_out=(epsilon, delta), T=float
    )
    certified_epsilon, certified_delta = _approx_measurement(scale, delta).map(sensitivity)
    if not (certified_epsilon <= epsilon and certified_delta <= delta):  # pragma: no cover
        raise RuntimeError("could not calibrate the OpenDP Gaussian scale")
    rho = float(_gaussian_measurement(scale).map(sensitivity))
    return GaussianCalibration(
        scale=float(scale),
        rho=rho,
        epsilon=float(epsilon),
        delta=float(delta),
        sensitivity=float(sensitivity),
    )


def release_gaussian(
    values: np.ndarray,
    *,
    sensitivity: float,
    epsilon: float,
    delta: float,
    ledger: PrivacyLedger,
    neighbouring: str,
    variables: Sequence[str],
    statistic: str,
    source: str = GAUSSIAN_SOURCE,
    backend: NoiseBackend = "opendp",
    rng: np.random.Generator | None = None,
    clamping: str = "",
) -> np.ndarray:
    """Release ``values + N(0, σ²)`` noise, once, through ``ledger``; (ε, δ)-DP and ρ-zCDP.

    Order of operations: validate inputs → check the budget and record the event in
    ``ledger`` → draw the noise → return. A failed check raises before any noise is drawn
    and leaves the ledger unchanged.

    Parameters
    ----------
    values : ndarray of float, any shape
        The exact statistic h(X). Must be finite.
    sensitivity : float
        Data-independent **L2** sensitivity Δ₂ of h under ``neighbouring`` (of the whole
        array, all entries at once).
    epsilon : float
        ε of the release (> 0).
    delta : float
        δ of the release, 0 < δ < 1 (the Gaussian mechanism is never pure DP).
    ledger : PrivacyLedger
        Charged before the noisy value is returned. The event has mechanism ``"gaussian"``,
        the L2 sensitivity, ``noise_scale`` σ and ``rho``.
    neighbouring : {"replace-one", "add-remove-one"}
        Neighbouring relation under which ``sensitivity`` holds.
    variables : sequence of str
        Model variables whose data the statistic reads (for the ledger).
    statistic : str
        What is released, in words (for the ledger).
    source : str
        Paper, section and equation (for the ledger).
    backend : {"opendp", "numpy"}
        Noise source. ``"numpy"`` is for tests and simulations only: its event records an
        ``unverified_assumption``, so a ledger holding it is not a guarantee.
    rng : numpy.random.Generator, optional
        Generator for the NumPy backend. Must be None for OpenDP.
    clamping : str
        Which records were clamped into their declared bounds (``PrivacyEvent.clamping``).

    Returns
    -------
    ndarray of float64, same shape as ``values``
        The noisy statistic, (epsilon, delta)-DP under ``neighbouring``.

    Raises
    ------
    InvalidPrivateDataError
        If ``values`` contains NaN or infinities.
    BudgetExceededError
        If the release would exceed the ledger's budget (its δ included).
    ValueError
        If epsilon, delta, sensitivity, neighbouring or backend is invalid.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc_dp
    >>> from pymc_dp.mechanisms import release_gaussian
    >>> ledger = pymc_dp.PrivacyLedger(budget=(1.0, 1e-5))
    >>> noisy = release_gaussian(np.array([12.0, 30.0]), sensitivity=1.0, epsilon=1.0,
    ...                          delta=1e-5, ledger=ledger, neighbouring="replace-one",
    ...                          variables=("y",), statistic="counts of y")
    >>> noisy.shape, ledger.events[0].mechanism, ledger.remaining()
    ((2,), 'gaussian', Remaining(epsilon=0, delta=0))
    """
    array = check_release_inputs(values, variables, neighbouring, backend, rng)
    calibration = gaussian_calibration(sensitivity, epsilon, delta)
    event = PrivacyEvent(
        mechanism="gaussian",
        epsilon=calibration.epsilon,
        delta=calibration.delta,
        sensitivity=calibration.sensitivity,
        neighbouring=neighbouring,
        variables=tuple(variables),
        noise_backend=backend,
        noise_scale=calibration.scale,
        statistic=statistic,
        source=source,
        unverified_assumption=_NUMPY_ASSUMPTION if backend == "numpy" else "",
        clamping=clamping,
        rho=calibration.rho,
    )
    ledger.charge(event)
    flat = array.ravel()
    if backend == "opendp":
        measurement = _gaussian_measurement(calibration.scale)
        noisy = np.asarray(measurement(flat.tolist()), dtype=np.float64)
    else:
        generator = rng if rng is not None else np.random.default_rng()
        noisy = flat + generator.normal(0.0, calibration.scale, size=flat.shape)
    return noisy.reshape(array.shape)


_NUMPY_ASSUMPTION = seeded_noise_assumption("NumPy floating-point Gaussian noise")
