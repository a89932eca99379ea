"""Query model for the safety analysis of continuous join queries.

A continuous join query ``CJQ(S, phi)`` (Li et al., VLDB 2006, §2.2) is
a set of streams with attributes, a conjunction of equi-join predicates between
two streams each, and the punctuation schemes of §2.3 (one or several
punctuable attributes per scheme, several schemes per stream).

Equality is transitive: ``S1.a = S2.a AND S2.a = S3.a`` is the same query as one
that also states ``S1.a = S3.a``.  The model therefore groups attributes into
*join classes* (equivalence classes of the written predicates) and every graph of
this package is built from those classes, as a query optimizer would do with
implied predicates.  Li et al. 2006, Def. 7 (§4.1.1, the punctuation graph) reads the predicates as written;
on a predicate set that is already closed both readings coincide.

>>> q = build_query({"S1": ["a"], "S2": ["a", "b"], "S3": ["b"]},
...                 ["S1.a = S2.a", "S2.b = S3.b"], {"S2": [["a"]]})
>>> q.joined(("S1", "a"), ("S2", "a")), q.joined(("S1", "a"), ("S3", "b"))
(True, False)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from punctuated.declaration import (
    RANGE,
    RANGE_AT_LEAST,
    DeclarationError,
    parse_attribute_text,
    quote_identifier,
)

Attr = tuple[str, str]  # (stream, attribute)

# a name: plain (no blank, '.', '=' or backquote) or backquoted with `` for a backquote
_NAME = r"(`(?:[^`]|``)+`|[^\s.=`]+)"
_PRED = re.compile(rf"^\s*{_NAME}\s*\.\s*{_NAME}\s*=\s*{_NAME}\s*\.\s*{_NAME}\s*$")
def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


@dataclass(frozen=True)
class Predicate:
    """An equi-join predicate ``left = right`` between two streams (§2.2)."""

    left: Attr
    right: Attr

    def __str__(self) -> str:
        (s1, a1), (s2, a2) = self.left, self.right
        q = quote_identifier
        return f"{q(s1)}.{q(a1)} = {q(s2)}.{q(a2)}"


@dataclass(frozen=True)
class Scheme:
    """A punctuation scheme of one stream (§2.3): its punctuable attributes.

    ``ranges`` lists the attributes declared with a range pattern ``day<=``, ``at_least``
    those declared ``day>=``; for purging, a range punctuation covers the value it bounds,
    so the safety analysis treats it as punctuable exactly like a constant pattern. Only
    ``<=`` ranges close time bands and windows (their ends grow with time).

    >>> str(Scheme("bids", ("bidder", "day"), frozenset({"day"})))
    'bids(bidder, day<=)'
    >>> str(Scheme("backfill", ("sensor", "day"), at_least=frozenset({"day"})))
    'backfill(sensor, day>=)'
    """

    stream: str
    attributes: tuple[str, ...]
    ranges: frozenset[str] = field(default_factory=frozenset)
    at_least: frozenset[str] = field(default_factory=frozenset)

    def written(self, attribute: str) -> str:
        """An attribute as the scheme writes it: ``day``, ``day<=`` or ``day>=``."""
        op = ">=" if attribute in self.at_least else "<=" if attribute in self.ranges else ""
        return attribute + op

    def __str__(self) -> str:
        names = [self.written(a) for a in self.attributes]
        return f"{self.stream}({', '.join(names)})"


@dataclass(frozen=True, eq=False)
class Query:
    """A validated continuous join query with its punctuation scheme set ``R``.

    ``cls`` maps every (stream, attribute) to a join-class id; attributes in no
    predicate get a class of their own.  ``touches[s]`` is the set of classes of
    stream ``s`` shared with at least one other stream (its join attributes).
    """

    streams: dict[str, tuple[str, ...]]
    predicates: tuple[Predicate, ...]
    schemes: tuple[Scheme, ...]
    cls: dict[Attr, int]
    members: dict[int, tuple[Attr, ...]]
    touches: dict[str, frozenset[int]]
    by_stream: dict[str, list[Scheme]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for st in self.streams:
            self.by_stream.setdefault(st, [])
        for p in self.schemes:
            self.by_stream[p.stream].append(p)

    def joined(self, x: Attr, y: Attr) -> bool:
        """True iff the predicates imply ``x = y`` (same join class)."""
        return self.cls[x] == self.cls[y]

    def scheme_classes(self, scheme: Scheme) -> frozenset[int]:
        """Join classes of a scheme's punctuable attributes."""
        return frozenset(self.cls[(scheme.stream, a)] for a in scheme.attributes)

    def schemes_of(self, stream: str) -> list[Scheme]:
        return list(self.by_stream[stream])

    def join_attributes(self, stream: str) -> list[str]:
        """Attributes of ``stream`` that take part in a join predicate."""
        return [a for a in self.streams[stream] if self.cls[(stream, a)] in self.touches[stream]]

    def class_name(self, c: int) -> str:
        """Readable name of a join class, e.g. ``'S1.b = S2.b'``."""
        return " = ".join(f"{s}.{a}" for s, a in self.members[c])

    def with_schemes(self, extra: Iterable[Scheme]) -> "Query":
        """The same query with additional schemes (used by suggestions)."""
        return Query(self.streams, self.predicates, self.schemes + tuple(extra),
                     self.cls, self.members, self.touches)

    def to_dict(self) -> dict:
        """JSON-ready form, the inverse of :func:`build_query`."""
        sch: dict[str, list[list[str]]] = {s: [] for s in self.streams}
        for p in self.schemes:
            sch[p.stream].append([quote_identifier(a) + p.written(a)[len(a):]
                                  for a in p.attributes])
        return {"streams": {s: list(a) for s, a in self.streams.items()},
                "predicates": [str(p) for p in self.predicates],
                "schemes": {s: v for s, v in sch.items() if v}}


