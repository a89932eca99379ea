"""The safety rule our Spark operators follow for a tree of binary joins.

Spark runs ``a JOIN b ON ... JOIN c ON ...`` as binary joins, each on the
predicates written between its two inputs (its *join key*, one position per
predicate).  Per join (Li et al. 2006, §4.1.1, Theorem 1 for a binary join): an input's state
is purgeable iff the other input carries a scheme whose attributes are all
join-key columns of that input.  A join's output carries, for every key scheme
(same key positions) that *both* its inputs carry, one scheme per input on that
input's key columns (Tucker et al. 2003, Table 3: the join emits an output
punctuation once both inputs closed the key) — if those columns come from one
stream (its marker column marks the output punctuation).

This is Lemma 1 of Li et al. 2006 (§4.1.2) restricted to what a partitioned join can observe
from one key, and on columns *as written*: ``x.k = y.k JOIN z ON x.k = z.k`` and
``... ON y.k = z.k`` are different trees here, as they are for Spark.  The JVM
check (``JoinSafety.verdicts``) implements the same rule; the shared vectors
(``spark_plans`` in ``testdata/safety_vectors.json``) keep both in step.

A node of three or more streams is a group of joins that runs as one multi-way join
(``spark.punctuated.join.plan`` ``auto`` or ``mjoin``): it is judged as one operator, by
Theorems 2/4 (an input's state is purgeable iff it reaches every other input in the
generalized punctuation graph of the operator; ``MultiJoinSafety`` on the JVM), and passes on
no punctuation (a group forms only where none is needed above it).

>>> from punctuated.safety.model import build_query
>>> q = build_query({"A": ["k"], "B": ["k", "v"], "C": ["v"]}, ["A.k = B.k", "B.v = C.v"],
...                 {"A": [["k"]], "B": [["k"], ["v"]], "C": [["v"]]})
>>> [o[2] for o in spark_operators(q, (("A", "B"), "C"))]
[(True, True), (True, False)]
>>> [o[2] for o in spark_operators(q, ("A", "B", "C"))]
[(True, True, True)]
"""
from __future__ import annotations

from .model import Attr, Query, Scheme
from .tree import Plan, leaves

# A scheme as the join sees it: its columns (stream, attribute), which are ranges, and which
# of those close upwards (`attr>=`; the JVM's KeyScheme.atLeast).
Carried = tuple[tuple[Attr, ...], frozenset[Attr], frozenset[Attr]]


def carried_of(s: Scheme) -> Carried:
    """A declared scheme as columns.

    >>> carried_of(Scheme("B", ("k", "d"), frozenset({"d"})))
    ((('B', 'k'), ('B', 'd')), frozenset({('B', 'd')}), frozenset())
    """
    return (tuple((s.stream, a) for a in s.attributes),
            frozenset((s.stream, a) for a in s.ranges | s.at_least),
            frozenset((s.stream, a) for a in s.at_least))


def join_keys(q: Query, left: frozenset[str], right: frozenset[str]) -> list[tuple[Attr, Attr]]:
    """The written predicates between two inputs, as (left column, right column) pairs:
    the join key, one position per predicate (the order of ``q.predicates``).

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"A": ["k"], "B": ["k"]}, ["B.k = A.k"])
    >>> join_keys(q, frozenset("A"), frozenset("B"))
    [(('A', 'k'), ('B', 'k'))]
    """
    out = []
    for p in q.predicates:
        if p.left[0] in left and p.right[0] in right:
            out.append((p.left, p.right))
        elif p.right[0] in left and p.left[0] in right:
            out.append((p.right, p.left))
    return out


def key_scheme(c: Carried, columns: list[Attr]) -> tuple[tuple[int, ...], tuple[tuple[int, bool], ...]] | None:
    """Key positions a scheme fixes (constants) and its ranges as (position, ``>=``) by position,
    if all its columns are key columns: the JVM's ``KeyScheme``, equal for two inputs exactly
    when their punctuations can be compared (Li et al. 2006, §5.1). A scheme may have several
    ranges (``day<=, level<=``: its punctuations close regions, :mod:`punctuated.region`).

    A column in several predicates counts at its last position (as the JVM's map does).

    >>> key_scheme(((("A", "k"),), frozenset(), frozenset()), [("A", "k")])
    ((0,), ())
    >>> key_scheme(((("A", "k"),), frozenset({("A", "k")}), frozenset({("A", "k")})), [("A", "k")])
    ((), ((0, True),))
    >>> key_scheme(((("A", "l"), ("A", "d")), frozenset({("A", "l"), ("A", "d")}), frozenset()), [("A", "d"), ("A", "l")])
    ((), ((0, False), (1, False)))
    >>> key_scheme(((("A", "v"),), frozenset(), frozenset()), [("A", "k")]) is None
    True
    """
    position = {col: i for i, col in enumerate(columns)}
    attrs, ranges, at_least = c
    if any(a not in position for a in attrs):
        return None
    constants = tuple(sorted(position[a] for a in attrs if a not in ranges))
    rngs = tuple(sorted((position[a], a in at_least) for a in attrs if a in ranges))
    return constants, rngs


