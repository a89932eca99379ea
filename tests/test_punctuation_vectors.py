"""The shared punctuation test vectors (testdata/punctuation_vectors.json),
read by this suite and by the scalatest suites alike (testdata/README.md)."""

import json
from pathlib import Path

import pytest

from punctuated.declaration import (
    ERROR_CLASS,
    MAX_ECHO,
    DeclarationError,
    declaration_to_json,
    declaration_to_properties,
    parse_declaration,
    punctuation_of,
)
from punctuated.model import Punctuation, combine, from_json, match, to_json

VECTORS_FILE = Path(__file__).resolve().parents[1] / "testdata" / "punctuation_vectors.json"
VECTORS = json.loads(VECTORS_FILE.read_text(encoding="utf-8"))


def cases(group):
    return pytest.mark.parametrize("case", VECTORS[group], ids=[c["name"] for c in VECTORS[group]])


def test_every_group_is_covered():
    assert set(VECTORS) == {"declarations", "punctuation_rows", "combine", "match"}
    assert all(VECTORS[g] for g in VECTORS)


@cases("declarations")
def test_declaration(case):
    table, schema, props = case["table"], [tuple(c) for c in case["schema"]], case["properties"]
    if "error" in case:
        want = case["error"]
        with pytest.raises(DeclarationError) as info:
            parse_declaration(props, schema, table)
        err = info.value
        assert isinstance(err, ValueError)
        assert (err.condition, err.property, err.offending) == (
            want["condition"],
            want["property"],
            want["offending"],
        )
        assert err.table == table
        message = str(err)
        assert message.startswith(
            f"[{ERROR_CLASS}.{want['condition']}] Table {table}, property '{want['property']}'"
        )
        for echoed, shown in ((props.get(want["property"]), "= '{}'"), (want["offending"], "'{}'")):
            if not echoed:
                continue
            if len(echoed) <= MAX_ECHO:
                assert shown.format(echoed) in message
            else:  # long text is shortened: its start and its length
                assert echoed not in message
                assert shown.format(echoed[:MAX_ECHO] + f"… ({len(echoed)} characters)") in message
        for expected in want.get("message_contains", []):
            assert expected in message
        assert len(message) < 3 * MAX_ECHO + 1000
        assert ". Fix: " in message
    else:
        declaration = parse_declaration(props, schema, table)
        assert declaration_to_json(declaration) == case["expect"]
        # rendering back to properties and parsing again gives the same declaration
        assert parse_declaration(declaration_to_properties(declaration), schema, table) == declaration


def _schema_of_row_case(case):
    """The vectors give column names only: the marker is BOOLEAN and the
    other types are left unchecked (None)."""
    return [(c, "BOOLEAN" if c == case["marker"] else None) for c in case["columns"]]


@cases("punctuation_rows")
def test_punctuation_row(case):
    props = {"punctuated.marker": case["marker"]}
    if case.get("schemes") is not None:
        props["punctuated.schemes"] = case["schemes"]
    if case.get("unique") is not None:
        props["punctuated.unique"] = case["unique"]
    declaration = parse_declaration(props, _schema_of_row_case(case), "vectors")
    columns, row = case["columns"], case["row"]

    got = punctuation_of(declaration, columns, row)
    # the same row given as a sequence aligned with the columns
    got_seq = punctuation_of(declaration, columns, [row[c] for c in columns])
    if case.get("invalid"):
        assert got is None and got_seq is None
    else:
        assert to_json(got) == case["expect"]
        assert got_seq == got
        assert list(got) == [c for c in columns if c != case["marker"]]
        # the punctuation matches the data row carrying the punctuation's values
        data_row = {c: v for c, v in row.items() if c != case["marker"]}
        assert match(data_row, got)


@cases("combine")
def test_combine(case):
    p1, p2 = from_json(case["p1"]), from_json(case["p2"])
    assert isinstance(p1, Punctuation) and isinstance(p2, Punctuation)
    assert to_json(p1) == case["p1"] and to_json(p2) == case["p2"]
    got = combine(p1, p2)
    assert to_json(got) == case["expect"]
    # Tucker et al. 2003 §3.1: combine is an intersection, hence commutative
    flipped = combine(p2, p1)
    assert (flipped is None) == (got is None)
    if got is not None:
        assert flipped == got and to_json(flipped) == case["expect"]


@cases("match")
def test_match(case):
    p = from_json(case["p"])
    assert to_json(p) == case["p"]
    assert match(case["t"], p) is case["expect"]
