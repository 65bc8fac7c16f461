"""Privacy audit of the group means' release: the exact loss of what ``pymc_dp.sample`` draws.

``pm.Normal("y", mu=theta[g], sigma=sigma, observed=y)`` with private labels g ∈ {0, 1, 2}
and ``data_bounds={"y": (a, b)}`` releases, per cell c, the weighted statistics
S_c = (c₀ n_c, c₁ Σw_c, c₂ Σw²_c), w = (y − a)/(b − a) − ½ ∈ [−½, ½], with one Laplace(β)
draw per entry (OpenDP's vector Laplace: the same β on every entry). The weights are the
documented split (docs/user_guide/models.md): shares (20%, 30%, 50%) of ε over the entries'
ranges (1, ½, ¼), c = (0.2, 0.6, 2). Independent Laplace noise makes the privacy loss
between neighbours D, D' exact, not a bound:

    L(D, D') = sup_o |log p(o | D)/p(o | D')| = Σ_j |S_j(D) − S_j(D')| / β_j.

One record adds r(w) = c₀ + c₁|w| + c₂w² ≤ 0.2 + 0.3 + 0.5 = 1 to its row's L1 norm (equality
at w = ±½). Replace-one: a record that changes cell leaves one row and enters another,
L = (r(w) + r(w'))/β ≤ 2/β, reached by a record at a bound moving to another cell at a bound;
within a cell L = (c₁|w − w'| + c₂|w² − w'²|)/β ≤ 0.845/β (w = −0.15, w' = ½). Add-remove-one:
L = r(w)/β ≤ 1/β. The route calibrates β = Δ/ε with Δ = 2 (replace-one) or 1 (add-remove-one),
each rounded up by 10⁻¹⁴, so max L = ε/(1 + 10⁻¹⁴): the calibration is tight, not loose.

What is checked, on what the route really draws (a spy on the OpenDP measurement
``pymc_dp.mechanisms.laplace.release_laplace`` draws from, which sees the scale and the exact
vector the noise is added to): the draw happens once, at the ledger event's scale, on the
statistics recomputed here from the records (independently of the family); the exact loss
over brute-force neighbours is ≤ ε and reaches ε; a route broken to halve its noise exceeds ε
(2ε) by the same computation; an empirical audit (:func:`pymc_dp.audit.epsilon_lower_bound`)
of the captured release replayed with NumPy stays ≤ ε and catches the halved noise. The fast
tests stop the run at ``pm.sample`` (the release is made and charged before it; sampling is
post-processing); the integration test samples and reads the ledger from the returned trace.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytest

import pymc_dp
from pymc_dp import PrivacyLedger, ReleasedRunFailedError
from pymc_dp.audit import epsilon_lower_bound
from pymc_dp.mechanisms import laplace, statistics

LOW, HIGH = -3.0, 4.0  # asymmetric, width 7: a wrong centring or scaling changes S
CELLS = 3
EPSILON = 1.0
TOLERANCE = 1e-12  # relative, for floating-point sums of a few terms
SHARES = np.array([0.2, 0.3, 0.5])  # n, Σw, Σw² (docs/user_guide/models.md)
RANGES = np.array([1.0, 0.5, 0.25])  # one record moves n by 1, |w| ≤ ½, w² ≤ ¼
WEIGHTS = SHARES / RANGES  # (0.2, 0.6, 2)
STATED_SENSITIVITY = {"replace-one": 2.0, "add-remove-one": 1.0}  # docs: L1, per relation

_RNG = np.random.default_rng(20261207)
LABELS = np.r_[0, 1, _RNG.integers(0, CELLS, 28)]
VALUES = np.r_[LOW, HIGH, np.clip(_RNG.normal(LABELS[2:] - 0.5, 1.2), LOW, HIGH)]
# worst-case neighbours: record 0 (at the lower bound, cell 0) moves to the upper bound of
# cell 2 (replace-one); a record at the upper bound of cell 2 is added (add-remove-one)
REPLACED = (VALUES.copy(), LABELS.copy())
REPLACED[0][0], REPLACED[1][0] = HIGH, 2
ADDED = (np.r_[VALUES, HIGH], np.r_[LABELS, 2])
# candidate records: the bounds, the midpoint, eighths, the within-cell maximiser
# w = ∓0.15, and seeded values anywhere in the bounds; with every label
_GRID_U = np.r_[np.arange(9) / 8, 0.35, 0.65, np.random.default_rng(7).uniform(0, 1, 6)]
CANDIDATES = [(LOW + u * (HIGH - LOW), label) for u in _GRID_U for label in range(CELLS)]


def weighted_table(values, labels) -> np.ndarray:
    """S (CELLS, 3) recomputed from the records as documented, independently of the family."""
    values = np.asarray(values, dtype=np.float64)
    w = (values - LOW) / (HIGH - LOW) - 0.5
    table = np.zeros((CELLS, 3))
    np.add.at(table, np.asarray(labels), np.column_stack([np.ones_like(w), w, w**2]))
    return table * WEIGHTS


def exact_loss(table, other, scales) -> float:
    """Σ_j |S_j(D) − S_j(D')| / β_j: the privacy loss of independent Laplace noise."""
    return float(np.sum(np.abs(np.asarray(table) - np.asarray(other)) / scales))


@dataclass(frozen=True)
class Draw:
    """One noise draw the route made: the scale, the exact vector and the noisy result."""

    scale: float
    values: np.ndarray  # (CELLS, 3)
    noisy: np.ndarray  # (CELLS, 3)

    @property
    def scales(self) -> np.ndarray:
        """The scale on each entry: OpenDP's vector Laplace draws every entry at ``scale``."""
        return np.full(self.values.shape, self.scale)


@dataclass(frozen=True)
class Run:
    draws: list[Draw]
    ledger: PrivacyLedger

    @property
    def draw(self) -> Draw:
        (draw,) = self.draws
        return draw


def _spy_on_the_noise(patch: pytest.MonkeyPatch, draws: list[Draw], draw_factor: float = 1.0):
    """Wrap the OpenDP measurement ``release_laplace`` builds: calibration (``map``) passes
    through, every draw is recorded. ``draw_factor`` ≠ 1 breaks the route: it draws at
    ``draw_factor`` times the scale it calibrated and recorded."""
    real = laplace._opendp_measurement

    class Measurement:
        def __init__(self, scale):
            self.scale = float(scale)
            self._measurement = real(scale)

        def map(self, d_in):
            return self._measurement.map(d_in)

        def __call__(self, values):
            scale = self.scale * draw_factor
            noisy = real(scale)(values)
            draws.append(
                Draw(
                    scale,
                    np.asarray(values, dtype=np.float64).reshape(CELLS, 3),
                    np.asarray(noisy, dtype=np.float64).reshape(CELLS, 3),
                )
            )
            return noisy

    patch.setattr(laplace, "_opendp_measurement", Measurement)


def _halve_the_sensitivity(patch: pytest.MonkeyPatch) -> None:
    """A broken route: the release is calibrated (and recorded) at half its sensitivity."""
    real = statistics.release_laplace

    @functools.wraps(real)
    def halved(values, *, sensitivity, **kwargs):
        return real(values, sensitivity=sensitivity / 2.0, **kwargs)

    patch.setattr(statistics, "release_laplace", halved)  # the name _release calls


class _Stopped(Exception):
    """Raised in place of sampling: the release was made and charged before."""


def _model(values, labels) -> pm.Model:
    with pm.Model() as model:
        g = pm.Data("g", labels)  # private labels (default deny)
        theta = pm.Normal("theta", 0.0, 5.0, shape=CELLS)
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal("y", mu=theta[g], sigma=sigma, observed=values)
    return model


def _release(data, neighbouring, broken: str = "") -> Run:
    """``pymc_dp.sample`` on ``data`` up to ``pm.sample`` (stubbed), with the spy."""
    draws: list[Draw] = []
    ledger = PrivacyLedger()
    with pytest.MonkeyPatch.context() as patch:
        _spy_on_the_noise(patch, draws, 0.5 if broken == "draw" else 1.0)
        if broken == "sensitivity":
            _halve_the_sensitivity(patch)

        @functools.wraps(pm.sample)
        def stub(*args, **kwargs):
            raise _Stopped

        patch.setattr(pm, "sample", stub)  # with nutpie off every route calls pm.sample

        patch.setattr("pymc_dp.routes.nutpie_nuts.nutpie_installed", lambda: False)
        with pytest.raises(ReleasedRunFailedError) as failed:
            pymc_dp.sample(
                5,
                model=_model(*data),
                epsilon=EPSILON,
                data_bounds={"y": (LOW, HIGH)},
                neighbouring=neighbouring,
                ledger=ledger,
                progressbar=False,
            )
        assert isinstance(failed.value.__cause__, _Stopped)
    return Run(draws, ledger)


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, str, str], Run]:
    """(relation, data set, breakage) → the run: D and its worst-case neighbour under each
    relation, sound and broken (sensitivity halved; drawn at half the recorded scale)."""
    datasets = {"D": (VALUES, LABELS), "replaced": REPLACED, "added": ADDED}
    cases = [
        ("replace-one", "D", ""),
        ("replace-one", "replaced", ""),
        ("add-remove-one", "D", ""),
        ("add-remove-one", "added", ""),
        ("replace-one", "D", "sensitivity"),
        ("replace-one", "replaced", "sensitivity"),
        ("add-remove-one", "D", "sensitivity"),
        ("add-remove-one", "added", "sensitivity"),
        ("replace-one", "D", "draw"),
    ]
    return {case: _release(datasets[case[1]], case[0], case[2]) for case in cases}


