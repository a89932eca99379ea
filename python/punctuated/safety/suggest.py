"""Suggestions: the fewest extra punctuation schemes that make an unsafe query safe.

Only one-attribute schemes on join attributes are proposed: a scheme on a
subset of attributes is at least as useful as one on more attributes (§4.2),
so a smallest fix never needs a multi-attribute scheme, and a scheme on an
attribute outside the join predicates never adds an edge (Li et al. 2006, Defs. 7 and 8).

Every stream needs an incoming edge in a strongly connected graph, so each
stream without a usable scheme must receive one; the exact search enumerates
sets of growing size under that constraint (each set checked by Theorems 2/4).
Past ``budget`` checks (or ``exact_max_streams`` streams) it falls back to a greedy repair on the transformed
punctuation graph (Li et al. 2006, Def. 11, §4.3): give each sink component an edge out, preferably
to a source component; that answer is flagged as not necessarily minimal.

>>> from punctuated.safety.model import build_query
>>> q = build_query({"item": ["id"], "bid": ["id", "bidder"]}, ["item.id = bid.id"],
...                 {"item": [["id"]], "bid": [["bidder"]]})
>>> [str(s) for s in suggest_schemes(q)[0]]
['bid(id)']
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import networkx as nx

from .graph import Structure, transformed_punctuation_graph
from .model import Query, Scheme


@dataclass(frozen=True)
class Suggestion:
    """A set of extra schemes, each ``(stream, (attribute, ...))``."""

    schemes: tuple[tuple[str, tuple[str, ...]], ...]

    def __str__(self) -> str:
        return " + ".join(f"{s}({', '.join(a)})" for s, a in self.schemes)

    def as_schemes(self) -> dict[str, list[list[str]]]:
        """The extra schemes in the ``schemes`` argument format of ``analyze_safety``."""
        out: dict[str, list[list[str]]] = {}
        for s, a in self.schemes:
            out.setdefault(s, []).append(list(a))
        return out


def _safe(q: Query) -> bool:
    s = Structure.of_query(q)
    return len(s.purgeable()) == s.n


def _connected(q: Query) -> bool:
    g = nx.Graph()
    g.add_nodes_from(q.streams)
    for c, mem in q.members.items():
        g.add_edges_from((mem[0][0], m[0]) for m in mem[1:])
    return nx.is_connected(g)


def candidates(q: Query) -> list[tuple[str, str]]:
    """One-attribute schemes on join attributes that the query lacks."""
    have = {(p.stream, p.attributes[0]) for p in q.schemes if len(p.attributes) == 1}
    return [(s, a) for s in q.streams for a in q.join_attributes(s) if (s, a) not in have]


def _rank(q: Query, combo: frozenset[tuple[str, str]]):
    multi = {(p.stream, a) for p in q.schemes if len(p.attributes) > 1 for a in p.attributes}
    return (len(combo), len({s for s, _ in combo}), -len(combo & multi), sorted(combo))


def suggest_schemes(q: Query, limit: int = 5, budget: int = 2000, exact_max_streams: int = 30
                    ) -> tuple[list[Suggestion], bool]:
    """Smallest sets of extra one-attribute schemes making ``q`` safe, ranked:
    fewer schemes, then fewer streams to change, then attributes that already
    appear in a multi-attribute scheme of that stream, then by name.  Returns
    ``(suggestions, minimal)``; ``[]`` when safe or when no scheme can help
    (a stream without join predicate: a cross product is never safe).  Queries
    of more than ``exact_max_streams`` streams get the greedy answer directly."""
    if len(q.streams) <= 1 or _safe(q) or not _connected(q):
        return [], True
    cands = candidates(q)
    if len(q.streams) > exact_max_streams:
        return _greedy(q, cands), False
    s = Structure.of_query(q)
    fed = {s.names[y] for y, _, _ in s.usable}
    need = [st for st in q.streams if st not in fed]
    per = {st: [c for c in cands if c[0] == st] for st in need}
    checks = 0
    for k in range(max(1, len(need)), len(cands) + 1):
        found: set[frozenset] = set()
        tried: set[frozenset] = set()
        for base in itertools.product(*per.values()):
            rest = [c for c in cands if c not in base]
            for extra in itertools.combinations(rest, k - len(base)):
                combo = frozenset(base + extra)
                if combo in tried:
                    continue
                tried.add(combo)
                checks += 1
                if checks > budget:
                    return _greedy(q, cands), False
                if _safe(q.with_schemes(Scheme(st, (a,)) for st, a in combo)):
                    found.add(combo)
        if found:
            best = sorted(found, key=lambda c: _rank(q, c))[:limit]
            return [Suggestion(tuple((st, (a,)) for st, a in sorted(c))) for c in best], True
    return [], True


def _greedy(q: Query, cands: list[tuple[str, str]], checks: int = 2) -> list[Suggestion]:
    """Repair on the transformed punctuation graph (Li et al. 2006, Def. 11; Theorem 5: safe iff
    it ends as one node), after Eswaran and Tarjan's augmentation of a DAG to a strongly connected
    graph: each round, every sink component gets an edge out (to a source component where a join
    predicate allows it) and every source component not yet fed gets an edge in (from a sink
    component where possible), each edge being one added one-attribute scheme; repeat until one
    node remains: about max(sources, sinks) schemes per round, a round per TPG rebuild (a few at
    1,000 streams). Then at most ``checks`` safety checks (each a verdict) drop additions that turn
    out unnecessary, a half at a time; the answer is not necessarily minimal either way.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"a": ["k"], "b": ["k", "v"], "c": ["v"]}, ["a.k = b.k", "b.v = c.v"], {})
    >>> [str(s) for s in _greedy(q, candidates(q))]
    ['a(k) + b(k) + b(v) + c(v)']
    """
    added: list[tuple[str, str]] = []
    by_class: dict[int, list[tuple[str, str]]] = {}
    for c in cands:
        by_class.setdefault(q.cls[c], []).append(c)
    toucher: dict[int, list[str]] = {}
    for st in q.streams:
        for k in q.touches[st]:
            toucher.setdefault(k, []).append(st)

    chosen: set[tuple[str, str]] = set()

    def choose(opts: list[tuple[str, str]], preferred) -> bool:
        opts = [c for c in opts if c not in chosen]
        best = [c for c in opts if preferred(c)] or opts
        if best:
            added.append(min(best))
            chosen.add(added[-1])
        return bool(best)

    cur = q
    while True:
        t = transformed_punctuation_graph(cur)
        if len(t) == 1:
            break
        cond = nx.condensation(t)
        comp = {m: k for k in cond for n in cond.nodes[k]["members"] for m in t.nodes[n]["members"]}
        mem: dict[int, list[str]] = {}
        for m, k in comp.items():
            mem.setdefault(k, []).append(m)
        sinks = {k for k in cond if cond.out_degree(k) == 0}
        sources = {k for k in cond if cond.in_degree(k) == 0}
        progress = False
        for z in sorted(sinks):
            # an edge out of z: a scheme of a stream outside z on a class z's streams have
            classes = set().union(*(q.touches[m] for m in mem[z]))
            progress |= choose([c for k in classes for c in by_class.get(k, ()) if comp[c[0]] != z],
                               lambda c: comp[c[0]] in sources)
        for w in sorted(sources):
            # an edge into w: a scheme of a stream of w on a class a stream outside w has
            opts = [c for m in mem[w] for k in q.touches[m] for c in by_class.get(k, ())
                    if c[0] == m and any(comp[x] != w for x in toucher[k])]
            progress |= choose(opts, lambda c: any(comp[x] in sinks and comp[x] != w
                                                   for x in toucher[q.cls[c]]))
        if not progress:
            return []
        cur = q.with_schemes(Scheme(st, (a,)) for st, a in added)
    # drop what turns out unnecessary, a half at a time, within the budget of checks
    parts = [added[len(added) // 2:]]
    while parts and checks > 0:
        part = parts.pop()
        rest = [x for x in added if x not in part]
        checks -= 1
        if _safe(q.with_schemes(Scheme(st, (a,)) for st, a in rest)):
            added = rest
        elif len(part) > 1:
            parts += [part[:len(part) // 2], part[len(part) // 2:]]
    return [Suggestion(tuple((st, (a,)) for st, a in sorted(added)))]


def fix_statements(suggestion: Suggestion, sources: dict[str, dict]) -> list[str]:
    """The statements that add ``suggestion``'s schemes, applicable as printed.

    ``sources`` maps a stream to what ``PythonApi.describe`` says of it: ``table`` (the
    catalog table it reads, or ``None`` for a DataFrame stream), ``declaration`` (its
    properties as written), ``booleans`` (its BOOLEAN columns) and ``used_names`` (the
    names its columns are joined under).  A table gets ``ALTER TABLE <table> SET
    TBLPROPERTIES (...)`` keeping its schemes (the new ones appended with ``;``), marker
    and unique key (and a marker column added first if it has no BOOLEAN column); a
    DataFrame stream gets the ``punctuated.with_schemes(df, ...)`` call, ``df`` being the
    DataFrame as it enters the join.  The JVM's start-time message prints the same
    (``SafetyFixes``).

    >>> s = Suggestion((("bids", ("auction",)),))
    >>> fix_statements(s, {"bids": {"table": "spark_catalog.default.bids", "booleans": ["p"],
    ...                             "declaration": {"punctuated.schemes": "bidder"}}})
    ["ALTER TABLE spark_catalog.default.bids SET TBLPROPERTIES ('punctuated.schemes' = 'bidder; auction', 'punctuated.marker' = 'p')"]
    """
    out = []
    by_stream: dict[str, list[tuple[str, ...]]] = {}
    for stream, attrs in suggestion.schemes:
        by_stream.setdefault(stream, []).append(attrs)
    for stream, added in by_stream.items():
        src = sources.get(stream) or {}
        decl = src.get("declaration") or {}
        table = src.get("table")
        used = src.get("used_names") or {}
        name = (lambda a: a) if table else (lambda a: used.get(a, a))
        existing = [s.strip() for s in decl.get("punctuated.schemes", "").split(";") if s.strip()]
        schemes = existing + [t for t in (", ".join(_quote(name(a)) for a in attrs) for attrs in added)
                              if t not in existing]
        booleans = [name(b) for b in src.get("booleans") or []]
        marker = decl.get("punctuated.marker") or (booleans[0] if booleans else None)
        unique = decl.get("punctuated.unique")
        if table:
            props = [("punctuated.schemes", "; ".join(schemes)), ("punctuated.marker", marker or "is_punct")]
            if unique:
                props.append(("punctuated.unique", unique))
            if marker is None:
                out.append(f"ALTER TABLE {table} ADD COLUMNS (is_punct BOOLEAN)")
            out.append(f"ALTER TABLE {table} SET TBLPROPERTIES ("
                       + ", ".join(f"'{k}' = '{v}'" for k, v in props) + ")")
        else:
            args = [f"schemes={schemes!r}", f"marker={marker or '<a BOOLEAN column of the stream>'!r}"]
            if unique:
                args.append(f"unique={unique!r}")
            args.append(f"name={stream!r}")
            out.append(f"punctuated.with_schemes(df, {', '.join(args)})  "
                       f"# df: the {stream} DataFrame as it enters the join")
    return out


def _quote(name: str) -> str:
    import re

    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"
