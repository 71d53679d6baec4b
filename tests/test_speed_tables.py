"""benchmarks/speed_tables.py reads the tables the benchmarks write and finds the rows over
their targets: checked on a table made by the forward benchmark's own formatter."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_forward import format_table  # noqa: E402
from benchmarks.speed_tables import TABLES, TARGETS, over_targets, parse_table  # noqa: E402

PEERS = ["torch", "onnxruntime", "opencv"]


def _table():
    rows = [
        ("image 1x3x1024² linear smooth", {"gridsample": 3e-3, "torch": 6e-3,
                                           "onnxruntime": 4e-2, "opencv": 2e-3}, {}),
        ("image 1x1024²x3 linear channel-last", {"gridsample": 5e-3, "torch": 1e-2,
                                                 "opencv": 4e-3},
         {"onnxruntime": "no channel-last"}),
        ("small 1x3x64²→64² linear", {"gridsample": 3e-5, "torch": 4e-5,
                                      "onnxruntime": 2e-5, "opencv": 3e-5}, {}),
    ]
    return format_table(rows, PEERS)


def test_the_forward_table_is_read_back_by_column():
    rows = parse_table("header line\n\n" + _table() + "\ntrailing text\n")
    assert [row["case"] for row in rows] == ["image 1x3x1024² linear smooth",
                                             "image 1x1024²x3 linear channel-last",
                                             "small 1x3x64²→64² linear"]
    assert rows[0]["÷torch"] == "0.50" and rows[1]["onnxruntime ms"] == "no channel-last"
    assert rows[1]["÷onnxruntime"] == "-"


def test_rows_over_their_targets_are_named():
    over = over_targets("Forward, every thread", parse_table(_table()))
    # 0.5 ÷torch passes; OpenCV's limit holds for 2-D linear channel-last only (1.25 there;
    # the first row's 1.5 is no target); the small call is over two limits.
    assert over == ["image 1x1024²x3 linear channel-last: ÷opencv 1.25 > 1.0",
                    "small 1x3x64²→64² linear: ÷torch 0.75 > 0.6",
                    "small 1x3x64²→64² linear: ÷onnxruntime 1.50 > 1.0"]
    assert over_targets("Forward, one thread each", parse_table(_table())) == []
    assert set(TARGETS) == {title for title, _, _ in TABLES}  # a target for every table


def test_no_table_reads_as_no_rows():
    assert parse_table("no table here") == []
