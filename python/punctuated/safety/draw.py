"""Drawing of the (generalized) punctuation graph (paper 000, Figs 5 and 9).

Plain edges (Def 7) are solid black arrows; a generalized edge (Def 8) is a
small square node ``G{...}`` with dotted "member" arrows from the streams that
provide its attributes and a dashed blue arrow to the punctuated stream.
Unpurgeable streams are filled red, purgeable ones green.  Only matplotlib's
object API with the Agg/SVG canvases is used (no pyplot, no global backend).
"""
from __future__ import annotations

import io
import os

import networkx as nx


def _figure(report):
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    g: nx.DiGraph = report.graph
    n = g.number_of_nodes()
    size = min(4 + n ** 0.5 * 1.2, 30)
    fig = Figure(figsize=(size, size * 0.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.set_axis_off()
    streams = [v for v, d in g.nodes(data=True) if d.get("kind") == "stream"]
    gen = [v for v, d in g.nodes(data=True) if d.get("kind") == "generalized"]
    pos = _layout(g, streams, gen)
    bad = set(report.unpurgeable)
    labels = n <= 200
    nsize = 900 if labels else 30
    nx.draw_networkx_nodes(g, pos, nodelist=streams, ax=ax, node_size=nsize, edgecolors="black",
                           node_color=["#f4a6a6" if v in bad else "#b8e0b8" for v in streams])
    if gen:
        nx.draw_networkx_nodes(g, pos, nodelist=gen, ax=ax, node_shape="s", node_size=nsize // 3,
                               node_color="#9db8e8", edgecolors="#2255aa")
    for kind, style, color in (("plain", "solid", "black"), ("member", "dotted", "#2255aa"),
                               ("generalized", "dashed", "#2255aa")):
        es = [(u, v) for u, v, d in g.edges(data=True) if d.get("kind") == kind]
        if es:
            nx.draw_networkx_edges(g, pos, edgelist=es, ax=ax, style=style, edge_color=color,
                                   arrows=True, arrowsize=15 if labels else 5, node_size=nsize,
                                   connectionstyle="arc3,rad=0.08")
    if labels:
        nx.draw_networkx_labels(g, pos, labels={v: v for v in streams}, ax=ax, font_size=10)
        nx.draw_networkx_labels(g, pos, ax=ax, font_size=7, font_color="#2255aa",
                                labels={v: "G{" + ",".join(g.nodes[v]["covers"]) + "}" for v in gen})
    handles = [Line2D([], [], color="black", label="punctuation edge (Def 7)"),
               Line2D([], [], color="#2255aa", ls="--", label="generalized edge (Def 8)"),
               Line2D([], [], color="#2255aa", ls=":", label="provides a value to G"),
               Line2D([], [], marker="o", ls="", mfc="#f4a6a6", mec="black", label="unpurgeable"),
               Line2D([], [], marker="o", ls="", mfc="#b8e0b8", mec="black", label="purgeable")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_title(f"{'safe' if report.safe else 'NOT safe'} ({report.theorem}, paper 000)")
    return fig


def _layout(g: nx.DiGraph, streams: list, gen: list) -> dict:
    """Streams on a circle (needs no scipy); each G node between the streams it
    covers and its target, pulled towards the centre."""
    pos = nx.circular_layout(g.subgraph(streams)) if len(streams) > 1 else {v: (0.0, 0.0) for v in streams}
    for k, v in enumerate(gen):
        pts = [pos[u] for u in g.nodes[v]["covers"]] + [pos[g.nodes[v]["target"]]]
        x = sum(p[0] for p in pts) / len(pts)
        y = sum(p[1] for p in pts) / len(pts)
        pos[v] = (0.6 * x + 0.03 * (k % 5), 0.6 * y + 0.03 * (k % 3))
    return pos


def render(report, fmt: str = "png") -> bytes:
    """The drawing as PNG or SVG bytes."""
    fig = _figure(report)
    buf = io.BytesIO()
    if fmt == "png":
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        FigureCanvasAgg(fig)
    fig.savefig(buf, format=fmt, bbox_inches="tight", dpi=110)
    return buf.getvalue()


def draw_report(report, path: str | os.PathLike, fmt: str | None = None) -> None:
    """Write the drawing to ``path``; the format comes from the extension
    (``.png`` or ``.svg``) unless ``fmt`` is given."""
    fmt = (fmt or os.path.splitext(os.fspath(path))[1].lstrip(".")).lower()
    if fmt not in ("png", "svg"):
        raise ValueError(f"cannot draw to {os.fspath(path)!r}: use a .png or .svg file name")
    data = render(report, fmt)
    with open(path, "wb") as f:
        f.write(data)