def parse_predicate(text: str, streams: Mapping[str, Sequence[str]]) -> Predicate:
    """Parse ``"S1.b = S2.b"`` into a :class:`Predicate` (equi-join, §2.2). A name that is
    no plain identifier is backquoted, a backquote in it doubled, as in Spark SQL.

    >>> parse_predicate("S1.b = S2.b", {"S1": ["b"], "S2": ["b"]})
    Predicate(left=('S1', 'b'), right=('S2', 'b'))
    >>> parse_predicate("S1.`bid id` = S2.`a``b`", {"S1": ["bid id"], "S2": ["a`b"]})
    Predicate(left=('S1', 'bid id'), right=('S2', 'a`b'))
    >>> parse_predicate("S1.b = S1.b", {"S1": ["b"]})
    Traceback (most recent call last):
    ...
    ValueError: predicate 'S1.b = S1.b' compares stream 'S1' with itself; only joins between two streams are supported
    """
    if not isinstance(text, str):
        raise ValueError(f"predicate {text!r} must be a string like 'S1.b = S2.b'")
    m = _PRED.match(text)
    if not m:
        raise ValueError(f"malformed predicate {text!r}: expected 'Stream.attribute = Stream.attribute'")
    s1, a1, s2, a2 = (_unquote(g) for g in m.groups())
    return _checked(Predicate((s1, a1), (s2, a2)), streams, text)


def _checked(p: Predicate, streams: Mapping[str, Sequence[str]], text: str | None = None) -> Predicate:
    """``p`` if both its columns exist and it joins two different streams."""
    text = text if text is not None else str(p)
    for s, a in (p.left, p.right):
        if s not in streams:
            raise ValueError(f"predicate {text!r}: unknown stream {s!r} (known: {', '.join(streams)})")
        if a not in streams[s]:
            raise ValueError(f"predicate {text!r}: stream {s!r} has no attribute {a!r} "
                             f"(attributes: {', '.join(streams[s])})")
    if p.left[0] == p.right[0]:
        raise ValueError(f"predicate {text!r} compares stream {p.left[0]!r} with itself; "
                         "only joins between two streams are supported")
    return p


def _parse_scheme(stream: str, raw, attrs: Sequence[str]) -> Scheme:
    if isinstance(raw, Scheme):  # already structured (from the extension's document)
        unknown = [a for a in raw.attributes if a not in attrs]
        if raw.stream != stream or unknown or not raw.attributes:
            raise ValueError(f"scheme {raw} does not fit stream {stream!r} (attributes: {', '.join(attrs)})")
        return raw
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"scheme {raw!r} of stream {stream!r} must be a list of attribute names")
    names: list[str] = []
    ranges: set[str] = set()
    at_least: set[str] = set()
    for it in items:
        if not isinstance(it, str):
            raise ValueError(f"scheme {raw!r} of stream {stream!r}: {it!r} is not an attribute name")
        try:  # the declarations' parser: 'day<=' is a range, other names backquoted
            a, kind = parse_attribute_text(it)
        except DeclarationError as e:
            raise ValueError(f"scheme {raw!r} of stream {stream!r}: {e.detail} ({it!r})") from None
        if kind == RANGE:
            ranges.add(a)
        elif kind == RANGE_AT_LEAST:
            at_least.add(a)
        if a not in attrs:
            raise ValueError(f"scheme {raw!r} of stream {stream!r}: unknown attribute {a!r} "
                             f"(attributes: {', '.join(attrs)})")
        if a in names:
            raise ValueError(f"scheme {raw!r} of stream {stream!r} names attribute {a!r} twice")
        names.append(a)
    if not names:
        raise ValueError(f"empty scheme for stream {stream!r}: a scheme needs at least one attribute")
    return Scheme(stream, tuple(names), frozenset(ranges), frozenset(at_least))


