"""Safety analysis of a Spark streaming query (user contract: "Safety analysis from Python").

:func:`check_safety` asks the extension once (``PythonApi.describe``, through
Py4J) for one document on a streaming query -- the streams it reads, the schemes
their punctuations may instantiate (declared schemes plus the unique key, each
attribute constant or range), the equi-join predicates as pairs of stream
columns, the tree of stateful operators Spark runs (its binary joins, aggregations
and deduplications) and the start-time check's verdicts;
its shape is in ``docs/python-document.md`` -- and runs
:func:`punctuated.safety.analyze_safety` on it (:func:`report_from_document`).
Names arrive as spelled in the schema (blanks, backquotes, any letters).  The result is a
:class:`QuerySafetyReport`, a :class:`~punctuated.safety.report.SafetyReport`
that also tells which streams declare nothing.

What is analysed:

* the query is taken as one multi-way join of every stream it reads
  (Li et al., VLDB 2006, Theorems 2 and 4, §4.1.2 and §4.2);
* the plan Spark runs is judged as the start-time check judges it: a group of inner joins
  over three or more streams that runs as one multi-way join (``spark.punctuated.join.plan``
  ``auto`` or ``mjoin``; the document's ``multiJoin`` node) as one operator by Theorems 2/4,
  every other join as a binary join (Theorem 1);
* a query with **no stream-stream join** holds no join state (a stream-static join
  keeps no state either);
* every streaming aggregation and deduplication over declared streams is judged
  by the punctuations that reach it (Tucker et al. 2003, §5.2): the verdicts are
  the start-time check's own (the document's ``verdicts.stateful``, one rule on the JVM),
  in ``stateful``; one that nothing closes makes the query unsafe;
* SQL text is parsed first, with Spark's parser: anything but one query (DDL,
  DML, ``SET``, ``CACHE``, several statements) is refused with a ``ValueError``
  before it reaches the catalog -- ``check_safety`` runs nothing;
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
from functools import cached_property

from .report import SafetyReport
from .tree import plan_to_str


class QuerySafetyReport(SafetyReport):
    """A :class:`SafetyReport` for a Spark query.

    The query is judged twice: as one MJoin (Theorems 2 and 4: ``query_safe``, is
    there a safe plan at all?) and as the plan Spark runs (``plan_report``: binary joins by
    Theorem 1, an intermediate input carrying what our Spark join passes on, and groups that
    run as one multi-way join by Theorems 2/4: :mod:`~punctuated.safety.sparkplan`).
    ``safe`` is the verdict on the plan Spark runs — the one
    ``spark.punctuated.safety.mode=strict`` enforces at ``start()`` — and
    ``unpurgeable`` lists the inputs of that plan (streams, or ``(a ⋈ b)`` for a
    join's output) whose state is never purged, with the query-level ones.

    Extra attributes: ``undeclared`` (streams with no punctuation declaration),
    ``join_graph`` (the analysed input: ``streams``, ``predicates``, ``schemes``),
    ``stream_joins`` (number of stream-stream joins; ``0`` means no join state,
    hence safe), ``source`` (the SQL text, if any), ``plan`` (the join tree, or
    ``None`` if the joins form no single tree), ``enforced`` (the JVM check's own
    per-join verdicts, children first, for comparison), ``chosen_plans`` (for each group run
    as one multi-way join, the plan ``spark.punctuated.join.plan=auto`` chooses and a verdict
    per state; ``to_dict()["chosen_plans"]``), ``refusals`` (what ``start()`` refuses whatever
    ``spark.punctuated.safety.mode`` says — a band-only join that cannot run on time buckets,
    load shedding over an outer join — each ``{"condition", "message"}``; the query is then
    not safe and ``explain()`` starts with them).
    """

    def __init__(self, base: SafetyReport, join_graph: dict, undeclared: list[str],
                 stream_joins: int | None, source: str | None = None, plan=None,
                 enforced: list[dict] | None = None, stateful: list[dict] | None = None,
                 sources: dict[str, dict] | None = None, bands: tuple = (),
                 refusals: list[dict] | None = None):
        no_state = stream_joins == 0
        self.bands = bands
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
                self.plan_report = plan_verdicts(self.query, self.plan, "spark", bands)
            except ValueError:  # the tree reads streams the graph does not name
                self.plan_report = None
        if self.plan_report is not None:
            self.safe = self.plan_report.safe
            self.unpurgeable = sorted(set(self.unpurgeable) | set(self.plan_report.unpurgeable))
        self.sources = sources or {}
        self.stateful = list(stateful or [])
        never = [op for op in self.stateful if not op.get("closed", True)]
        if never:
            self.safe = False
            self.unpurgeable = sorted(set(self.unpurgeable) | {stateful_label(op) for op in never})
        self.refusals = list(refusals or [])
        if self.refusals:  # start() refuses it whatever the safety mode: it cannot run at all
            self.safe = False

    @property
    def has_join_state(self) -> bool:
        return self.stream_joins != 0

    @cached_property
    def chosen_plans(self) -> list:
        """For each group of the plan Spark runs as one multi-way join (an operator over three or
        more streams): the plan ``spark.punctuated.join.plan=auto`` runs under the default
        statistics and a verdict per state, a :class:`~punctuated.safety.plans.ChosenPlan`."""
        from .model import build_query
        from .plans import choose_plan
        from .tree import operators

        if self.plan is None or isinstance(self.plan, str):
            return []
        d = self.query.to_dict()
        out = []
        for op in operators(self.plan):
            if len(op) >= 3 and all(isinstance(c, str) for c in op):
                group = set(op)
                sub = build_query({x: d["streams"][x] for x in op},
                                  [str(p) for p in self.query.predicates if p.left[0] in group and p.right[0] in group],
                                  {x: v for x, v in d["schemes"].items() if x in group})
                out.append(choose_plan(sub))
        return out

    def __repr__(self) -> str:
        return (f"QuerySafetyReport(safe={self.safe}, unpurgeable={self.unpurgeable}, "
                f"undeclared={self.undeclared}, theorem={self.theorem!r})")

    @property
    def query_suggestions(self):
        """Smallest sets of extra schemes that make the query safe as one MJoin (Theorems 2/4)."""
        return super().suggestions if self.has_join_state and not self.query_safe else []

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
                                 self.plan, "spark", self.bands).safe]

    @property
    def suggestions_minimal(self) -> bool:
        return super().suggestions_minimal if self.has_join_state else True

    @property
    def stateful_problems(self) -> list[str]:
        """The start-time check's sentence for each aggregation/deduplication never purged."""
        return [op["problem"] for op in self.stateful if not op.get("closed", True) and op.get("problem")]

    def fixes(self, suggestion) -> list[str]:
        """The statements that apply ``suggestion`` as printed (``ALTER TABLE`` / ``with_schemes``)."""
        from .suggest import fix_statements
        return fix_statements(suggestion, self.sources)

    def _stateful_text(self) -> str:
        if not self.stateful:
            return ""
        problems = self.stateful_problems
        if not problems:
            return ("\nEvery aggregation and deduplication is closed by punctuations that reach it: "
                    + ", ".join(stateful_label(op) for op in self.stateful) + ".")
        return "\nNOT SAFE: " + "\n".join(problems)

    def explain(self, limit: int | None = 20) -> str:
        text = self._explain(limit)
        if self.refusals:
            return ("The query CANNOT RUN: start() refuses it whatever spark.punctuated.safety.mode says.\n"
                    + "\n".join(r["message"] for r in self.refusals) + "\n" + text)
        return text

    def _explain(self, limit: int | None) -> str:
        streams = ", ".join(self.query.streams)
        if not self.has_join_state:
            if self.stateful_problems:
                return (f"The query is NOT SAFE: it has no stream-stream join (streams read: "
                        f"{streams}), but state of its aggregations or deduplications is never "
                        f"purged." + self._stateful_text())
            return (f"The query is SAFE: it has no stream-stream join, so it holds no join state "
                    f"to purge (streams read: {streams})."
                    + (self._stateful_text() or " It has no aggregation or deduplication over "
                       "declared streams."))
        text = super().explain(limit)
        if self.plan_report is not None:
            joins_safe = self.plan_report.safe
            head = (f"As Spark runs it, {plan_to_str(self.plan)}, the query is "
                    + ("SAFE: every join state is purged." if self.safe else
                       "NOT SAFE: every join state is purged, but not every aggregation or "
                       "deduplication state." if joins_safe else
                       "NOT SAFE: state never purged for " + ", ".join(self.plan_report.unpurgeable) + "."))
            text = head + "\n" + text + "\n" + self.plan_report.explain()
            if self.query_safe and not self.plan_report.safe:
                text += ("\nSpark runs this tree of binary joins, and a join passes on only the "
                         "punctuations of key values both its inputs close: write the joins so "
                         "that each one joins on columns every stream below it punctuates, or "
                         "set spark.punctuated.safety.mode=warn to run anyway. (Inner joins of "
                         "three or more streams run as one multi-way join, judged by Theorems "
                         "2/4, unless spark.punctuated.join.plan=written or a join among them "
                         "is not an inner equi-join on columns.)")
        for chosen in self.chosen_plans:
            text += "\n" + "\n".join(chosen.explain(limit))
        text += self._stateful_text()
        from .shedding import explain_text
        text += explain_text(self)
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
                 stateful=list(self.stateful),
                 fixes=[self.fixes(s) for s in self.suggestions],
                 plan=self.plan_report.to_dict() if self.plan_report is not None else None,
                 chosen_plans=[c.to_dict() for c in self.chosen_plans],
                 refusals=list(self.refusals),
                 shedding=getattr(self, "shedding", None),
                 bounded_by_budget=list(getattr(self, "bounded_by_budget", [])))
        return d


