"""Representation of execution plans (Li et al., VLDB 2006, §2.2 and §5.2).

A plan is a tree whose leaves are stream names and whose inner nodes are join
operators: a binary join has two children, an MJoin three or more.  We write it
as nested tuples (lists are accepted too, e.g. from JSON)::

    "S1"                       a stream (leaf)
    ("S1", "S2")               a binary join S1 ⋈ S2
    (("S1", "S2"), "S3")       (S1 ⋈ S2) ⋈ S3, a left-deep tree of binary joins
    ("S1", "S2", "S3")         one 3-way MJoin
    (("S1", "S2"), "S3", "S4") an MJoin with an intermediate input

Child order carries no meaning: symmetric joins are symmetric.

>>> plan_to_str(normalize_plan([["S1", "S2"], "S3"], ["S1", "S2", "S3"]))
'((S1 ⋈ S2) ⋈ S3)'
"""
from __future__ import annotations

from typing import Iterable, Iterator, Union

Plan = Union[str, tuple["Plan", ...]]


def normalize_plan(plan, streams: Iterable[str]) -> Plan:
    """Validate a plan against the query's streams and turn lists into tuples.

    Every stream must appear exactly once; operators need two or more children.

    >>> normalize_plan(("S1", "S1"), ["S1"])
    Traceback (most recent call last):
    ...
    ValueError: plan ('S1', 'S1') uses stream 'S1' more than once
    """
    streams = list(streams)
    seen: list[str] = []

    def norm(p) -> Plan:
        if isinstance(p, str):
            if p not in streams:
                raise ValueError(f"plan {plan!r} names unknown stream {p!r} (known: {', '.join(streams)})")
            if p in seen:
                raise ValueError(f"plan {plan!r} uses stream {p!r} more than once")
            seen.append(p)
            return p
        if isinstance(p, (list, tuple)):
            if len(p) < 2:
                raise ValueError(f"plan {plan!r}: the operator {p!r} needs at least two inputs")
            return tuple(norm(c) for c in p)
        raise ValueError(f"plan {plan!r}: {p!r} is neither a stream name nor a list of sub-plans")

    out = norm(plan)
    missing = [s for s in streams if s not in seen]
    if missing:
        raise ValueError(f"plan {plan!r} does not read stream(s) {', '.join(missing)}")
    return out


def leaves(plan: Plan) -> frozenset[str]:
    """Streams read by a (sub-)plan.

    >>> sorted(leaves((("S1", "S2"), "S3")))
    ['S1', 'S2', 'S3']
    """
    if isinstance(plan, str):
        return frozenset([plan])
    return frozenset().union(*(leaves(c) for c in plan))


def operators(plan: Plan) -> Iterator[tuple]:
    """Join operators of a plan, children before parents (post-order).

    >>> [plan_to_str(o) for o in operators((("S1", "S2"), "S3"))]
    ['(S1 ⋈ S2)', '((S1 ⋈ S2) ⋈ S3)']
    """
    if isinstance(plan, str):
        return
    for c in plan:
        yield from operators(c)
    yield plan


def plan_to_str(plan: Plan) -> str:
    """Readable infix form, ``⋈`` between the inputs of each operator."""
    if isinstance(plan, str):
        return plan
    return "(" + " ⋈ ".join(plan_to_str(c) for c in plan) + ")"


def to_json(plan: Plan):
    """Nested lists (the form used in ``testdata/safety_vectors.json``)."""
    return plan if isinstance(plan, str) else [to_json(c) for c in plan]


def canonical(plan: Plan) -> Plan:
    """Sort children recursively, so equal plans compare equal.

    >>> canonical(("S3", ("S2", "S1")))
    (('S1', 'S2'), 'S3')
    """
    if isinstance(plan, str):
        return plan
    return tuple(sorted((canonical(c) for c in plan), key=lambda p: (min(leaves(p)), repr(p))))