NEIGHBOUR = {"replace-one": "replaced", "add-remove-one": "added"}


def _neighbours(neighbouring):
    """Brute-force neighbouring pairs (D, D', the records that differ): every record of D
    replaced by every candidate (replace-one), or every candidate added to D and every record
    removed from it (add-remove-one); and, replace-one, every candidate replaced by every
    candidate (record 0 of D set to the first)."""
    values, labels = list(VALUES), list(LABELS)
    if neighbouring == "replace-one":
        for i, (v, g) in itertools.product(range(len(values)), CANDIDATES):
            other = ([*values[:i], v, *values[i + 1 :]], [*labels[:i], g, *labels[i + 1 :]])
            yield (values, labels), other, [(values[i], labels[i]), (v, g)]
        for (v0, g0), (v1, g1) in itertools.product(CANDIDATES, CANDIDATES):
            d0 = ([v0, *values[1:]], [g0, *labels[1:]])
            yield d0, ([v1, *values[1:]], [g1, *labels[1:]]), [(v0, g0), (v1, g1)]
    else:
        for v, g in CANDIDATES:
            yield (values, labels), ([*values, v], [*labels, g]), [(v, g)]
        for i in range(len(values)):
            other = ([*values[:i], *values[i + 1 :]], [*labels[:i], *labels[i + 1 :]])
            yield (values, labels), other, [(values[i], labels[i])]