def stateful_label(op: dict) -> str:
    """``aggregation GROUP BY customer``-style name of a stateful operator's verdict."""
    by = "GROUP BY" if op.get("operator") == "aggregation" else "on"
    return f"{op.get('operator', 'operator')} {by} {', '.join(op.get('keys', []))}"


def report_from_join_graph(graph: dict, stream_joins: int | None = None, source: str | None = None,
                           enforced: list[dict] | None = None,
                           stateful: list[dict] | None = None) -> QuerySafetyReport:
    """Analyse a join graph written by hand, without Spark.

    ``graph`` has ``streams`` (each ``{"name", "attributes", "schemes", "declared"}``,
    schemes as lists of attribute names, ``"day<="`` for a range pattern) and
    ``predicates`` as text ``"S1.a = S2.b"`` (names that are no plain identifier
    backquoted: ``"S1.`bid id` = S2.b"``); ``graph["tree"]`` (nested lists of stream
    names) is a join tree to judge as Spark would run it.
    ``stream_joins``: number of stream-stream joins of the query (``0``: no join
    state, the report is safe; ``None``: unknown, analysed as one MJoin).
    ``enforced``/``stateful`` are verdicts of the start-time check, as in the
    document of :func:`report_from_document`.
    """
    from .model import parse_predicate

    streams = {s["name"]: list(s["attributes"]) for s in graph.get("streams", [])}
    predicates = [parse_predicate(p, streams) for p in graph.get("predicates", [])]
    schemes = {s["name"]: list(s["schemes"]) for s in graph.get("streams", []) if s.get("schemes")}
    tree = graph.get("tree")
    return _report(graph.get("streams", []), streams, predicates, schemes, stream_joins, source,
                   _tuple_tree(tree) if tree is not None else None, enforced, stateful)


