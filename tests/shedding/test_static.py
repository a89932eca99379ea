"""The static join: OPTDP, ADG and NDG (Das et al. 2005, §3) against brute force."""

from __future__ import annotations

import itertools
import random

import pytest

from punctuated.shedding.static import (
    adg, best_in_component, components, ndg, optdp, optdp_split,
)
from punctuated.shedding.workloads import zipf_relations


def brute(a: list[int], b: list[int], k: int) -> int:
    """Every choice of k tuples of A and B: the largest join that survives."""
    nodes = [("A", v) for v in a] + [("B", v) for v in b]
    best = 0
    for keep in itertools.combinations(range(len(nodes)), k):
        ka = [nodes[i][1] for i in keep if nodes[i][0] == "A"]
        kb = [nodes[i][1] for i in keep if nodes[i][0] == "B"]
        best = max(best, sum(1 for x in ka for y in kb if x == y))
    return best


def brute_split(a: list[int], b: list[int], ra: int, rb: int) -> int:
    return max(
        sum(1 for x in ka for y in kb if x == y)
        for ka in itertools.combinations(a, ra) for kb in itertools.combinations(b, rb)
    )


def test_lemma1_against_every_split():
    for m in range(6):
        for n in range(6):
            for p in range(m + n + 1):
                assert best_in_component(m, n, p) == max(x * (p - x) for x in range(max(0, p - n), min(m, p) + 1))


def test_optdp_adg_against_brute_force():
    rng = random.Random(31)
    for _ in range(250):
        a = [rng.randint(1, 3) for _ in range(rng.randint(0, 5))]
        b = [rng.randint(1, 3) for _ in range(rng.randint(0, 5))]
        comps = components(a, b)
        k = rng.randint(0, len(a) + len(b))
        opt = optdp(comps, k)
        assert opt.edges == brute(a, b, k)
        assert sum(x + y for x, y in opt.kept.values()) <= k
        assert sum(x * y for x, y in opt.kept.values()) == opt.edges
        g = adg(comps, k)
        assert sum(x + y for x, y in g.kept.values()) == k
        assert sum(x * y for x, y in g.kept.values()) == g.edges
        # Theorem 2 (dual): ADG keeps at least half of the optimum, never more.
        assert opt.edges / 2 <= g.edges <= opt.edges


def test_ndg_against_the_split_optimum():
    rng = random.Random(32)
    for _ in range(250):
        a = [rng.randint(1, 3) for _ in range(rng.randint(0, 5))]
        b = [rng.randint(1, 3) for _ in range(rng.randint(0, 5))]
        comps = components(a, b)
        ka, kb = rng.randint(0, len(a)), rng.randint(0, len(b))
        opt = optdp_split(comps, ka, kb)
        assert opt == brute_split(a, b, len(a) - ka, len(b) - kb)
        g = ndg(comps, ka, kb)
        assert sum(x for x, _ in g.kept.values()) == len(a) - ka
        assert sum(y for _, y in g.kept.values()) == len(b) - kb
        # Theorem 1 (dual): NDG keeps at least half of the (k_A, k_B) optimum.
        assert opt / 2 <= g.edges <= opt


def test_adg_near_optdp_on_the_paper_workload():
    """§5.1 at a fifth of the paper's scale (10K tuples per relation, c = 200 values,
    k = 10%): ADG keeps >= 99% of OPTDP (the paper: over 99.5%, Figure 4)."""
    for skew in (0.5, 1.0, 2.0):
        a, b = zipf_relations(10_000, 200, skew, seed=1)
        comps = components(a, b)
        opt, g = optdp(comps, 1000), adg(comps, 1000)
        assert 0.99 * opt.edges <= g.edges <= opt.edges


def test_bad_k_is_refused():
    with pytest.raises(ValueError, match="k must be between 0 and the 2 tuples"):
        optdp(components([1], [1]), 3)
