"""Verdicts: Theorems 1-4 of Li et al. (VLDB 2006), §4.1-4.2.

* Theorem 1 / 3 (per input of one operator): the join state of an input is
  purgeable iff the input reaches every other input in the operator's
  (generalized) punctuation graph.  Corollary 1 / 2: the operator is purgeable
  iff all its inputs are.
* Theorem 2 / 4 (query level): a query is safe (some plan has only purgeable
  operators, Li et al. 2006, Defs. 2-5) iff its (generalized) punctuation graph is strongly
  connected; the single MJoin over all streams is then a safe plan.

In a plan, an intermediate input carries the schemes of the streams under it
whose punctuations the child operator can pass on: a punctuation of input ``I``
propagates to the operator's output once the stored ``I`` tuples it matches can
produce nothing new, i.e. when ``I``'s join state is purgeable (Tucker et al.
propagation invariants; Lemmas 1 and 2 of Li et al. 2006 (§4.1.2, §4.2) assume purgeable children,
where all schemes propagate, so both readings agree on every safe plan).

>>> from punctuated.safety.model import build_query
>>> q = build_query({"S1": ["a"], "S2": ["a"]}, ["S1.a = S2.a"], {"S1": [["a"]], "S2": [["a"]]})
>>> sorted(analyze_query(q)[1])
['S1', 'S2']
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .graph import Structure
from .model import Query, Scheme
from .tree import Plan, leaves, normalize_plan, plan_to_str, to_json


def theorem_for(s: Structure, level: str) -> str:
    """Name of the theorem that decides: ``level`` is ``"query"`` or ``"input"``.

    >>> theorem_for(Structure(["A"], [set()], [[]]), "query")
    'Theorem 2'
    """
    gen = s.is_generalized()
    if level == "query":
        return "Theorem 4" if gen else "Theorem 2"
    return "Theorem 3" if gen else "Theorem 1"


def analyze_query(q: Query) -> tuple[Structure, set[str]]:
    """The query as one MJoin: its structure and the purgeable streams
    (Theorems 2 and 4 via reachability, Li et al. 2006, Def. 9)."""
    s = Structure.of_query(q)
    return s, {s.names[i] for i in s.purgeable()}


def operator_structure(q: Query, inputs: list[frozenset[str]], schemes: list[list[Scheme]],
                       names: list[str]) -> Structure:
    """Structure of one plan operator whose inputs read the given stream sets and
    carry the given (propagated) schemes."""
    touches = [frozenset().union(*(q.touches[s] for s in x)) for x in inputs]
    return Structure(names, touches, [[(q.scheme_classes(p), p) for p in lst] for lst in schemes],
                     q.class_name)


@dataclass(frozen=True)
class OperatorVerdict:
    """Purgeability of each input of one plan operator (Theorem 1 or 3)."""

    operator: Plan
    inputs: tuple[Plan, ...]
    purgeable: tuple[bool, ...]
    theorem: str
    schemes: tuple[tuple[str, ...], ...] = field(default=())  # schemes carried per input

    @property
    def is_purgeable(self) -> bool:
        """Corollary 1 / 2: all join states of the operator are purgeable."""
        return all(self.purgeable)

    def to_dict(self) -> dict:
        return {"operator": to_json(self.operator), "purgeable": list(self.purgeable)}


@dataclass(frozen=True)
class PlanReport:
    """Per-operator verdicts of a plan; ``safe`` per Li et al. 2006, Defs. 2 and 4."""

    plan: Plan
    operators: tuple[OperatorVerdict, ...]
    propagation: str = "lemma"

    @property
    def safe(self) -> bool:
        return all(o.is_purgeable for o in self.operators)

    @property
    def unpurgeable(self) -> list[str]:
        """Inputs (streams, or ``(S1 ⋈ S2)`` for a join's output) never purged."""
        return [plan_to_str(i) for o in self.operators for i, ok in zip(o.inputs, o.purgeable) if not ok]

    def explain(self) -> str:
        how = ("an intermediate input carries the schemes our Spark join passes on: key values "
               "both of its inputs close" if self.propagation == "spark" else
               "an intermediate input carries the schemes of its purgeable inputs, Lemmas 1 and 2")
        lines = [f"Plan {plan_to_str(self.plan)} is {'safe' if self.safe else 'NOT safe'} "
                 f"(Li et al. (VLDB 2006), §2.2-2.4: a plan is safe iff every join operator is purgeable; {how})."]
        for o in self.operators:
            lines.append(f"  {plan_to_str(o.operator)}: "
                         + ("purgeable" if o.is_purgeable else "NOT purgeable")
                         + f" ({o.theorem}: an input's state is purgeable iff it reaches every other input)")
            for i, ok, sch in zip(o.inputs, o.purgeable, o.schemes):
                lines.append(f"    input {plan_to_str(i)}: {'purgeable' if ok else 'never purged'}"
                             f"; schemes available: {', '.join(sch) or 'none'}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"plan": to_json(self.plan), "safe": self.safe,
                "operators": [o.to_dict() for o in self.operators]}


PROPAGATIONS = ("lemma", "spark")


def plan_verdicts(q: Query, plan, propagation: str = "lemma", bands=()) -> PlanReport:
    """Per-operator, per-input purgeability of a plan (Theorems 1 and 3).

    ``propagation`` says which schemes an intermediate input carries: ``"lemma"``
    (Li et al. 2006, Lemmas 1 and 2: every scheme of the child operator's purgeable
    inputs) or ``"spark"`` (the rule our Spark joins follow, :mod:`punctuated.safety.sparkplan`:
    binary joins, and multi-way joins over streams; what ``spark.punctuated.safety.mode``
    enforces; ``bands``: the time bands of its binary joins, :class:`~punctuated.safety.band.Band`).

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"A": ["x"], "B": ["x"]}, ["A.x = B.x"], {"B": [["x"]]})
    >>> plan_verdicts(q, ("A", "B")).operators[0].purgeable
    (True, False)
    """
    if propagation not in PROPAGATIONS:
        raise ValueError(f"propagation must be one of {PROPAGATIONS}, got {propagation!r}")
    plan = normalize_plan(plan, q.streams)
    if propagation == "spark":
        from .sparkplan import label, spark_operators
        def theorem(p) -> str:
            if len(p) == 2:
                return "Theorem 1"
            schemes = [q.schemes_of(c) if isinstance(c, str) else [] for c in p]
            s = operator_structure(q, [leaves(c) for c in p], schemes, [plan_to_str(c) for c in p])
            return theorem_for(s, "query")
        return PlanReport(plan, tuple(
            OperatorVerdict(p, inputs, ok, theorem(p), tuple(tuple(label(c) for c in lst) for lst in carried))
            for p, inputs, ok, carried in spark_operators(q, plan, bands)), propagation)
    ops: list[OperatorVerdict] = []

    def visit(p: Plan) -> list[Scheme]:
        if isinstance(p, str):
            return q.schemes_of(p)
        carried = [visit(c) for c in p]
        s = operator_structure(q, [leaves(c) for c in p], carried, [plan_to_str(c) for c in p])
        good = s.purgeable()
        ok = tuple(i in good for i in range(len(p)))
        ops.append(OperatorVerdict(p, tuple(p), ok, theorem_for(s, "input"),
                                   tuple(tuple(str(x) for x in lst) for lst in carried)))
        out: list[Scheme] = []
        for i, lst in enumerate(carried):
            if ok[i]:
                out.extend(x for x in lst if x not in out)
        return out

    visit(plan)
    return PlanReport(plan, tuple(ops), propagation)


def punctuation_purgeability(q: Query) -> dict[Scheme, bool]:
    """§5.1: can the punctuations of each scheme themselves be purged?

    A punctuation only says something about its non-``*`` attributes, so it can
    be dropped once a hypothetical tuple matching it (all other attributes
    unknown) could no longer produce results: that is the chained purge of its
    stream restricted to the scheme's punctuable attributes.  Binary case
    (§5.1): ``(b1, *)`` of S2 goes once S1 punctuates ``b1`` on the joined
    attribute.  Queries may still be run with punctuation lifespans instead.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"S1": ["b"], "S2": ["b"]}, ["S1.b = S2.b"], {"S1": [["b"]], "S2": [["b"]]})
    >>> sorted(v for v in punctuation_purgeability(q).values())
    [True, True]
    """
    names = list(q.streams)
    out: dict[Scheme, bool] = {}
    for p in q.schemes:
        y = names.index(p.stream)
        touches = [q.touches[s] if i != y else q.touches[s] & q.scheme_classes(p)
                   for i, s in enumerate(names)]
        s = Structure(names, touches, [[(q.scheme_classes(x), x) for x in q.schemes_of(n)]
                                       for n in names], q.class_name)
        out[p] = len(s.closure(y)[0]) == len(names)
    return out