#: The version of ``PythonApi.describe``'s document this module reads.
DOCUMENT_VERSION = 2


def report_from_document(doc: dict, source: str | None = None) -> QuerySafetyReport:
    """Analyse the document ``PythonApi.describe`` returns for a query (its shape:
    ``docs/python-document.md``): streams, predicates as column pairs, the tree of stateful
    operators Spark runs (joins, aggregations, deduplications) and the start-time check's
    verdicts. Nothing in it is text to parse: names arrive
    as spelled in the schema, whatever characters they contain.

    >>> doc = {"version": 2, "stream_joins": 1, "streams": [
    ...     {"name": "a", "attributes": ["bid id"], "declared": True,
    ...      "schemes": [{"source": "unique", "attributes": [{"name": "bid id", "kind": "constant"}]}]},
    ...     {"name": "b", "attributes": ["x"], "declared": False, "schemes": []}],
    ...     "predicates": [{"left": {"stream": "a", "attribute": "bid id"},
    ...                     "right": {"stream": "b", "attribute": "x"}}],
    ...     "tree": {"join": [{"stream": "a"}, {"stream": "b"}]},
    ...     "verdicts": {"joins": [], "stateful": []}}
    >>> r = report_from_document(doc)
    >>> r.safe, r.unpurgeable, r.join_graph["predicates"]
    (False, ['a'], ['a.`bid id` = b.x'])
    """
    from .model import Predicate, Scheme

    version = doc.get("version")
    if version != DOCUMENT_VERSION:
        raise ValueError(f"the extension describes queries in document version {version!r}, this "
                         f"package reads version {DOCUMENT_VERSION}: install the package and the "
                         "extension jar of one release")
    entries = doc.get("streams", [])
    streams = {s["name"]: list(s["attributes"]) for s in entries}
    predicates = [Predicate((p["left"]["stream"], p["left"]["attribute"]),
                            (p["right"]["stream"], p["right"]["attribute"]))
                  for p in doc.get("predicates", [])]
    schemes = {s["name"]: [Scheme(s["name"], tuple(a["name"] for a in sc["attributes"]),
                                  frozenset(a["name"] for a in sc["attributes"] if a["kind"] == "range"),
                                  frozenset(a["name"] for a in sc["attributes"] if a["kind"] == "range_at_least"))
                           for sc in s["schemes"]]
               for s in entries if s.get("schemes")}
    verdicts = doc.get("verdicts", {})
    # a multi-way join's verdict has the shape of a join's: the inputs and their purgeability
    enforced = list(verdicts.get("joins") or []) + list(verdicts.get("multiJoins") or [])
    from .band import Band
    bands = [Band.of(b) for b in doc.get("bands") or []]
    return _report(entries, streams, predicates, schemes, doc.get("stream_joins"), source,
                   _plan_of(doc.get("tree")), enforced, verdicts.get("stateful"), bands,
                   doc.get("refusals") or [])


