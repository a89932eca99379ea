"""Safety analysis of a Spark streaming query (user contract: "Safety analysis from Python").

:func:`check_safety` asks the extension (``PythonApi.joinGraph``, through Py4J)
for the join graph of a streaming query -- the streams it reads, the schemes
their punctuations may instantiate (declared schemes plus the unique key) and
the equi-join predicates traced back to the streams -- and runs
:func:`punctuated.safety.analyze_safety` on it.  The result is a
:class:`QuerySafetyReport`, a :class:`~punctuated.safety.report.SafetyReport`
that also tells which streams declare nothing.

What is analysed:

* the query is taken as one multi-way join of every stream it reads
  (Li et al., VLDB 2006, Theorems 2 and 4, §4.1.2 and §4.2);
* a query with **no stream-stream join** holds no join state: it is reported
  safe whatever its declarations (a stream-static join keeps no state either).
  Other stateful operators (aggregations, deduplication) are not judged here;
* join predicates written in ``WHERE`` (``FROM STREAM(a), STREAM(b) WHERE
  a.x = b.y``) count as much as ``ON``: they are read from the optimized plan too;
* a join with no equality predicate (cross or theta join) is a cross product,
  never purgeable;
* attribute lists are kept as the streams give them (the punctuation marker
  column included: it is no join attribute, so it changes nothing).

The join graph alone, without Spark:

>>> r = report_from_join_graph({"streams": [
...     {"name": "auctions", "attributes": ["id", "seller"], "schemes": [["id"]], "declared": True},
...     {"name": "bids", "attributes": ["auction", "bidder"], "schemes": [["auction"]], "declared": True},
...     {"name": "people", "attributes": ["pid", "name"], "schemes": [], "declared": False}],
...     "predicates": ["people.pid = auctions.seller", "auctions.id = bids.auction"]})
>>> r.safe, r.unpurgeable, r.undeclared, [str(s) for s in r.suggestions]
(False, ['auctions', 'bids', 'people'], ['people'], ['auctions(seller) + people(pid)'])
"""
from __future__ import annotations

import json

from .report import SafetyReport
from .tree import plan_to_str


