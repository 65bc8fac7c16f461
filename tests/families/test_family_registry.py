"""The recogniser asks the registered families; a new family is one class and one entry.

Issue 23, item 4: a family owns its recognition (``claims``, ``recognise``) with everything
else about it, and :mod:`pymc_dp.analysis.bounded` only loops over
:data:`pymc_dp.families.BOUNDED_FAMILIES`. Checked here:

* every model form the bounded families take is claimed by exactly the family that owns it,
  and the conjugate pairs by none (they go to the conjugate recogniser);
* two families claiming one variable is a registry error, raised before any release;
* a family written in this test file, for an Exponential likelihood with declared bounds,
  joins by one registry entry: ``pymc_dp.analyse_model`` recognises it, and (integration)
  ``pymc_dp.sample`` releases its statistics, records its ``source`` and sensitivity in the
  ledger, and samples the exact conjugate posterior at a very large ε. Nothing else in the
  package is touched.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pymc_dp
from pymc_dp.analysis.bounded import bounded_family_of
from pymc_dp.families import BOUNDED_FAMILIES
from pymc_dp.families.bounded import (
    BoundedFamily,
    BoundedFound,
    BoundedLink,
    BoundedStructure,
    check_bounded_values,
)
from pymc_dp.families.recognition import refuse_parameters_reading_records, required_bounds
from pymc_dp.graph.reading import OBSERVED, distribution_name, record_values, require_as_is

RNG = np.random.default_rng(23)


def _models() -> dict[str, tuple[pm.Model, str | None]]:
    """Observed variable ``y`` of each form, with the family expected to claim it."""
    n = 60
    g = RNG.integers(0, 3, n)
    x = RNG.uniform(-1, 1, (n, 2))
    counts = RNG.poisson(2, n)
    values = RNG.normal(size=n)
    flags = RNG.integers(0, 2, n)
    models = {}
    with pm.Model() as m:
        pm.Poisson("y", mu=pm.Gamma("lam", 2, 1), observed=counts)
    models["poisson"] = (m, "poisson")
    with pm.Model() as m:
        lam = pm.Gamma("lam", 2, 1, shape=3)
        pm.Poisson("y", mu=lam[pm.Data("g", g)], observed=counts)
    models["poisson per group"] = (m, "poisson")
    with pm.Model() as m:
        a = pm.Normal("a", shape=3)
        pm.Poisson("y", mu=pm.math.exp(a[pm.Data("g", g)]), observed=counts)
    models["poisson with a log link"] = (m, "poisson")
    with pm.Model() as m:
        pm.Normal("y", pm.Normal("mu"), pm.HalfNormal("sigma"), observed=values)
    models["normal"] = (m, "normal")
    with pm.Model() as m:
        theta = pm.Normal("theta", shape=3)
        pm.Normal("y", theta[pm.Data("g", g)], pm.HalfNormal("sigma"), observed=values)
    models["group means"] = (m, "normal")
    with pm.Model() as m:
        sigma = pm.HalfNormal("sigma", shape=3)
        pm.Normal("y", 0.0, sigma[pm.Data("g", g)], observed=values)
    models["an sd per group"] = (m, "normal")
    with pm.Model() as m:
        mu = pm.Data("X", x) @ pm.Normal("beta", shape=2) + pm.Normal("alpha")
        pm.Normal("y", mu, pm.HalfNormal("sigma"), observed=values)
    models["regression"] = (m, "linear-regression")
    with pm.Model() as m:
        mu = pm.Data("X", x) @ pm.Normal("beta", shape=2)
        pm.Normal("y", mu, pm.HalfNormal("sigma", shape=3)[pm.Data("g", g)], observed=values)
    models["regression with an sd per group (refused by its family)"] = (m, "linear-regression")
    with pm.Model() as m:
        z = pm.Normal("z", shape=3)
        pm.Bernoulli("y", logit_p=pm.Normal("mu") + z[pm.Data("g", g)], observed=flags)
    models["varying-intercept logistic"] = (m, "cell-counts")
    with pm.Model() as m:
        pm.Bernoulli("y", p=pm.Beta("p", 1, 1), observed=flags)
    models["beta-bernoulli (conjugate)"] = (m, None)
    with pm.Model() as m:
        p = pm.Beta("p", 1, 1, shape=3)
        pm.Bernoulli("y", p=p[pm.Data("g", g)], observed=flags)
    models["beta-bernoulli per group (conjugate)"] = (m, None)
    with pm.Model() as m:
        pm.Exponential("y", lam=pm.Gamma("lam", 2, 1), observed=values**2)
    models["exponential (no family)"] = (m, None)
    return models


@pytest.mark.parametrize("form", list(_models()))
def test_exactly_the_owning_family_claims_each_form(form):
    model, expected = _models()[form]
    rv = model["y"]
    claiming = [name for name, f in BOUNDED_FAMILIES.items() if f.claims(model, rv)]
    assert claiming == ([] if expected is None else [expected])
    family = bounded_family_of(model, rv)
    assert (family.name if family is not None else None) == expected


def test_two_families_claiming_one_variable_is_refused_before_any_release(monkeypatch):
    model, _ = _models()["normal"]
    monkeypatch.setitem(BOUNDED_FAMILIES, "second-normal", type(BOUNDED_FAMILIES["normal"])())
    ledger = pymc_dp.PrivacyLedger()
    with pytest.raises(RuntimeError, match=r"claimed by several bounded families"):
        pymc_dp.sample(10, epsilon=1.0, model=model, data_bounds={"y": (-5, 5)}, ledger=ledger)
    assert len(ledger.events) == 0


# --- a family written outside the package -----------------------------------------------


class ExponentialFamily(BoundedFamily):
    """Exponential(λ) records in a declared [0, c], λ a scalar graph: statistics (n, Σy/c).

    PyMC's Exponential carries its scale s = 1/λ as its parameter, so the family reads s.
    Replace-one, one group: n is public and only Σy/c is released; one record moves it by at
    most 1 (L1 = L2 = 1). Add-remove-one: (n, Σy/c) changes by at most (1, 1) (L1 2, L2 √2).
    Plug-in: −n log s − c Σ(y/c) / s. Noise-aware (for this test only, not a calibrated
    model): the sum's CLT law given n, with the noise's variance added.
    """

    name = "test-exponential"
    likelihood = "exponential"
    pattern = "Exponential(lam) with data_bounds on the values (a test family)"
    source = "A test family: Laplace mechanism on (n, Σy/c) (Dwork et al. 2006)"

    def claims(self, model, rv):
        return distribution_name(rv, {"exponential": pm.Exponential}) is not None

    def recognise(self, model, rv, declarations):
        name = rv.name
        scale = rv.owner.op.dist_params(rv.owner)[0]
        values = model.rvs_to_values[rv]
        container = require_as_is(values, name, OBSERVED)
        bounds = required_bounds(declarations.data_bounds, name, name, "values")
        if bounds[0] != 0:
            raise ValueError(f"data_bounds[{name!r}] of Exponential values must start at 0")
        refuse_parameters_reading_records(name, {"scale": scale}, [container])
        structure = BoundedStructure(
            observed=name, family=self, bounds=bounds, parameters={"scale": scale}
        )
        data = record_values(values, name, OBSERVED).reshape(-1)
        return BoundedFound(BoundedLink(structure, data), (), (name,))

    def records(self, link):
        low, high = link.structure.bounds
        values = np.asarray(link.data, dtype=np.float64).reshape(-1)
        return (check_bounded_values(values, low, high, link.observed, "values", False),)

    def statistics(self, link):
        (values,) = self.records(link)
        return np.array([[values.size, np.sum(values) / link.structure.bounds[1]]])

    def component_names(self, structure):
        return ["n", f"sum({structure.observed})/{structure.bounds[1]:g}"]

    def released_components(self, structure, neighbouring):
        return np.array([1]) if neighbouring == "replace-one" else np.array([0, 1])

    def sensitivity(self, structure, neighbouring):
        return 1.0 if neighbouring == "replace-one" else 2.0

    def l2_sensitivity(self, structure, neighbouring):
        return 1.0 if neighbouring == "replace-one" else math.sqrt(2.0)

    def project(self, full, structure, scale, neighbouring):
        n = np.maximum(full[:, 0], 0.0)
        return np.column_stack([n, np.clip(full[:, 1], 0.0, n)])

    def plugin_log_likelihood(self, parameters, table, structure):
        scale = pt.as_tensor(parameters["scale"])
        return -table[0, 0] * pt.log(scale) - structure.bounds[1] * table[0, 1] / scale

    def noise_aware_log_likelihood(
        self, parameters, released, scale, public_n, structure, neighbouring, noise="laplace"
    ):
        mean = pt.as_tensor(parameters["scale"]) / structure.bounds[1]  # of one y/c
        n, total = public_n[0], released[0, 0]
        variance = n * mean**2 + (2 * scale**2 if noise == "laplace" else scale**2)
        return pm.logp(pm.Normal.dist(n * mean, pt.sqrt(variance)), total)

    def describe(self, structure, neighbouring):
        return f"(n, Σy/c) of {structure.observed}, c = {structure.bounds[1]:g}"


def _exponential_model(n=2000):
    y = np.minimum(RNG.exponential(1 / 1.5, n), 20.0)
    with pm.Model() as model:
        lam = pm.Gamma("lam", 2.0, 1.0)
        pm.Exponential("y", lam=lam, observed=y)
    return model, y


def test_a_family_joins_by_one_registry_entry(monkeypatch):
    model, y = _exponential_model()
    with pytest.raises(pymc_dp.NonPrivateModelError, match="unsupported"):
        pymc_dp.analyse_model(model, data_bounds={"y": (0, 20)})
    monkeypatch.setitem(BOUNDED_FAMILIES, "test-exponential", ExponentialFamily())
    link = pymc_dp.analyse_model(model, data_bounds={"y": (0, 20)})["y"]
    assert link.structure.family is BOUNDED_FAMILIES["test-exponential"]
    np.testing.assert_allclose(link.statistics(), [[y.size, y.sum() / 20]])
    with pytest.raises(pymc_dp.NonPrivateModelError, match=r"data_bounds\['y'\]"):
        pymc_dp.analyse_model(model)


@pytest.mark.integration
def test_a_new_family_is_released_ledgered_and_sampled_through_pymc_dp_sample(monkeypatch):
    """At ε = 10⁴ the plug-in posterior is the exact Gamma(2 + n, 1 + Σy) (noise sd 10⁻⁴ on
    Σy/c): mean within 5 MCSE (4,000 draws), sd within 10%."""
    monkeypatch.setitem(BOUNDED_FAMILIES, "test-exponential", ExponentialFamily())
    model, y = _exponential_model()
    ledger = pymc_dp.PrivacyLedger()
    with model:
        idata = pymc_dp.sample(
            2000,
            tune=1000,
            chains=2,
            epsilon=1e4,
            data_bounds={"y": (0, 20)},
            inference="plugin",
            ledger=ledger,
            random_seed=5,
            progressbar=False,
        )
    (event,) = ledger.events
    assert event.source == ExponentialFamily.source
    assert event.sensitivity == 1.0
    assert event.noise_scale == pytest.approx(1e-4, rel=1e-9)
    exact = stats.gamma(2.0 + y.size, scale=1.0 / (1.0 + y.sum()))
    draws = idata["posterior"]["lam"].values.reshape(-1)
    mcse = draws.std() / math.sqrt(draws.size / 4)  # a conservative effective size
    assert abs(draws.mean() - exact.mean()) < 5 * mcse
    assert draws.std() == pytest.approx(exact.std(), rel=0.1)
    assert "y" not in idata.get("observed_data", {})
