"""The vector width (and tuning) of gridsample's compiled code, from the CPU Numba compiles for.

LLVM's tuning for every Intel CPU with AVX-512 (Skylake-SP to Granite Rapids,
Ice/Tiger/Rocket Lake) prefers 256-bit vectors: its loop vectorizer then
fills ymm registers and gathers 8 lanes at a time, even though the CPU has
zmm registers and 16-lane gathers.  Its tuning for AMD's Zen 4 and Zen 5 uses
512 bits.  The kernels here are loops of gathers and selects, and nearly all of
them run faster at 512 bits (docs/kernels.md, "Vector width and tuning"),
so every function gridsample compiles carries LLVM's ``prefer-vector-width``
attribute, set to 512 where Numba's target has AVX-512F -- only gridsample's
functions: the user's own Numba code keeps LLVM's choice.

``GRIDSAMPLE_VECTOR_WIDTH`` forces a width: ``256`` (LLVM's choice on Intel),
``512``, or ``auto`` (the default).  It is read when gridsample is imported, for
the compiled-code cache key (:func:`gridsample._jit.cache_key`), which covers it: a
value not allowed makes the import fail with a message naming it.  It never changes
results: no function is compiled with ``fastmath``, so vectors of any width compute
the same operations in the same order.  ``GRIDSAMPLE_TUNE_CPU`` (:func:`tune_cpu`)
sets LLVM's tuning for them the same way; by default it is Skylake's on AMD Zen 1-3, whose own
tuning compiles the sweeps' gathers as scalar loads.  The attributes are added by gridsample's
lowering pass (:class:`gridsample._inline.TunedLowering`).
"""

from __future__ import annotations

import functools
import os
import re

from ._errors import GridSampleError

__all__ = ["vector_width", "tune_cpu", "SCALAR_GATHER_TUNINGS", "GATHER_TUNING",
           "SLOW_WIDE_GATHER_CPUS", "wide_gathers_beat_row_loads", "fast_gathers",
           "SINGLE_NEAREST_PASS_CPUS", "nearest_pass_channels", "SCATTERED_L3_CPUS",
           "scattered_item_bytes", "l3_bytes",
           "target_cpu_name", "target_features", "target_has_avx512", "target_has_avx2",
           "has_avx2", "target_isa",
           "function_attributes"]

#: Values ``GRIDSAMPLE_VECTOR_WIDTH`` may take.
WIDTHS = ("auto", "256", "512")


def target_features() -> str:
    """The CPU features Numba compiles for: ``NUMBA_CPU_FEATURES`` if set, else the host's
    as Numba reads them (``NUMBA_ENABLE_AVX=0`` and its own AVX rules applied).

    Setting only ``NUMBA_CPU_NAME`` keeps the host's features: on an AVX-512
    machine ``NUMBA_CPU_NAME=haswell`` still emits AVX-512 code;
    ``NUMBA_CPU_FEATURES=""`` beside it limits the code to that CPU's own
    features (AVX2 for ``haswell`` or ``znver3``).
    """
    from numba.core import config

    if config.CPU_FEATURES is not None:
        return config.CPU_FEATURES
    return _host_cpu_features()


def target_cpu_name() -> str:
    """The CPU Numba compiles for: ``NUMBA_CPU_NAME`` if set, else the host's (LLVM's name)."""
    from numba.core import config

    return config.CPU_NAME or _host_cpu_name()


# The host's CPU cannot change under a running process; asking LLVM costs ~0.3 ms (the
# features string is built anew), which a call that plans afresh (affine_warp, a new
# signature) paid several times.
@functools.cache
def _host_cpu_features() -> str:
    from numba.core import codegen

    return codegen.get_host_cpu_features()


@functools.cache
def _host_cpu_name() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def target_has_avx512() -> bool:
    """Whether the code Numba compiles may use AVX-512F (its CPU name and features)."""
    return _has_avx512(target_features(), target_cpu_name())