class QuerySafetyReport(SafetyReport):
    """A :class:`SafetyReport` for a Spark query.

    The query is judged twice: as one MJoin (Theorems 2 and 4: ``query_safe``, is
    there a safe plan at all?) and as the tree of binary joins Spark runs
    (``plan_report``, Theorems 1 and 3, an intermediate input carrying what our
    Spark join passes on: :mod:`~punctuated.safety.sparkplan`).
    ``safe`` is the verdict on the plan Spark runs — the one
    ``spark.punctuated.safety.mode=strict`` enforces at ``start()`` — and
    ``unpurgeable`` lists the inputs of that plan (streams, or ``(a ⋈ b)`` for a
    join's output) whose state is never purged, with the query-level ones.

    Extra attributes: ``undeclared`` (streams with no punctuation declaration),
    ``join_graph`` (the analysed input: ``streams``, ``predicates``, ``schemes``),
    ``stream_joins`` (number of stream-stream joins; ``0`` means no join state,
    hence safe), ``source`` (the SQL text, if any), ``plan`` (the join tree, or
    ``None`` if the joins form no single tree), ``enforced`` (the JVM check's own
    per-join verdicts, children first, for comparison).
    """

    def __init__(self, base: SafetyReport, join_graph: dict, undeclared: list[str],
                 stream_joins: int | None, source: str | None = None, plan=None,
                 enforced: list[dict] | None = None):
        no_state = stream_joins == 0
        purgeable = set(base.structure.names) if no_state else set(base.purgeable)
        super().__init__(base.query, base.structure, purgeable)
        self.join_graph = join_graph
        self.undeclared = sorted(undeclared)
        self.stream_joins = stream_joins
        self.source = source
        self.enforced = enforced
        self.plan = None if no_state else plan
        self.plan_report = None
        if self.plan is not None and not isinstance(self.plan, str):
            from .verdict import plan_verdicts
            try:
                self.plan_report = plan_verdicts(self.query, self.plan, "spark")
            except ValueError:  # the tree reads streams the graph does not name
                self.plan_report = None
        if self.plan_report is not None:
            self.safe = self.plan_report.safe
            self.unpurgeable = sorted(set(self.unpurgeable) | set(self.plan_report.unpurgeable))

    @property
    def has_join_state(self) -> bool:
        return self.stream_joins != 0

    def __repr__(self) -> str:
        return (f"QuerySafetyReport(safe={self.safe}, unpurgeable={self.unpurgeable}, "
                f"undeclared={self.undeclared}, theorem={self.theorem!r})")

    @property
    def query_suggestions(self):
        """Smallest sets of extra schemes that make the query safe as one MJoin (Theorems 2/4)."""
        return super().suggestions if self.has_join_state else []

    @property
    def suggestions(self):
        """Those of :attr:`query_suggestions` that also make the plan Spark runs safe."""
        found = self.query_suggestions
        if self.plan_report is None or self.plan_report.safe:
            return found
        from .model import Scheme
        from .verdict import plan_verdicts
        return [x for x in found
                if plan_verdicts(self.query.with_schemes(Scheme(st, tuple(a)) for st, a in x.schemes),
                                 self.plan, "spark").safe]

    @property
    def suggestions_minimal(self) -> bool:
        return super().suggestions_minimal if self.has_join_state else True

    def explain(self, limit: int | None = 20) -> str:
        streams = ", ".join(self.query.streams)
        if not self.has_join_state:
            return (f"The query is SAFE: it has no stream-stream join, so it holds no join state "
                    f"to purge (streams read: {streams}). Aggregation or deduplication state, "
                    f"if any, is not judged by this analysis.")
        text = super().explain(limit)
        if self.plan_report is not None:
            head = (f"As Spark runs it, {plan_to_str(self.plan)}, the query is "
                    + ("SAFE: every join state is purged." if self.safe else
                       "NOT SAFE: state never purged for " + ", ".join(self.plan_report.unpurgeable) + "."))
            text = head + "\n" + text + "\n" + self.plan_report.explain()
            if self.query_safe and not self.plan_report.safe:
                text += ("\nSpark runs this tree of binary joins, and a join passes on only the "
                         "punctuations of key values both its inputs close: write the joins so "
                         "that each one joins on columns every stream below it punctuates, or "
                         "set spark.punctuated.safety.mode=warn to run anyway.")
        if self.undeclared:
            text += ("\nStreams without a punctuation declaration (no scheme, no unique key): "
                     + ", ".join(self.undeclared)
                     + ". Declare one with TBLPROPERTIES ('punctuated.schemes' = ..., "
                       "'punctuated.marker' = ...) or punctuated.with_schemes(...).")
        return text

    def to_dict(self) -> dict:
        d = super().to_dict()
        d.update(undeclared=self.undeclared, has_join_state=self.has_join_state,
                 suggestions=[s.as_schemes() for s in self.suggestions],
                 streams={s: list(a) for s, a in self.join_graph["streams"].items()},
                 predicates=list(self.join_graph["predicates"]),
                 schemes=self.join_graph["schemes"], query_safe=self.query_safe,
                 plan=self.plan_report.to_dict() if self.plan_report is not None else None)
        return d


