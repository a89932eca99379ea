"""Drawing of the (generalized) punctuation graph of a :class:`SafetyReport`
(Li et al., VLDB 2006, Figs. 5 and 9: the punctuation graph of §4.1.1 and the
generalized punctuation graph of §4.2).

* Each stream is a box labelled with its name and its schemes, e.g.
  ``bids`` over ``{auction}``; an input whose join state is never purged is
  filled red (legend: "unpurgeable"), the others green.
* An edge ``x -> y`` (solid black) means ``y`` punctuates an attribute joined
  with ``x``; it is labelled with that attribute of ``y`` — the attribute
  whose punctuations purge ``x``'s stored tuples.
* A scheme of several attributes (a generalized edge, §4.2) is a small blue
  ``G`` box: dotted arrows from the streams providing each attribute (labelled
  with it) and a blue arrow to the punctuating stream labelled with all of them.
* The suggested fix (``report.suggestions[0]``, or all of them) is drawn as
  dashed orange edges labelled with the attribute to declare.

:func:`build_figure` is pure: it returns a :class:`matplotlib.figure.Figure`
(object API only, no pyplot, no global backend) whose artists carry ``gid``s
(``node:<stream>``, ``edge:<kind>:<u>-><v>``, ``label:<kind>:<u>-><v>``) for
inspection.  The figure is sized to its content: streams on a circle whose
radius grows with their number, axes limits computed from the drawn extents
of every box, arrow and label, so nothing is clipped and little is empty.
:func:`render` and :func:`draw_report` only save it.
"""
from __future__ import annotations

import io
import math
import os
import textwrap

import networkx as nx

from .report import CITATIONS
from .tree import plan_to_str

PURGEABLE, UNPURGEABLE = "#b8e0b8", "#f4a6a6"
PLAIN, GENERALIZED, FIX = "black", "#2255aa", "#e07b00"
MAX_LABELLED = 40  # above this many streams: dots, no labels
_DPI = 100
_PAD = 0.25  # inches around the drawing


def node_label(report, stream: str) -> str:
    """``name`` over its schemes, e.g. ``'bids\\n{auction} {bidder, day<=}'``."""
    schemes = report.query.schemes_of(stream)
    text = " ".join("{" + ", ".join(p.written(a) for a in p.attributes) + "}"
                    for p in schemes)
    return f"{stream}\n{text or '(no scheme)'}"


def _attr_of(q, stream: str, class_name: str) -> str:
    """The attribute of ``stream`` in the join class printed as ``class_name``."""
    c = next((c for c in q.members if q.class_name(c) == class_name), None)
    if c is None:  # a time band's class (punctuated.safety.band): the band's own words
        return class_name
    return next(a for s, a in q.members[c] if s == stream)


def edge_labels(report) -> dict[tuple[str, str, str], str]:
    """``(kind, u, v) -> label`` for every edge drawn (suggestions excluded):
    the attribute(s) of the punctuating stream whose punctuations purge.

    >>> from punctuated.safety import analyze_safety
    >>> r = analyze_safety({"auctions": ["id"], "bids": ["auction"]}, ["auctions.id = bids.auction"],
    ...                    {"bids": [["auction"]]})
    >>> node_label(r, "bids"), node_label(r, "auctions")
    ('bids\\n{auction}', 'auctions\\n(no scheme)')
    >>> edge_labels(r)
    {('plain', 'auctions', 'bids'): 'auction'}
    """
    g: nx.DiGraph = report.graph
    q = report.query
    out = {}
    for u, v, d in g.edges(data=True):
        kind = d.get("kind")
        if kind == "plain":
            out[(kind, u, v)] = ", ".join(_attr_of(q, v, c) for c in d["predicates"])
        elif kind == "member":
            target = g.nodes[v]["target"]
            out[(kind, u, v)] = _attr_of(q, target, d["provides"])
        elif kind == "generalized":
            out[(kind, u, v)] = ", ".join(_attr_of(q, v, c) for c in g.nodes[u]["requires"])
    return out