def _plan_of(tree):
    """The document's tree as the model's plan of joins (nested pairs of stream names), or
    ``None`` when it has no join. Aggregations and deduplications are not joins: the plan
    reads through them (each is judged by its own verdict in ``verdicts.stateful``).

    >>> _plan_of({"aggregate": {"keys": ["k"], "punctuated": True, "verdict": 0,
    ...           "input": {"join": [{"stream": "a"}, {"deduplicate": {"keys": ["x"],
    ...                      "punctuated": False, "verdict": None, "input": {"stream": "b"}}}]}}})
    ('a', 'b')
    >>> _plan_of({"deduplicate": {"keys": ["x"], "punctuated": False, "verdict": None,
    ...           "input": {"stream": "b"}}}) is None
    True
    >>> _plan_of({"multiJoin": {"inputs": [{"stream": "a"}, {"stream": "b"}, {"stream": "c"}],
    ...           "verdict": 0}})
    ('a', 'b', 'c')
    """
    plan = _joins_of(tree) if tree is not None else None
    return plan if isinstance(plan, tuple) else None


def _joins_of(tree):
    if "stream" in tree:
        return tree["stream"]
    if "join" in tree:
        return tuple(_joins_of(t) for t in tree["join"])
    if "multiJoin" in tree:  # a group of joins run as one multi-way join: one n-ary node
        return tuple(_joins_of(t) for t in tree["multiJoin"]["inputs"])
    (operator,) = tree.values()  # {"aggregate": {...}} or {"deduplicate": {...}}
    return _joins_of(operator["input"])


def _report(entries: list[dict], streams: dict, predicates: list, schemes: dict,
            stream_joins: int | None, source: str | None, plan, enforced, stateful,
            bands=(), refusals=()) -> QuerySafetyReport:
    from . import analyze_safety
    from .band import band_edges, with_band_edges
    from .report import SafetyReport

    if not streams:
        raise ValueError("the query reads no stream: nothing to analyse")
    undeclared = [s["name"] for s in entries if not s.get("declared", False)]
    try:
        base = analyze_safety(streams, predicates, schemes)
    except ValueError as e:
        raise ValueError(f"cannot analyse the join graph of this query: {e}") from e
    edges = band_edges(base.query, bands)
    if edges:  # a join's time band adds edges to the punctuation graph (punctuated.safety.band)
        st = with_band_edges(base.structure, edges)
        base = SafetyReport(base.query, st, {st.names[i] for i in st.purgeable()})
    join_graph = {"streams": streams, "predicates": [str(p) for p in base.query.predicates],
                  "schemes": {k: v for k, v in base.query.to_dict()["schemes"].items()}}
    sources = {s["name"]: {k: s.get(k) for k in ("table", "declaration", "booleans", "used_names")}
               for s in entries}
    return QuerySafetyReport(base, join_graph, undeclared, stream_joins, source, plan, enforced,
                             stateful, sources, tuple(bands), list(refusals))


