"""The first run says it is compiling: numba kernels without a compiled signature or a cache."""

import logging

import numpy as np
import pytest
from numba import njit

import pymc_dp
from pymc_dp.compiling import announce, numba_needs_compiling
from pymc_dp.hmm import simulate_records
from pymc_dp.hmm._kernels import KERNELS
from pymc_dp.models import naive_bayes_hmm


def test_a_kernel_never_compiled_nor_cached_needs_compiling_until_called():
    @njit(cache=False)
    def add_one(x):
        return x + 1

    assert numba_needs_compiling(add_one)
    assert add_one(1) == 2
    assert not numba_needs_compiling(add_one)


def test_the_hmm_kernels_are_cached_numba_dispatchers():
    assert KERNELS and all(hasattr(kernel, "signatures") for kernel in KERNELS)
    assert all(kernel._cache._cache_file._index_path for kernel in KERNELS)


def test_announce_logs_one_info_line_only_when_compiling(caplog):
    with caplog.at_level(logging.INFO, logger="pymc_dp"):
        announce("the test's kernels", False)
        assert not caplog.records
        announce("the test's kernels", True)
    [record] = caplog.records
    assert record.levelno == logging.INFO and record.name == "pymc_dp"
    assert record.getMessage().startswith("Compiling the test's kernels")


@pytest.mark.integration
def test_the_hmm_route_announces_its_kernels_before_sampling_not_on_a_refusal(caplog, monkeypatch):
    import pymc_dp.routes.hmm as hmm_route

    monkeypatch.setattr(hmm_route, "numba_needs_compiling", lambda *kernels: True)
    records = simulate_records(3, 6, 2, [2, 3], 300, np.random.default_rng(3))
    with naive_bayes_hmm(records.counts, 2), caplog.at_level(logging.INFO, logger="pymc_dp"):
        with pytest.raises(ValueError, match="hmm_method"):
            pymc_dp.sample(10, epsilon=1.0, hmm_method="nope", progressbar=False)
        assert not [r for r in caplog.records if r.name == "pymc_dp"]
        pymc_dp.sample(5, tune=5, epsilon=5.0, chains=1, progressbar=False, random_seed=1)
    messages = [r.getMessage() for r in caplog.records if r.name == "pymc_dp"]
    assert len(messages) == 1 and "naive-Bayes HMM's numba kernels" in messages[0]
