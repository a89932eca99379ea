"""Punctuated over Spark Connect, against a real local Connect server (docs/connect.md).

The test starts ``org.apache.spark.sql.connect.service.SparkConnectServer`` from the pyspark
package with the package's jar and the extension, on 127.0.0.1 and a free port, and talks to
it with pyspark's Connect client: declared tables created in SQL, the auction query run to a
file sink with its batch answer, and ``declarations``/``check_safety``/``join_plan``/``migrate`` answered
by the server's table functions, equal to what classic PySpark (Py4J) gives for the same query.
Skipped, with the reason, only when the Connect client's dependencies are missing
(``pip install 'punctuated[connect]'``; ``scripts/setup.sh`` installs them).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import punctuated
from punctuated._session import EXTENSION_CLASS, require_extension

def _client_modules() -> tuple:
    """What pyspark's Connect client imports: zstandard from Spark 4.1 on (4.0's has no such extra)."""
    import pyspark

    from punctuated.spark_version import minor_at_least

    later = minor_at_least(pyspark.__version__, "4.1")
    return ("grpc", "grpc_status", "google.rpc", "pandas", "pyarrow") + (("zstandard",) if later else ())


_MISSING = [m for m in _client_modules() if importlib.util.find_spec(m.split(".")[0]) is None]
needs_connect = pytest.mark.skipif(
    bool(_MISSING), reason=f"Spark Connect client dependencies missing: {_MISSING} "
                           "(pip install 'punctuated[connect]')")

DB = "punctuated_connect"
TABLES = [
    f"CREATE TABLE {DB}.auctions (id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN) USING parquet "
    "TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct')",
    f"CREATE TABLE {DB}.bids (auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN) USING parquet "
    "TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')",
    f"CREATE TABLE {DB}.persons (id BIGINT, name STRING) USING parquet",
]
AUCTION = (f"SELECT a.id AS auction, a.category, count(*) AS bids, sum(b.price) AS total, "
           f"max(b.price) AS final_price FROM STREAM({DB}.auctions) a JOIN STREAM({DB}.bids) b "
           "ON a.id = b.auction GROUP BY a.id, a.category")
# neither input punctuates the join key: start() refuses it in strict mode
UNSAFE = f"SELECT * FROM STREAM({DB}.bids) b JOIN STREAM({DB}.persons) p ON b.bidder = p.id"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A Spark Connect server with the extension, from the pyspark package: (process, URL, directory)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    tmp = tmp_path_factory.mktemp("connect-server")
    port = _free_port()
    log = open(tmp / "server.log", "w")
    command = [
        str(home / "bin" / "spark-submit"), "--master", "local[2]",
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--jars", punctuated.jar_path(),
        "--conf", f"spark.sql.extensions={EXTENSION_CLASS}",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", f"spark.sql.warehouse.dir={tmp / 'warehouse'}",
        "--conf", "spark.sql.shuffle.partitions=2",
        "--conf", "spark.ui.enabled=false",
        "--driver-java-options", f"-Dderby.system.home={tmp}",
        "spark-internal",
    ]
    env = dict(os.environ, SPARK_HOME=str(home))
    env.pop("SPARK_REMOTE", None)
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp,
                            start_new_session=True)
    try:
        # not waited for here: the classic session starts while the server does (see `remote`)
        yield proc, f"sc://127.0.0.1:{port}", tmp
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _wait_until_started(proc, tmp: Path) -> None:
    deadline = time.monotonic() + 180
    while "Spark Connect server started" not in (tmp / "server.log").read_text():
        if proc.poll() is not None:
            raise RuntimeError(f"the Connect server exited ({proc.returncode}):\n"
                               + (tmp / "server.log").read_text()[-3000:])
        if time.monotonic() > deadline:
            raise RuntimeError("the Connect server did not start in 180 s:\n"
                               + (tmp / "server.log").read_text()[-3000:])
        time.sleep(0.5)


@pytest.fixture(scope="module")
def remote(server):
    """A Connect client session with the declared tables (server side)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    proc, url, tmp = server
    _wait_until_started(proc, tmp)
    session = RemoteSession.builder.remote(url).create()
    session.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    for statement in TABLES:
        session.sql(statement)
    yield session
    session.stop()


