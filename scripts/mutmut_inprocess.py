"""In-process mutant checker (pytest plugin).

Usage (from the mutants/ directory that the first step of `mutmut run` generates in a clone;
copy this file there and run with PYTHONPATH=.):
  MUT_FILTER=<fnmatch of mutant keys> MUT_OUT=<json> MUT_META=<meta files, comma>
  [MUT_KEYS=<mutant keys, comma: only these, in this order>] [MUT_TIMEOUT=<s per mutant>]
  python -m pytest -p mutmut_inprocess <tests> -m "not slow" -p no:cacheprovider -q

1. runs every collected test once in "stats" mode, recording which mutated functions it reaches
   (and failing if a test fails unmutated);
2. for every mutant matching MUT_FILTER, runs the tests reaching its function (fastest first),
   stopping at the first failure. SIGALRM after MUT_TIMEOUT s (per mutant) = timeout (caught).
Results (killed/timeout/survived/no tests, and the killing test) go to MUT_OUT as JSON, updated
after every mutant.
"""

import fnmatch
import json
import os
import signal
import sys
import time

import mutmut.mutation.trampoline as tramp
import pytest
from _pytest.runner import runtestprotocol

_hits: set[str] = set()


def _record(name, caller=None):
    _hits.add(name)


tramp.record_trampoline_hit = _record


class _Timeout(BaseException):
    pass


_timed_out = [False]


def _alarm(signum, frame):
    _timed_out[0] = True
    raise _Timeout()


def _clear_caches():
    for modname, attr in (
        ("pymc_dp.accounting", "_epsilon_at"),
        ("pymc_dp.accounting", "_dp_accounting"),
        ("pymc_dp.mechanisms.gaussian", "_calibrate"),
    ):
        mod = sys.modules.get(modname)
        fn = getattr(mod, attr, None) if mod else None
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()


def _run_item(item, nextitem):
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    return any(r.failed for r in reports)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    if session.config.option.collectonly:
        return None
    out_path = os.environ["MUT_OUT"]
    pattern = os.environ.get("MUT_FILTER", "*")
    per_mutant_timeout = float(os.environ.get("MUT_TIMEOUT", "120"))
    metas = os.environ["MUT_META"].split(",")
    keys = []
    for meta in metas:
        with open(meta) as f:
            keys += [k for k in json.load(f)["exit_code_by_key"] if fnmatch.fnmatch(k, pattern)]
    only = os.environ.get("MUT_KEYS")
    if only:
        present = set(keys)
        keys = [k for k in only.split(",") if k in present]  # in the order given
    items = session.items
    # stats pass
    tramp.set_mutant_under_test("stats")
    os.environ["MUTANT_UNDER_TEST"] = "stats"
    funcs_by_item = {}
    dur = {}
    for i, item in enumerate(items):
        _hits.clear()
        t0 = time.time()
        _clear_caches()
        failed = _run_item(item, items[i + 1] if i + 1 < len(items) else None)
        dur[item.nodeid] = time.time() - t0
        if failed:
            print(f"CLEAN FAILURE {item.nodeid} (excluded)", file=sys.stderr)
            continue
        funcs_by_item[item.nodeid] = set(_hits)
    with open(out_path + ".dur.json", "w") as f:
        json.dump({n: [dur[n], sorted(funcs_by_item[n])] for n in funcs_by_item}, f, indent=0)
    print(f"stats pass done: {len(items)} tests, {sum(dur.values()):.1f}s", file=sys.stderr)
    results = {}
    if os.path.exists(out_path):
        with open(out_path) as f:
            results = json.load(f)
    by_id = {it.nodeid: it for it in items}
    signal.signal(signal.SIGALRM, _alarm)
    for key in keys:
        func = key.partition("__mutmut_")[0]
        tests = sorted(
            (nid for nid, fs in funcs_by_item.items() if func in fs), key=lambda n: dur[n]
        )
        if not tests:
            results[key] = {"status": "no tests"}
            continue
        tramp.set_mutant_under_test(key)
        os.environ["MUTANT_UNDER_TEST"] = key
        status, killer = "survived", None
        _timed_out[0] = False
        t0 = time.time()
        signal.setitimer(signal.ITIMER_REAL, per_mutant_timeout)
        try:
            for j, nid in enumerate(tests):
                _clear_caches()
                nxt = by_id[tests[j + 1]] if j + 1 < len(tests) else None
                if _run_item(by_id[nid], nxt):
                    status, killer = "killed", nid
                    break
                if _timed_out[0]:
                    break
        except _Timeout:
            status = "timeout"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if _timed_out[0]:
            status, killer = "timeout", None
        results[key] = {
            "status": status,
            "killer": killer,
            "ntests": len(tests),
            "secs": round(time.time() - t0, 2),
        }
        print(f"{key}: {status} {killer or ''} ({time.time() - t0:.1f}s)", file=sys.stderr)
        with open(out_path, "w") as f:
            json.dump(results, f, indent=0)
    tramp.set_mutant_under_test("")
    os.environ["MUTANT_UNDER_TEST"] = ""
    return True