def _tuple_tree(t):
    return t if isinstance(t, str) else tuple(_tuple_tree(c) for c in t)


def check_safety(spark, query, *, draw: str | None = None) -> QuerySafetyReport:
    """Will every join state of a streaming query be purged? (Li et al., VLDB 2006)

    ``query`` is the SQL text of one query (streams as ``STREAM(table)``) or a
    streaming DataFrame (``spark.readStream...``, ``with_schemes(...)``).  SQL text
    is parsed first and is analysed only, never run: anything but one query
    (``DROP``, ``INSERT``, ``ALTER``, ``CREATE``, ``CACHE``, ``SET``, several
    statements) raises ``ValueError`` before it reaches the catalog.
    Returns a :class:`QuerySafetyReport`: ``safe``, ``unpurgeable``,
    ``undeclared``, ``explain()``, ``suggestions`` and ``fixes(suggestion)``
    (statements that apply one as printed), ``stateful`` (the verdicts on its
    aggregations and deduplications), ``graph``, ``draw(path)``, ``to_dict()``.
    ``draw`` writes the punctuation graph to that ``.png`` or ``.svg`` file too.

    A query is safe when every join state is purged and every aggregation or
    deduplication over declared streams is closed by the punctuations that reach
    it.  Raises ``ValueError`` for a query that is not streaming.

    Over Spark Connect (``spark`` a Connect session) the server's table function
    ``punctuated_describe`` gives the same document and the server refuses
    anything but a query (``PUNCTUATED_TABLE_FUNCTION_ARGUMENT``, raised as
    ``pyspark.errors.AnalysisException``); a DataFrame is read through a
    temporary view (docs/connect.md).

    >>> report = check_safety(spark, "SELECT * FROM STREAM(auctions) a "
    ...                              "JOIN STREAM(bids) b ON a.id = b.auction")  # doctest: +SKIP
    >>> report.safe  # doctest: +SKIP
    True
    """
    from punctuated import _connect

    source = None
    if _connect.is_connect(spark):
        # no Py4J: the server parses, refuses anything but a query and describes it
        # (punctuated_describe); a DataFrame is read through a temporary view
        from punctuated._session import require_extension

        require_extension(spark)
        if isinstance(query, str):
            source = query
            doc, streaming = _connect.describe(spark, query)
        elif hasattr(query, "isStreaming"):
            doc, streaming = _connect.describe_dataframe(query)
        else:
            raise TypeError(f"query must be SQL text or a streaming DataFrame, got {type(query).__name__}")
        _refuse_batch(streaming, source)
        session = spark
    else:
        if isinstance(query, str):
            source = query
            _refuse_non_query(spark, query)
            df = spark.sql(query)
        else:
            df = query
        if not hasattr(df, "isStreaming"):
            raise TypeError(f"query must be SQL text or a streaming DataFrame, got {type(query).__name__}")
        if not hasattr(df, "_jdf"):
            raise ValueError("check_safety of a Spark Connect DataFrame needs its Connect session: "
                             "call check_safety(spark, df) with the session the DataFrame came from")
        _refuse_batch(df.isStreaming, source)
        doc = json.loads(df.sparkSession._jvm.punctuated.spark.PythonApi.describe(df._jdf))
        session = df.sparkSession
    report = report_from_document(doc, source=source)
    from .shedding import annotate
    annotate(report, session.conf)
    if draw:
        report.draw(draw)
    return report


def _refuse_batch(streaming: bool, source: str | None) -> None:
    if not streaming:
        what = "this SQL query" if source is not None else "this DataFrame"
        raise ValueError(f"{what} is not a streaming query, so it holds no join state to check: "
                         "read the tables as streams, with STREAM(table) in SQL "
                         "(SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...) or "
                         "spark.readStream.table(...) for a DataFrame")