def spark_operators(q: Query, plan: Plan, bands=()) -> list[tuple[Plan, tuple[Plan, ...], tuple[bool, ...],
                                                                  tuple[list[Carried], ...]]]:
    """Each join operator of ``plan`` (children first): the join, its inputs, whether each
    input's state is purgeable, and the schemes each input carries. A binary node is a binary
    join (Theorem 1), a node of three or more streams a multi-way join (Theorems 2/4). A binary
    join with a time band (``bands``, :class:`~punctuated.safety.band.Band`) also purges an input
    by the band edge (:meth:`~punctuated.safety.band.Band.closes`): the other input carries the
    range scheme on its band column (a join's output carries none: it passes on key punctuations
    only) or its watermark is on it.

    >>> from punctuated.safety.band import Band
    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"A": ["k", "ts"], "B": ["k", "ts"]}, ["A.k = B.k"], {"A": [["k"]], "B": [["ts<="]]})
    >>> [o[2] for o in spark_operators(q, ("A", "B"), [Band(("A", "ts"), ("B", "ts"), 0, 5)])]
    [(True, True)]
    """
    out = []

    def visit(p: Plan) -> list[Carried]:
        if isinstance(p, str):
            return [carried_of(s) for s in q.schemes_of(p)]
        if len(p) != 2:
            # an input that is a join is Spark's own join of undeclared streams: its output
            # carries no punctuations (a group never reads a punctuated join's output)
            for c in p:
                if not isinstance(c, str):
                    visit(c)
            ok_n = multi_join_purgeable(q, p)
            out.append((p, tuple(p), ok_n, tuple([carried_of(s) for s in q.schemes_of(c)]
                                                 if isinstance(c, str) else [] for c in p)))
            return []
        carried = (visit(p[0]), visit(p[1]))
        keys = join_keys(q, leaves(p[0]), leaves(p[1]))
        cols = ([k[0] for k in keys], [k[1] for k in keys])
        usable = [{key_scheme(c, cols[i]): c for c in carried[i] if key_scheme(c, cols[i])} for i in (0, 1)]
        # Theorem 1: an input is purgeable iff the other input carries a key scheme
        ok = (bool(usable[1]), bool(usable[0]))
        ok = tuple(ok[i] or _band_purges(bands, p, i, carried) for i in (0, 1))
        out.append((p, (p[0], p[1]), ok, carried))
        both = [k for k in usable[0] if k in usable[1]]
        emitted: list[Carried] = []
        for i in (0, 1):
            for constants, rngs in both:
                attrs = tuple(cols[i][j] for j in constants) + tuple(cols[i][j] for j, _ in rngs)
                ranges = frozenset(cols[i][j] for j, _ in rngs)
                carried_out = (attrs, ranges, frozenset(cols[i][j] for j, up in rngs if up))
                if len({a[0] for a in attrs}) == 1 and carried_out not in emitted:
                    emitted.append(carried_out)
        return emitted

    visit(plan)
    return out


def _band_purges(bands, join: Plan, i: int, carried) -> bool:
    """Does a time band of the binary ``join`` purge its input ``i`` (the band edge)?"""
    from .band import is_time_range
    sides = (leaves(join[0]), leaves(join[1]))
    for b in bands:
        if {b.left[0], b.right[0]} <= sides[0] | sides[1] and (b.left[0] in sides[0]) != (b.right[0] in sides[0]):
            stored = b.left[0] if b.left[0] in sides[i] else b.right[0]
            other = b.other(stored)
            # only `ts<=` closes a band (its edges grow with time)
            rng = any(is_time_range(attrs, ranges - up, other) for attrs, ranges, up in carried[1 - i])
            if b.closes(stored, rng):
                return True
    return False


def multi_join_purgeable(q: Query, inputs: tuple[Plan, ...]) -> tuple[bool, ...]:
    """Per input of a multi-way join, whether its state is purgeable (Li et al. 2006, Theorems
    2/4 on the operator's generalized punctuation graph, Def. 9: it reaches every other input).
    A stream input offers its schemes; an input that is a join, none.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"A": ["k"], "B": ["k", "v"], "C": ["v"]}, ["A.k = B.k", "B.v = C.v"],
    ...                 {"A": [["k"]], "B": [["k"]], "C": [["v"]]})
    >>> multi_join_purgeable(q, ("A", "B", "C"))
    (True, True, False)
    """
    from .verdict import operator_structure
    s = operator_structure(q, [leaves(x) for x in inputs],
                           [list(q.schemes_of(x)) if isinstance(x, str) else []
                            for x in inputs],
                           [str(x) for x in inputs])
    good = s.purgeable()
    return tuple(i in good for i in range(len(inputs)))


def label(c: Carried) -> str:
    """``B(k, d<=)``-style text of carried columns (one stream)."""
    attrs, ranges, up = c
    return f"{attrs[0][0]}(" + ", ".join(
        a + (">=" if (s, a) in up else "<=" if (s, a) in ranges else "") for s, a in attrs) + ")"
