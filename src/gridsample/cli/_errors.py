"""The command line's one error type, and lazy imports of optional libraries.

Every failure a user can cause (a bad option, an unreadable file, a wrong
shape, a :class:`gridsample.GridSampleError` from the operator) becomes a
:class:`CLIError`; :func:`gridsample.cli.main` prints it as
``gridsample: error: <message>`` and returns its exit code, never a
traceback.
"""

from __future__ import annotations

import importlib

__all__ = ["CLIError", "USAGE", "FAILURE", "require", "check_string_modes"]

#: Exit code of a bad command line (unknown option, bad value, options that
#: conflict): found before any file is read.
USAGE = 2
#: Exit code of a failure while running (a file that cannot be read or written,
#: a wrong shape, an error from the operator).
FAILURE = 1

# The pip extra that provides each optional module.
_EXTRA = {"PIL": "cli", "tifffile": "cli", "tqdm": "cli", "nibabel": "nifti"}
_PACKAGE = {"PIL": "pillow"}


class CLIError(Exception):
    """A user-facing error: the message is printed, ``code`` is the exit status.

    Parameters
    ----------
    message : str
        What went wrong and, where there is one, the fix.
    code : int, default FAILURE (1)
        :data:`USAGE` (2) for command-line mistakes, :data:`FAILURE` (1) otherwise.
    """

    def __init__(self, message: str, code: int = FAILURE):
        super().__init__(message)
        self.code = code


def require(module: str, what: str):
    """Import an optional module, or raise a :class:`CLIError` naming the extra.

    Parameters
    ----------
    module : str
        The import name (``"PIL"``, ``"tifffile"``, ``"nibabel"``, ...).
    what : str
        What it is needed for, for the message (``"PNG files"``).

    Returns
    -------
    module
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        extra = _EXTRA.get(top, "cli")
        package = _PACKAGE.get(top, top)
        raise CLIError(f"{package} is needed for {what} but is not installed; "
                       f'install it with: pip install "gridsample[{extra}]" (in a checkout '
                       f'of gridsample: pip install -e ".[{extra}]")') from None


def numpy_complaint(exc: Exception) -> str:
    """What ``np.load`` said about a file, without its advice to unpickle (a file that is not
    a .npy array reads as pickled data to it, and unpickling is unsafe and never needed
    here)."""
    text = str(exc) or type(exc).__name__
    if "allow_pickle" in text:
        return "it is not a .npy/.npz array file (or it holds Python objects)"
    return "the file is empty or cut short" if isinstance(exc, EOFError) else text


def check_string_modes(what: str, dtype, modes, code: int = USAGE) -> None:
    """Strings are sampled with ``--mode nearest`` only: a :class:`CLIError` (exit ``code``)
    that names ``what`` (the file or the option that brings them) where ``dtype`` is a string type
    and ``modes`` ask for another mode (the operator's own message speaks of its argument,
    ``mode='nearest'``)."""
    import numpy as np

    from .._dtypes import is_string
    from .._options import MODE_NAMES, parse_mode

    if not is_string(np.dtype(dtype)):
        return
    others = [m for m in modes if MODE_NAMES[parse_mode(m)] != "nearest"]
    if others:
        raise CLIError(f"{what}: strings are sampled with --mode nearest only, not --mode "
                       f"{' '.join(others)}", code)