def report_from_join_graph(graph: dict, stream_joins: int | None = None,
                           ranges: dict[str, list[set[str]]] | None = None,
                           extra_predicates: list[str] = (), source: str | None = None,
                           enforced: list[dict] | None = None) -> QuerySafetyReport:
    """Analyse a join graph in the JSON shape of ``PythonApi.joinGraph``.

    ``stream_joins``: number of stream-stream joins of the query (``0``: no join
    state, the report is safe; ``None``: unknown, analysed as one MJoin).
    ``ranges`` maps a stream to the attribute sets of its schemes with the
    range-pattern attributes (``day<=``), restored for display.
    ``extra_predicates`` are more predicates in the same syntax (from the
    optimized plan); those naming unknown streams or attributes are skipped.
    ``graph["tree"]`` (nested lists of stream names) is the join tree Spark runs.
    """
    from . import analyze_safety

    streams: dict[str, list[str]] = {}
    schemes: dict[str, list[list[str]]] = {}
    undeclared = []
    for s in graph.get("streams", []):
        name = s["name"]
        streams[name] = list(s["attributes"])
        rng = set().union(*(ranges or {}).get(name, [set()]))
        sch = [[a + ("<=" if a in rng else "") for a in scheme] for scheme in s.get("schemes", [])]
        if sch:
            schemes[name] = sch
        if not s.get("declared", False):
            undeclared.append(name)
    if not streams:
        raise ValueError("the query reads no stream: nothing to analyse")
    predicates = _merge_predicates(list(graph.get("predicates", [])), list(extra_predicates), streams)
    join_graph = {"streams": streams, "predicates": predicates, "schemes": schemes}
    try:
        base = analyze_safety(streams, predicates, schemes)
    except ValueError as e:
        raise ValueError(f"cannot analyse the join graph of this query: {e}") from e
    tree = graph.get("tree")
    plan = _tuple_tree(tree) if tree is not None else None
    return QuerySafetyReport(base, join_graph, undeclared, stream_joins, source, plan, enforced)


def _tuple_tree(t):
    return t if isinstance(t, str) else tuple(_tuple_tree(c) for c in t)


def _merge_predicates(given: list[str], extra: list[str], streams: dict) -> list[str]:
    from .model import parse_predicate

    out, seen = [], set()
    for i, text in enumerate(given + extra):
        try:
            p = parse_predicate(text, streams)
        except ValueError:
            if i < len(given):
                raise
            continue
        key = frozenset((p.left, p.right))
        if key not in seen:
            seen.add(key)
            out.append(text)
    return out


def check_safety(spark, query, *, draw: str | None = None) -> QuerySafetyReport:
    """Will every join state of a streaming query be purged? (Li et al., VLDB 2006)

    ``query`` is SQL text (read with ``spark.sql``; streams as ``STREAM(table)``)
    or a streaming DataFrame (``spark.readStream...``, ``with_schemes(...)``).
    Returns a :class:`QuerySafetyReport`: ``safe``, ``unpurgeable``,
    ``undeclared``, ``explain()``, ``suggestions``, ``graph``, ``draw(path)``,
    ``to_dict()``.  ``draw`` writes the punctuation graph to that ``.png`` or
    ``.svg`` file too.

    A query without a stream-stream join holds no join state and is safe.
    Raises ``ValueError`` for a query that is not streaming.

    >>> report = check_safety(spark, "SELECT * FROM STREAM(auctions) a "
    ...                              "JOIN STREAM(bids) b ON a.id = b.auction")  # doctest: +SKIP
    >>> report.safe  # doctest: +SKIP
    True
    """
    source = None
    if isinstance(query, str):
        source = query
        df = spark.sql(query)
    else:
        df = query
    if not hasattr(df, "isStreaming"):
        raise TypeError(f"query must be SQL text or a streaming DataFrame, got {type(query).__name__}")
    if not hasattr(df, "_jdf"):
        raise ValueError("check_safety needs a classic (JVM) SparkSession with the punctuated "
                         "extension; Spark Connect DataFrames are not supported")
    if not df.isStreaming:
        what = "this SQL query" if source is not None else "this DataFrame"
        raise ValueError(f"{what} is not a streaming query, so it holds no join state to check: "
                         "read the tables as streams, with STREAM(table) in SQL "
                         "(SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...) or "
                         "spark.readStream.table(...) for a DataFrame")
    jvm = df.sparkSession._jvm
    graph = json.loads(jvm.punctuated.spark.PythonApi.joinGraph(df._jdf))
    enforced = json.loads(jvm.punctuated.spark.PythonApi.joinSafety(df._jdf))
    report = report_from_join_graph(graph, stream_joins=_stream_joins(df),
                                    ranges=_ranges(df, graph), extra_predicates=_optimized_predicates(df),
                                    source=source, enforced=enforced)
    if draw:
        report.draw(draw)
    return report


