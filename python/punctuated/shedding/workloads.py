"""The paper's synthetic workloads, seeded and deterministic (Das et al. 2005, §5).

* :func:`zipf_streams` -- two streams of join values drawn from Zipf distributions over
  a domain (default 50, §5.2.4), one arrival per stream per time step (§2.1). Skew 0
  is uniform (Figure 9). ``correlated=False`` (the default, Figures 7, 8, 10) maps S's
  ranks to values through a seeded random permutation, so R's frequent values are not
  S's; ``correlated=True`` (Figure 11) uses the same ranking for both.
* :func:`paper_sliding_window` -- the §5.2 setting: window ``w`` (400 or 800), warm-up
  ``2 w`` and ``2 w + 4000`` steps (5600 for w = 800), Zipf(1) over 50 values.
* :func:`zipf_relations` -- the §5.1 static-join input: two relations whose values
  (Kuratowski components) are drawn Zipf-distributed over ``c`` components.
* :data:`FIGURE3` -- the Figure 3 example (R = 1,1,1,3,2; S = 2,3,1,1,3; w = 3; M = 2).

Example::

    >>> t = zipf_streams(10, skew=1.0, domain=50, seed=7)
    >>> t.num_steps
    10
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from itertools import accumulate

from punctuated.shedding.trace import Trace


@dataclass(frozen=True)
class Figure3:
    """The paper's Figure 3 example and its published numbers (§4.1.1)."""

    r: tuple[int, ...] = (1, 1, 1, 3, 2)
    s: tuple[int, ...] = (2, 3, 1, 1, 3)
    window: int = 3
    memory: int = 2
    #: Output of the exact join (with 2w memory): the pairs at distance < w with equal values.
    exact_output: int = 7
    #: The two result tuples the optimal flow misses, as (r index, s index).
    missed_by_opt: tuple[tuple[int, int], ...] = ((1, 2), (1, 3))

    def trace(self) -> Trace:
        return Trace.from_streams(self.r, self.s)


FIGURE3 = Figure3()


def zipf_weights(domain: int, skew: float) -> list[float]:
    """Unnormalised Zipf weights ``1 / k**skew`` for ranks ``k = 1 .. domain``."""
    if domain < 1:
        raise ValueError(f"domain must be >= 1, got {domain}")
    if skew < 0:
        raise ValueError(f"Zipf skew must be >= 0, got {skew}")
    return [1.0 / (k**skew) for k in range(1, domain + 1)]


class ZipfSampler:
    """Seeded draws of values ``values[rank]`` with Zipf rank probabilities."""

    def __init__(self, domain: int, skew: float, rng: random.Random, values: list[int] | None = None):
        self.cum = list(accumulate(zipf_weights(domain, skew)))
        self.values = values if values is not None else list(range(1, domain + 1))
        self.rng = rng

    def draw(self) -> int:
        x = self.rng.random() * self.cum[-1]
        return self.values[min(bisect.bisect_right(self.cum, x), len(self.values) - 1)]


def zipf_streams(
    steps: int,
    skew: float = 1.0,
    domain: int = 50,
    seed: int = 0,
    skew_s: float | None = None,
    correlated: bool = False,
) -> Trace:
    """Two synchronous streams of ``steps`` arrivals each, values ``1 .. domain``.

    R is Zipf(``skew``); S is Zipf(``skew_s`` or ``skew``) -- use ``skew_s=0`` for the
    Zipf/uniform mix of Figure 14. Deterministic for a given ``seed``.
    """
    rng = random.Random(seed)
    base = list(range(1, domain + 1))
    perm_r = base[:]
    perm_s = base[:]
    if not correlated:
        rng.shuffle(perm_r)
        rng.shuffle(perm_s)
    sr = ZipfSampler(domain, skew, rng, perm_r)
    ss = ZipfSampler(domain, skew if skew_s is None else skew_s, rng, perm_s if not correlated else perm_r)
    r = [sr.draw() for _ in range(steps)]
    s = [ss.draw() for _ in range(steps)]
    return Trace.from_streams(r, s)


@dataclass(frozen=True)
class SlidingSetting:
    """One §5.2 experiment: its trace and the window, warm-up and memory sizes."""

    trace: Trace
    window: int
    warmup: int
    memories: tuple[int, ...]


def paper_sliding_window(
    window: int = 400, skew: float = 1.0, domain: int = 50, seed: int = 0,
    counted_steps: int = 4000, skew_s: float | None = None,
) -> SlidingSetting:
    """The §5.2 setting: ``2 w`` warm-up steps then ``counted_steps`` (the paper: at least
    4000) counted ones; memory ``M`` in 0.1w, 0.25w, 0.5w, w, 1.5w (and 2w, where the
    result is exact up to the two buffer cells)."""
    steps = 2 * window + counted_steps
    memories = tuple(sorted({max(2, int(round(f * window))) // 2 * 2 for f in (0.1, 0.25, 0.5, 1.0, 1.5, 2.0)}))
    return SlidingSetting(
        zipf_streams(steps, skew, domain, seed, skew_s=skew_s), window, 2 * window, memories
    )


def zipf_relations(size: int, components: int, skew: float, seed: int = 0) -> tuple[list[int], list[int]]:
    """§5.1: two relations of ``size`` tuples each whose join values are Zipf(``skew``)
    over ``components`` values, drawn independently (independent rank permutations)."""
    rng = random.Random(seed)
    base = list(range(components))
    pa, pb = base[:], base[:]
    rng.shuffle(pa)
    rng.shuffle(pb)
    sa = ZipfSampler(components, skew, rng, pa)
    sb = ZipfSampler(components, skew, rng, pb)
    return [sa.draw() for _ in range(size)], [sb.draw() for _ in range(size)]