def drawn_suggestions(report, which: str = "first") -> tuple[list, str]:
    """The fixes to draw and their legend text.  ``which``: ``"first"``
    (``report.suggestions[0]``), ``"all"`` or ``"none"``.  For a
    ``check_safety`` report whose join tree no scheme can fix, the fixes of the
    query as one multi-way join, said so."""
    if which not in ("first", "all", "none"):
        raise ValueError(f"suggestions={which!r}: use 'first', 'all' or 'none'")
    if which == "none" or report.safe:
        return [], ""
    sugg, what = report.suggestions, "suggested fix: add "
    if not sugg and getattr(report, "query_suggestions", None):
        sugg, what = report.query_suggestions, "fix as one multi-way join (none for the tree Spark runs): add "
    sugg = sugg[:1] if which == "first" else sugg
    return sugg, what + _short([str(x) for x in sugg], " | ", 3)


def fix_edges(report, which: str = "first") -> list[tuple[str, str, str, int]]:
    """Edges the drawn fixes add: ``(u, v, attribute, rank)``; ``v`` would
    punctuate ``attribute``, joined with ``u`` (see :func:`drawn_suggestions`)."""
    q = report.query
    out = []
    for k, s in enumerate(drawn_suggestions(report, which)[0]):
        for stream, attrs in s.schemes:
            c = q.cls[(stream, attrs[0])]
            out.extend((u, stream, attrs[0], k) for u, _ in q.members[c] if u != stream)
    return out


def _short(items: list[str], sep: str = ", ", keep: int = 12) -> str:
    """At most ``keep`` of ``items`` joined by ``sep``, saying how many are left out."""
    shown = sep.join(items[:keep])
    return shown if len(items) <= keep else f"{shown} ... ({len(items) - keep} more)"


def _title(report) -> str:
    plan = getattr(report, "plan_report", None)
    how = "" if plan is None else f" as Spark runs it, {plan_to_str(plan.plan)}"
    if report.safe:
        head = f"SAFE{how}: every join state is purged"
    else:
        head = f"NOT SAFE{how}: join state never purged for " + _short(report.unpurgeable)
        if plan is not None and report.query_safe:
            head += " (safe as one multi-way join)"
    return head + "\n" + CITATIONS[report.theorem].replace(" -> ", "\u00a0\u2192\u00a0")  # unbreakable arrow


def _layout(g: nx.DiGraph, streams: list, gen: list, radius: float) -> dict:
    """Streams on a circle of ``radius`` (inches; needs no scipy), the first at
    the top; each G node between the streams it covers and its target,
    pulled towards the centre."""
    n = len(streams)
    pos = {v: (radius * math.sin(2 * math.pi * k / n), radius * math.cos(2 * math.pi * k / n))
           for k, v in enumerate(streams)} if n > 1 else {v: (0.0, 0.0) for v in streams}
    for k, v in enumerate(gen):
        pts = [pos[u] for u in g.nodes[v]["covers"]] + [pos[g.nodes[v]["target"]]]
        x = sum(p[0] for p in pts) / len(pts)
        y = sum(p[1] for p in pts) / len(pts)
        pos[v] = (0.6 * x + 0.1 * radius * (k % 3 - 1) / 3, 0.6 * y + 0.1 * radius * (k % 2) / 3)
    return pos


