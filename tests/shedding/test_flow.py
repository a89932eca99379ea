"""OPT-offline as min-cost flow (Das et al. 2005, §4.1) against brute force, and Figure 3."""

from __future__ import annotations

import random

from punctuated.shedding.flow import brute_force, opt_offline, schedule_output
from punctuated.shedding.online import capacities, exact_output, replay
from punctuated.shedding.trace import Trace
from punctuated.shedding.workloads import FIGURE3


def check_schedule(trace, window, memory, allocation, res):
    """The returned schedule respects the memory bound after every step and produces
    exactly the claimed output."""
    caps = capacities(memory, allocation)
    for t in range(trace.num_steps):
        held = [trace.arrivals[s] for s in res.held_after(trace, t)]
        for p, cap in caps.items():
            assert sum(1 for a in held if p in ("RS", a.stream)) <= cap
        assert all(a.time + window - 1 > t for a in held)
    assert schedule_output(trace, window, res.last_held) == res.output


def test_figure3_fixed_allocation_reproduces_the_paper():
    t, w, m = FIGURE3.trace(), FIGURE3.window, FIGURE3.memory
    exact = exact_output(t, w)
    res = opt_offline(t, w, m, "fixed")
    # Paper, §4.1.1: the optimal flow misses two of the exact result's tuples.
    assert exact == 7 and res.output == exact - len(FIGURE3.missed_by_opt) == 5
    check_schedule(t, w, m, "fixed", res)
    # The paper's bold flow: r(0) to time 2, r(2) to 3, r(3) to 4; s(1) to 3 (seq = 2*time + S).
    paper = {0: 2, 4: 3, 6: 4, 3: 3}
    assert schedule_output(t, w, paper) == 5
    assert brute_force(t, w, m, "fixed") == 5
    # Variable allocation (the paper's cross-arcs) can only help; here it gains one.
    assert opt_offline(t, w, m, "variable").output == brute_force(t, w, m, "variable") == 6


def test_flow_equals_brute_force_on_random_small_traces():
    rng = random.Random(2005)
    cases = 0
    while cases < 240:
        sync = rng.random() < 0.5
        if sync:
            n = rng.randint(1, 5)
            t = Trace.from_streams([rng.randint(1, 3) for _ in range(n)], [rng.randint(1, 3) for _ in range(n)])
        else:
            t = Trace([(s, rng.choice("RS"), rng.randint(1, 2)) for s in range(rng.randint(1, 5)) for _ in range(rng.randint(0, 2))])
        if len(t) > 10:
            continue
        w, m, warm = rng.randint(1, 4), rng.randint(0, 4), rng.choice([0, 0, 1, 2])
        for alloc in ("fixed", "variable"):
            res = opt_offline(t, w, m, alloc, warm)
            assert res.output == brute_force(t, w, m, alloc, warm), (t.arrivals, w, m, alloc, warm)
            check_schedule(t, w, m, alloc, res) if warm == 0 else None
            # OPT bounds every online policy and is bounded by EXACT.
            for p in ("prob", "life", "rand"):
                assert replay(t, w, m, p, alloc, warm).output <= res.output
            assert res.output <= exact_output(t, w, warm)
        assert opt_offline(t, w, m, "fixed", warm).output <= opt_offline(t, w, m, "variable", warm).output
        cases += 1


def test_enough_memory_is_exact():
    rng = random.Random(3)
    for _ in range(30):
        t = Trace.from_streams([rng.randint(1, 4) for _ in range(12)], [rng.randint(1, 4) for _ in range(12)])
        w = rng.randint(1, 5)
        assert opt_offline(t, w, 2 * w, "fixed").output == exact_output(t, w)
