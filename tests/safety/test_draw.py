"""The safety picture: nodes inside the canvas, labelled edges, unpurgeable
inputs marked, the suggested fix dashed; asserted on the matplotlib figure's
artists (display coordinates after a real Agg draw) and on the written PNG."""
import matplotlib.image
import pytest
from matplotlib.colors import to_rgba

from punctuated.safety import analyze_safety
from punctuated.safety.draw import FIX, PURGEABLE, UNPURGEABLE, build_figure
from punctuated.safety.spark import report_from_join_graph

FIG3 = {"S1": ["A", "B"], "S2": ["B", "C"], "S3": ["C", "A"]}
CYCLE = ["S1.B = S2.B", "S2.C = S3.C", "S3.A = S1.A"]
AUCTION = {"auctions": ["id", "seller"], "bids": ["auction", "bidder", "day"]}
FIVE = {f"S{i}": ["x", "y"] for i in range(5)}
RING = [f"S{i}.y = S{(i + 1) % 5}.x" for i in range(5)]


def two_unsafe():
    return analyze_safety(AUCTION, ["auctions.id = bids.auction"], {"auctions": [["id"]]})


def two_safe():
    return analyze_safety(AUCTION, ["auctions.id = bids.auction"],
                          {"auctions": [["id"]], "bids": [["auction"], ["bidder", "day<="]]})


def three_generalized():  # Li et al. (VLDB 2006), Fig. 8: G{S1,S2} -> S3, S3 unpurgeable
    return analyze_safety(FIG3, CYCLE, {"S1": [["B"]], "S2": [["B"]], "S3": [["A", "C"]]})


def three_spark():  # a QuerySafetyReport, as check_safety returns it
    return report_from_join_graph({"streams": [
        {"name": "auctions", "attributes": ["id", "seller"], "schemes": [["id"]], "declared": True},
        {"name": "bids", "attributes": ["auction", "bidder"], "schemes": [["auction"]], "declared": True},
        {"name": "people", "attributes": ["pid", "name"], "schemes": [], "declared": False}],
        "predicates": ["people.pid = auctions.seller", "auctions.id = bids.auction"]})


def five_unsafe():
    return analyze_safety(FIVE, RING, {"S1": [["x"]], "S2": [["x", "y"]], "S3": [["x"]], "S0": [["y"]]})


def five_safe():
    return analyze_safety(FIVE, RING, {s: [["x"], ["y"]] for s in FIVE})


REPORTS = [two_unsafe, two_safe, three_generalized, three_spark, five_unsafe, five_safe]


def _by_gid(fig, prefix):
    ax = fig.axes[0]
    return {a.get_gid()[len(prefix):]: a for a in ax.texts + ax.patches + ax.lines
            if (a.get_gid() or "").startswith(prefix)}


def _inside(inner, outer, tol=0.5):
    return (inner.x0 >= outer.x0 - tol and inner.y0 >= outer.y0 - tol
            and inner.x1 <= outer.x1 + tol and inner.y1 <= outer.y1 + tol)


@pytest.mark.parametrize("make", REPORTS, ids=[f.__name__ for f in REPORTS])
def test_every_node_arrow_and_label_lies_inside_the_axes(make):
    r = make()
    fig = build_figure(r)
    fig.canvas.draw()
    rend = fig.canvas.get_renderer()
    ax = fig.axes[0]
    visible = ax.get_window_extent(rend)
    page = fig.bbox
    assert _inside(visible, page)
    nodes = _by_gid(fig, "node:")
    assert set(r.query.streams) <= set(nodes)
    for name, t in nodes.items():
        assert _inside(t.get_window_extent(rend), visible), name
        assert _inside(t.get_bbox_patch().get_window_extent(rend), visible), name
    for a in ax.texts + ax.patches:
        assert _inside(a.get_window_extent(rend), visible), a.get_gid()
    for a in [fig.texts[0], fig.legends[0]]:  # title and legend
        assert _inside(a.get_window_extent(rend), page)
    # the drawing fills its axes: only the margins are empty
    used = [a.get_window_extent(rend) for a in ax.texts] + [t.get_bbox_patch().get_window_extent(rend)
                                                          for t in nodes.values()]
    height = max(b.y1 for b in used) - min(b.y0 for b in used)
    assert height >= 0.8 * visible.height
    assert visible.height >= 0.45 * page.height


def _chain(n):
    streams = {f"S{i}": ["x", "y"] for i in range(n)}
    return analyze_safety(streams, [f"S{i}.y = S{i + 1}.x" for i in range(n - 1)],
                          {f"S{i}": [["x"]] for i in range(1, n)})


def test_figure_grows_with_the_number_of_streams():
    sizes = [build_figure(_chain(n)).get_size_inches() for n in (3, 8, 12, 20)]
    areas = [w * h for w, h in sizes]
    assert all(b > 1.4 * a for a, b in zip(areas, areas[1:])), sizes
    assert max(sizes[0]) < 6  # a small query gives a small picture


