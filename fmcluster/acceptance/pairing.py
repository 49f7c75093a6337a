"""The pairing plan of the acceptance gate: which two nodes run all_reduce_perf together, round by round.

Standard library only (shipped to the cluster with the gate job). Pure: the same node list gives the same
plan.

Every node is measured at least ``min_partners`` times (default 2), each time with a different partner, so
a slow node shows up in every one of its pairs while each of its partners also has a healthy pair
(docs/acceptance.md "Rounds"). Pairs of one round share no node, so a round's pairs run at the same time.

- even count: the circle method (one node fixed, the others rotate): ``min_partners`` rounds, every pair
  new;
- odd count: the circle method with a bye; one node sits out each round, so ``min_partners + 1`` rounds
  (capped at the count) give everyone ``min_partners`` partners;
- two nodes: one possible partner: the same pair ``min_partners`` times (the nodes cannot be told apart;
  only the floor judges them);
- one node (or none): no rounds (only the single-node check runs).
"""

from __future__ import annotations

from collections import Counter
from typing import List, Sequence, Tuple  # noqa: UP035  (runtime aliases on the node's Python 3.8)

Pair = Tuple[str, str]  # noqa: UP006
Round = List[Pair]  # noqa: UP006


class PairingError(ValueError):
    """Bad input to :func:`pairing_plan` (duplicate or empty node names, fewer than one round)."""


def _circle_rounds(nodes: Sequence[str]) -> list[Round]:
    """All rounds of the circle method for ``nodes`` (padded with a bye when odd): every pair once."""
    ring: list[str | None] = list(nodes)
    if len(ring) % 2:
        ring.append(None)
    n = len(ring)
    rounds: list[Round] = []
    for _ in range(n - 1):
        pairs: Round = []
        for i in range(n // 2):
            a, b = ring[i], ring[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def pairing_plan(nodes: Sequence[str], min_partners: int = 2) -> list[Round]:
    """Rounds of disjoint pairs so that every node has at least ``min_partners`` measurements with as many
    different partners as the node count allows (``len(nodes) - 1``).

    Args:
        nodes: Slurm node names, in the order ``scontrol show hostnames`` gives them.
        min_partners: measurements per node (>= 1).

    Returns:
        ``[[(a, b), ...], ...]``: one list of pairs per round; ``[]`` for fewer than two nodes.

    Raises:
        PairingError: a duplicate or empty node name, or ``min_partners`` below 1.
    """
    if min_partners < 1:
        raise PairingError(f"min_partners must be at least 1, got {min_partners}")
    names = list(nodes)
    bad = [repr(n) for n in names if not n or not n.strip() or any(c.isspace() for c in n)]
    if bad:
        raise PairingError(f"node names must be non-empty without spaces, got {', '.join(bad)}")
    dup = sorted(n for n, c in Counter(names).items() if c > 1)
    if dup:
        raise PairingError(f"node names must be unique, got {', '.join(dup)} more than once")
    if len(names) < 2:
        return []
    if len(names) == 2:
        return [[(names[0], names[1])] for _ in range(min_partners)]
    rounds: list[Round] = []
    measured: Counter[str] = Counter()
    all_rounds = _circle_rounds(names)
    # cycle through the full round-robin again when more measurements than partners are asked for
    i = 0
    while min(measured[n] for n in names) < min_partners:
        r = all_rounds[i % len(all_rounds)]
        rounds.append(r)
        for a, b in r:
            measured[a] += 1
            measured[b] += 1
        i += 1
    return rounds


def plan_lines(rounds: list[Round]) -> str:
    """The plan as text for the gate job: one ``<round> <node-a> <node-b>`` line per pair, rounds from 1."""
    return "".join(f"{i} {a} {b}\n" for i, r in enumerate(rounds, start=1) for a, b in r)