def _max_exact_loss(neighbouring, scales) -> tuple[float, list]:
    """The largest exact loss over :func:`_neighbours`, and the records that differ there."""
    worst, where = -1.0, []
    for d0, d1, changed in _neighbours(neighbouring):
        loss = exact_loss(weighted_table(*d0), weighted_table(*d1), scales)
        if loss > worst:
            worst, where = loss, changed
    return worst, where


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_the_route_draws_once_at_the_events_scale_on_the_documented_statistics(runs, neighbouring):
    """One draw per run and one event; the draw's scale is the event's noise scale, Δ/ε with
    the documented Δ, the same on every data set (data-independent); the vector it is added
    to is S recomputed here from the records (layout (cell, entry), weights c)."""
    for name in ("D", NEIGHBOUR[neighbouring]):
        run = runs[(neighbouring, name, "")]
        (event,) = run.ledger.events
        draw = run.draw
        assert (event.mechanism, event.neighbouring) == ("laplace", neighbouring)
        assert event.epsilon == EPSILON and event.variables == ("y", "g")
        assert draw.scale == event.noise_scale  # what is drawn is what is recorded
        stated = STATED_SENSITIVITY[neighbouring]
        assert event.sensitivity == pytest.approx(stated, rel=1e-13)
        assert draw.scale == pytest.approx(stated / EPSILON, rel=1e-13)
        data = (VALUES, LABELS) if name == "D" else (REPLACED if name == "replaced" else ADDED)
        np.testing.assert_allclose(draw.values, weighted_table(*data), rtol=1e-12, atol=1e-15)
        assert not np.array_equal(draw.noisy, draw.values)
    scales = {runs[(neighbouring, name, "")].draw.scale for name in ("D", NEIGHBOUR[neighbouring])}
    assert len(scales) == 1


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_exact_privacy_loss_of_the_drawn_release_is_at_most_epsilon_and_reaches_it(
    runs, neighbouring
):
    """max over brute-force neighbours of Σ_j |S_j(D) − S_j(D')|/β_j, with β_j the scales the
    route drew at, is ≤ ε and = ε/(1 + 10⁻¹⁴), reached by a record at a bound (changing cell
    under replace-one); and the loss between the two statistics the route itself drew from
    (D and its worst-case neighbour) is ε too."""
    d, neighbour = (
        runs[(neighbouring, "D", "")].draw,
        runs[(neighbouring, NEIGHBOUR[neighbouring], "")].draw,
    )
    worst, changed = _max_exact_loss(neighbouring, d.scales)
    assert worst <= EPSILON * (1 + TOLERANCE)
    assert worst >= 0.9 * EPSILON
    assert worst == pytest.approx(EPSILON, rel=1e-9)  # tight: nothing wasted
    assert all(v in (LOW, HIGH) for v, _ in changed)
    if neighbouring == "replace-one":
        assert len({g for _, g in changed}) == 2  # a record changed cell
    drawn = exact_loss(d.values, neighbour.values, d.scales)
    assert drawn <= EPSILON * (1 + TOLERANCE)
    assert drawn == pytest.approx(EPSILON, rel=1e-9)


