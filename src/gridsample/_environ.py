"""Reading gridsample's environment variables on every call, cheaply.

The settings a call follows (``GRIDSAMPLE_KERNELS``, ``GRIDSAMPLE_ROW_LOADS``, ...) are
read when the call runs, so that a test or a benchmark can change them between calls.
``os.environ.get`` of an unset variable costs ~0.7-1.4 µs (``os.environ`` looks the name
up by raising and catching a ``KeyError``); four of them were a quarter of a small
call's Python time.  :func:`getenv` reads the same mapping ``os.environ`` keeps -- on
CPython its private ``_data`` dict, keyed by the encoded name -- so it sees every change
made through ``os.environ`` (``monkeypatch.setenv`` included) at once, and falls back to
``os.environ.get`` wherever that mapping is not there (or ``os.environ`` was replaced by
another object).  Like ``os.environ``, it does not see changes made with C's ``setenv``
behind Python's back.
"""

from __future__ import annotations

import os

__all__ = ["getenv"]


def _reader():
    environ = os.environ
    data = getattr(environ, "_data", None)
    encode = getattr(environ, "encodekey", None)
    decode = getattr(environ, "decodevalue", None)
    if not (type(data) is dict and callable(encode) and callable(decode)):
        return environ.get
    keys = {}

    def getenv(name: str, default=None):
        if os.environ is not environ:  # replaced wholesale (mock.patch("os.environ", ...))
            return os.environ.get(name, default)
        key = keys.get(name)
        if key is None:
            key = keys[name] = encode(name)
        value = data.get(key)
        return default if value is None else decode(value)

    return getenv


#: ``getenv(name, default=None)``: ``os.environ.get(name, default)``, without the cost
#: of an exception when ``name`` is unset.
getenv = _reader()
