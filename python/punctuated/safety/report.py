"""The :class:`SafetyReport` returned by ``analyze_safety`` (Li et al., VLDB 2006).

``safe``, ``unpurgeable`` and ``purgeable`` are computed at once; ``graph``,
``suggestions``, ``transformed_graph`` and ``punctuation_purgeable`` on first
use, so that large queries stay cheap to check.
"""
from __future__ import annotations

from functools import cached_property

import networkx as nx

from .graph import Structure, to_networkx, transformed_punctuation_graph
from .model import Query, Scheme
from .suggest import Suggestion, suggest_schemes
from .verdict import theorem_for

#: What decides the verdict, as ``explain()`` and the drawing print it.
CITATIONS = {
    "Theorem 2": "Li et al. (VLDB 2006), Theorem 2, §4.1.2: a query is safe iff its punctuation graph "
                 "is strongly connected (an edge x -> y when y has a scheme on an attribute joined with x)",
    "Theorem 4": "Li et al. (VLDB 2006), Theorem 4, §4.2: a query is safe iff its generalized punctuation "
                 "graph is strongly connected (a scheme of several attributes is an edge from the streams "
                 "joined with all of them)"}


def _attr(q: Query, stream: str, c: int) -> str:
    return next(f"{s}.{a}" for s, a in q.members[c] if s == stream)


def _provides(q: Query, s: Structure, node: int, c: int, p: int, src: str) -> str:
    """How a step's class ``c`` takes its value: a join attribute from ``src``, or a time band
    (a class of its own, :func:`punctuated.safety.band.with_band_edges`) that ends ``src``'s rows."""
    if c not in q.members:
        return f"{s.class_name(c)} from {src}: its punctuations pass the band's end"
    return f"{_attr(q, s.names[node], c)} = {_attr(q, s.names[p], c)} from {src}"


def chain_lines(q: Query, s: Structure, start: int) -> list[str]:
    """The chained purge (§3.2.1, generalized in §4.2) of a stored tuple ``t``
    of stream ``start``: which stream punctuates which scheme, with values taken
    from ``t`` or from the tuples joinable with ``t`` found at earlier steps."""
    reached, _ = s.closure(start)
    step_of = {start: 0}
    out = []
    for k, (node, st) in enumerate(list(reached.items())[1:], 1):
        step_of[node] = k
        parts = []
        for c, p in st.providers:
            src = "t" if p == start else f"the {s.names[p]} tuples joinable with t (step {step_of[p]})"
            parts.append(_provides(q, s, node, c, p, src))
        out.append(f"{k}. {s.names[node]} punctuates {st.scheme} with {'; '.join(parts)}")
    return out


