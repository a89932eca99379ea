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
from typing import Iterable, Mapping, Sequence

from .model import parse_predicate

Attr = tuple[str, str]


@dataclass(frozen=True)
class Band:
    """``right - left`` in ``[lo, hi]`` (``None``: no bound on that side), in the time column's unit."""

    left: Attr
    right: Attr
    lo: int | None = None
    hi: int | None = None

    @staticmethod
    def of(d: Mapping) -> "Band":
        """From a vector's ``{"left": "a.ts", "right": "b.ts", "lo": -2, "hi": 3}``."""
        def attr(text: str) -> Attr:
            s, a = text.split(".", 1)
            return (s.strip(), a.strip())
        return Band(attr(d["left"]), attr(d["right"]), d.get("lo"), d.get("hi"))

    def bounds(self, stream: str) -> bool:
        """Does the band bound how far the other input's time runs ahead of ``stream``'s rows?"""
        return self.hi is not None if stream == self.left[0] else self.lo is not None


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


def _strip(a: str) -> tuple[str, bool]:
    a = a.strip()
    return (a[:-2].strip(), True) if a.endswith("<=") else (a, False)


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
                    and sum(r for _, r in sc) <= 1), None)
        on_band = band.bounds(x) and any(sc == [(time[y], True)] for sc in parsed)
        verdict.purgeable[x] = key is not None or on_band
        if on_band:
            verdict.edges.append((x, y, f"{time[y]}<= (band)"))
        if key is not None:
            verdict.edges.append((x, y, ", ".join(a + ("<=" if r else "") for a, r in key)))
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
