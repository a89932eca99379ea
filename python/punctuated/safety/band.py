"""Safety of a binary stream join with a time band (Tucker et al. 2003, §5; Li et al. 2006).

Li et al. (VLDB 2006), Theorem 1 (§4.1): the stored tuples of one input of a binary
join can be purged iff the *other* input has a punctuation scheme on join attributes.
A join whose condition also bounds the inputs' times to a band,
``b.ts - a.ts in [lo, hi]`` (``b.ts BETWEEN a.ts + lo AND a.ts + hi``, ``<``/``>``
forms, one bound or both), has a second way: a stored ``a`` tuple at time ``t``
joins only ``b`` tuples with ``ts <= t + hi``, so ``b``'s range punctuation
``ts<=c`` with ``c >= t + hi`` covers every partner it could still meet (Tucker
et al. 2003: a tuple goes once no future tuple can join it); symmetrically a
stored ``b`` tuple at ``s`` goes once ``a`` says ``ts<=c`` with ``c >= s - lo``.

We extend Li et al.'s punctuation graph (Def. 7, §4.1.1) with a *band edge*
``x -> y`` labelled ``ts<= (band)`` when the band bounds ``x``'s side (``hi`` for
the left input, ``lo`` for the right one) and ``y`` declares exactly a range
scheme on its band attribute (``ts<=``). An input is purgeable iff it has an edge
of either kind to the other input (Theorem 1 with the extended edge set). The JVM's
strict mode applies the same rule (``punctuated.spark.rules.TimeBandSafety``);
shared vectors ``testdata/band_safety_vectors.json``.

>>> v = band_purgeability({"a": ["k", "ts"], "b": ["k", "ts"]}, ["a.k = b.k"],
...                       {"a": [["k"]], "b": [["ts<="]]},
...                       Band(("a", "ts"), ("b", "ts"), lo=0, hi=600))
>>> v.purgeable, v.safe, v.edges
({'a': True, 'b': True}, True, [('a', 'b', 'ts<= (band)'), ('b', 'a', 'k')])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, NamedTuple, Sequence

from .model import parse_predicate

Attr = tuple[str, str]


@dataclass(frozen=True)
class Band:
    """``right - left`` in ``[lo, hi]`` (``None``: no bound on that side), in the time column's unit.

    ``watermarked``: whether the left and the right input's event-time watermark is on its band
    column, where it acts as the range punctuation ``ts<=w`` (the extension's
    ``WatermarkPunctuations``); ``text``: the band's condition as the query writes it.
    """

    left: Attr
    right: Attr
    lo: int | None = None
    hi: int | None = None
    watermarked: tuple[bool, bool] = (False, False)
    text: str = ""

    @staticmethod
    def of(d: Mapping) -> "Band":
        """From a vector's ``{"left": "a.ts", "right": "b.ts", "lo": -2, "hi": 3}``, or from the
        extension's document (``{"left": {"stream": "a", "attribute": "ts"}, ...,
        "watermarked": [false, true], "text": "..."}``).

        >>> Band.of({"left": {"stream": "a", "attribute": "ts"}, "right": {"stream": "b",
        ...          "attribute": "ts"}, "lo": None, "hi": 3, "watermarked": [False, True]})
        Band(left=('a', 'ts'), right=('b', 'ts'), lo=None, hi=3, watermarked=(False, True), text='')
        """
        def attr(x) -> Attr:
            if isinstance(x, Mapping):
                return (x["stream"], x["attribute"])
            s, a = x.split(".", 1)
            return (s.strip(), a.strip())
        marks = tuple(bool(m) for m in d.get("watermarked") or (False, False))
        return Band(attr(d["left"]), attr(d["right"]), d.get("lo"), d.get("hi"), marks, d.get("text", ""))

    def bounds(self, stream: str) -> bool:
        """Does the band bound how far the other input's time runs ahead of ``stream``'s rows?"""
        return self.hi is not None if stream == self.left[0] else self.lo is not None

    def other(self, stream: str) -> Attr:
        """The time column of the input ``stream``'s rows are joined with."""
        return self.right if stream == self.left[0] else self.left

    def closes(self, stored: str, range_on_other: bool) -> bool:
        """The band edge ``stored -> other`` (Tucker et al. 2003, §5, on Li et al. 2006's Def. 7):
        the band bounds ``stored``'s rows and the other input punctuates its band column by a
        range (``range_on_other``: it declares exactly the scheme ``ts<=``) or by its watermark.

        >>> b = Band(("a", "ts"), ("b", "ts"), lo=None, hi=3, watermarked=(False, True))
        >>> b.closes("a", False), b.closes("b", True)
        (True, False)
        """
        other_side = 1 if stored == self.left[0] else 0
        return self.bounds(stored) and (range_on_other or self.watermarked[other_side])

    def describe(self) -> str:
        """The band as explanations print it: ``b.ts - a.ts in [-2, 3]`` (its condition if known)."""
        if self.text:
            return self.text
        lo = "-inf" if self.lo is None else str(self.lo)
        hi = "+inf" if self.hi is None else str(self.hi)
        return f"{self.right[0]}.{self.right[1]} - {self.left[0]}.{self.left[1]} in [{lo}, {hi}]"


