"""Strip machine paths from the outputs of the executed notebooks in ``notebooks/``.

An executed notebook keeps what its cells printed, and a warning or a traceback names the file
it came from: ``/home/me/project/.venv/lib/python3.12/site-packages/pytensor/...``. Committed,
such a path tells the reader nothing and tells everyone where the author's files live. After
``jupyter execute --inplace`` (tests/test_notebooks.py says how a notebook is re-executed),
run, from the repository root::

    .venv/bin/python scripts/strip_notebook_paths.py

It rewrites, in the text outputs only (streams, ``text/*`` data, tracebacks; never an image),

* ``<anything>/site-packages/`` and ``<anything>/dist-packages/`` to nothing, so a warning
  reads ``pytensor/link/c/cmodule.py:2940: UserWarning: ...``;
* the repository's own absolute path to nothing (paths become relative to the repository).

Any other machine path (:data:`MACHINE_PATH`) is left for you to remove by hand:
``tests/test_notebooks.py`` fails while one is in a committed output.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

INSTALLED = re.compile(r"""(?:[A-Za-z]:)?[^\s"'()<>\[\]]*[/\\](?:site|dist)-packages[/\\]""")
"""An installed package's directory, up to and including ``site-packages/``."""

MACHINE_PATH = re.compile(
    r"""(?:(?<![\w.~-])/(?:work|home|tmp|root|Users|private|opt|usr|var|mnt)/"""
    r"""|(?<![\w])[A-Za-z]:\\(?:Users|Windows)\\|(?:site|dist)-packages[/\\])"""
)
"""What a committed notebook output may not hold: an absolute path under a directory where a
user's, a build's or an installation's files live, or an installed package's path."""

TEXT_KEYS = ("text/plain", "text/html", "text/markdown", "text/latex")


def text_outputs(nb: dict):
    """Yield ``(cell_index, container, key)`` for every text field of every code cell's
    outputs: ``container[key]`` is a string or a list of strings."""
    for index, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []):
            if "text" in output:
                yield index, output, "text"
            if "traceback" in output:
                yield index, output, "traceback"
            if "evalue" in output:
                yield index, output, "evalue"
            data = output.get("data", {})
            for key in TEXT_KEYS:
                if key in data:
                    yield index, data, key


def _lines(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def machine_paths(nb: dict) -> list[tuple[int, str]]:
    """``(cell_index, line)`` of every output line holding a :data:`MACHINE_PATH`."""
    return [
        (index, line.strip())
        for index, container, key in text_outputs(nb)
        for line in _lines(container[key])
        if MACHINE_PATH.search(line)
    ]


def strip(nb: dict, root: Path = ROOT) -> dict:
    """Rewrite ``nb``'s text outputs in place (see the module docstring); returns ``nb``."""
    prefix = str(root) + "/"

    def clean(line: str) -> str:
        return INSTALLED.sub("", line).replace(prefix, "")

    for _, container, key in text_outputs(nb):
        value = container[key]
        container[key] = clean(value) if isinstance(value, str) else [clean(s) for s in value]
    return nb


def main(paths: list[str]) -> int:
    files = [Path(p) for p in paths] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    left = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        nb = strip(json.loads(text))
        new = json.dumps(nb, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"stripped {path.name}")
        for index, line in machine_paths(nb):
            left += 1
            print(f"{path.name}, cell {index}: a machine path is left: {line}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
