"""Writes ``testdata/plan_choice_vectors.json``: queries and statistics -> the plan ``auto``
chooses and its cost, as the Python ``safe_plans`` computes them (the JVM's ``PlanChoice``
must agree; see ``testdata/README.md``).

    python testdata/gen_plan_choice_vectors.py      # from the repository root
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from punctuated.safety.model import build_query  # noqa: E402
from punctuated.safety.plan_cost import CostModel, Statistics, plan_cost, probe_orders  # noqa: E402
from punctuated.safety.plans import safe_plans  # noqa: E402
from punctuated.safety.tree import plan_to_str  # noqa: E402


def class_numbers(q):
    """Join classes numbered by first appearance (streams in order, attributes in order)."""
    order = []
    for s, attrs in q.streams.items():
        for a in attrs:
            c = q.cls[(s, a)]
            if c in q.touches[s] and c not in order:
                order.append(c)
    return {c: k for k, c in enumerate(order)}


def to_numbers(plan, names):
    return names.index(plan) if isinstance(plan, str) else tuple(to_numbers(c, names) for c in plan)


def case(name, streams, predicates, schemes, stats=None, note=""):
    """``stats``: by names, as ``safe_plans`` takes them (missing entries: the defaults)."""
    q = build_query(streams, predicates, schemes)
    names = list(q.streams)
    num = class_numbers(q)
    members = sorted(num, key=num.get)
    from punctuated.safety.plan_cost import statistics_of
    st = statistics_of(q, stats)
    found = safe_plans(q, limit=3, statistics=st)
    numbered = Statistics(st.rate, st.stored, tuple({num[c]: f for c, f in m.items()} for m in st.fanout))
    if found.plans:
        plan = to_numbers(found.plans[0].plan, names)
        cost = found.plans[0].cost
    else:
        plan = tuple(range(len(names)))
        cost = plan_cost(plan, st)
    assert cost == plan_cost(plan, numbered, CostModel(numbered))
    return {
        "name": name,
        **({"note": note} if note else {}),
        "query": {"streams": {s: list(a) for s, a in streams.items()}, "predicates": list(predicates),
                  "schemes": schemes},
        "classes": [[f"{s}.{a}" for s, a in q.members[c]] for c in members],
        "inputs": [{"name": s,
                    "classes": sorted(num[c] for c in q.touches[s]),
                    "schemes": [sorted(num[c] for c in q.scheme_classes(p))
                                for p in q.schemes_of(s) if q.scheme_classes(p) <= q.touches[s]]}
                   for s in names],
        "statistics": numbered.to_dict(),
        "expect": {
            "safe": bool(found.plans),
            "plan": plan_to_str(found.plans[0].plan) if found.plans else plan_to_str(tuple(names)),
            "cost": cost,
            "kind": "mjoin" if all(isinstance(c, int) for c in plan) else "tree",
            "probeOrders": probe_orders(plan, numbered),
            "ranked": [{"plan": plan_to_str(p.plan), "cost": p.cost} for p in found.plans],
        },
    }


def chain(n, punct=None):
    """s0(k0) ⋈ s1(k0, k1) ⋈ ... ⋈ s{n-1}(k{n-2}); every input punctuates every key by default."""
    streams = {f"s{i}": [f"k{j}" for j in (i - 1, i) if 0 <= j < n - 1] for i in range(n)}
    preds = [f"s{i}.k{i} = s{i + 1}.k{i}" for i in range(n - 1)]
    schemes = punct if punct is not None else {s: [[a] for a in attrs] for s, attrs in streams.items()}
    return streams, preds, schemes


def cycle(n):
    """s_i(x_i, x_{i+1 mod n}); s_i punctuates x_{i+1} (Li et al. 2006, Fig. 3/5 for n = 3)."""
    streams = {f"s{i}": [f"x{i}", f"x{(i + 1) % n}"] for i in range(n)}
    preds = [f"s{i}.x{(i + 1) % n} = s{(i + 1) % n}.x{(i + 1) % n}" for i in range(n)]
    schemes = {f"s{i}": [[f"x{(i + 1) % n}"]] for i in range(n)}
    return streams, preds, schemes


def star(n, schemes=None):
    """n inputs on one key k."""
    streams = {f"s{i}": ["k"] for i in range(n)}
    preds = [f"s{i}.k = s{i + 1}.k" for i in range(n - 1)]
    return streams, preds, schemes if schemes is not None else {s: [["k"]] for s in streams}


def hub(n):
    """h(k1 .. k{n-1}) joined with spokes s_i(k_i); everything punctuated."""
    streams = {"h": [f"k{i}" for i in range(1, n)], **{f"s{i}": [f"k{i}"] for i in range(1, n)}}
    preds = [f"h.k{i} = s{i}.k{i}" for i in range(1, n)]
    return streams, preds, {s: [[a] for a in attrs] for s, attrs in streams.items()}


def random_stats(rng, streams, q=None):
    out = {"rate": {}, "stored": {}, "fanout": {}}
    for s, attrs in streams.items():
        out["rate"][s] = rng.choice([1, 10, 100, 1000, 5000, 20000])
        out["stored"][s] = rng.choice([10, 1000, 100000])
        out["fanout"][s] = {a: rng.choice([0.5, 1, 1, 2, 10, 50]) for a in attrs}
    return out


def main() -> None:
    rng = random.Random(20061)
    cases = []
    st, pr, sc = chain(3)
    cases.append(case("chain3 defaults: the MJoin", st, pr, sc))
    cases.append(case("chain3: s2's many rows reuse the stored s0 ⋈ s1", st, pr, sc,
                      {"rate": {"s0": 1, "s1": 1, "s2": 10000}, "fanout": {"s1": {"k1": 50}}},
                      "a left-deep tree wins on skewed statistics"))
    cases.append(case("chain3: s0's many rows reuse the stored s1 ⋈ s2", st, pr, sc,
                      {"rate": {"s0": 10000, "s1": 1, "s2": 1}, "fanout": {"s1": {"k0": 50}}}))
    cases.append(case("chain3, b punctuates k and v, a and c nothing (Theorem 2 via b only)", st, pr,
                      {"s0": [["k0"]], "s1": [["k0"], ["k1"]], "s2": [["k1"]]}))
    cases.append(case("chain3, s0 never punctuates k0: s1's rows are never purged, unsafe", st, pr,
                      {"s1": [["k0"], ["k1"]], "s2": [["k1"]]}))
    cases.append(case("chain3, s2 never punctuated on k1: unsafe, the MJoin runs", st, pr,
                      {"s0": [["k0"]], "s1": [["k0"]], "s2": []}))
    for n in (4, 5, 6):
        st, pr, sc = chain(n)
        cases.append(case(f"chain{n} defaults", st, pr, sc))
        cases.append(case(f"chain{n}, last input fast, middle fan-out high", st, pr, sc,
                          {"rate": {f"s{n - 1}": 20000}, "fanout": {f"s{n - 2}": {f"k{n - 2}": 20}}}))
    for n in (3, 4, 5):
        st, pr, sc = cycle(n)
        cases.append(case(f"cycle{n}: only the MJoin is safe (Li et al. 2006, Fig. 7 for 3)", st, pr, sc))
        cases.append(case(f"cycle{n}, skewed: still only the MJoin", st, pr, sc,
                          {"rate": {"s0": 50000}, "fanout": {"s1": {"x1": 100}}}))
    for n in (3, 4, 5, 6):
        st, pr, sc = star(n)
        cases.append(case(f"star{n} on one key, defaults", st, pr, sc))
        cases.append(case(f"star{n}, one fast input", st, pr, sc, {"rate": {"s0": 100000}}))
    st, pr, _ = star(4)
    cases.append(case("star4, only s0 and s1 punctuate: no tree without them in the root", st, pr,
                      {"s0": [["k"]], "s1": [["k"]]}))
    st, pr, _ = star(3)
    cases.append(case("star3, one punctuating input: unsafe", st, pr, {"s0": [["k"]]}))
    for n in (3, 4, 5):
        st, pr, sc = hub(n)
        cases.append(case(f"hub with {n - 1} spokes, defaults", st, pr, sc))
        cases.append(case(f"hub with {n - 1} spokes, fast hub", st, pr, sc,
                          {"rate": {"h": 50000}, "fanout": {"s1": {"k1": 10}}}))
    st, pr, _ = cycle(4)
    both = {s: [[a] for a in attrs] for s, attrs in st.items()}
    cases.append(case("cycle4, every attribute punctuated: trees of adjacent inputs only, defaults", st, pr, both))
    cases.append(case("cycle4, every attribute punctuated, s0 and s1 slow, s2 fast", st, pr, both,
                      {"rate": {"s0": 1, "s1": 1, "s2": 30000}, "fanout": {"s1": {"x1": 40}, "s0": {"x1": 40}}}))
    # two-attribute schemes (Theorem 4): c punctuates (k, v) only
    cases.append(case("chain3, c's scheme on both attributes (Theorem 4)",
                      {"a": ["k"], "b": ["k", "v"], "c": ["k", "v"]},
                      ["a.k = b.k", "b.v = c.v", "a.k = c.k"],
                      {"a": [["k"]], "b": [["k"], ["v"]], "c": [["k", "v"]]}))
    # random safe-or-not queries with random statistics
    k = 0
    while len(cases) < 64:
        n = rng.randint(3, 6)
        shape = rng.choice(["chain", "star", "hub", "random"])
        if shape == "chain":
            st, pr, _ = chain(n)
        elif shape == "star":
            st, pr, _ = star(n)
        elif shape == "hub":
            st, pr, _ = hub(n)
        else:
            st = {f"s{i}": [] for i in range(n)}
            pr = []
            for i in range(1, n):
                j = rng.randrange(i)
                a = f"c{len(pr)}"
                st[f"s{i}"].append(a)
                st[f"s{j}"].append(a)
                pr.append(f"s{j}.{a} = s{i}.{a}")
            if rng.random() < 0.5 and n > 3:  # close a cycle
                i, j = rng.sample(range(n), 2)
                a = f"c{len(pr)}"
                st[f"s{i}"].append(a)
                st[f"s{j}"].append(a)
                pr.append(f"s{i}.{a} = s{j}.{a}")
        sc = {s: [[a] for a in attrs if rng.random() < 0.92] for s, attrs in st.items()}
        k += 1
        cases.append(case(f"random {k}: {shape} of {n}", st, pr, sc, random_stats(rng, st)))
    doc = {
        "description": "Plan choice of a multi-way join: query + statistics -> the cheapest safe plan "
                       "(Li et al. 2006, §5.2; cost of punctuated.safety.plan_cost / PlanCost). "
                       "Written by testdata/gen_plan_choice_vectors.py.",
        "cases": cases,
    }
    out = ROOT / "testdata" / "plan_choice_vectors.json"
    def one(c):  # a case: one line per field
        return "  {" + ",\n   ".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in c.items()) + "}"
    out.write_text("{\n \"description\": " + json.dumps(doc["description"], ensure_ascii=False)
                   + ",\n \"cases\": [\n" + ",\n".join(one(c) for c in cases) + "\n ]\n}\n", encoding="utf-8")
    kinds = [c["expect"]["kind"] for c in cases]
    print(f"{len(cases)} cases ({kinds.count('tree')} trees, "
          f"{sum(not c['expect']['safe'] for c in cases)} unsafe) -> {out}")


if __name__ == "__main__":
    main()