def is_time_range(attributes: Sequence, ranges, column) -> bool:
    """Is a scheme exactly the range scheme on ``column`` (``ts<=``), the one a band edge needs?

    >>> is_time_range(("ts",), frozenset({"ts"}), "ts"), is_time_range(("k", "ts"), {"ts"}, "ts")
    (True, False)
    """
    return tuple(attributes) == (column,) and set(ranges) == {column}


class BandEdge(NamedTuple):
    """An edge ``source -> target`` a time band adds to a punctuation graph: ``target``'s range
    punctuations on its band column (``label``: its scheme, or text for its watermark) purge
    ``source``'s stored rows."""

    source: str
    target: str
    label: object
    band: Band


def band_edges(q, bands: Iterable[Band]) -> list[BandEdge]:
    """The band edges ``x -> y`` the query's bands add to its punctuation graph: the band bounds
    ``x``'s rows and ``y`` punctuates its band column by a range scheme (the label: that
    :class:`~punctuated.safety.model.Scheme`) or by its watermark (the label: text).

    >>> from punctuated.safety.model import build_query
    >>> q = build_query({"a": ["k", "ts"], "b": ["k", "ts"]}, ["a.k = b.k"], {"b": [["ts<="]]})
    >>> [(e.source, e.target, str(e.label)) for e in band_edges(q, [Band(("a", "ts"), ("b", "ts"), 0, 600)])]
    [('a', 'b', 'b(ts<=)')]
    """
    out = []
    for b in bands:
        for x in (b.left[0], b.right[0]):
            y, ty = b.other(x)
            rng = next((sc for sc in q.schemes_of(y) if is_time_range(sc.attributes, sc.ranges, ty)), None)
            if b.closes(x, rng is not None):
                out.append(BandEdge(x, y, rng if rng is not None else f"{y}({ty}<= by its watermark)", b))
    return out


def with_band_edges(s, edges: Sequence[BandEdge]):
    """The :class:`~punctuated.safety.graph.Structure` ``s`` with each band edge ``x -> y`` as a
    one-attribute scheme of ``y`` on a class of its own that only ``x`` touches, so that Def. 7
    draws exactly that edge and Def. 9's closure follows it. Band classes are negative numbers,
    apart from the join classes; ``class_name`` prints one as ``the time band <condition>``."""
    from .graph import Structure

    index = {n: i for i, n in enumerate(s.names)}
    touches = [set(t) for t in s.touches]
    schemes = [[(cs, lab) for y, cs, lab in s.usable if y == i] for i in range(s.n)]
    names: dict[int, str] = {}
    for k, e in enumerate(edges):
        if e.source in index and e.target in index:
            c = -(k + 1)
            names[c] = f"the time band {e.band.describe()}"
            touches[index[e.source]].add(c)
            schemes[index[e.target]].append(({c}, e.label))
    base = s.class_name
    return Structure(s.names, touches, schemes, lambda c: names.get(c) or base(c))


