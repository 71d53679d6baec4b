"""Every speed table of one CPU in one command, checked against the project's speed targets.

Run:  python -m benchmarks.speed_tables [--repeats 9] [--output FILE] [--avx2] [--warm-up]

Runs, one after the other, each in a process of its own (thread settings are per process):
``bench_forward`` with every library's default threads (Numba's: every core) and at one
thread each (PyTorch only), ``bench_backward``
and ``bench_affine_warp``, then writes one Markdown file (default
``bench-results/speed-<LLVM CPU name>-<date>.md``) with the CPU line, the date, the commit,
every table and the rows over their targets (:data:`TARGETS`, the speed issue's: forward ≤
0.6x PyTorch and ≤ 1.0x onnxruntime, 2-D linear channel-last ≤ 1.0x OpenCV, one thread ≤
1.0x PyTorch, backward ≤ 0.8x PyTorch, ``affine_warp`` ≤ 0.7x the pair it fuses).

``--avx2`` runs AVX2 code on an AVX-512 machine (Numba compiled for Haswell with no extra
features, LLVM's Skylake tuning, PyTorch's AVX2 kernels; a kernel cache of its own): the AVX2
code paths, though with this CPU's gathers, not those of an AVX2-only CPU.  Code compiled
inside a timed process can run slower than the same code loaded from the cache
(docs/kernels.md), so ``--warm-up`` first runs each benchmark once at one repeat, untimed,
to fill the cache (a first ``--avx2`` run wants it).
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: The environment that makes an AVX-512 machine run AVX2 code (see the module's docstring).
AVX2_ENVIRONMENT = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "",
                    "ATEN_CPU_CAPABILITY": "avx2", "GRIDSAMPLE_TUNE_CPU": "skylake"}

#: (title, benchmark module, its options) of each table, in the order they run.
TABLES = (
    ("Forward, every thread", "benchmarks.bench_forward", ["--no-compile"]),
    ("Forward, one thread each", "benchmarks.bench_forward",
     ["--no-compile", "--threads", "1", "--peers", "torch"]),
    ("Backward, both gradients", "benchmarks.bench_backward", ["--no-compile"]),
    ("affine_warp against the pair it fuses", "benchmarks.bench_affine_warp", []),
)

#: The most each ratio column of a table may read: title -> {column: (limit, rows)}, where
#: ``rows`` is None for every row or a test of the case's name.
TARGETS = {
    "Forward, every thread": {
        "÷torch": (0.6, None),
        "÷onnxruntime": (1.0, None),
        "÷opencv": (1.0, lambda case: "linear channel-last" in case and "image" in case),
    },
    "Forward, one thread each": {"÷torch": (1.0, None)},
    "Backward, both gradients": {"÷torch": (0.8, None)},
    "affine_warp against the pair it fuses": {"÷pair": (0.7, None)},
}


def parse_table(markdown: str) -> list[dict]:
    """The rows of the first Markdown table in ``markdown``, each a dict by column head."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    if len(lines) < 2:
        return []
    head = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows.append(dict(zip(head, cells)))
    return rows


def over_targets(title: str, rows: list[dict]) -> list[str]:
    """``"case: column ratio > limit"`` for each ratio of ``rows`` over its target."""
    found = []
    for row in rows:
        case = row.get("case", "?")
        for column, (limit, applies) in TARGETS.get(title, {}).items():
            if applies is not None and not applies(case):
                continue
            try:
                ratio = float(row.get(column, ""))
            except ValueError:  # "-": that peer has no such case
                continue
            if ratio > limit:
                found.append(f"{case}: {column} {ratio:.2f} > {limit}")
    return found


def _run(module: str, options: list, env: dict, markdown: str | None) -> int:
    command = [sys.executable, "-m", module, *options]
    if markdown:
        command += ["--markdown", markdown]
    print("$", " ".join(command[1:]), flush=True)
    return subprocess.run(command, env=env, cwd=Path(__file__).resolve().parents[1]).returncode


def _describe(env: dict) -> tuple[str, str]:
    """The machine line (:func:`benchmarks.timing.machine_line`) and LLVM's CPU name, as a
    process with ``env`` sees them."""
    code = ("from benchmarks.timing import machine_line; import llvmlite.binding as l; "
            "print(machine_line()); print(l.get_host_cpu_name())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    line, cpu = out.strip().splitlines()[-2:]
    return line, cpu


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True,
                              cwd=Path(__file__).resolve().parents[1]).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--output", default=None,
                        help="the Markdown file (default bench-results/speed-<cpu>-<date>.md)")
    parser.add_argument("--avx2", action="store_true",
                        help="AVX2 code on an AVX-512 machine (a kernel cache of its own)")
    parser.add_argument("--warm-up", action="store_true",
                        help="first run each benchmark once, untimed, to fill the kernel cache")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, not {args.repeats}")
    env = dict(os.environ)
    if args.avx2:
        env.update(AVX2_ENVIRONMENT)
        env.setdefault("GRIDSAMPLE_CACHE_DIR",
                       os.path.join(tempfile.gettempdir(), "gridsample-avx2-cache"))
    machine, cpu = _describe(env)
    today = datetime.date.today().isoformat()
    output = Path(args.output or f"bench-results/speed-{cpu}{'-avx2-code' if args.avx2 else ''}"
                                 f"-{today}.md")
    output.parent.mkdir(parents=True, exist_ok=True)
    if args.warm_up:
        for _, module, options in TABLES:
            _run(module, [*options, "--repeats", "1"], env, None)
    parts = [f"# Speed tables, {today}", "", machine, "", f"Commit {_commit()}, "
             f"`python -m benchmarks.speed_tables --repeats {args.repeats}"
             f"{' --avx2' if args.avx2 else ''}`.", ""]
    over, failed = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for i, (title, module, options) in enumerate(TABLES):
            markdown = os.path.join(scratch, f"{i}.md")
            if _run(module, [*options, "--repeats", str(args.repeats)], env, markdown):
                failed.append(title)
                continue
            text = Path(markdown).read_text()
            parts += [f"## {title}", "", f"`python -m {module} "
                      f"{' '.join(options + ['--repeats', str(args.repeats)])}`", "",
                      text.strip(), ""]
            over += [f"{title}: {item}" for item in over_targets(title, parse_table(text))]
    parts += ["## Over the targets", ""]
    parts += [f"- {item}" for item in over] or ["None."]
    parts += [f"- {title}: the benchmark failed" for title in failed]
    output.write_text("\n".join(parts) + "\n")
    print(f"\nwrote {output}")
    print("\n".join(["over the targets:", *over] if over else ["every row within its target"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
