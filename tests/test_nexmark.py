"""The NEXMark source from PySpark: the auction join with the generator's punctuations."""

from __future__ import annotations

from pyspark.sql import functions as F

import punctuated
from punctuated.sqlrun import run_streaming


def _read(spark, table, **options):
    reader = spark.readStream.format("nexmark").option("table", table)
    for key, value in {"totalEvents": 20000, "eventsPerBatch": 5000, "seed": 7, **options}.items():
        reader = reader.option(key, str(value))
    return reader.load()


def test_nexmark_tables_declare_themselves(spark):
    bids = _read(spark, "bid", punctuations="true")
    auctions = _read(spark, "auction", punctuations="true")
    (bid_decl,) = punctuated.declarations(bids)
    (auction_decl,) = punctuated.declarations(auctions)
    assert bid_decl["schemes"] == [[{"attr": "auction", "kind": "constant"}]]
    assert auction_decl["unique"] == ["id"]


def test_nexmark_auction_join_matches_the_batch_join(spark):
    """q-style join Auction x Bid: the punctuated plan gives the batch result, no punctuation rows."""
    auctions = _read(spark, "auction", punctuations="true")
    bids = _read(spark, "bid", punctuations="true")
    joined = auctions.join(bids, auctions["id"] == bids["auction"]).select(
        auctions["id"], bids["bidder"], bids["price"], bids["dateTime"])
    streamed = sorted(tuple(r) for r in run_streaming(spark, joined))

    # the same events as a batch (punctuations off: plain data rows)
    a = _read(spark, "auction")
    b = _read(spark, "bid")
    batch_a = run_streaming(spark, a.select("id"))
    batch_b = run_streaming(spark, b.select("auction", "bidder", "price", "dateTime"))
    ids = {r["id"] for r in batch_a}
    expected = sorted((r["auction"], r["bidder"], r["price"], r["dateTime"])
                      for r in batch_b if r["auction"] in ids)
    assert streamed == expected
    assert len(streamed) > 1000