@pytest.fixture(scope="module")
def classic(spark):
    """The classic (Py4J) session with the same declared tables."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    for statement in TABLES:
        spark.sql(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
    yield spark
    spark.sql(f"DROP DATABASE IF EXISTS {DB} CASCADE")


@needs_connect
def test_the_session_is_a_connect_session_with_the_extension(server, classic, remote):
    from punctuated import _connect

    assert _connect.is_connect(remote) and not _connect.is_connect(classic)
    require_extension(remote)  # the server's spark.sql.extensions names ours


@needs_connect
def test_auction_query_runs_over_connect_with_the_batch_answer(remote, server):
    _, _, tmp = server
    remote.sql(f"INSERT INTO {DB}.auctions VALUES (1, 10, 3, false), (2, 11, 3, false), (3, 12, 5, false)")
    remote.sql(f"INSERT INTO {DB}.bids VALUES (1, 100, 5.0, false), (1, 101, 7.5, false), "
               "(2, 100, 3.0, false), (1, NULL, NULL, true), (3, 102, 9.0, false), "
               "(3, 103, 12.0, false), (3, NULL, NULL, true)")
    out, checkpoint = str(tmp / "auction-out"), str(tmp / "auction-ckpt")

    def run() -> set:
        query = (remote.sql(AUCTION).writeStream.format("parquet").outputMode("append")
                 .option("path", out).option("checkpointLocation", checkpoint)
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        return {tuple(r) for r in remote.read.parquet(out).collect()}

    # auctions 1 and 3 are closed: out once, final; auction 2 stays in state
    assert run() == {(1, 3, 2, 12.5, 7.5), (3, 5, 2, 21.0, 12.0)}
    remote.sql(f"INSERT INTO {DB}.bids VALUES (2, 104, 4.0, false), (2, NULL, NULL, true)")
    got = run()  # the restart continues the state: auction 2's earlier bid is counted
    batch = {tuple(r) for r in remote.sql(
        f"SELECT a.id, a.category, count(*), sum(b.price), max(b.price) FROM {DB}.auctions a "
        f"JOIN {DB}.bids b ON a.id = b.auction GROUP BY a.id, a.category").collect()}
    assert got == batch == {(1, 3, 2, 12.5, 7.5), (2, 3, 2, 7.0, 4.0), (3, 5, 2, 21.0, 12.0)}


@needs_connect
def test_declarations_are_those_of_classic_pyspark(remote, classic):
    bids = punctuated.declarations(remote.readStream.table(f"{DB}.bids"))
    assert bids == punctuated.declarations(classic.readStream.table(f"{DB}.bids"))
    assert bids == [{"table": f"spark_catalog.{DB}.bids", "marker": "is_punct", "unique": [],
                     "schemes": [[{"attr": "auction", "kind": "constant"}]]}]
    # a query's streams: SQL text, and a DataFrame built with the DataFrame API
    assert (punctuated.declarations(remote.sql(AUCTION))
            == punctuated.declarations(classic.sql(AUCTION)))
    a, b = remote.readStream.table(f"{DB}.auctions"), remote.readStream.table(f"{DB}.bids")
    ca, cb = classic.readStream.table(f"{DB}.auctions"), classic.readStream.table(f"{DB}.bids")
    joined = punctuated.declarations(a.join(b, a["id"] == b["auction"]))
    assert joined == punctuated.declarations(ca.join(cb, ca["id"] == cb["auction"]))
    assert {d["table"] for d in joined} == {f"spark_catalog.{DB}.auctions", f"spark_catalog.{DB}.bids"}
    assert punctuated.declarations(remote.readStream.table(f"{DB}.persons")) == []
    # the temporary views that carried the DataFrames are gone
    assert not [t for t in remote.catalog.listTables() if t.name.startswith("punctuated_query_")]


@needs_connect
def test_python_declarations_over_connect(remote, classic):
    """register_schemes writes the properties through SQL; with_schemes' column metadata
    reaches the server with the DataFrame's plan."""
    for session in (remote, classic):
        session.sql(f"CREATE TABLE IF NOT EXISTS {DB}.sellers (id BIGINT, rating INT, p BOOLEAN) USING parquet")
        punctuated.register_schemes(session, f"{DB}.sellers", schemes=["id"], marker="p")
    sellers = punctuated.declarations(remote.readStream.table(f"{DB}.sellers"))
    assert sellers == punctuated.declarations(classic.readStream.table(f"{DB}.sellers"))
    assert sellers[0]["schemes"] == [[{"attr": "id", "kind": "constant"}]]

    def rate(session):
        return punctuated.with_schemes(session.readStream.format("rate").load(), unique=["value"],
                                       name="rate_events")

    events = punctuated.declarations(rate(remote))
    assert events == punctuated.declarations(rate(classic))
    assert events[0]["unique"] == ["value"]


@needs_connect
def test_check_safety_gives_the_classic_report(remote, classic):
    for query in (AUCTION, UNSAFE):
        over_connect = punctuated.check_safety(remote, query)
        assert over_connect.to_dict() == punctuated.check_safety(classic, query).to_dict()
        assert over_connect.explain() == punctuated.check_safety(classic, query).explain()
    assert punctuated.check_safety(remote, AUCTION).safe
    unsafe = punctuated.check_safety(remote, UNSAFE)
    assert not unsafe.safe and unsafe.suggestions
    # a streaming DataFrame built with the DataFrame API
    b, p = remote.readStream.table(f"{DB}.bids"), remote.readStream.table(f"{DB}.persons")
    cb, cp = classic.readStream.table(f"{DB}.bids"), classic.readStream.table(f"{DB}.persons")
    assert (punctuated.check_safety(remote, b.join(p, b["bidder"] == p["id"])).to_dict()
            == punctuated.check_safety(classic, cb.join(cp, cb["bidder"] == cp["id"])).to_dict())


