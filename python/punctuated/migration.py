"""Change the plan of a running query's multi-way join (JISC-style plan migration).

A join of three or more streams runs as one multi-way join whose *plan* -- which
inputs are joined first and which intermediate results it keeps -- belongs to the
operator. :func:`migrate` asks a running query for another plan; the query switches
at its next micro-batch and keeps its state (Aly et al., JISC, EDBT 2014): the new
plan's intermediate state is built from the state the query has, the old plan's is
dropped, and every result is produced exactly once.

Plans are written as lists of input names (the alias in the query, else the table
name) in left-deep order, nested lists for a bushy tree, or ``"mjoin"`` (no
intermediate state); ``"auto"`` hands the choice back to
``spark.punctuated.join.plan``::

    >>> migrate(query, ["bids", "auctions", "persons"])   # doctest: +SKIP
    >>> migrate(query, [["a", "b"], ["c", "d"]])           # doctest: +SKIP
    >>> join_plan(query)                                    # doctest: +SKIP
    ['bids', 'auctions', 'persons']

The request is written into the query's checkpoint (``_punctuated/migrate/<n>``), so
it survives a restart; the plan record of the batch that applies it names it.
"""

from __future__ import annotations

import json

__all__ = ["migrate", "join_plan", "plan_text"]


def plan_text(plan) -> str:
    """The text ``spark.punctuated.join.plan`` spells for ``plan``.

    >>> plan_text(["a", "b", "c"])
    '((a ⋈ b) ⋈ c)'
    >>> plan_text([["a", "b"], ["c", "d"]])
    '((a ⋈ b) ⋈ (c ⋈ d))'
    >>> plan_text("mjoin")
    'mjoin'
    """
    if isinstance(plan, str):
        if plan.strip().lower() in ("mjoin", "auto"):
            return plan.strip().lower()
        return plan
    if not isinstance(plan, (list, tuple)) or len(plan) < 2:
        raise ValueError(
            f"a plan is a list of two or more input names (nested lists for a bushy tree), "
            f"'mjoin' or 'auto', e.g. ['a', 'b', 'c']; got {plan!r}"
        )

    def part(p) -> str:
        if isinstance(p, str):
            return p
        return plan_text(p)

    text = part(plan[0])
    for p in plan[1:]:
        text = f"({text} ⋈ {part(p)})"
    return text


def _from_tree(tree, names):
    """A recorded plan tree (nested lists of input numbers) in :func:`migrate`'s form."""
    if isinstance(tree, int):
        return names[tree]
    if all(isinstance(c, int) for c in tree) and len(tree) > 2:
        return "mjoin" if sorted(tree) == list(range(len(names))) else [names[c] for c in tree]
    if len(tree) == 2:
        left, right = tree
        # left-deep: a binary left child continues the list
        if isinstance(left, list) and len(left) == 2:
            flat = _from_tree(left, names)
            return flat + [_from_tree(right, names)]
        return [_from_tree(left, names), _from_tree(right, names)]
    return [_from_tree(c, names) for c in tree]


def _is_connect_query(query) -> bool:
    return type(query).__module__.startswith("pyspark.sql.connect.")


def _jvm_query(query):
    from pyspark.sql import SparkSession

    from punctuated._session import require_extension

    session = SparkSession.getActiveSession() or SparkSession._instantiatedSession
    if session is None:
        raise RuntimeError("no Spark session in this process: start the query with a session first")
    require_extension(session)
    return session._jvm, query._jsq


def migrate(query, plan) -> int:
    """Ask a running ``query`` for ``plan`` from its next micro-batch on; returns the request's number.

    ``plan``: a list of input names in left-deep order, nested lists for a bushy
    tree, ``"mjoin"``, or ``"auto"`` (hand the choice back to
    ``spark.punctuated.join.plan``). A plan that does not fit the query's multi-way
    join fails at once (``IllegalArgumentException`` from the JVM, naming the inputs
    and an example), before anything is written. Asking again for the plan the newest
    request asks writes nothing and returns that request's number. Over Spark Connect
    the server's ``punctuated_migrate`` table function asks (a plan that does not fit
    raises ``ValueError`` with the same message).
    """
    if _is_connect_query(query):  # no Py4J: the server's punctuated_migrate
        from punctuated import _connect
        from punctuated._session import require_extension

        session = query._session  # the Connect session that started the query
        require_extension(session)
        return _connect.migrate(session, query, plan_text(plan))
    jvm, jsq = _jvm_query(query)
    return int(jvm.punctuated.checkpoint.MigrationRequests.request(jsq, plan_text(plan)))


def join_plan(query):
    """The plan ``query``'s multi-way join runs now, in :func:`migrate`'s form.

    ``"mjoin"``, or a list of input names (nested lists for bushy trees). With
    several multi-way joins, a list of ``{"inputs": [...], "plan": ...}``; with none
    yet (no micro-batch ran), ``None``. Over Spark Connect the server's
    ``punctuated_join_plan`` table function answers.
    """
    if _is_connect_query(query):  # no Py4J: the server's punctuated_join_plan
        from punctuated import _connect
        from punctuated._session import require_extension

        session = query._session  # the Connect session that started the query
        require_extension(session)
        plans = _connect.join_plans(session, query)
    else:
        jvm, jsq = _jvm_query(query)
        plans = json.loads(jvm.punctuated.checkpoint.MigrationRequests.joinPlans(jsq))
    shown = [{"inputs": p["inputs"], "plan": _from_tree(p["plan"], p["inputs"])} for p in plans]
    if not shown:
        return None
    if len(shown) == 1:
        return shown[0]["plan"]
    return shown
