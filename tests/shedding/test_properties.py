"""Hypothesis properties of the offline algorithms against brute force (Das et al. 2005,
§3 and §4.1), besides the seeded loops in the other files: hypothesis shrinks a failure
to the smallest trace or relation pair that shows it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from punctuated.shedding.flow import brute_force, opt_offline, schedule_output
from punctuated.shedding.online import exact_output, replay
from punctuated.shedding.static import adg, components, ndg, optdp, optdp_split
from punctuated.shedding.trace import Trace

from .test_static import brute, brute_split

arrivals = st.lists(
    st.tuples(st.integers(0, 4), st.sampled_from("RS"), st.integers(1, 3)), max_size=9
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(arrivals, st.integers(1, 4), st.integers(0, 4), st.sampled_from(["fixed", "variable"]), st.integers(0, 2))
def test_opt_offline_is_the_brute_force_optimum(rows, window, memory, allocation, warmup):
    t = Trace(rows)
    res = opt_offline(t, window, memory, allocation, warmup)
    assert res.output == brute_force(t, window, memory, allocation, warmup)
    assert schedule_output(t, window, res.last_held, warmup) == res.output
    assert res.output <= exact_output(t, window, warmup)
    assert replay(t, window, memory, "prob", allocation, warmup).output <= res.output


relation = st.lists(st.integers(1, 3), max_size=5)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(relation, relation, st.data())
def test_optdp_adg_ndg_against_brute_force(a, b, data):
    comps = components(a, b)
    k = data.draw(st.integers(0, len(a) + len(b)))
    opt = optdp(comps, k).edges
    assert opt == brute(a, b, k)
    assert opt / 2 <= adg(comps, k).edges <= opt
    ka, kb = data.draw(st.integers(0, len(a))), data.draw(st.integers(0, len(b)))
    split = optdp_split(comps, ka, kb)
    assert split == brute_split(a, b, len(a) - ka, len(b) - kb)
    assert split / 2 <= ndg(comps, ka, kb).edges <= split
