"""Reprs of the objects that hold records show no value (review finding 6).

A link, a block or a release printed by a debugger, a log or an error report used to show
its raw records (``ConjugateLink(data=array([...]))``). Every dataclass of pymc_dp with an
array or graph-variable field now prints shapes and names only
(:func:`pymc_dp.errors.value_free_repr`).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import numpy as np
import pymc as pm
import pytest
from pytensor.graph.basic import Variable

import pymc_dp
from pymc_dp.analysis import recognise
from pymc_dp.distributions import TruncatedBeta

SENTINEL = 7357.25  # a value no repr shows unless it prints the array
COUNTS = np.array([737, 912, 613, 848, 591])
LABELS = np.array([0, 1, 1, 0, 1])


def _holds_values(field: dataclasses.Field) -> bool:
    annotation = str(field.type)
    return "ndarray" in annotation or "Variable" in annotation


def _record_holding_dataclasses():
    found = []
    for info in pkgutil.walk_packages(pymc_dp.__path__, "pymc_dp."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and dataclasses.is_dataclass(obj)
                and obj.__module__ == module.__name__
                and any(_holds_values(f) for f in dataclasses.fields(obj))
            ):
                found.append(obj)
    return found


CLASSES = _record_holding_dataclasses()


def test_the_walk_finds_the_link_classes():
    names = {cls.__name__ for cls in CLASSES}
    assert {"ConjugateLink", "BoundedLink", "BoundedLikelihood", "ReleasedStatistics"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_every_record_holding_dataclass_prints_no_value(cls):
    instance = object.__new__(cls)
    for field in dataclasses.fields(cls):
        value = np.full(3, SENTINEL) if _holds_values(field) else None
        object.__setattr__(instance, field.name, value)
    shown = repr(instance)
    assert str(SENTINEL)[:4] not in shown, shown
    assert shown.startswith(cls.__name__ + "(")


def _binomial_model():
    with pm.Model(coords={"group": ["a", "b"]}) as model:
        rate = pm.Beta("rate", 1.0, 1.0, dims="group")
        pm.Binomial("hits", n=1000, p=rate[LABELS], observed=COUNTS)
    return model


def _shows_a_record(text: str) -> bool:
    return any(str(count) in text for count in COUNTS)


def test_a_conjugate_link_prints_shapes_not_records():
    recognised = recognise(_binomial_model(), "laplace")
    link = recognised.blocks["hits"]
    assert type(link).__name__ == "ConjugateLink"
    for shown in (repr(link), repr(recognised), str(link)):
        assert not _shows_a_record(shown), shown
        assert "shape=(5,)" in shown


def test_a_tempered_block_prints_shapes_not_statistics():
    with pm.Model() as model:
        rate = TruncatedBeta("rate", 1.0, 1.0, 0.1)
        pm.Binomial("hits", n=1000, p=rate, observed=COUNTS)
    analysis = recognise(model, "ops").blocks
    exact = str(int(COUNTS.sum()))  # the exact successes, a record-derived value
    assert exact in repr(analysis.blocks[0].statistics.tolist())
    shown = repr(analysis)
    assert exact not in shown and not _shows_a_record(shown), shown
    assert "BoundedLikelihood(observed='hits'" in shown


def test_graph_constants_print_their_name_not_their_data():
    from pymc_dp.errors import value_free_repr

    @value_free_repr
    @dataclasses.dataclass
    class Holder:
        variable: Variable

    constant = pm.pytensorf.convert_data(COUNTS)
    assert not _shows_a_record(repr(Holder(constant)))
