"""Time-band joins in the safety analysis (punctuated.safety.band) on the vectors
testdata/band_safety_vectors.json, which TimeBandSafetyVectorsSuite runs against the
JVM's strict mode."""
import json
from pathlib import Path

import pytest

from punctuated.safety.band import Band, band_purgeability

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "testdata" / "band_safety_vectors.json").read_text())
CASES = VECTORS["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case):
    v = band_purgeability(case["streams"], case["predicates"], case["schemes"], Band.of(case["band"]))
    exp = case["expected"]
    assert v.purgeable == exp["purgeable"]
    assert v.safe == exp["safe"]
    assert v.unpurgeable == exp["unpurgeable"]
    # every purgeable input has an edge to the other input, every unpurgeable one none
    assert {x for x, _, _ in v.edges} == {s for s, p in exp["purgeable"].items() if p}


def test_unpurgeable_input_is_told_the_range_scheme_that_fixes_it():
    v = band_purgeability({"a": ["k", "ts"], "b": ["k", "ts"]}, ["a.k = b.k"], {"a": [["ts<="]]},
                          Band(("a", "ts"), ("b", "ts"), lo=-2, hi=3))
    assert v.unpurgeable == ["a"]
    assert "declare the range scheme ts<= on b" in v.explain()


def test_the_band_edge_needs_the_bound_on_the_stored_side():
    # b.ts >= a.ts - 2 only: a's rows can meet b rows arbitrarily far ahead
    v = band_purgeability({"a": ["k", "ts"], "b": ["k", "ts"]}, ["a.k = b.k"],
                          {"a": [["ts<="]], "b": [["ts<="]]}, Band(("a", "ts"), ("b", "ts"), lo=-2))
    assert v.purgeable == {"a": False, "b": True}
    assert "the band does not bound a's rows" in v.explain()


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="band attribute a.when"):
        band_purgeability({"a": ["k", "ts"], "b": ["k", "ts"]}, ["a.k = b.k"], {},
                          Band(("a", "when"), ("b", "ts"), lo=0, hi=1))