@pytest.mark.parametrize(
    ("neighbouring", "broken"),
    [("replace-one", "sensitivity"), ("add-remove-one", "sensitivity"), ("replace-one", "draw")],
)
def test_exact_privacy_loss_catches_a_route_with_half_the_noise(runs, neighbouring, broken):
    """The same computation on a route broken through the same public call: calibrated at
    half its sensitivity (the event agrees with the draw, so only the loss can see it) or
    drawing at half the scale it records (the event disagrees too). Loss 2ε > ε."""
    run = runs[(neighbouring, "D", broken)]
    (event,) = run.ledger.events
    draw = run.draw
    if broken == "sensitivity":
        assert draw.scale == event.noise_scale
    else:
        assert draw.scale == pytest.approx(event.noise_scale / 2.0, rel=1e-15)
    worst, _ = _max_exact_loss(neighbouring, draw.scales)
    assert worst > EPSILON
    assert worst == pytest.approx(2.0 * EPSILON, rel=1e-9)


def _replayed(draw: Draw, neighbour: Draw, runs_per_side: int, rng: np.random.Generator):
    """The captured release replayed: S(D) and S(D') plus fresh Laplace noise at the drawn
    scales, ``runs_per_side`` times each."""

    def replay(values):
        noise = rng.laplace(0.0, 1.0, size=(runs_per_side, *values.shape)) * draw.scales
        return values + noise

    return replay(draw.values), replay(neighbour.values)


@pytest.mark.parametrize("neighbouring", ["replace-one", "add-remove-one"])
def test_audit_of_the_replayed_release_stays_below_epsilon_and_catches_halved_noise(
    runs, neighbouring
):
    """The worst-case pair the route drew from (D and its neighbour), replayed 300,000 times
    each. Event, fixed from the pair before any output: every entry that differs lies on the
    far side of S_j(D) from S_j(D'). On it p(o | D)/p(o | D') = exp(Σ_j |ΔS_j|/β_j) (= e^ε
    for the sound release), and P(· | D) = 2⁻ᵏ (k = 6 changed entries, replace-one; 3,
    add-remove-one). The sound release's lower bound (α = 0.05) is ≤ ε and has power
    (> 0.75 ε); the route broken to half its sensitivity (β halved, loss 2ε) is caught."""
    runs_per_side = 300_000
    bounds = {}
    for broken in ("", "sensitivity"):
        d = runs[(neighbouring, "D", broken)].draw
        neighbour = runs[(neighbouring, NEIGHBOUR[neighbouring], broken)].draw
        differs = ~np.isclose(d.values, neighbour.values, rtol=0, atol=1e-12)
        away = np.sign(d.values - neighbour.values)

        def event(outputs, d=d, differs=differs, away=away):
            beyond = (outputs - d.values) * away >= 0
            return np.all(beyond | ~differs, axis=(1, 2))

        outputs_d, outputs_neighbour = _replayed(
            d, neighbour, runs_per_side, np.random.default_rng(31 if broken else 30)
        )
        bounds[broken] = epsilon_lower_bound(outputs_d, outputs_neighbour, event, vectorized=True)
    assert 0.75 * EPSILON < bounds[""] <= EPSILON
    assert bounds["sensitivity"] > EPSILON + 0.5


@pytest.mark.integration
def test_a_sampled_trace_holds_the_release_drawn_and_its_ledger_the_drawn_scale():
    """A real run (NUTS, 5 draws): the ledger read from the trace has one event whose noise
    scale is the scale drawn at; the released statistics in the trace are exactly the noisy
    vector drawn; the exact loss of that release over the brute-force neighbours is ≤ ε and
    reaches it."""
    draws: list[Draw] = []
    with pytest.MonkeyPatch.context() as patch:
        _spy_on_the_noise(patch, draws)
        idata = pymc_dp.sample(
            5,
            tune=5,
            chains=1,
            model=_model(VALUES, LABELS),
            epsilon=EPSILON,
            data_bounds={"y": (LOW, HIGH)},
            progressbar=False,
            random_seed=5,
        )
    (draw,) = draws
    (event,) = PrivacyLedger.from_datatree(idata).events
    assert draw.scale == event.noise_scale
    assert event.sensitivity == pytest.approx(2.0, rel=1e-13)
    np.testing.assert_allclose(draw.values, weighted_table(VALUES, LABELS), rtol=1e-12)
    np.testing.assert_array_equal(idata["released_statistics"]["y"].values, draw.noisy)
    worst, _ = _max_exact_loss("replace-one", np.full(draw.values.shape, event.noise_scale))
    assert worst <= EPSILON * (1 + TOLERANCE)
    assert worst == pytest.approx(EPSILON, rel=1e-9)