def _stream_joins(df) -> int | None:
    """Number of joins of the analyzed plan whose two sides are streaming."""
    try:
        todo, count = [df._jdf.queryExecution().analyzed()], 0
        while todo:
            node = todo.pop()
            if node.getClass().getSimpleName() == "Join" and node.left().isStreaming() \
                    and node.right().isStreaming():
                count += 1
            children = node.children()
            todo.extend(children.apply(i) for i in range(children.size()))
        return count
    except Exception:  # unknown plan shape: analyse as one MJoin
        return None


def _optimized_predicates(df) -> list[str]:
    """Join predicates of the optimized plan, where ``WHERE`` conditions have been
    pushed into the joins (the analyzed plan keeps them in a ``Filter``)."""
    try:
        session = df.sparkSession
        plan = session._jsparkSession.sessionState().optimizer().execute(
            df._jdf.queryExecution().analyzed())
        conf = session._jsparkSession.sessionState().conf()
        preds = session._jvm.punctuated.spark.JoinGraph.of(plan, conf.caseSensitiveAnalysis()).predicates()
        return [str(preds.apply(i)) for i in range(preds.size())]
    except Exception:  # the analyzed plan's predicates stand alone
        return []


def _ranges(df, graph: dict) -> dict[str, list[set[str]]]:
    """Range-pattern attributes of the declared schemes (the join graph gives names only)."""
    try:
        from punctuated._declare import declarations

        decls = declarations(df)
    except Exception:
        return {}
    out: dict[str, list[set[str]]] = {}
    names = [s["name"] for s in graph.get("streams", []) if s.get("declared")]
    for d in decls:
        short = str(d.get("table", "")).split(".")[-1]
        rng = [{a["attr"] for a in s if a.get("kind") == "range"} for s in d.get("schemes", [])]
        rng = [r for r in rng if r]
        if not rng:
            continue
        for n in names:
            if n == short or (n.startswith(short + "_") and n[len(short) + 1:].isdigit()):
                out.setdefault(n, []).extend(rng)
    return out


def format_report(report: SafetyReport) -> str:
    """The text ``punctuated check`` prints: ``explain()``, unpurgeable, suggestions."""
    lines = [report.explain(), ""]
    lines.append("Unpurgeable: " + (", ".join(report.unpurgeable) or "none"))
    undeclared = getattr(report, "undeclared", None)
    if undeclared is not None:
        lines.append("Undeclared streams: " + (", ".join(undeclared) or "none"))
    if report.suggestions:
        lines.append("Suggestions (each alone makes the query safe):")
        lines.extend(f"  {k}. add {s}" for k, s in enumerate(report.suggestions, 1))
        if not report.suggestions_minimal:
            lines.append("  (search budget exhausted: not necessarily the fewest schemes)")
    elif not report.safe and getattr(report, "plan_report", None) is not None and report.query_safe:
        lines.append("Suggestions: none needed as one multi-way join (the query is safe, Theorems 2/4); "
                     "for the tree of joins Spark runs, join each stream on columns that every "
                     "stream below that join punctuates")
    elif not report.safe and getattr(report, "query_suggestions", None):
        lines.append("Suggestions: none for the tree of joins Spark runs; as one multi-way join "
                     "(Theorems 2/4) these would make it safe:")
        lines.extend(f"  {k}. add {s}" for k, s in enumerate(report.query_suggestions, 1))
    elif not report.safe:
        lines.append("Suggestions: none (no scheme on join attributes can make it safe)")
    return "\n".join(lines)


__all__ = ["check_safety", "QuerySafetyReport", "report_from_join_graph", "format_report"]
