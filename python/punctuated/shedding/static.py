"""The static join under a tuple budget: OPTDP, NDG and ADG (Das et al. 2005, §3).

Two relations A and B join on equality; only ``k`` of their tuples may be kept (the
*dual* version, §3.1: retain ``k`` nodes of the join graph so that the most edges --
result tuples -- survive). The join graph is a union of complete bipartite
("Kuratowski") components ``K(m, n)``, one per join value with ``m`` tuples in A and ``n``
in B, so only the sizes matter:

* :func:`best_in_component` -- Lemma 1: the most edges ``p`` retained nodes of one
  ``K(m, n)`` keep (split them as evenly as the sides allow);
* :func:`optdp` -- §3.2: the optimal dynamic program ``T(i, j)`` over components,
  ``O(c k^2)`` (vectorised with numpy), with the per-component split;
* :func:`adg` -- §3.3.2, Average Degree Greedy: whole components by decreasing
  ``m n / (m + n)``, the last one partially (Lemma 1); a 2-approximation (Theorem 2);
* :func:`ndg` -- §3.3.1, Node Degree Greedy for the ``(k_A, k_B)`` variant: delete the
  ``k_A`` lowest-degree A tuples, then the ``k_B`` lowest-degree B tuples of what is
  left; a 2-approximation (Theorem 1) of :func:`optdp_split`, the variant's optimum.

Example::

    >>> comps = components([1, 1, 2, 3], [1, 2, 2, 2])   # K(2,1), K(1,3), K(1,0)
    >>> optdp(comps, 4).edges, adg(comps, 4).edges
    (3, 3)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Component:
    """Join value ``value`` with ``m`` tuples in A and ``n`` in B (``m * n`` result tuples)."""

    value: int
    m: int
    n: int


@dataclass
class StaticResult:
    """``edges``: result tuples kept; ``kept``: per component index, the (A, B) tuples kept."""

    edges: int
    kept: dict[int, tuple[int, int]]


def components(a: list[int], b: list[int]) -> list[Component]:
    """The Kuratowski components of ``A ⋈ B`` on equality, ordered by value."""
    ca, cb = Counter(a), Counter(b)
    return [Component(v, ca[v], cb[v]) for v in sorted(set(ca) | set(cb))]


def best_split(m: int, n: int, p: int) -> tuple[int, int]:
    """Lemma 1's split of ``p <= m + n`` retained nodes of ``K(m, n)``: as even as possible."""
    if not 0 <= p <= m + n:
        raise ValueError(f"cannot retain {p} nodes of K({m}, {n})")
    x = min(m, max(p - n, p // 2))  # A side
    return x, p - x


def best_in_component(m: int, n: int, p: int) -> int:
    """Lemma 1: ``C_{m,n}(p)``, the most edges of ``K(m, n)`` that ``p`` retained nodes keep."""
    x, y = best_split(m, n, p)
    return x * y


def optdp(comps: list[Component], k: int) -> StaticResult:
    """OPTDP (§3.2): the optimum for retaining ``k`` tuples overall (``k`` at most the
    number of tuples). ``T(i, j) = max_p T(i-1, j-p) + C_i(p)``."""
    total = sum(c.m + c.n for c in comps)
    if not 0 <= k <= total:
        raise ValueError(f"k must be between 0 and the {total} tuples, got {k}")
    neg = np.iinfo(np.int64).min // 4
    t = np.full(k + 1, neg, dtype=np.int64)
    t[0] = 0
    choice = np.zeros((len(comps), k + 1), dtype=np.int32)
    for i, c in enumerate(comps):
        new = t.copy()  # p = 0
        pick = np.zeros(k + 1, dtype=np.int32)
        for p in range(1, min(c.m + c.n, k) + 1):
            cand = t[: k + 1 - p] + best_in_component(c.m, c.n, p)
            better = cand > new[p:]
            new[p:] = np.where(better, cand, new[p:])
            pick[p:] = np.where(better, p, pick[p:])
        t, choice[i] = new, pick
    kept, j = {}, k
    for i in range(len(comps) - 1, -1, -1):
        p = int(choice[i, j])
        if p:
            kept[i] = best_split(comps[i].m, comps[i].n, p)
        j -= p
    return StaticResult(int(t[k]), kept)


def adg(comps: list[Component], k: int) -> StaticResult:
    """ADG (§3.3.2, dual): keep whole components by decreasing average degree
    ``m n / (m + n)`` (ties: the earlier component), the last one partially by Lemma 1."""
    order = sorted((i for i, c in enumerate(comps) if c.m + c.n),
                   key=lambda i: (-comps[i].m * comps[i].n / (comps[i].m + comps[i].n), i))
    kept, left, edges = {}, k, 0
    for i in order:
        if left == 0:
            break
        c = comps[i]
        p = min(left, c.m + c.n)
        kept[i] = best_split(c.m, c.n, p)
        edges += kept[i][0] * kept[i][1]
        left -= p
    return StaticResult(edges, kept)


def ndg(comps: list[Component], k_a: int, k_b: int) -> StaticResult:
    """NDG (§3.3.1): delete the ``k_a`` A tuples of lowest degree (``n``), then the ``k_b``
    B tuples of lowest degree in the graph left (ties: the earlier component)."""
    a = [c.m for c in comps]
    for i in sorted(range(len(comps)), key=lambda i: (comps[i].n, i)):
        if k_a == 0:
            break
        d = min(k_a, a[i])
        a[i] -= d
        k_a -= d
    b = [c.n for c in comps]
    for i in sorted(range(len(comps)), key=lambda i: (a[i], i)):
        if k_b == 0:
            break
        d = min(k_b, b[i])
        b[i] -= d
        k_b -= d
    kept = {i: (a[i], b[i]) for i in range(len(comps)) if a[i] or b[i]}
    return StaticResult(sum(x * y for x, y in kept.values()), kept)


def optdp_split(comps: list[Component], k_a: int, k_b: int) -> int:
    """Optimum of the ``(k_A, k_B)`` variant (delete ``k_a`` A and ``k_b`` B tuples): the
    three-dimensional DP of §3.2 -- best (A kept, B kept) per prefix of components."""
    ra = sum(c.m for c in comps) - k_a
    rb = sum(c.n for c in comps) - k_b
    if ra < 0 or rb < 0:
        raise ValueError(f"cannot delete {k_a} A and {k_b} B tuples")
    best = {(0, 0): 0}
    for c in comps:
        nxt: dict[tuple[int, int], int] = {}
        for (x, y), e in best.items():
            for dx in range(min(c.m, ra - x) + 1):
                for dy in range(min(c.n, rb - y) + 1):
                    key = (x + dx, y + dy)
                    v = e + dx * dy
                    if nxt.get(key, -1) < v:
                        nxt[key] = v
        best = nxt
    return best[(ra, rb)]