def target_isa() -> str:
    """The widest x86 vector ISA of the code Numba compiles, in words (for reports)."""
    features = target_features()
    if target_has_avx512():
        return "AVX-512"
    if "+avx2" in features.split(","):
        return "AVX2"
    cpu = target_cpu_name()
    return f"{cpu}'s own features" if not features else f"{cpu} with NUMBA_CPU_FEATURES"


#: LLVM CPU names whose own features include AVX-512F.
_AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "icelake", "tigerlake",
                "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids",
                "diamondrapids", "znver4", "znver5", "x86-64-v4", "cannonlake", "knl", "knm")


@functools.lru_cache(maxsize=8)
def _feature_flags(features: str) -> frozenset:
    """The ``+f`` / ``-f`` items of an LLVM features string (the host's has ~230: parsed
    once, not on every plan that asks what the target has)."""
    return frozenset(f.strip() for f in features.split(",") if f.strip())


def _has_feature(features: str, cpu_name: str, feature: str, cpus: tuple) -> bool:
    """Whether code for ``cpu_name`` with ``features`` may use ``feature``, which the CPUs
    named by the prefixes ``cpus`` have of their own.

    LLVM starts from the named CPU's own features and changes those the string names
    (``+f`` adds, ``-f`` removes): ``haswell`` with ``+avx512f`` emits AVX-512 code, and
    ``skylake-avx512`` with ``+avx2`` keeps its AVX-512.
    """
    flags = _feature_flags(features)
    if f"-{feature}" in flags:
        return False
    return f"+{feature}" in flags or cpu_name.startswith(cpus)


def _has_avx512(features: str, cpu_name: str) -> bool:
    """Whether code for ``cpu_name`` with ``features`` may use AVX-512F."""
    return _has_feature(features, cpu_name, "avx512f", _AVX512_CPUS)


#: LLVM CPU names (prefixes) whose own features include AVX2.
_AVX2_CPUS = ("haswell", "broadwell", "skylake", "cascadelake", "cooperlake", "cannonlake",
              "icelake", "tigerlake", "rocketlake", "alderlake", "raptorlake", "meteorlake",
              "arrowlake", "lunarlake", "pantherlake", "gracemont", "sapphirerapids",
              "emeraldrapids", "graniterapids", "diamondrapids", "sierraforest",
              "clearwaterforest", "grandridge", "znver", "bdver4", "x86-64-v3", "x86-64-v4")


def has_avx2(features: str, cpu_name: str) -> bool:
    """Whether code for ``cpu_name`` with ``features`` may use AVX2."""
    return _has_feature(features, cpu_name, "avx2", _AVX2_CPUS)


def target_has_avx2() -> bool:
    """Whether the code Numba compiles may use AVX2 (its CPU name and features)."""
    return target_has_avx512() or has_avx2(target_features(), target_cpu_name())


_width: int | None | bool = False  # False: not yet decided


def vector_width() -> int | None:
    """The ``prefer-vector-width`` gridsample's functions carry, or None (LLVM's own).

    ``GRIDSAMPLE_VECTOR_WIDTH``: ``256`` or ``512`` force it; ``auto`` (the
    default) gives 512 where Numba's target has AVX-512F, else None.  Read
    once per process.
    """
    global _width
    if _width is False:
        raw = os.environ.get("GRIDSAMPLE_VECTOR_WIDTH", "auto")
        value = raw.strip().lower()
        if value not in WIDTHS:
            raise GridSampleError(f"GRIDSAMPLE_VECTOR_WIDTH={raw!r} is not allowed: use one "
                                  f"of {', '.join(WIDTHS)}")
        if value != "auto":
            _width = int(value)
        else:
            _width = 512 if target_has_avx512() else None
    return _width


_tune: str | None | bool = False

#: LLVM CPUs with AVX2 whose own tuning rates gathers too slow to vectorize with (AMD Zen 1-3):
#: under it the sweeps' gathers become scalar loads and inserts.
SCALAR_GATHER_TUNINGS = ("znver1", "znver2", "znver3")
#: The tuning gridsample's functions get on those CPUs unless ``GRIDSAMPLE_TUNE_CPU`` says
#: otherwise: Skylake's cost model, which vectorizes the gathers (the instructions allowed
#: stay the target's).
GATHER_TUNING = "skylake"