def build_query(streams: Mapping[str, Sequence[str]], predicates: Iterable[str | Predicate],
                schemes: Mapping[str, Iterable] | None = None) -> Query:
    """Validate the inputs of ``analyze_safety`` and build a :class:`Query`.

    ``streams`` maps a stream to its attribute names; ``predicates`` are strings
    ``"S1.b = S2.b"`` (or :class:`Predicate` s); ``schemes`` maps a stream to a list of
    schemes, each a list of attributes as ``punctuated.schemes`` writes one (``"day<="`` a
    range; a name that is no plain identifier backquoted, ``"`bid id`"``; parsed by the
    declarations' own parser) or a :class:`Scheme` (a bare string is a one-attribute
    scheme).  Raises ``ValueError`` naming the stream/attribute at fault.

    >>> q = build_query({"item": ["itemid"], "bid": ["itemid", "bidder"]},
    ...                 ["item.itemid = bid.itemid"], {"bid": [["bidder"]]})
    >>> [str(s) for s in q.schemes], q.join_attributes("bid")
    (['bid(bidder)'], ['itemid'])
    """
    if not isinstance(streams, Mapping) or not streams:
        raise ValueError("streams must be a non-empty mapping of stream name -> attribute names")
    st: dict[str, tuple[str, ...]] = {}
    for s, attrs in streams.items():
        if not isinstance(s, str) or not s:
            raise ValueError(f"stream name {s!r} must be a non-empty string")
        if isinstance(attrs, str) or not isinstance(attrs, Iterable):
            raise ValueError(f"attributes of stream {s!r} must be a list of names, got {attrs!r}")
        attrs = tuple(attrs)
        for a in attrs:
            if not isinstance(a, str) or not a:
                raise ValueError(f"stream {s!r}: attribute name {a!r} must be a non-empty string")
        dup = {a for a in attrs if attrs.count(a) > 1}
        if dup:
            raise ValueError(f"stream {s!r} lists attribute(s) {sorted(dup)} more than once")
        st[s] = attrs
    if isinstance(predicates, str):
        raise ValueError("predicates must be a list of strings like 'S1.b = S2.b', not one string")
    preds = tuple(_checked(p, st) if isinstance(p, Predicate) else parse_predicate(p, st)
                  for p in predicates)
    schemes = schemes or {}
    if not isinstance(schemes, Mapping):
        raise ValueError("schemes must map stream name -> list of schemes")
    sch: list[Scheme] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    for s, lst in schemes.items():
        if s not in st:
            raise ValueError(f"schemes given for unknown stream {s!r} (known: {', '.join(st)})")
        if isinstance(lst, str):
            lst = [lst]
        for raw in lst:
            p = _parse_scheme(s, raw, st[s])
            if (s, frozenset(p.attributes)) not in seen:
                seen.add((s, frozenset(p.attributes)))
                sch.append(p)
    # join classes by union-find over the written predicates
    parent: dict[Attr, Attr] = {(s, a): (s, a) for s in st for a in st[s]}

    def find(x: Attr) -> Attr:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in preds:
        ra, rb = find(p.left), find(p.right)
        if ra != rb:
            parent[ra] = rb
    groups: dict[Attr, list[Attr]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    cls: dict[Attr, int] = {}
    members: dict[int, tuple[Attr, ...]] = {}
    for i, g in enumerate(groups.values()):
        seen: dict[str, str] = {}
        for s, a in g:
            if s in seen:
                raise ValueError(f"the predicates imply {s}.{seen[s]} = {s}.{a}, a selection within "
                                 f"stream {s!r}; only equi-joins between two streams are supported")
            seen[s] = a
            cls[(s, a)] = i
        members[i] = tuple(g)
    touches = {s: frozenset(cls[(s, a)] for a in st[s] if len(members[cls[(s, a)]]) > 1) for s in st}
    return Query(st, preds, tuple(sch), cls, members, touches)