def test_nodes_show_name_and_schemes():
    texts = {k: t.get_text() for k, t in _by_gid(build_figure(two_safe()), "node:").items()}
    assert texts == {"auctions": "auctions\n{id}", "bids": "bids\n{auction} {bidder, day<=}"}
    texts = {k: t.get_text() for k, t in _by_gid(build_figure(three_spark()), "node:").items()}
    assert texts["people"] == "people\n(no scheme)"


def _labels(fig):
    return {k: t.get_text() for k, t in _by_gid(fig, "label:").items()}


def test_edges_are_labelled_with_the_attribute_that_purges():
    # auctions punctuates id, joined with bids.auction: bids tuples are purged by it
    assert _labels(build_figure(two_safe())) == {"plain:bids->auctions": "id", "plain:auctions->bids": "auction"}
    assert _labels(build_figure(three_spark(), suggestions="none")) == {
        "plain:bids->auctions": "id", "plain:auctions->bids": "auction"}
    gen = _labels(build_figure(three_generalized(), suggestions="none"))
    g = "G{S1,S2}->S3(A, C)"
    assert gen == {"plain:S2->S1": "B", "plain:S1->S2": "B",
                   f"member:S1->{g}": "A", f"member:S2->{g}": "C", f"generalized:{g}->S3": "A, C"}


@pytest.mark.parametrize("make", REPORTS, ids=[f.__name__ for f in REPORTS])
def test_every_edge_has_its_arrow_and_every_label_names_a_scheme_attribute(make):
    r = make()
    fig = build_figure(r, suggestions="none")
    arrows, labels = _by_gid(fig, "edge:"), _labels(fig)
    g = r.graph
    assert set(arrows) == {f"{d['kind']}:{u}->{v}" for u, v, d in g.edges(data=True)}
    assert set(labels) == set(arrows)
    for u, v, d in g.edges(data=True):
        text = labels[f"{d['kind']}:{u}->{v}"]
        punctuating = g.nodes[v]["target"] if d["kind"] == "member" else v
        punctuable = {a for p in r.query.schemes_of(punctuating) for a in p.attributes}
        assert text and set(text.split(", ")) <= punctuable, (u, v)


@pytest.mark.parametrize("make", REPORTS, ids=[f.__name__ for f in REPORTS])
def test_unpurgeable_inputs_are_marked_and_in_the_legend(make):
    r = make()
    fig = build_figure(r)
    bad = set(r.unpurgeable)
    for name, t in _by_gid(fig, "node:").items():
        if name not in r.query.streams:
            continue
        patch = t.get_bbox_patch()
        assert patch.get_facecolor() == to_rgba(UNPURGEABLE if name in bad else PURGEABLE), name
        assert patch.get_linewidth() == (2 if name in bad else 1), name
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("unpurgeable" in x for x in legend) == bool(bad)


@pytest.mark.parametrize("make", REPORTS, ids=[f.__name__ for f in REPORTS])
def test_the_suggested_fix_is_dashed_when_unsafe(make):
    r = make()
    fig = build_figure(r)
    fixes = _by_gid(fig, "edge:fix:")
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    if r.safe:
        assert not fixes and not any("suggested fix" in x for x in legend)
        return
    first = r.suggestions[0]
    # every suggested scheme (v, a) is an edge u -> v from each stream joined with v.a
    q = r.query
    want = {f"{u}->{v}" for v, (a,) in first.schemes for u, _ in q.members[q.cls[(v, a)]] if u != v}
    assert set(fixes) == want
    for arrow in fixes.values():
        assert arrow.get_linestyle() in ("--", "dashed") and arrow.get_edgecolor() == to_rgba(FIX)
    labels = _labels(fig)
    assert {labels[f"fix:{e}"] for e in want} == {a for _, (a,) in first.schemes}
    assert f"suggested fix: add {first}" in legend


def test_a_join_tree_no_scheme_fixes_gets_the_multi_way_fix_said_so():
    # as check_safety reports sql/safety_check.sql: Spark runs ((people ⋈ auctions) ⋈ bids)
    r = report_from_join_graph({"streams": [
        {"name": "auctions", "attributes": ["id", "seller"], "schemes": [["id"]], "declared": True},
        {"name": "bids", "attributes": ["auction", "bidder"], "schemes": [["auction"]], "declared": True},
        {"name": "people", "attributes": ["pid", "name"], "schemes": [], "declared": False}],
        "predicates": ["people.pid = auctions.seller", "auctions.id = bids.auction"],
        "tree": [["people", "auctions"], "bids"]})
    assert r.suggestions == [] and [str(s) for s in r.query_suggestions] == ["auctions(seller) + people(pid)"]
    fig = build_figure(r)
    assert set(_by_gid(fig, "edge:fix:")) == {"people->auctions", "auctions->people"}
    legend = [t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts()]
    assert ("fix as one multi-way join (none for the tree Spark runs): add auctions(seller) + people(pid)"
            in legend)
    assert fig.texts[0].get_text().replace("\n", " ").startswith(
        "NOT SAFE as Spark runs it, ((people ⋈ auctions) ⋈ bids): join state never purged for")


