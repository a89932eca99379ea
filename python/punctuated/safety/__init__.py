"""Safety analysis of continuous join queries over punctuated streams.

Implements Li et al. 2006 (Li, Chen, Tatemura, Agrawal, Candan, Hsiung, *Safety
Guarantee of Continuous Join Queries over Punctuated Data Streams*, VLDB 2006)
in pure Python on networkx, without Spark:

* :func:`analyze_safety` — the query taken as one MJoin: safe iff the
  (generalized) punctuation graph is strongly connected (Theorems 2 and 4),
  unpurgeable streams, chained purges (§3.2.1), suggestions, drawing;
* :func:`analyze_plan` — per-operator, per-input verdicts of a plan of binary
  joins and MJoins (Theorems 1 and 3); plans are nested tuples, see
  :mod:`punctuated.safety.tree`;
* :func:`safe_plans` — cheapest safe plans by dynamic programming (§5.2).

>>> r = analyze_safety({"item": ["sellerid", "itemid", "name", "initialprice"],
...                     "bid": ["bidderid", "itemid", "increase"]},
...                    ["item.itemid = bid.itemid"],
...                    {"item": [["itemid"]], "bid": [["bidderid"]]})
>>> r.safe, r.unpurgeable, [str(s) for s in r.suggestions]
(False, ['item'], ['bid(itemid)'])
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .model import Predicate, Query, Scheme, build_query, parse_predicate
from .plans import PlanSearch, RankedPlan
from .plans import safe_plans as _safe_plans
from .report import SafetyReport
from .suggest import Suggestion
from .tree import Plan, normalize_plan, plan_to_str
from .verdict import OperatorVerdict, PlanReport, analyze_query, plan_verdicts, punctuation_purgeability

__all__ = ["analyze_safety", "analyze_plan", "safe_plans", "SafetyReport", "PlanReport",
           "OperatorVerdict", "PlanSearch", "RankedPlan", "Suggestion", "Query", "Scheme",
           "Predicate", "Plan", "build_query", "parse_predicate", "normalize_plan", "plan_to_str",
           "punctuation_purgeability"]


def analyze_safety(streams: Mapping[str, Sequence[str]], predicates: Iterable[str],
                   schemes: Mapping[str, Iterable] | None = None) -> SafetyReport:
    """Is the continuous join query safe under its punctuation schemes?

    ``streams`` maps a stream to its attribute names, ``predicates`` are
    equi-joins written ``"S1.b = S2.b"``, ``schemes`` maps a stream to a list of
    schemes, each a list of attribute names (``"day<="`` marks a range
    pattern).  The query is taken as one multi-way join: Theorem 2 (one
    punctuable attribute per scheme) or Theorem 4 (several) of Li et al. (VLDB 2006), §4.1.2 and §4.2.
    Raises ``ValueError`` naming the stream or attribute of bad input.
    """
    q = build_query(streams, predicates, schemes)
    s, good = analyze_query(q)
    return SafetyReport(q, s, good)


def analyze_plan(streams: Mapping[str, Sequence[str]], predicates: Iterable[str],
                 schemes: Mapping[str, Iterable] | None, plan, propagation: str = "lemma") -> PlanReport:
    """Per-operator, per-input purgeability of ``plan`` (Theorems 1 and 3).

    ``propagation="spark"``: intermediate inputs carry what our Spark join passes on
    (binary plans; see :mod:`punctuated.safety.sparkplan`).

    >>> r = analyze_plan({"S1": ["a", "b"], "S2": ["b", "c"], "S3": ["c", "a"]},
    ...                  ["S1.b = S2.b", "S2.c = S3.c", "S3.a = S1.a"],
    ...                  {"S1": [["b"]], "S2": [["c"]], "S3": [["a"]]}, (("S1", "S2"), "S3"))
    >>> r.safe, [o.purgeable for o in r.operators]
    (False, [(False, True), (True, True)])
    """
    return plan_verdicts(build_query(streams, predicates, schemes), plan, propagation)


def safe_plans(streams: Mapping[str, Sequence[str]], predicates: Iterable[str],
               schemes: Mapping[str, Iterable] | None = None, **options) -> PlanSearch:
    """Cheapest safe plans (§5.2); options of :func:`punctuated.safety.plans.safe_plans`
    (``limit``, ``keep``, ``max_streams``, ``max_checks``, ``binary_only``, ``statistics``:
    by stream names, see :func:`punctuated.safety.plan_cost.statistics_of`)."""
    return _safe_plans(build_query(streams, predicates, schemes), **options)
