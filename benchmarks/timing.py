"""Interleaved median timing shared by the benchmarks."""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

#: A runner slower than this on its warm-up call is timed only twice more.
SLOW_SECONDS = 3.0
#: Pause before each timed call where a benchmark asks for it (``settle``).
#: OpenMP runtimes (PyTorch's) keep their worker threads spinning for a while
#: after a parallel region; on a 2-core machine the next implementation timed
#: starts with a core taken (measured: 8x32x128² backward 23 -> 30 ms right
#: after torch's backward).  Not the default: calls of a few ms then pay for
#: waking up (measured: a 7 ms float16 warp took 12 ms after a pause).
SETTLE_SECONDS = 0.05

# PyTorch's OpenMP workers spin after each parallel region (batched inputs) and hold the
# other core through whatever is timed next: gridsample measured 1.9-2.4 ms instead of
# 1.0 ms right after torch on 4x1x192x160 cubic (Zen 4, 2 cores).  Passive waiting makes
# them sleep at once (torch's own time was not slower: 0.73 ms against 1.2-1.4 ms while
# spinning into the next call).  Set before torch is imported (libgomp reads it once);
# a value the user set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: Untimed pause after every timed call.  gridsample's pool threads spin for ~50 µs after
#: a job, waiting for the next (gridsample._spin.IDLE_SECONDS); the pause lets that end
#: before the next runner starts, so no runner is timed against another's spinning threads.
QUIET_SECONDS = 2e-4


def interleaved_medians(runners: dict, repeats: int, settle: float = 0.0) -> dict:
    """Median seconds of each zero-argument callable in ``runners``.

    Every runner is called once to warm up (compile, allocate, page in), then
    the runners are called in turn ``repeats`` times, in a new order each round
    (:func:`balanced_orders`), so drift on a shared machine and the state one runner
    leaves for the next hit all of them alike; with ``settle`` (seconds, e.g.
    ``SETTLE_SECONDS``) each timed call starts after that pause, so no runner
    inherits another's spinning threads.  Runners slower than ``SLOW_SECONDS`` on
    the warm-up get two timed calls only.
    """
    slow = set()
    for name, run in runners.items():
        t0 = time.perf_counter()
        run()
        if time.perf_counter() - t0 > SLOW_SECONDS:
            slow.add(name)
    samples = {name: [] for name in runners}
    for names in balanced_orders(list(runners), repeats):
        for name in names:
            run = runners[name]
            if name in slow and len(samples[name]) >= 2:
                continue
            if settle:
                time.sleep(settle)
            t0 = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - t0)
            time.sleep(QUIET_SECONDS)
    return {name: statistics.median(s) for name, s in samples.items()}


def balanced_orders(names: list, rounds: int, seed: int = 0) -> list:
    """``rounds`` orders of ``names`` in which every runner follows each other one about as
    often (the counts differ by at most one or two), drawn at random otherwise (seeded:
    the same orders in every run).

    What a runner leaves behind (cold caches, a heap trimmed back to the OS so that the next
    large output faults its pages in again, spinning threads) falls on the one timed next
    (measured: the 8x32x128² case took 3.5 ms after torch but 9.8 ms after scipy; a 1x256²x32
    channel-last warp 1.1 ms, or 1.8 ms right after PyTorch's on its own copy of the input).
    A rotation keeps each runner behind the same one; plain shuffles leave it to chance, and
    with seeded shuffles a runner that followed the slowing one in most rounds did so in
    every run (a channel-last case read 1.4-1.5x its baseline's time, run after run, with
    the same code).  So each next runner is the one that has followed the runner just timed
    the fewest times, ties broken at random.
    """
    draw = random.Random(seed)
    follows = {}  # (runner, next runner): times
    orders, previous = [], None
    for _ in range(rounds):
        left = list(names)
        draw.shuffle(left)
        order = []
        while left:
            pick = left[0] if previous is None else min(
                left, key=lambda n: follows.get((previous, n), 0))
            if previous is not None:
                follows[(previous, pick)] = follows.get((previous, pick), 0) + 1
            order.append(pick)
            left.remove(pick)
            previous = pick
        orders.append(order)
    return orders


def first_call_seconds(code: str) -> list:
    """Seconds printed by ``code`` run in two new processes sharing an empty Numba cache.

    The first run compiles (cold cache), the second loads what it wrote (warm).
    """
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, GRIDSAMPLE_CACHE_DIR=cache)
        result = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            result.append(float(out.stdout.strip().splitlines()[-1]))
    return result


def set_threads(count: int) -> None:
    """Give gridsample and every installed peer ``count`` threads (``--threads``).

    gridsample and Numba read Numba's setting; PyTorch, OpenCV and onnxruntime their own
    (``peers.ort_session_options`` reads ``ORT_THREADS``).  One thread each compares the
    kernels themselves: a lead that comes from the second core alone disappears there.
    """
    import importlib.util

    import numba

    numba.set_num_threads(count)
    if importlib.util.find_spec("torch"):
        import torch

        torch.set_num_threads(count)
    if importlib.util.find_spec("cv2"):
        import cv2

        cv2.setNumThreads(count)
    os.environ["ORT_THREADS"] = str(count)


