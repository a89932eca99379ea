"""A deterministic auction stream with closing punctuations (the demo's input).

Auctions open over time; each stays open a few steps and receives bids whose prices rise;
when it closes, the bids stream says so with a punctuation row ``(auction, NULL, NULL,
true)`` -- "no more bids for this auction". Every auction has closed by the last step.
Rows match the demo's tables::

    auctions (id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN)   -- unique id
    bids     (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN)  -- scheme auction

>>> s = generate(auctions=4, steps=3, seed=1)
>>> len(s) == 3 and sum(len(step.auctions) for step in s) == 4
True
>>> sorted(a for step in s for (a, _, _, p) in step.bids if p) == sorted(closes(s))
True
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

AUCTIONS_DDL = "id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN"
BIDS_DDL = "auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN"
FIRST_ID = 1000


@dataclass
class Step:
    """The rows one step appends: auction rows and bid rows (punctuations included)."""

    auctions: list = field(default_factory=list)  # (id, seller, category, False)
    bids: list = field(default_factory=list)  # (auction, bidder, price, False) or (a, None, None, True)

    @property
    def punctuations(self) -> int:
        return sum(1 for row in self.bids if row[3])

    @property
    def rows(self) -> int:
        return len(self.auctions) + len(self.bids)


def generate(auctions: int = 40, steps: int = 12, seed: int = 7, max_bids: int = 12,
             max_life: int | None = None) -> list[Step]:
    """``steps`` steps of rows for ``auctions`` auctions; the same output for the same seed.

    Auction ``i`` (id ``1000 + i``) opens at a step spread evenly over all but the last
    step, stays open 1..``max_life`` steps (default a third of the run), receives
    1..``max_bids`` bids at integral, rising prices, and closes at the latest in the last step.
    """
    if auctions < 1 or steps < 2 or max_bids < 1:
        raise ValueError("need auctions >= 1, steps >= 2 and max_bids >= 1")
    rng = random.Random(seed)
    life = max(1, max_life if max_life is not None else steps // 3)
    out = [Step() for _ in range(steps)]
    for i in range(auctions):
        aid = FIRST_ID + i
        opens = i * (steps - 1) // auctions
        closes_at = min(opens + rng.randint(1, life), steps - 1)
        out[opens].auctions.append((aid, rng.randint(1, 500), rng.randint(1, 8), False))
        price = float(rng.randint(5, 50))
        for at in sorted(rng.randint(opens, closes_at) for _ in range(rng.randint(1, max_bids))):
            out[at].bids.append((aid, rng.randint(1, 1000), price, False))
            price += rng.randint(1, 20)
        out[closes_at].bids.append((aid, None, None, True))
    return out


def closes(stream: list[Step]) -> dict[int, int]:
    """auction id -> the step whose bids carry its closing punctuation."""
    return {row[0]: k for k, step in enumerate(stream) for row in step.bids if row[3]}


def totals(stream: list[Step]) -> dict[int, tuple]:
    """The query's answer computed in Python: auction -> (category, bids, total, final_price)."""
    category = {row[0]: row[2] for step in stream for row in step.auctions}
    acc: dict[int, list] = {}
    for step in stream:
        for aid, _, price, punct in step.bids:
            if punct or aid not in category:
                continue
            t = acc.setdefault(aid, [category[aid], 0, 0.0, price])
            t[1] += 1
            t[2] += price
            t[3] = max(t[3], price)
    return {aid: tuple(t) for aid, t in acc.items()}