def tune_cpu() -> str | None:
    """The CPU LLVM tunes gridsample's functions for, or None (the target CPU's own tuning).

    ``GRIDSAMPLE_TUNE_CPU``: ``auto`` (the default, also when unset or empty) gives
    :data:`GATHER_TUNING` where Numba's target is one of :data:`SCALAR_GATHER_TUNINGS`
    without AVX-512, else None; ``none`` gives None; another value names an LLVM CPU
    (such as ``skylake`` or ``znver3``).  A tuning changes LLVM's cost model -- which loops
    it vectorizes and how -- never the instructions allowed, and never a result (no
    ``fastmath``).  Under Zen 1-3's own tuning the 2-D and 3-D cubic sweeps (16 or 64
    gathers a point) and the 3-D linear ones were compiled with scalar loads; the same
    AVX2 instructions under Skylake's tuning took 0.2-1.0x the time on every row of
    ``bench_forward`` (docs/kernels.md, "Vector width and tuning": measured with Intel's
    gathers; PyTorch's AVX2 kernels gather on Zen 3 and led there per core).  Read once per
    process.
    """
    global _tune
    if _tune is False:
        raw = os.environ.get("GRIDSAMPLE_TUNE_CPU", "")
        value = raw.strip().lower() or "auto"
        if value == "auto":
            _tune = (GATHER_TUNING if target_cpu_name() in SCALAR_GATHER_TUNINGS
                     and not target_has_avx512() else None)
        elif value == "none":
            _tune = None
        elif re.fullmatch(r"[a-z][a-z0-9_.-]{1,39}", value):
            _tune = value
        else:
            raise GridSampleError(f"GRIDSAMPLE_TUNE_CPU={raw!r} is not allowed: give auto, "
                                  "none, or an LLVM CPU name such as skylake or znver3")
    return _tune


#: Host CPUs (LLVM's names) whose gathers are slow enough for linear's row loads to beat
#: them (AMD Zen 4: the row sweeps took 0.70-0.91x the gathering sweeps' time on 2-D and
#: 3-D linear, one and two threads, 2026-12-03; AMD Zen 5: 0.68-0.83x, and a single channel
#: 0.77-1.04x the explicit one pass's, 2026-12-05; on Intel's AVX-512 CPUs 1.08-1.28x).
SLOW_WIDE_GATHER_CPUS = ("znver4", "znver5")
#: Host CPUs (LLVM's names) where 2-D nearest's one pass (every channel of a group of points
#: read at once) serves a single channel only: with more, the plan table and its sweep two
#: channels a pass are faster (AMD Zen 5, one and two threads, one pass ÷ planned on smooth
#: warps: 2 channels 1.06-1.27, 3 channels 1.32-1.41; 1 channel 0.77-1.00; with AVX2 code 3
#: channels 1.13-1.51, 2026-12-05).  Elsewhere it takes up to 3 (Intel: 3 channels
#: 0.97-1.02, 2 channels 0.85-0.89; Zen 4: 3 channels 1.00-1.23 over three runs, leaning
#: against three channels but not measured again since).  An LLVM older than the name
#: ``znver5`` calls a Zen 5 something else, and gets the defaults.
SINGLE_NEAREST_PASS_CPUS = ("znver5",)


def wide_gathers_beat_row_loads() -> bool:
    """Whether 512-bit code reads linear's taps faster with gathers than with row loads
    (:func:`gridsample._row_loads.row_loads`), and a single linear channel's one pass beats
    them: on every host CPU but those of :data:`SLOW_WIDE_GATHER_CPUS` (docs/kernels.md,
    "Row loads").  The host's, not the compiled code's: the gathers run on the machine (AVX2
    code on a Zen 5, 2026-12-05: a single channel's rows 0.76-0.82x the one pass)."""
    return _host_cpu_name() not in SLOW_WIDE_GATHER_CPUS