@needs_connect
def test_check_safety_table_function_is_the_start_time_verdict(remote, classic):
    from punctuated._connect import sql_literal

    rows = remote.sql(f"SELECT safe, problems FROM punctuated_check_safety({sql_literal(UNSAFE)})").collect()
    assert [tuple(r) for r in rows] == [tuple(r) for r in classic.sql(
        f"SELECT safe, problems FROM punctuated_check_safety({sql_literal(UNSAFE)})").collect()]
    (safe, problems), = [tuple(r) for r in rows]
    assert safe is False and problems
    assert remote.sql(f"SELECT safe FROM punctuated_check_safety({sql_literal(AUCTION)})").first()[0]


@needs_connect
def test_check_safety_over_connect_runs_nothing_and_refuses_batch_queries(remote):
    with pytest.raises(ValueError, match="not a query; it was not run"):
        punctuated.check_safety(remote, f"DROP TABLE {DB}.persons")
    assert remote.catalog.tableExists(f"{DB}.persons")
    with pytest.raises(ValueError, match="not a streaming query"):
        punctuated.check_safety(remote, f"SELECT * FROM {DB}.bids")
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="punctuated_describe.*no_such_table"):
        punctuated.check_safety(remote, "SELECT * FROM STREAM(no_such_table)")


@needs_connect
def test_join_plan_and_migrate_over_connect(remote, server):
    """A three-way join started over Connect runs as one multi-way join; ``join_plan`` reads its
    plan and ``migrate`` asks it for a tree (the server's ``punctuated_join_plan`` and
    ``punctuated_migrate``): the next micro-batch runs the tree, and a tree the inputs cannot
    form fails with the server's message, writing nothing."""
    _, _, tmp = server
    for name, columns in (("a", "x BIGINT, y BIGINT, p BOOLEAN"), ("b", "x BIGINT, y BIGINT, p BOOLEAN"),
                          ("c", "x BIGINT, y BIGINT, p BOOLEAN")):
        remote.sql(f"CREATE TABLE IF NOT EXISTS {DB}.{name} ({columns}) USING parquet "
                   "TBLPROPERTIES ('punctuated.schemes' = 'x', 'punctuated.marker' = 'p')")
        remote.sql(f"INSERT INTO {DB}.{name} VALUES (1, 1, false)")
    text = (f"SELECT * FROM STREAM({DB}.a) a JOIN STREAM({DB}.b) b ON a.x = b.x "
            f"JOIN STREAM({DB}.c) c ON b.x = c.x")
    query = (remote.sql(text).writeStream.format("parquet").option("path", str(tmp / "abc-out"))
             .option("checkpointLocation", str(tmp / "abc-ckpt")).start())
    try:
        query.processAllAvailable()
        plan = punctuated.join_plan(query)
        assert plan == "mjoin" or (isinstance(plan, list) and len(plan) >= 2), plan
        tree = ["c", "a", "b"] if plan == ["a", "b", "c"] else ["a", "b", "c"]  # another plan
        first = punctuated.migrate(query, tree)
        assert punctuated.migrate(query, tree) == first  # asked again: the same request
        with pytest.raises(ValueError, match="PUNCTUATED_TABLE_FUNCTION_ARGUMENT.*does not fit"):
            punctuated.migrate(query, ["a", ["b", "z"]])  # no input z
        remote.sql(f"INSERT INTO {DB}.a VALUES (2, 2, false)")
        query.processAllAvailable()
        assert punctuated.join_plan(query) == tree
        assert punctuated.migrate(query, "auto") == first + 1
    finally:
        query.stop()


LOCAL_REMOTE = """
import sys
from pyspark.sql import SparkSession
import punctuated
from punctuated import _connect
spark = punctuated.configure_spark(SparkSession.builder.remote("local[1]")
    .config("spark.sql.warehouse.dir", sys.argv[1]).config("spark.ui.enabled", "false")).getOrCreate()
assert _connect.is_connect(spark), type(spark)
spark.sql("CREATE TABLE bids (auction BIGINT, price DOUBLE, is_punct BOOLEAN) USING parquet "
          "TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')")
print(punctuated.declarations(spark.readStream.table("bids"))[0]["schemes"])
spark.stop()
"""


@needs_connect
def test_configure_spark_with_a_local_remote_starts_a_server_with_the_extension(tmp_path):
    import sys

    done = subprocess.run([sys.executable, "-c", LOCAL_REMOTE, str(tmp_path / "warehouse")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_HOME")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[[{'attr': 'auction', 'kind': 'constant'}]]" in done.stdout


def test_configure_spark_refuses_a_running_connect_server():
    from pyspark.sql import SparkSession

    with pytest.raises(ValueError, match="--jars <punctuated jar> --conf spark.sql.extensions="):
        punctuated.configure_spark(SparkSession.builder.remote("sc://127.0.0.1:15002"))