def build_figure(report, suggestions: str = "first"):
    """The drawing of ``report`` as a :class:`~matplotlib.figure.Figure` (with
    an Agg canvas); ``suggestions``: which fixes to draw dashed (``"first"``,
    ``"all"`` or ``"none"``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    g: nx.DiGraph = report.graph
    streams = [v for v, d in g.nodes(data=True) if d.get("kind") == "stream"]
    gen = [v for v, d in g.nodes(data=True) if d.get("kind") == "generalized"]
    labelled = len(streams) <= MAX_LABELLED
    radius = max(1.2, 0.24 * len(streams)) if labelled else 6.0
    pos = _layout(g, streams, gen, radius)
    bad = set(report.unpurgeable)

    fig = Figure(figsize=(6, 6), dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()

    boxes = {}
    for v in streams:
        color = UNPURGEABLE if v in bad else PURGEABLE
        if labelled:
            boxes[v] = ax.text(*pos[v], node_label(report, v), ha="center", va="center", fontsize=10,
                               zorder=3, gid=f"node:{v}", multialignment="center",
                               bbox=dict(boxstyle="round,pad=0.4", fc=color, ec="#aa0000" if v in bad else "black",
                                         lw=2 if v in bad else 1))
        else:
            ax.plot(*pos[v], "o", ms=5, mfc=color, mec="black", zorder=3, gid=f"node:{v}")
    for v in gen:
        if labelled:
            boxes[v] = ax.text(*pos[v], "G", ha="center", va="center", fontsize=8, color="white", zorder=3,
                               gid=f"node:{v}", bbox=dict(boxstyle="square,pad=0.3", fc=GENERALIZED, ec=GENERALIZED))
        else:
            ax.plot(*pos[v], "s", ms=3, color=GENERALIZED, zorder=3, gid=f"node:{v}")

    labels = edge_labels(report) if labelled else {}
    style = {"plain": dict(color=PLAIN, ls="solid", lw=1.3),
             "member": dict(color=GENERALIZED, ls=":", lw=1.2),
             "generalized": dict(color=GENERALIZED, ls="solid", lw=1.8),
             "fix": dict(color=FIX, ls="--", lw=1.8)}
    drawn: dict[tuple[str, str], int] = {}

    def arrow(kind: str, u: str, v: str, label: str | None):
        k = drawn.get((u, v), 0)  # a second edge between the same streams bends further
        drawn[(u, v)] = k + 1
        rad = 0.18 + 0.22 * k
        ax.add_patch(FancyArrowPatch(pos[u], pos[v], patchA=_patch(boxes.get(u)), patchB=_patch(boxes.get(v)),
                                     connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                                     mutation_scale=14 if labelled else 6, shrinkA=1, shrinkB=1,
                                     zorder=4, gid=f"edge:{kind}:{u}->{v}", **style[kind]))
        if label:
            (x1, y1), (x2, y2) = pos[u], pos[v]
            # middle of the arc3 Bezier curve (exact: one data unit is one inch on both axes)
            x, y = (x1 + x2) / 2 + rad * (y2 - y1) / 2, (y1 + y2) / 2 - rad * (x2 - x1) / 2
            ax.text(x, y, label, ha="center", va="center", fontsize=8, zorder=5, gid=f"label:{kind}:{u}->{v}",
                    color=style[kind]["color"], bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))

    for u, v, d in g.edges(data=True):
        arrow(d["kind"], u, v, labels.get((d["kind"], u, v)))
    fixes = fix_edges(report, suggestions)
    for u, v, attr, _ in fixes:
        arrow("fix", u, v, attr if labelled else None)

    handles = [Line2D([], [], marker="s", ms=11, ls="", mfc=PURGEABLE, mec="black",
                      label="stream: name, {schemes}; join state purged")]
    if bad & set(streams):
        handles.append(Line2D([], [], marker="s", ms=11, ls="", mfc=UNPURGEABLE, mec="#aa0000", mew=2,
                              label="unpurgeable: join state never purged"))
    kinds = {d["kind"] for _, _, d in g.edges(data=True)}
    if "plain" in kinds:
        handles.append(Line2D([], [], **style["plain"],
                              label="x \u2192 y: y punctuates the labelled attribute, joined with x"))
    if "generalized" in kinds:
        handles.append(Line2D([], [], **style["generalized"], marker="s", mfc=GENERALIZED, mec=GENERALIZED,
                              label="G \u2192 y: y punctuates all labelled attributes at once"))
        handles.append(Line2D([], [], **style["member"], label="x \u00b7\u00b7> G: x provides the labelled attribute"))
    if fixes:
        label = drawn_suggestions(report, suggestions)[1]
        handles.append(Line2D([], [], **style["fix"], label=textwrap.fill(textwrap.shorten(label, 280), 70)))
    legend = fig.legend(handles=handles, loc="lower left", fontsize=8, frameon=False, handlelength=2.5)
    title = fig.text(0, 1, _title(report), ha="left", va="top", fontsize=9)
    _fit(fig, ax, title, legend)
    return fig


def _wrap(text, raw: str, room: float, renderer) -> None:
    """Wrap ``raw`` into ``text`` at the most characters per line that fit ``room`` pixels."""
    chars = max(len(line) for line in raw.split("\n"))
    while True:
        text.set_text("\n".join(textwrap.fill(line, chars) for line in raw.split("\n")))
        if chars <= 20 or text.get_window_extent(renderer).width <= room:
            return
        chars = int(chars * 0.92)


def _patch(text):
    return None if text is None else text.get_bbox_patch()


def _fit(fig, ax, title, legend) -> None:
    """Size the figure to the drawing: one data unit is one inch on both axes,
    the axes limits enclose every drawn extent plus a margin, the title above
    and the legend below.  Two passes: extents in data units depend on the
    scale only, which the first pass fixes."""
    raw = title.get_text()
    for _ in range(2):
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        boxes = [a.get_window_extent(r) for a in ax.texts]
        boxes += [a.get_bbox_patch().get_window_extent(r) for a in ax.texts if a.get_bbox_patch()]
        boxes += [p.get_window_extent(r) for p in ax.patches]
        boxes += [ln.get_window_extent(r) for ln in ax.lines]
        inv = ax.transData.inverted()
        x0 = min(b.x0 for b in boxes)
        y0 = min(b.y0 for b in boxes)
        x1 = max(b.x1 for b in boxes)
        y1 = max(b.y1 for b in boxes)
        (dx0, dy0), (dx1, dy1) = inv.transform([(x0, y0), (x1, y1)])
        w = (dx1 - dx0) + 2 * _PAD  # inches, since one data unit is one inch once scaled
        h = (dy1 - dy0) + 2 * _PAD
        leg = legend.get_window_extent(r)
        width = max(w, leg.width / fig.dpi + 2 * _PAD, 4.0)
        _wrap(title, raw, (width - 2 * _PAD) * fig.dpi, r)
        t_h = title.get_window_extent(r).height / fig.dpi + _PAD
        l_h = leg.height / fig.dpi + _PAD
        fig.set_size_inches(width, h + t_h + l_h)
        height = h + t_h + l_h
        ax.set_position((0, l_h / height, 1, h / height))
        cx = (dx0 + dx1) / 2
        ax.set_xlim(cx - width / 2, cx + width / 2)
        ax.set_ylim(dy0 - _PAD, dy1 + _PAD)
        title.set_position((_PAD / width, 1 - _PAD / 2 / height))
        legend.set_bbox_to_anchor((_PAD / 2 / width, _PAD / 2 / height), transform=fig.transFigure)
    fig.canvas.draw()


def render(report, fmt: str = "png", suggestions: str = "first") -> bytes:
    """The drawing as PNG or SVG bytes."""
    fig = build_figure(report, suggestions)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110)
    return buf.getvalue()


def draw_report(report, path: str | os.PathLike, fmt: str | None = None, suggestions: str = "first") -> None:
    """Write the drawing to ``path``; the format comes from the extension
    (``.png`` or ``.svg``) unless ``fmt`` is given."""
    fmt = (fmt or os.path.splitext(os.fspath(path))[1].lstrip(".")).lower()
    if fmt not in ("png", "svg"):
        raise ValueError(f"cannot draw to {os.fspath(path)!r}: use a .png or .svg file name")
    data = render(report, fmt, suggestions)
    with open(path, "wb") as f:
        f.write(data)