def machine_line() -> str:
    """The CPU model, LLVM's name for it and its widest x86 vector ISA, for every table."""
    import platform

    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    try:
        import llvmlite.binding as llvm

        llvm_name = llvm.get_host_cpu_name()
    except Exception:  # noqa: BLE001 - only a label
        llvm_name = "?"
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE/other"
    line = f"CPU: {model} ({llvm_name}, {isa}, {os.cpu_count()} logical cores)"
    return line + "; " + numba_code_line()


def numba_code_line() -> str:
    """What Numba compiles for (:func:`gridsample._jit.code_description`), and any ISA
    forced on PyTorch.

    The AVX2 code paths on an AVX-512 machine need both ``NUMBA_CPU_NAME`` (say ``haswell``
    or ``znver3``) and ``NUMBA_CPU_FEATURES=""``: the name alone keeps the host's
    features, and the code stays AVX-512.
    """
    from gridsample._jit import code_description

    line = f"Numba code: {code_description()}"
    if os.environ.get("ATEN_CPU_CAPABILITY"):
        line += f"; torch: ATEN_CPU_CAPABILITY={os.environ['ATEN_CPU_CAPABILITY']}"
    return line


def report(table: str, compile_line, markdown) -> None:
    """Print the table and (unless ``compile_line`` is None) the first-call times; save both."""
    text = table
    print()
    print(table)
    if compile_line is not None:
        print(compile_line)
        text += "\n" + compile_line
    if markdown:
        with open(markdown, "w") as fh:
            fh.write(text + "\n")


def case_parser(doc: str, fail=None, repeats=None) -> argparse.ArgumentParser:
    """The options every table benchmark has: ``--repeats`` (default ``repeats``), ``--case``
    (repeatable), ``--markdown``.

    ``fail``: called with the message of a bad option in place of argparse's usage and exit
    (``gridsample bench`` raises its one-line error).
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if fail is not None:
        parser.error = fail
    parser.add_argument("--repeats", type=int, default=repeats, help="rounds of timed calls")
    parser.add_argument("--case", action="append", default=[],
                        help="only cases whose name contains this (repeatable)")
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    return parser


def table_parser(doc: str, fail=None) -> argparse.ArgumentParser:
    """The options ``bench_forward`` and ``bench_backward`` share: :func:`case_parser`'s and
    ``--quick``, ``--no-compile``, ``--baseline``, ``--threads``."""
    parser = case_parser(doc, fail)
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 9")
    parser.add_argument("--no-compile", action="store_true", help="skip compile-time runs")
    parser.add_argument("--baseline", metavar="REV", default=None,
                        help="also time gridsample as of this git revision (before/after)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for gridsample and every peer (default: each its own)")
    return parser


def checked_cases(parser: argparse.ArgumentParser, args, names: list) -> list:
    """The case ``names`` that ``args.case`` selects, once the options every table benchmark
    may have (``--repeats``, ``--threads``, ``--case``, ``--markdown``) are checked: a bad
    one is ``parser.error``, before anything is timed (``args.markdown`` becomes the absolute
    path it will be written to)."""
    if args.repeats is not None and args.repeats < 1:
        parser.error(f"argument --repeats: must be at least 1, not {args.repeats}")
    threads = getattr(args, "threads", None)
    if threads is not None:
        import numba

        most = numba.config.NUMBA_NUM_THREADS
        if not 1 <= threads <= most:
            parser.error(f"argument --threads: must be from 1 to {most} (Numba's "
                         f"NUMBA_NUM_THREADS), not {threads}")
    selected = [n for n in names if not args.case or any(s in n for s in args.case)]
    if not selected:
        parser.error(f"argument --case: no case name contains "
                     f"{' or '.join(repr(s) for s in args.case)}; the names are "
                     f"{', '.join(repr(n) for n in names)}")
    if args.markdown:
        args.markdown = os.path.abspath(os.path.expanduser(args.markdown))  # (as written)
        folder = os.path.dirname(args.markdown)
        if not os.path.isdir(folder):
            parser.error(f"argument --markdown: the folder {folder!r} does not exist")
        if os.path.isdir(args.markdown):
            parser.error(f"argument --markdown: {args.markdown!r} is a folder; give a file")
    return selected


def case_arguments(doc: str, argv, names, repeats: int = 7):
    """The options of a table benchmark of the cases ``names`` (:func:`case_parser`).
    Returns the options and the names ``--case`` selects (:func:`checked_cases`: a bad
    option stops here)."""
    parser = case_parser(doc, repeats=repeats)
    args = parser.parse_args(argv)
    return args, checked_cases(parser, args, list(names))