@dataclass
class BandVerdict:
    """Per input: purgeable or not; the edges that make it so; ``explain()`` in words."""

    purgeable: dict[str, bool]
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def safe(self) -> bool:
        return all(self.purgeable.values())

    @property
    def unpurgeable(self) -> list[str]:
        return sorted(s for s, ok in self.purgeable.items() if not ok)

    def explain(self) -> str:
        return "\n".join(f"{s}: {self.reasons[s]}" for s in sorted(self.reasons))


def _strip(a: str) -> tuple[str, str]:
    """An attribute as written, as (name, range operator or "").

    >>> _strip("ts <="), _strip("day>="), _strip("k")
    (('ts', '<='), ('day', '>='), ('k', ''))
    """
    a = a.strip()
    for op in ("<=", ">="):
        if a.endswith(op):
            return a[:-2].strip(), op
    return a, ""


def band_purgeability(streams: Mapping[str, Sequence[str]], predicates: Iterable[str],
                      schemes: Mapping[str, Iterable[Sequence[str]]] | None, band: Band) -> BandVerdict:
    """Purgeability of each input of the binary join of two streams with ``band``.

    ``predicates`` are the join's equi-predicates (``"a.k = b.k"``), ``schemes`` as for
    :func:`punctuated.analyze_safety` (``"ts<="`` marks a range). Raises ``ValueError``
    naming what is wrong in the input.
    """
    names = list(streams)
    if len(names) != 2:
        raise ValueError(f"a band join reads two streams, not {len(names)}: {', '.join(names)}")
    schemes = schemes or {}
    for s, a in (band.left, band.right):
        if s not in streams or a not in streams[s]:
            raise ValueError(f"band attribute {s}.{a} is not an attribute of a stream of the query")
    if band.left[0] == band.right[0]:
        raise ValueError(f"the band compares {band.left[0]} with itself")
    keys: dict[str, set[str]] = {s: set() for s in names}
    for text in predicates:
        p = parse_predicate(text, streams)
        for s, a in (p.left, p.right):
            keys[s].add(a)
    time = {band.left[0]: band.left[1], band.right[0]: band.right[1]}
    verdict = BandVerdict({})
    for x in names:
        y = next(s for s in names if s != x)
        parsed = [[_strip(a) for a in sc] for sc in schemes.get(y, [])]
        # Theorem 1: a scheme of y on its join attributes only (at most one range, as the JVM's KeyScheme)
        key = next((sc for sc in parsed if sc and all(a in keys[y] for a, _ in sc)
                    and sum(1 for _, r in sc if r) <= 1), None)
        # only `ts<=` closes a band (its edges grow with time)
        on_band = band.closes(x, any(sc == [(time[y], "<=")] for sc in parsed))
        verdict.purgeable[x] = key is not None or on_band
        if on_band:
            verdict.edges.append((x, y, f"{time[y]}<= (band)"))
        if key is not None:
            verdict.edges.append((x, y, ", ".join(a + r for a, r in key)))
            verdict.reasons[x] = f"purged by {y}'s punctuations on its join key ({', '.join(a for a, _ in key)})"
        elif on_band:
            verdict.reasons[x] = (f"purged by {y}'s range punctuations {time[y]}<=c once c passes a "
                                  f"row's band (Tucker et al. 2003, §5)")
        elif band.bounds(x):
            verdict.reasons[x] = (f"never purged (Li et al. 2006, Theorem 1): declare the range scheme "
                                  f"{time[y]}<= on {y} (the band bounds {x}'s rows) or a scheme on {y}'s join key")
        else:
            verdict.reasons[x] = (f"never purged (Li et al. 2006, Theorem 1): the band does not bound "
                                  f"{x}'s rows; declare a scheme on {y}'s join key")
    verdict.edges.sort()
    return verdict
