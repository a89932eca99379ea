"""Input validation of analyze_safety (query model of Li et al., VLDB 2006, §2.2-2.3)."""
import pytest

from punctuated.safety import analyze_safety, build_query, parse_predicate

S = {"S1": ["a", "b"], "S2": ["b", "c"]}


@pytest.mark.parametrize("preds, schemes, message", [
    (["S1.b = S9.b"], {}, "unknown stream 'S9'"),
    (["S1.z = S2.b"], {}, "stream 'S1' has no attribute 'z'"),
    (["S1.b == S2.b"], {}, "malformed predicate"),
    (["S1 = S2.b"], {}, "malformed predicate"),
    (["S1.a = S1.b"], {}, "compares stream 'S1' with itself"),
    (["S1.a = S2.b", "S1.b = S2.b"], {}, "imply S1.a = S1.b"),
    (["S1.b = S2.b"], {"S3": [["a"]]}, "unknown stream 'S3'"),
    (["S1.b = S2.b"], {"S1": [["q"]]}, "stream 'S1': unknown attribute 'q'"),
    (["S1.b = S2.b"], {"S1": [[]]}, "empty scheme for stream 'S1'"),
    (["S1.b = S2.b"], {"S1": [["a", "a"]]}, "names attribute 'a' twice"),
    (["S1.b = S2.b"], {"S1": [[1]]}, "1 is not an attribute name"),
    ("S1.b = S2.b", {}, "not one string"),
])
def test_bad_input_names_the_culprit(preds, schemes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        analyze_safety(S, preds, schemes)


def test_bad_streams():
    with pytest.raises(ValueError, match="non-empty mapping"):
        analyze_safety({}, [], {})
    with pytest.raises(ValueError, match="stream 'S1' lists attribute"):
        analyze_safety({"S1": ["a", "a"]}, [], {})
    with pytest.raises(ValueError, match="attributes of stream 'S1'"):
        analyze_safety({"S1": "ab"}, [], {})


def test_parse_predicate_tolerates_spaces():
    p = parse_predicate("  S1 . b=S2.b ", S)
    assert (p.left, p.right) == (("S1", "b"), ("S2", "b"))
    assert str(p) == "S1.b = S2.b"


def test_schemes_forms_and_ranges():
    q = build_query(S, ["S1.b = S2.b"], {"S1": ["b", ["a", "b<="], ["b"]], "S2": "b"})
    assert [str(s) for s in q.schemes] == ["S1(b)", "S1(a, b<=)", "S2(b)"]
    assert q.to_dict()["schemes"] == {"S1": [["b"], ["a", "b<="]], "S2": [["b"]]}


def test_join_classes_are_closed_under_transitivity():
    q = build_query({"A": ["x"], "B": ["x"], "C": ["x"]}, ["A.x = B.x", "B.x = C.x"], {})
    assert q.joined(("A", "x"), ("C", "x"))
    assert q.join_attributes("C") == ["x"]
    assert q.class_name(q.cls[("A", "x")]) == "A.x = B.x = C.x"


def test_range_scheme_counts_as_punctuable():
    r = analyze_safety({"S1": ["d"], "S2": ["d"]}, ["S1.d = S2.d"], {"S1": [["d<="]], "S2": [["d<="]]})
    assert r.safe
