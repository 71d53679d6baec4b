"""Another revision of gridsample in the same process, for before/after tables.

``--baseline REV`` (a git revision of this repository) adds a column timed
interleaved with the working tree's gridsample, so a change is measured in
one process, on one machine state.  The revision's ``src/gridsample`` is
extracted once into ``bench-results/baseline-<commit>/gridsample_baseline``
(its modules import each other relatively, so the renamed copy is
self-contained; its compiled kernels are cached there too).
"""

from __future__ import annotations

import importlib
import io
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAME = "gridsample_baseline"


def load_baseline(rev: str):
    """Import gridsample as of git revision ``rev`` under the name ``gridsample_baseline``.

    Raises
    ------
    ValueError
        ``rev`` is not a revision of this repository (or git is missing).
    """
    try:
        commit = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--short",
                                 f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise ValueError(f"{rev!r} is not a git revision of {ROOT}") from None
    home = ROOT / "bench-results" / f"baseline-{commit}"
    package = home / NAME
    if not package.is_dir():
        archive = subprocess.run(["git", "archive", commit, "src/gridsample"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(home / "extract", filter="data")
        (home / "extract" / "src" / "gridsample").rename(package)
    if str(home) not in sys.path:
        sys.path.insert(0, str(home))
    module = importlib.import_module(NAME)
    return module, commit


def baseline_option(parser, rev: str):
    """``--baseline REV``: :func:`load_baseline`, a bad revision being ``parser.error``."""
    try:
        return load_baseline(rev)
    except ValueError as exc:
        parser.error(f"argument --baseline: {exc}")