def nearest_pass_channels(most: int) -> int:
    """The most channels 2-D nearest's one pass takes by default: 1 on the host CPUs of
    :data:`SINGLE_NEAREST_PASS_CPUS` (whatever code is compiled: with AVX2 code on a Zen 5
    three channels took 1.13-1.51x the planned sweep's time), else ``most`` (what it is
    built for)."""
    return 1 if _host_cpu_name() in SINGLE_NEAREST_PASS_CPUS else most


#: Host CPUs (LLVM's names: the caches are the machine's, whatever code is compiled) on which
#: a scattered warp's channels are swept in groups of its own (``_engine.channel_groups``,
#: each group's planes at most 4 MiB) only once an item's planes exceed the L3 (as Linux
#: reports it, :func:`l3_bytes`; 32 MiB where it does not); elsewhere from 8 MiB on.  Below
#: the threshold the smooth warps' rule applies (whole items, or groups of 4-8 channels of
#: large channels).  AMD Zen 5 (32 MiB of L3), random warps, scattered groups ÷ the smooth
#: rule's, one / two threads (2026-12-05): 1x3x1024² linear 1.16 / 1.33, nearest 1.04 /
#: 1.20, cubic 1.10 / 1.25 (12 MiB of planes, whole), 2x4x768² linear 1.49 / 1.67 (9 MiB,
#: whole), 1x2x1536² 1.12 (18 MiB, whole), 1x6x1024² cubic 1.00 (24 MiB, groups of 4),
#: 1x8x1024² 1.04 / 1.20 (32 MiB, groups of 4); beyond, 1x3x2048² (48 MiB) linear 0.90 /
#: 0.84, nearest 0.90, cubic 0.62.  On Zen 4 the scattered groups gained from 9 MiB on
#: (docs/kernels.md, "Channel groups"); Zen 5 parts with other L3 sizes were not measured.
SCATTERED_L3_CPUS = ("znver5",)


@functools.cache
def l3_bytes(default: int = 32 << 20) -> int:
    """The host's L3 size in bytes, as Linux's sysfs gives it for CPU 0, or ``default``."""
    from pathlib import Path

    try:
        for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            if (index / "level").read_text().strip() == "3":
                size = (index / "size").read_text().strip().upper()
                scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
                return int(size.rstrip("KMG")) * scale
    except (OSError, ValueError):
        pass
    return default


def scattered_item_bytes(default: int) -> int:
    """The planes' bytes an item beyond which a scattered warp's channels are swept in
    groups of its own: the L3's on the hosts of :data:`SCATTERED_L3_CPUS`, else
    ``default``."""
    return l3_bytes() if _host_cpu_name() in SCATTERED_L3_CPUS else default


def fast_gathers() -> bool:
    """Whether the target CPU's vector gathers are fast enough to read taps with: not AMD
    Zen 1-3 (:data:`SCALAR_GATHER_TUNINGS`, microcoded gathers) without AVX-512.  Where they
    are not, the sweeps that avoid gathers (row loads) keep their place.

    The compiled code's CPU, not the host's (unlike the rules above): the explicit vectors
    read it while Numba types the kernels, and the kernel cache is keyed by the compiled
    code's CPU and tuning, not by the host (a host-keyed answer here would need the host in
    :func:`gridsample._jit.cache_key`)."""
    return target_has_avx512() or target_cpu_name() not in SCALAR_GATHER_TUNINGS


def function_attributes() -> tuple:
    """The LLVM string attributes every function gridsample compiles carries (as IR text).

    Added by gridsample's lowering (:class:`gridsample._inline.TunedLowering`); where
    Numba's internals have moved and gridsample compiles with Numba's own pipeline, none
    are (``gridsample._jit.TUNED``).
    """
    width, tune = vector_width(), tune_cpu()
    attributes = () if width is None else (f'"prefer-vector-width"="{width}"',)
    if tune is not None:
        attributes += (f'"tune-cpu"="{tune}"',)
    return attributes