class SafetyReport:
    """Safety of a continuous join query taken as one MJoin (Theorems 2 and 4).

    Attributes: ``safe``; ``unpurgeable`` (sorted streams that cannot reach all
    others in the (generalized) punctuation graph); ``purgeable``; ``theorem``;
    ``query`` (the validated :class:`~punctuated.safety.model.Query`).
    """

    def __init__(self, query: Query, structure: Structure, purgeable: set[str]):
        self.query = query
        self.structure = structure
        self.purgeable = sorted(purgeable)
        self.unpurgeable = sorted(set(structure.names) - purgeable)
        self.safe = not self.unpurgeable
        self.theorem = theorem_for(structure, "query")
        # the verdict as one MJoin (a report on a given plan may set safe/unpurgeable otherwise)
        self.query_safe = self.safe
        self.query_unpurgeable = list(self.unpurgeable)

    def __repr__(self) -> str:
        return (f"SafetyReport(safe={self.safe}, unpurgeable={self.unpurgeable}, "
                f"theorem={self.theorem!r})")

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The (generalized) punctuation graph; see :func:`~punctuated.safety.graph.to_networkx`
        (edge attribute ``kind``: ``plain``, ``member`` or ``generalized``)."""
        s = self.structure
        return to_networkx(s, True, {s.names.index(x) for x in self.purgeable})

    @cached_property
    def transformed_graph(self) -> nx.DiGraph:
        """Transformed punctuation graph (Li et al. 2006, Def. 11 and Theorem 5, §4.3)."""
        return transformed_punctuation_graph(self.structure)

    @cached_property
    def _suggest(self) -> tuple[list[Suggestion], bool]:
        return suggest_schemes(self.query)

    @property
    def suggestions(self) -> list[Suggestion]:
        """Smallest sets of extra schemes that make the query safe (ranked)."""
        return self._suggest[0]

    @property
    def suggestions_minimal(self) -> bool:
        """False when the search budget ran out and a greedy fix was given."""
        return self._suggest[1]

    @cached_property
    def punctuation_purgeable(self) -> dict[str, bool]:
        """§5.1: can the punctuations of each scheme be purged themselves?"""
        from .verdict import punctuation_purgeability
        return {str(k): v for k, v in punctuation_purgeability(self.query).items()}

    def explain(self, limit: int | None = 20) -> str:
        """Text naming the theorem used and, for each purgeable stream (at most
        ``limit`` of them, ``limit`` steps each; ``None``: all), the chain of
        punctuations that purges it."""
        q, s = self.query, self.structure
        verdict = "SAFE" if self.query_safe else "NOT SAFE"
        lines = [f"The query is {verdict} ({CITATIONS[self.theorem]}; the query is taken as one MJoin)."]
        if self.query_unpurgeable:
            lines.append("Join state never purged for: " + ", ".join(self.query_unpurgeable) + ".")
            for name in self.query_unpurgeable[:limit]:
                reach, _ = s.closure(s.names.index(name))
                missing = [x for x in s.names if s.names.index(x) not in reach]
                lines.append(f"  {name} reaches only {', '.join(s.names[i] for i in reach)}; no chain of "
                             f"punctuations covers {', '.join(missing[:10])}"
                             + (" ..." if len(missing) > 10 else ""))
            lonely = [x for x in q.streams if not q.touches[x]]
            if lonely:
                lines.append("  No join predicate on " + ", ".join(lonely)
                             + ": a cross product is never purgeable.")
            if self.suggestions:
                lines.append("Fewest extra schemes that make it safe: "
                             + " | ".join(str(x) for x in self.suggestions) + ".")
        used = {id(lab) for _, _, lab in s.usable}   # a time band's edge uses a range scheme too
        dead = [p for p in q.schemes if q.scheme_classes(p) - q.touches[p.stream] and id(p) not in used]
        if dead:
            lines.append("Schemes not on join attributes (never used): " + ", ".join(map(str, dead)) + ".")
        shown = self.purgeable if limit is None else self.purgeable[:limit]
        for name in shown:
            lines.append(f"Chained purge of a stored {name} tuple t (Li et al. (VLDB 2006), §3.2.1):")
            chain = chain_lines(q, s, s.names.index(name)) or ["(no other stream)"]
            lines.extend("  " + x for x in (chain if limit is None else chain[:limit]))
            if limit is not None and len(chain) > limit:
                lines.append(f"  ... {len(chain) - limit} more steps")
        if len(shown) < len(self.purgeable):
            lines.append(f"... and {len(self.purgeable) - len(shown)} more purgeable streams.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"safe": self.safe, "unpurgeable": self.unpurgeable, "theorem": self.theorem}

    def draw(self, path: str, **kw) -> None:
        """Write the punctuation graph to ``path`` (PNG or SVG by extension);
        ``suggestions``: the fixes drawn dashed, ``"first"`` (default), ``"all"``
        or ``"none"`` (see :mod:`punctuated.safety.draw`)."""
        from .draw import draw_report
        draw_report(self, path, **kw)

    def figure(self, suggestions: str = "first"):
        """The drawing as a :class:`matplotlib.figure.Figure`, to embed or restyle."""
        from .draw import build_figure
        return build_figure(self, suggestions)

    def _repr_svg_(self) -> str:
        from .draw import render
        return render(self, "svg").decode()

    def _repr_png_(self) -> bytes:
        from .draw import render
        return render(self, "png")


__all__ = ["CITATIONS", "SafetyReport", "Scheme", "chain_lines"]