def _refuse_non_query(spark, text: str) -> None:
    """Parse ``text`` with Spark's parser and refuse anything but one query, before
    ``spark.sql`` could run it (a DDL/DML statement, ``SET``, ``CACHE``, a script of
    several statements would run at once)."""
    shown = text.strip() if len(text.strip()) <= 80 else text.strip()[:77] + "..."
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise ValueError("check_safety could not reach Spark's parser: give a classic (Py4J) "
                         "SparkSession, or a Spark Connect session (docs/connect.md)")
    parser = jsession.sessionState().sqlParser()
    try:
        plan = parser.parsePlan(text)
    except Exception as e:  # not one statement (several, or a syntax error)
        detail = (str(getattr(e, "java_exception", e)).strip().splitlines() or [""])[0]
        raise ValueError(f"check_safety analyses one SQL query and runs nothing: {shown!r} is not "
                         f"one statement Spark can parse ({detail})") from None
    try:
        parser.parseQuery(text.strip().rstrip(";").rstrip())
    except Exception:
        kind = plan.getClass().getSimpleName()
        raise ValueError(f"check_safety analyses a query and runs nothing: {shown!r} is a {kind} "
                         "statement, not a query; it was not run. Give the streaming query itself, "
                         "e.g. SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...") from None


def format_report(report: SafetyReport) -> str:
    """The text ``punctuated check`` prints: ``explain()``, unpurgeable, suggestions."""
    lines = [report.explain(), ""]
    lines.append("Unpurgeable: " + (", ".join(report.unpurgeable) or "none"))
    undeclared = getattr(report, "undeclared", None)
    if undeclared is not None:
        lines.append("Undeclared streams: " + (", ".join(undeclared) or "none"))
    fixes = getattr(report, "fixes", None)
    joins_safe = report.plan_report.safe if getattr(report, "plan_report", None) is not None else None
    if report.suggestions:
        lines.append("Suggestions (each alone makes the query's joins safe; run its statements):")
        for k, s in enumerate(report.suggestions, 1):
            lines.append(f"  {k}. add {s}")
            lines.extend(f"       {st}" for st in (fixes(s) if fixes else []))
        if not report.suggestions_minimal:
            lines.append("  (search budget exhausted: not necessarily the fewest schemes)")
    elif joins_safe is False and report.query_safe:
        lines.append("Suggestions: no declaration is missing as one multi-way join (the query is "
                     "safe, Li et al. 2006, Theorems 2/4), and none makes the tree of binary joins "
                     "Spark runs safe: " + _tree_advice())
    elif joins_safe is False and getattr(report, "query_suggestions", None):
        lines.append("Suggestions: no punctuation declaration makes the tree of binary joins Spark "
                     "runs safe: " + _tree_advice())
        lines.append("  (as one multi-way join, Li et al. 2006, Theorems 2/4, these schemes would, "
                     "but Spark does not run one: "
                     + "; ".join(str(s) for s in report.query_suggestions) + ")")
    elif not report.safe and joins_safe is not False and getattr(report, "stateful_problems", None):
        lines.append("Suggestions: see the fix of each aggregation/deduplication above")
    elif not report.safe:
        lines.append("Suggestions: none (no scheme on join attributes can make it safe)")
    if not report.suggestions and not report.safe:
        # the start-time check's own sentences: applicable fixes, or what can replace one
        enforced = [p for e in getattr(report, "enforced", None) or [] for p in e.get("problems", [])]
        lines.extend(f"  start() would say: {p}" for p in enforced)
    return "\n".join(lines)


def _tree_advice() -> str:
    return ("a join passes on only punctuations of its own key that both its inputs close, so "
            "each join needs its key closed by every stream below it. What can: join every "
            "stream on one key that all of them punctuate (a star), or read a stream that "
            "closes no key of the joins above it as a static table, joined after the "
            "stream-stream joins (... JOIN STREAM(b) ON ... JOIN t ON ..., not JOIN STREAM(t)): "
            "a stream-static join keeps no state; or set spark.punctuated.safety.mode=warn to "
            "run anyway.")


__all__ = ["check_safety", "QuerySafetyReport", "report_from_join_graph", "report_from_document",
           "format_report", "stateful_label", "DOCUMENT_VERSION"]
