"""The documentation's code is true: the landing page's snippet runs as written, and every
ArviZ function the docs name exists in the installed ArviZ (1.x renamed its plots)."""

import re
from pathlib import Path

import arviz as az
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ARVIZ_NAME = re.compile(r"\baz\.([A-Za-z_]\w*)")
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def _documentation() -> list[Path]:
    """The committed text a reader sees: the site's pages, the README, the notebooks' scripts
    and the docstrings (docs/_build and the copied docs/notebooks are generated)."""
    pages = [
        path
        for pattern in ("*.md", "*.rst")
        for path in DOCS.rglob(pattern)
        if not {"_build", "notebooks"} & set(path.relative_to(DOCS).parts)
    ]
    return [
        *pages,
        ROOT / "README.md",
        *(ROOT / "notebooks").glob("*.py"),
        *(ROOT / "pymc_dp").rglob("*.py"),
    ]


def _arviz_names() -> dict[str, list[str]]:
    names: dict[str, list[str]] = {}
    for path in _documentation():
        for name in ARVIZ_NAME.findall(path.read_text(encoding="utf-8")):
            names.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return names


def test_every_arviz_function_the_docs_name_exists():
    names = _arviz_names()
    missing = {name: sorted(set(where)) for name, where in names.items() if not hasattr(az, name)}
    assert not missing, f"not in ArviZ {az.__version__}: {missing}"


def test_the_user_guide_names_the_plots_of_a_private_trace():
    traces = (DOCS / "user_guide" / "traces.md").read_text(encoding="utf-8")
    plotting = traces[traces.index("## Plotting") :]
    named = set(ARVIZ_NAME.findall(plotting))
    assert {"plot_dist", "plot_forest", "plot_trace_dist", "plot_pair", "plot_rank"} <= named
    assert not hasattr(az, "plot_posterior")  # the 0.x name the section steers readers from


def _landing_snippet() -> str:
    blocks = PYTHON_BLOCK.findall((DOCS / "index.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "docs/index.md should hold one python snippet"
    return blocks[0]


def test_the_landing_page_has_the_install_line_and_a_complete_snippet():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    assert "pip install -q -e ." in text
    snippet = _landing_snippet()
    assert "import pymc_dp" in snippet and "pymc_dp.sample(" in snippet


@pytest.mark.integration
def test_the_landing_page_snippet_runs_as_written(capsys):
    import pymc_dp

    namespace: dict = {}
    exec(compile(_landing_snippet(), str(DOCS / "index.md"), "exec"), namespace)
    idata = namespace["idata"]
    ledger = pymc_dp.PrivacyLedger.from_datatree(idata)
    assert (ledger.epsilon, ledger.delta, len(ledger.events)) == (1.0, 0.0, 1)
    assert idata.posterior["rate"].sizes["draw"] == 1000
    assert not {"observed_data", "constant_data", "log_likelihood"} & set(idata.children)
    printed = capsys.readouterr().out
    assert "rate[a]" in printed and "PrivacyLedger(events=1" in printed
