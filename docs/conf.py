"""Sphinx configuration of the pymc_dp documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    .venv/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

Nothing is downloaded at build time (no intersphinx) and no notebook is executed: the
notebooks in ``notebooks/`` are committed executed, and are copied here unchanged (bar links
to ``../docs/``) into the git-ignored ``docs/notebooks/`` before the build reads them.
"""

import json
import re
from pathlib import Path

import pymc_dp

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "pymc_dp"
author = "the pymc_dp developers"
copyright = "2026, the pymc_dp developers"
release = pymc_dp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinx_copybutton",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"

# -- the notebooks: committed executed, rendered as they are ---------------------------------
nb_execution_mode = "off"
nb_merge_streams = True
nb_output_stderr = "remove"


def _copy_notebooks() -> None:
    """Copy ``notebooks/NN_*.ipynb`` into ``docs/notebooks/`` (git-ignored).

    Markdown links written for the repository (``../docs/x.md``) are pointed at the pages of
    this site (``../x.md``); nothing else changes. A notebook is rewritten only when its
    content changes, so incremental builds stay incremental.
    """
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    wanted = set()
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(source.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                text = "".join(cell["source"]).replace("](../docs/", "](../")
                cell["source"] = text
        text = json.dumps(nb, ensure_ascii=False, indent=1) + "\n"
        out = target / source.name
        wanted.add(out.name)
        if not out.exists() or out.read_text(encoding="utf-8") != text:
            out.write_text(text, encoding="utf-8")
    for stale in target.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()


_copy_notebooks()

# -- MyST ------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 4
myst_url_schemes = ["http", "https", "mailto"]

# -- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_preserve_defaults = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False

# -- cross-references: every one must resolve ----------------------------------------------
# No intersphinx (nothing is downloaded at build time), so names of other projects cannot be
# linked. They are ignored here, in this one list, and only they: every pymc_dp name must
# resolve to a documented object (a private base class is left out of "Bases:" instead,
# _drop_private_bases below).
nitpicky = True
nitpick_ignore_regex = [
    # the standard library (no local inventory of the Python docs)
    (r"py:.*", r"(abc|enum|typing|collections\.abc|dataclasses|pathlib|os|secrets)(\..*)?"),
    # PyMC, PyTensor, xarray, NumPy, SciPy, ArviZ, Dask, OpenDP, dp-accounting
    (r"py:.*", r"(pymc|pytensor|xarray|numpy|scipy|arviz|dask|opendp|dp_accounting)(\..*)?"),
]

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"pymc_dp {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
# no empty "Section Navigation" column on the pages without sub-pages
html_sidebars = {"index": [], "getting_started": [], "reproductions": [], "notebooks": []}
html_context = {"default_mode": "light"}
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True


# -- docstrings: plain-text |x| -------------------------------------------------------------
# The docstrings write absolute values and norms as plain text (|x − y|, |log f/g|), which
# reStructuredText reads as substitution references. Escape a "|" outside inline literals
# and roles before autodoc renders it; the docstrings themselves stay as they are.
_LITERAL = re.compile(r"(``.+?``|:[\w:]+:`[^`]*`|`[^`]*`_?)")


def _escape_bars(line: str) -> str:
    if "|" not in line:
        return line
    parts = _LITERAL.split(line)
    return "".join(
        part if i % 2 else re.sub(r"(?<!\\)\|", r"\\|", part) for i, part in enumerate(parts)
    )


def _process_docstring(app, what, name, obj, options, lines) -> None:
    lines[:] = [_escape_bars(line) for line in lines]


def _drop_private_bases(app, name, obj, options, bases) -> None:
    """Leave private base classes (``_BetaFamily``) out of a class's "Bases:" line: they
    have no page to link to; their public members are documented on the subclass."""
    bases[:] = [base for base in bases if not base.__name__.startswith("_")]


def setup(app):
    app.connect("autodoc-process-docstring", _process_docstring, priority=100)
    app.connect("autodoc-process-bases", _drop_private_bases)
