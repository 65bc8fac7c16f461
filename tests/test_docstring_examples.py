"""Every public function and class page has an Examples section, and every one runs as written.

The pages are those of the API reference (docs/api/index.rst, docs/api/mechanisms.rst): the
names in ``pymc_dp.__all__`` and ``pymc_dp.mechanisms.__all__`` that are functions or
classes, the noise-aware step, and the public methods of those classes that have an Examples
section of their own. Each Examples section is run with :mod:`doctest` (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``), in a fresh namespace, in a temporary working directory (an example
may write a session file): it must import what it uses. The examples that sample end to end
(``pymc_dp.sample``, a step run by ``pm.sample``) take seconds each and are in the
``integration`` tier; the others are fast.
"""

import doctest
import inspect

import pytest
from numpydoc.docscrape import NumpyDocString

import pymc_dp
import pymc_dp.mechanisms
from pymc_dp.steps.noise_aware_gibbs import NoiseAwareConjugateGibbs


def _pages() -> dict[str, object]:
    pages = {
        f"pymc_dp.{name}": getattr(pymc_dp, name)
        for name in pymc_dp.__all__
        if inspect.isfunction(getattr(pymc_dp, name)) or inspect.isclass(getattr(pymc_dp, name))
    }
    pages |= {
        f"pymc_dp.mechanisms.{name}": getattr(pymc_dp.mechanisms, name)
        for name in pymc_dp.mechanisms.__all__
        if inspect.isfunction(getattr(pymc_dp.mechanisms, name))
        or inspect.isclass(getattr(pymc_dp.mechanisms, name))
    }
    pages["pymc_dp.steps.noise_aware_gibbs.NoiseAwareConjugateGibbs"] = NoiseAwareConjugateGibbs
    pages["pymc_dp.PrivacySession.hold"] = pymc_dp.PrivacySession.hold
    return pages


PAGES = _pages()

SAMPLING = {
    "pymc_dp.Data",
    "pymc_dp.NaiveBayesHMMGibbs",
    "pymc_dp.PrivacySession",
    "pymc_dp.PrivateConjugateGibbs",
    "pymc_dp.PrivateMetropolis",
    "pymc_dp.ReleasedRunFailedError",
    "pymc_dp.TemperedConjugateGibbs",
    "pymc_dp.UncertifiedTraceError",
    "pymc_dp.UncertifiedTraceWarning",
    "pymc_dp.allocate",
    "pymc_dp.plan",
    "pymc_dp.private_trace",
    "pymc_dp.report",
    "pymc_dp.sample",
    "pymc_dp.sample_posterior_predictive",
    "pymc_dp.steps.noise_aware_gibbs.NoiseAwareConjugateGibbs",
    "pymc_dp.to_netcdf",
}
"""Pages whose examples sample end to end (integration tier)."""


def _examples(name: str) -> list[doctest.DocTest]:
    """The doctests of the page ``name``: its own docstring's, and for a class those of its
    public methods defined in pymc_dp, except a method with a page of its own (run there, in
    its own directory: ``PrivacySession.hold`` opens the same session file)."""
    obj = PAGES[name]
    finder = doctest.DocTestFinder(recurse=inspect.isclass(obj), exclude_empty=True)
    tests = finder.find(obj, name, globs={})
    return [
        t
        for t in tests
        if t.name == name or (t.name not in PAGES and not t.name.rsplit(".", 1)[1].startswith("_"))
    ]


def test_the_pages_are_the_api_reference():
    assert "pymc_dp.sample" in PAGES and "pymc_dp.mechanisms.release_laplace" in PAGES
    assert SAMPLING <= PAGES.keys()
    assert len(PAGES) == 46


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_page_has_an_examples_section(name):
    doc = inspect.getdoc(PAGES[name])
    assert doc, f"{name} has no docstring"
    examples = NumpyDocString(doc)["Examples"]
    assert any(">>>" in line for line in examples), f"{name} has no Examples section"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.integration) if name in SAMPLING else name
        for name in sorted(PAGES)
    ],
)
def test_examples_run_as_written(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tests = _examples(name)
    assert tests, f"{name}: no example found"
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    report = []
    for test in tests:
        skipped = [e for e in test.examples if e.options.get(doctest.SKIP)]
        assert not skipped, f"{test.name}: an example is skipped ({skipped[0].source!r})"
        runner.run(test, out=report.append)
    if report:
        pytest.fail("".join(report), pytrace=False)
