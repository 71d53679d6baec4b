"""The benchmarks' round orders (benchmarks/timing.py): every runner follows each other one
about as often, so what one runner leaves behind (cold caches, spinning threads) falls on
all of them alike, and a seeded draw does not put one runner behind the same slowing one in
most rounds of every run."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.timing import balanced_orders  # noqa: E402


@pytest.mark.parametrize("runners", [2, 3, 4, 6])
@pytest.mark.parametrize("rounds", [1, 9, 21])
def test_each_runner_follows_the_others_equally(runners, rounds):
    names = [f"r{i}" for i in range(runners)]
    orders = balanced_orders(names, rounds)
    assert len(orders) == rounds and all(sorted(order) == names for order in orders)
    follows = collections.Counter()
    sequence = [name for order in orders for name in order]
    for before, after in zip(sequence, sequence[1:]):
        if before != after:
            follows[before, after] += 1
    transitions = (runners * rounds - 1) / (runners - 1)  # per runner, spread over the others
    for b in names:
        counts = [follows[a, b] for a in names if a != b]
        assert max(counts) - min(counts) <= 2
        assert max(counts) <= transitions / (runners - 1) + 2
    assert orders == balanced_orders(names, rounds)  # seeded: the same orders every run


def test_orders_are_not_a_rotation():
    """Every runner is timed after each of the others at some point: a fixed rotation keeps
    each behind the same one."""
    orders = balanced_orders(["a", "b", "c"], 9)
    sequence = [name for order in orders for name in order]
    behind = collections.defaultdict(set)
    for before, after in zip(sequence, sequence[1:]):
        behind[after].add(before)
    assert all(behind[n] - {n} == {"a", "b", "c"} - {n} for n in "abc")
