"""The package against a real local SparkSession that loads the bundled jar."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from pyspark.errors import AnalysisException

import punctuated
from punctuated.sqlrun import run_file, run_streaming

REPO = Path(__file__).resolve().parents[1]
BIDS = "auction BIGINT, bidder BIGINT, price DOUBLE, tags MAP<STRING, INT>, is_punct BOOLEAN"


def test_jar_is_inside_the_installed_package():
    jar = Path(punctuated.jar_path())
    assert jar.parent.parent == Path(punctuated.__file__).parent
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
    assert "punctuated/spark/PunctuatedExtensions.class" in names
    assert not any(n.startswith("org/apache/spark/") for n in names), "Spark must not be bundled"


def test_configure_spark_keeps_existing_settings():
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.config("spark.sql.extensions", "com.example.Other")
    builder = punctuated.configure_spark(builder)
    assert builder._options["spark.sql.extensions"] == "com.example.Other," + \
        "punctuated.spark.PunctuatedExtensions"
    assert builder._options["spark.jars"].endswith("punctuated-assembly.jar")
    builder._options.clear()


def test_session_has_the_extension(spark):
    assert "punctuated.spark.PunctuatedExtensions" in spark.conf.get("spark.sql.extensions")


def test_sql_declared_tables_are_read_by_the_extension(spark, table_name):
    spark.sql(f"CREATE TABLE {table_name} ({BIDS}) USING parquet")
    punctuated.register_schemes(spark, table_name, schemes=["auction", ["bidder", "price<="]],
                                marker="is_punct")
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table_name}").collect()}
    assert props["punctuated.schemes"] == "auction; bidder, price<="
    (decl,) = punctuated.declarations(spark.readStream.table(table_name))
    assert decl["table"].endswith(table_name)
    assert decl["schemes"] == [[{"attr": "auction", "kind": "constant"}],
                               [{"attr": "bidder", "kind": "constant"},
                                {"attr": "price", "kind": "range"}]]
    assert decl["marker"] == "is_punct" and decl["unique"] == []
    # register_schemes replaces the whole declaration
    punctuated.register_schemes(spark, table_name, unique="auction")
    (decl,) = punctuated.declarations(spark.readStream.table(table_name))
    assert decl["schemes"] == [] and decl["marker"] is None and decl["unique"] == ["auction"]


@pytest.mark.parametrize(
    "props, condition, offending",
    [
        ("'punctuated.schemes' = 'auction; bidr', 'punctuated.marker' = 'is_punct'",
         "UNKNOWN_COLUMN", "bidr"),
        ("'punctuated.schemes' = 'auction'", "MARKER_MISSING", "punctuated.marker"),
        ("'punctuated.schemes' = 'auction', 'punctuated.marker' = 'price'",
         "MARKER_NOT_BOOLEAN", "price"),
        ("'punctuated.schemes' = 'auction;;bidder', 'punctuated.marker' = 'is_punct'",
         "EMPTY_SCHEME", "auction;;bidder"),
        ("'punctuated.schemes' = 'tags<=', 'punctuated.marker' = 'is_punct'",
         "UNORDERED_RANGE", "tags<="),
        ("'punctuated.schemes' = 'auction bidder', 'punctuated.marker' = 'is_punct'",
         "MALFORMED", "auction bidder"),
        ("'punctuated.scheme' = 'auction', 'punctuated.marker' = 'is_punct'",
         "UNKNOWN_PROPERTY", "did you mean 'punctuated.schemes'"),
        ("'punctuated.schemes' = 'auction; auction', 'punctuated.marker' = 'is_punct'",
         "DUPLICATE_SCHEME", "repeats scheme 1"),
    ],
)
def test_bad_declarations_fail_at_analysis(spark, table_name, props, condition, offending):
    spark.sql(f"CREATE TABLE {table_name} ({BIDS}) USING parquet TBLPROPERTIES ({props})")
    with pytest.raises(AnalysisException) as info:
        spark.readStream.table(table_name)
    e = info.value
    assert e.getCondition() == f"PUNCTUATED_INVALID_DECLARATION.{condition}"
    message = str(e)
    assert table_name in message and offending in message and "Fix:" in message


def test_register_schemes_validates_before_writing(spark, table_name):
    from punctuated.declaration import DeclarationError

    spark.sql(f"CREATE TABLE {table_name} ({BIDS}) USING parquet")
    with pytest.raises(DeclarationError, match="UNKNOWN_COLUMN.*aution"):
        punctuated.register_schemes(spark, table_name, schemes=["aution"], marker="is_punct")
    props = {r.key for r in spark.sql(f"SHOW TBLPROPERTIES {table_name}").collect()}
    assert "punctuated.schemes" not in props


def test_with_schemes_on_a_memory_stream(spark):
    df = spark.readStream.format("rate").option("rowsPerSecond", 1).load()
    df = df.selectExpr("value AS auction", "value % 3 AS bidder", "false AS is_punct")
    declared = punctuated.with_schemes(df, schemes=["auction"], marker="is_punct", name="rate_bids")
    (decl,) = punctuated.declarations(declared.where("bidder > 0"))
    assert decl["table"] == "rate_bids"
    assert decl["schemes"] == [[{"attr": "auction", "kind": "constant"}]]
    with pytest.raises(AnalysisException) as info:
        punctuated.with_schemes(df, schemes=["aution"], marker="is_punct", name="rate_bids")
    assert info.value.getCondition() == "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN"
    assert "rate_bids" in str(info.value)


def test_streaming_join_over_declared_tables(spark):
    for t in ("auctions", "bids"):
        spark.sql(f"DROP TABLE IF EXISTS {t}")
    try:
        rows = run_file(spark, REPO / "sql" / "auction_join.sql")
        got = sorted(tuple(r) for r in rows)
        assert got == [(1, 10, 100, 5.0), (1, 10, 101, 7.5), (2, 11, 100, 3.0), (3, 12, 102, 9.0)]
        # the same query picks up rows inserted later
        spark.sql("INSERT INTO bids VALUES (2, 103, 4.0, false)")
        df = spark.sql("SELECT a.id, b.bidder FROM STREAM(auctions) a "
                       "JOIN STREAM(bids) b ON a.id = b.auction")
        assert (2, 103) in {tuple(r) for r in run_streaming(spark, df)}
    finally:
        for t in ("auctions", "bids"):
            spark.sql(f"DROP TABLE IF EXISTS {t}")


def test_register_schemes_errors_name_the_table(spark, table_name):
    from punctuated.declaration import DeclarationError

    spark.sql(f"CREATE TABLE {table_name} ({BIDS}) USING parquet")
    with pytest.raises(DeclarationError) as info:
        punctuated.register_schemes(spark, table_name, schemes=["auction bidder"], marker="is_punct")
    message = str(info.value)
    assert info.value.table == table_name
    assert message.startswith(f"[PUNCTUATED_INVALID_DECLARATION.MALFORMED] Table {table_name}, ")
    assert "Stream" not in message and "not a catalog table" not in message


def test_with_schemes_refuses_a_batch_dataframe(spark):
    from punctuated._declare import NOT_A_STREAM, NotAStreamError

    batch = spark.range(3).selectExpr("id AS auction", "false AS is_punct")
    with pytest.raises(NotAStreamError) as info:
        punctuated.with_schemes(batch, schemes=["auction"], marker="is_punct", name="bids")
    message = str(info.value)
    assert message.startswith(f"[{NOT_A_STREAM}]") and "'bids'" in message
    assert "spark.readStream" in message and "register_schemes" in message


def test_batch_reads_of_a_declared_table_leave_punctuations_out(spark, table_name):
    spark.sql(f"CREATE TABLE {table_name} ({BIDS}) USING parquet TBLPROPERTIES "
              "('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')")
    spark.sql(f"INSERT INTO {table_name} VALUES (1, 100, 5.0, NULL, false), "
              "(1, NULL, NULL, NULL, true), (2, NULL, NULL, NULL, NULL)")
    count = f"SELECT count(*) FROM {table_name}"
    assert spark.sql(count).first()[0] == 2  # the NULL-marker row is data
    assert spark.read.table(table_name).where("is_punct").count() == 0
    spark.conf.set("spark.punctuated.batch.includePunctuations", "true")
    try:
        assert spark.sql(count).first()[0] == 3
    finally:
        spark.conf.unset("spark.punctuated.batch.includePunctuations")