def test_all_suggestions_can_be_drawn():
    r = three_generalized()
    assert [str(s) for s in r.suggestions] == ["S1(A)", "S2(C)"]
    assert set(_by_gid(build_figure(r), "edge:fix:")) == {"S3->S1"}
    assert set(_by_gid(r.figure(suggestions="all"), "edge:fix:")) == {"S3->S1", "S3->S2"}
    assert not _by_gid(r.figure(suggestions="none"), "edge:fix:")
    with pytest.raises(ValueError, match="'first', 'all' or 'none'"):
        build_figure(r, suggestions="best")


def test_title_cites_the_theorem_by_author_and_meaning():
    fig = build_figure(three_generalized())
    title = fig.texts[0].get_text().replace("\n", " ")
    assert title.startswith("NOT SAFE: join state never purged for S3")
    assert "Li et al. (VLDB 2006), Theorem 4, §4.2: a query is safe iff its generalized" in title
    assert "paper" not in title and "Def" not in title
    assert build_figure(two_safe()).texts[0].get_text().startswith("SAFE")


@pytest.mark.parametrize("make", REPORTS, ids=[f.__name__ for f in REPORTS])
def test_png_written_and_non_trivial(make, tmp_path):
    r = make()
    path = tmp_path / "g.png"
    r.draw(path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 15_000
    img = matplotlib.image.imread(path)
    w, h = build_figure(r).get_size_inches()
    assert abs(img.shape[0] - h * 110) <= 1 and abs(img.shape[1] - w * 110) <= 1
    # drawn, not blank: many colours, and the bottom rows (where main clipped nodes) are background
    assert len({tuple(px) for px in img.reshape(-1, img.shape[2])[::7]}) > 50
    assert (img[-3:] == 1).all()


def test_many_streams_are_drawn_without_labels(tmp_path):
    n = 60
    r = _chain(n)
    fig = build_figure(r)
    assert not _labels(fig) and len(_by_gid(fig, "node:")) == n
    assert max(fig.get_size_inches()) <= 20
    r.draw(tmp_path / "big.svg")
    assert b"<svg" in (tmp_path / "big.svg").read_bytes()[:500]


def test_picture_of_check_safety_on_catalog_tables(spark, tmp_path):
    """``check_safety`` on real declared tables (a unique key, a range scheme, an undeclared
    stream), drawn as ``punctuated check --draw`` does."""
    import uuid

    from punctuated.cli import main as cli_main
    from punctuated.safety.spark import check_safety

    sfx = uuid.uuid4().hex[:8]
    a, b, p = f"dr_auctions_{sfx}", f"dr_bids_{sfx}", f"dr_people_{sfx}"
    spark.sql(f"CREATE TABLE {a} (id BIGINT, seller BIGINT, is_punct BOOLEAN) USING parquet "
              "TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct')")
    spark.sql(f"CREATE TABLE {b} (auction BIGINT, bidder BIGINT, day DATE, is_punct BOOLEAN) USING parquet "
              "TBLPROPERTIES ('punctuated.schemes' = 'auction; bidder, day<=', 'punctuated.marker' = 'is_punct')")
    spark.sql(f"CREATE TABLE {p} (pid BIGINT, name STRING) USING parquet")
    try:
        sql = (f"SELECT * FROM STREAM({p}) x JOIN STREAM({a}) y ON x.pid = y.seller "
               f"JOIN STREAM({b}) z ON y.id = z.auction")
        r = check_safety(spark, sql)
        fig = build_figure(r)
        nodes = {k: t.get_text() for k, t in _by_gid(fig, "node:").items()}
        assert nodes == {a: f"{a}\n{{id}}", b: f"{b}\n{{auction}} {{bidder, day<=}}", p: f"{p}\n(no scheme)"}
        assert _labels(fig)[f"plain:{b}->{a}"] == "id" and _labels(fig)[f"plain:{a}->{b}"] == "auction"
        assert {t.get_bbox_patch().get_facecolor() for t in _by_gid(fig, "node:").values()} == {to_rgba(UNPURGEABLE)}
        assert _by_gid(fig, "edge:fix:")  # the fix, dashed
        png = tmp_path / "check.png"
        assert cli_main(["check", "--draw", str(png), "--sql", sql]) == 1
        assert png.stat().st_size > 15_000
    finally:
        for t in (a, b, p):
            spark.sql(f"DROP TABLE IF EXISTS {t}")
