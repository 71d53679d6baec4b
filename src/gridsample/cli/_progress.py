"""Progress bars (tqdm, on stderr) that disappear with ``--quiet`` or without tqdm, and the
counts the command's messages print.

``mode`` is ``"auto"`` (a bar when stderr is a terminal), ``"always"``
(``--progress``: a bar even when stderr is a file or a pipe) or ``"never"``
(``--quiet``).  tqdm is optional: without it there is no bar.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["progress_bar", "NullBar", "count"]


def count(n: int, noun: str) -> str:
    """``n`` and ``noun`` as a message says them: ``"1 thread"``, ``"2 threads"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


class NullBar:
    """The no-op stand-in for a tqdm bar."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def write(self, message: str) -> None:
        print(message, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class _TqdmBar(NullBar):
    def __init__(self, tqdm_module, **kw):
        self._tqdm = tqdm_module.tqdm
        self._bar = self._tqdm(**kw)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def write(self, message: str) -> None:
        # Prints above the bar without breaking it.
        self._tqdm.write(message, file=sys.stdout)
        sys.stdout.flush()


def progress_bar(total: int, desc: str, unit: str, mode: str = "auto"):
    """A bar over ``total`` steps, or a :class:`NullBar` (mode "never", one step, no tqdm).

    Parameters
    ----------
    total : int
    desc, unit : str
        tqdm's label and unit name.
    mode : {"auto", "always", "never"}
    """
    if mode == "never" or total <= 1:
        return NullBar()
    try:
        tqdm_module = importlib.import_module("tqdm")
    except ImportError:
        return NullBar()
    return _TqdmBar(tqdm_module, total=total, desc=desc, unit=unit, file=sys.stderr,
                    disable=None if mode == "auto" else False, dynamic_ncols=True, leave=False)
