"""Punctuation graphs of Li et al. (VLDB 2006), Defs. 7-11 (§4.1-4.3).

Everything is computed on a :class:`Structure`: the inputs of one join operator
(the streams of the query when the query is taken as one MJoin, Theorems 2/4;
the inputs of a plan operator, Theorems 1/3), the join classes each input has
an attribute in, and the schemes each input offers (as sets of join classes).

* Def. 7 (§4.1.1), punctuation graph: an edge ``x -> y`` when ``y`` has a one-attribute
  scheme on an attribute joined with ``x``.
* Def. 8 (§4.2), generalized punctuation graph: a scheme of ``y`` with several
  punctuable attributes gives a *generalized edge* from the inputs joined with
  those attributes to ``y``.  We store it as an AND over the scheme's attributes
  of an OR over the inputs joined with each attribute (Def. 8 names one stream
  per attribute; with several, any of them can provide the value).
* Def. 9 (§4.2), reachability: :meth:`Structure.closure` (forward chaining, linear).
* Def. 10 (§4.2), strong connection: :meth:`Structure.purgeable` lists the inputs that
  reach all others (Theorems 1/3); the graph is strongly connected iff all do.
* Def. 11 (§4.3), transformed punctuation graph: :func:`transformed_punctuation_graph`.

A scheme is *usable* at an operator only if each of its attributes is joined
with another input; otherwise no finite set of punctuations can be derived for
it (§3.2.1) and it adds no edge.

>>> s = Structure(["S1", "S2"], [{0}, {0}], [[({0}, "S1(a)")], []])
>>> sorted(s.plain_edges()), sorted(s.purgeable())
([(1, 0)], [1])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import networkx as nx

from .model import Query


@dataclass(frozen=True)
class Step:
    """How the chained purge reaches ``node`` (§3.2.1 and §4.2): ``node``
    punctuates ``scheme`` whose join class ``c`` takes its values from the
    already reached input ``providers[c]``."""

    node: int
    scheme: object
    providers: tuple[tuple[int, int], ...]  # (class, providing node)


class Structure:
    """Inputs of a join operator with their join classes and schemes.

    ``touches[i]``: join classes input ``i`` has an attribute in;
    ``schemes[i]``: list of ``(classes, label)`` pairs, ``label`` being what
    explanations print (usually a :class:`~punctuated.safety.model.Scheme`).
    """

    def __init__(self, names: Sequence[str], touches: Sequence[Iterable[int]],
                 schemes: Sequence[Sequence[tuple[Iterable[int], object]]],
                 class_name: Callable[[int], str] = str):
        self.names = list(names)
        self.n = len(self.names)
        self.touches = [frozenset(t) for t in touches]
        self.class_name = class_name
        self.toucher: dict[int, list[int]] = {}
        for i, t in enumerate(self.touches):
            for c in t:
                self.toucher.setdefault(c, []).append(i)
        # usable schemes: every class joined with another input
        self.usable: list[tuple[int, frozenset[int], object]] = []
        seen: set[tuple[int, frozenset[int]]] = set()
        for y, lst in enumerate(schemes):
            for classes, label in lst:
                cs = frozenset(classes)
                if cs and all(any(x != y for x in self.toucher.get(c, ())) for c in cs):
                    if (y, cs) not in seen:
                        seen.add((y, cs))
                        self.usable.append((y, cs, label))
        self.waiting: dict[int, list[int]] = {}
        for k, (_, cs, _) in enumerate(self.usable):
            for c in cs:
                self.waiting.setdefault(c, []).append(k)

    @classmethod
    def of_query(cls, q: Query) -> "Structure":
        """The query as one MJoin over all its streams (Theorems 2 and 4)."""
        names = list(q.streams)
        return cls(names, [q.touches[s] for s in names],
                   [[(q.scheme_classes(p), p) for p in q.schemes_of(s)] for s in names],
                   q.class_name)

    # --- Li et al. 2006, Defs. 7 and 8 ---------------------------------------
    def is_generalized(self) -> bool:
        """True iff some usable scheme has several attributes (Li et al. 2006, Def. 8 applies)."""
        return any(len(cs) > 1 for _, cs, _ in self.usable)

    def plain_edges(self) -> set[tuple[int, int]]:
        """Edges of the punctuation graph, Li et al. 2006, Def. 7 (``x -> y``: y's one-attribute
        scheme is joined with x)."""
        out = set()
        for y, cs, _ in self.usable:
            if len(cs) == 1:
                (c,) = cs
                out.update((x, y) for x in self.toucher[c] if x != y)
        return out

    def generalized_edges(self) -> list[tuple[dict[int, list[int]], int, object]]:
        """Generalized edges of Li et al. 2006, Def. 8: ``({class: providers}, target, scheme)``."""
        return [({c: [x for x in self.toucher[c] if x != y] for c in sorted(cs)}, y, lab)
                for y, cs, lab in self.usable if len(cs) > 1]

    # --- Li et al. 2006, Def. 9 ----------------------------------------------
    def closure(self, start: int, stop: set[int] | frozenset[int] = frozenset()
                ) -> tuple[dict[int, Step | None], bool]:
        """Reachable set of ``start`` in the generalized punctuation graph (Li et al. 2006, Def. 9)
        with, for each reached input, the :class:`Step` that reached it — the
        order of the chained purge.  Stops early (returning ``True``) when an
        input of ``stop`` is reached.

        >>> s = Structure("ABC", [{0}, {0, 1}, {1}], [[], [({0}, "B(x)")], [({1}, "C(y)")]])
        >>> list(s.closure(0)[0])
        [0, 1, 2]
        """
        reached: dict[int, Step | None] = {start: None}
        if start in stop:
            return reached, True
        avail: dict[int, int] = {}
        need = [len(cs) for _, cs, _ in self.usable]
        queue = [start]
        while queue:
            x = queue.pop()
            for c in self.touches[x]:
                if c in avail:
                    continue
                avail[c] = x
                for k in self.waiting.get(c, ()):
                    need[k] -= 1
                    y, cs, lab = self.usable[k]
                    if need[k] == 0 and y not in reached:
                        reached[y] = Step(y, lab, tuple((d, avail[d]) for d in sorted(cs)))
                        if y in stop:
                            return reached, True
                        queue.append(y)
        return reached, False

    # --- Li et al. 2006, Def. 10 / Theorems 1 and 3 --------------------------
    def _class_graph(self, plain_only: bool) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        for i, t in enumerate(self.touches):
            g.add_edges_from((i, ("c", c)) for c in t)
        for y, cs, _ in self.usable:
            if not plain_only or len(cs) == 1:
                g.add_edges_from((("c", c), y) for c in cs)
        return g

    def purgeable(self) -> set[int]:
        """Inputs that reach every other input in the generalized punctuation
        graph (Li et al. 2006, Def. 9), i.e. whose join state is purgeable (Theorems 1 and 3).

        Strategy: such inputs are mutually reachable and lie in the unique source
        component of the over-approximated "potential" graph; with one-attribute
        schemes only one closure is needed (linear); otherwise each failed
        closure rules out everything it reached (polynomial)."""
        if self.n <= 1:
            return set(range(self.n))
        pot = self._class_graph(plain_only=False)
        cond = nx.condensation(pot)
        sources = [k for k in cond if cond.in_degree(k) == 0]
        if len(sources) != 1:
            return set()
        cands = [v for v in cond.nodes[sources[0]]["members"] if isinstance(v, int)]
        gen = self.is_generalized()
        plain = self._class_graph(plain_only=True) if gen else pot
        pcond = nx.condensation(plain) if gen else cond
        rank = {v: i for i, k in enumerate(nx.topological_sort(pcond))
                for v in pcond.nodes[k]["members"]}
        cands.sort(key=rank.__getitem__)
        good: set[int] = set()
        bad: set[int] = set()
        for v in cands:
            if v in good or v in bad:
                continue
            reached, hit = self.closure(v, good)
            if hit or len(reached) == self.n:
                if not good:  # everything that plain-reaches v reaches all as well
                    good.update(u for u in nx.ancestors(plain, v) if isinstance(u, int))
                good.add(v)
            else:
                bad.update(reached)
        return good


def punctuation_graph(q: Query) -> nx.DiGraph:
    """Punctuation graph ``PG(CJQ)`` of Li et al. 2006, Def. 7 (§4.1.1), one node per stream.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"item": ["id"], "bid": ["id"]}, ["item.id = bid.id"], {"bid": [["id"]]})
    >>> list(punctuation_graph(q).edges)
    [('item', 'bid')]
    """
    return to_networkx(Structure.of_query(q), generalized=False)


def generalized_punctuation_graph(q: Query) -> nx.DiGraph:
    """Generalized punctuation graph ``GPG(CJQ)`` of Li et al. 2006, Def. 8 (§4.2; see :func:`to_networkx`)."""
    return to_networkx(Structure.of_query(q), generalized=True)


def reachable_set(q: Query, stream: str) -> set[str]:
    """``R_S`` of Li et al. 2006, Def. 9 (§4.2), for a stream of the query (itself included).

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"item": ["id"], "bid": ["id"]}, ["item.id = bid.id"], {"bid": [["id"]]})
    >>> sorted(reachable_set(q, "item")), sorted(reachable_set(q, "bid"))
    (['bid', 'item'], ['bid'])
    """
    s = Structure.of_query(q)
    return {s.names[i] for i in s.closure(s.names.index(stream))[0]}


def is_strongly_connected(q: Query) -> bool:
    """Li et al. 2006, Def. 10 (§4.2): every stream reaches every other one in ``GPG(CJQ)``."""
    s = Structure.of_query(q)
    return len(s.purgeable()) == s.n


def to_networkx(s: Structure, generalized: bool = True,
                purgeable: set[int] | None = None) -> nx.DiGraph:
    """Render a structure as a :class:`networkx.DiGraph`.

    Input nodes have ``kind="stream"`` (and ``purgeable`` when given).  Plain
    edges (Li et al. 2006, Def. 7) have ``kind="plain"``, ``schemes`` and ``predicates``.  For
    each generalized edge (Def. 8) a node ``G{...}->target(attrs)`` with
    ``kind="generalized"`` is added, with ``kind="member"`` edges from the
    inputs providing its attributes and one ``kind="generalized"`` edge to the
    target.  ``g.graph["theorem_family"]`` is ``"PG"`` or ``"GPG"``.
    """
    g = nx.DiGraph(theorem_family="GPG" if s.is_generalized() else "PG")
    for i, name in enumerate(s.names):
        g.add_node(name, kind="stream", **({} if purgeable is None else {"purgeable": i in purgeable}))
    for y, cs, lab in s.usable:
        if len(cs) == 1:
            (c,) = cs
            for x in s.toucher[c]:
                if x == y:
                    continue
                u, v = s.names[x], s.names[y]
                if g.has_edge(u, v):
                    d = g.edges[u, v]
                    if str(lab) not in d["schemes"]:
                        d["schemes"].append(str(lab))
                    if s.class_name(c) not in d["predicates"]:
                        d["predicates"].append(s.class_name(c))
                else:
                    g.add_edge(u, v, kind="plain", schemes=[str(lab)], predicates=[s.class_name(c)])
        elif generalized:
            provs = sorted({s.names[x] for c in cs for x in s.toucher[c] if x != y})
            node = f"G{{{','.join(provs)}}}->{lab}"
            g.add_node(node, kind="generalized", target=s.names[y], scheme=str(lab),
                       covers=tuple(provs), requires=[s.class_name(c) for c in sorted(cs)])
            for c in sorted(cs):
                for x in s.toucher[c]:
                    if x != y:
                        g.add_edge(s.names[x], node, kind="member", provides=s.class_name(c))
            g.add_edge(node, s.names[y], kind="generalized", schemes=[str(lab)])
    return g


def transformed_punctuation_graph(q: Query | Structure) -> nx.DiGraph:
    """Transformed punctuation graph ``TPG`` of Li et al. 2006, Def. 11 (§4.3; Theorem 5: ``GPG`` is
    strongly connected iff the TPG ends as one single virtual node).

    Repeatedly merge strongly connected components into virtual nodes; add a
    virtual edge ``X -> Y`` when a stream covered by ``Y`` has a scheme whose
    punctuable attributes are all joined with ``X``.  Def. 11 adds such edges
    only from *virtual* nodes; we add them from any node, because a scheme of
    ``Y`` whose attributes are all joined with one single stream ``X`` is a
    generalized edge ``{X} -> Y`` of Def. 8 and Theorem 5 fails without it (e.g.
    ``S1.a = S2.a, S1.b = S2.b`` with schemes ``S1(a)``, ``S2(a, b)``).

    Nodes are stream names or ``"V{S1,S2}"`` with ``members`` and ``virtual``.

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"S1": ["a", "b"], "S2": ["a", "b"]},
    ...                 ["S1.a = S2.a", "S1.b = S2.b"], {"S1": [["a"]], "S2": [["a", "b"]]})
    >>> list(transformed_punctuation_graph(q).nodes)
    ['V{S1,S2}']
    """
    s = q if isinstance(q, Structure) else Structure.of_query(q)
    rep = list(range(s.n))

    def find(x: int) -> int:
        while rep[x] != x:
            rep[x] = rep[rep[x]]
            x = rep[x]
        return x

    plain = s.plain_edges()
    hyper = [(y, cs) for y, cs, _ in s.usable if len(cs) > 1]
    while True:
        h = nx.DiGraph()
        h.add_nodes_from({find(i) for i in range(s.n)})
        kinds: dict[tuple[int, int], str] = {}
        for x, y in plain:
            a, b = find(x), find(y)
            if a != b:
                h.add_edge(a, b)
                kinds[(a, b)] = "plain"
        for y, cs in hyper:
            b = find(y)
            common = None
            for c in cs:
                r = {find(x) for x in s.toucher[c]} - {b}
                common = r if common is None else common & r
            for a in common or ():
                if (a, b) not in kinds:
                    h.add_edge(a, b)
                    kinds[(a, b)] = "virtual"
        comps = [c for c in nx.strongly_connected_components(h) if len(c) > 1]
        if not comps:
            break
        for comp in comps:
            first, *rest = comp
            for r in rest:
                rep[find(r)] = find(first)
    groups: dict[int, list[str]] = {}
    for i in range(s.n):
        groups.setdefault(find(i), []).append(s.names[i])
    label = {r: (m[0] if len(m) == 1 else "V{" + ",".join(m) + "}") for r, m in groups.items()}
    t = nx.DiGraph()
    for r, m in groups.items():
        t.add_node(label[r], members=tuple(m), virtual=len(m) > 1)
    for (a, b), k in kinds.items():
        t.add_edge(label[a], label[b], kind=k)
    return t
