"""``python -m gridsample.onnx``: the conformance pass table."""

from __future__ import annotations

import argparse
import sys

from ._conformance import format_table, run_conformance


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gridsample.onnx",
        description="Run ONNX's GridSample and AffineGrid conformance node cases through "
                    "onnx.reference with gridsample's operators and print a pass table.",
    )
    parser.add_argument("--no-reference", action="store_true",
                        help="skip the column that runs onnx.reference's own operators")
    args = parser.parse_args(argv)
    results = run_conformance(compare_reference=not args.no_reference)
    print(format_table(results))
    return 0 if results and all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
