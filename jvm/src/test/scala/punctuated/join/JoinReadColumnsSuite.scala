package punctuated.join

import org.apache.spark.SparkException
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.internal.SQLConf

import punctuated.compat.StreamExecution
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration
import punctuated.errors.PunctuatedAnalysisException
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * A punctuated join of two wide catalog tables (parquet, read as file streams) carries the
 * columns it needs and no others: each input's marker, its schemes' columns and the columns
 * the query reads. Spark prunes the rest from the scans, as it does for its own join, so the
 * shuffle, the state stores and the output rows are as narrow as Spark's. As for a punctuated
 * aggregation (`punctuated.aggregate.ReadColumnsSuite`), a value in a pruned column of a
 * punctuation row is not seen (such a column is a wildcard); one in a column the join carries
 * still makes the row invalid.
 */
class JoinReadColumnsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val bidColumns = "auction BIGINT, price DOUBLE, url STRING, note STRING, is_punct BOOLEAN"
  private val auctionColumns = "id BIGINT, seller BIGINT, description STRING, extra STRING, a_punct BOOLEAN"
  private val bidsDeclared = Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct")
  private val auctionsDeclared = Map(Declaration.Schemes -> "id", Declaration.Marker -> "a_punct")

  /** The columns each file scan of the last micro-batch reads. */
  private def scanned(q: StreamExecution): Set[Set[String]] =
    q.lastExecution.executedPlan.collect { case f: FileSourceScanExec => f.requiredSchema.fieldNames.toSet }.toSet

  /** The column names of each input of the punctuated join (the rows its state stores hold). */
  private def joinInputs(q: StreamExecution): Seq[Seq[String]] =
    q.lastExecution.executedPlan.collect { case j: PunctuatedSymmetricHashJoinExec =>
      Seq(j.left.output.map(_.name), j.right.output.map(_.name)) }.flatten

  /** One INSERT as one file, read by one micro-batch (see `ReadColumnsSuite.insert`). */
  private def insert(table: String, values: String) =
    Execute(s"INSERT $table $values") { _ => sql(s"INSERT INTO $table SELECT /*+ REPARTITION(1) */ * FROM VALUES $values") }

  private def withTables(body: => Unit): Unit =
    withDeclaredTable("wide_bids", bidColumns, bidsDeclared) {
      withDeclaredTable("wide_auctions", auctionColumns, auctionsDeclared)(body)
    }

  private def joined() = {
    val b = spark.readStream.table("wide_bids").as("b")
    val a = spark.readStream.table("wide_auctions").as("a")
    b.join(a, $"b.auction" === $"a.id").select($"b.auction", $"b.price", $"a.seller")
  }

  test("wide tables: the scans and the join's inputs carry the markers, the scheme columns and the " +
      "columns the query reads; a punctuation's unread columns are not checked; purge; restart") {
    withTables {
      testStream(joined())(
        insert("wide_bids", "(1, 5.0, 'a', 'b', false), (2, 1.0, NULL, NULL, false)"),
        insert("wide_auctions", "(1, 10, 'lamp', 'x', false)"),
        ProcessAllAvailable(),
        CheckNewAnswer((1L, 5.0, 10L)),
        AssertOnQuery("each scan reads its marker, scheme and query columns only") { q =>
          // (an input with no new file in the batch is an empty local scan)
          assert(scanned(q).nonEmpty && scanned(q).subsetOf(Set(Set("auction", "price", "is_punct"),
            Set("id", "seller", "a_punct"))), q.lastExecution.executedPlan.treeString)
          assert(joinInputs(q).map(_.toSet) == Seq(Set("auction", "price", "is_punct"), Set("id", "seller", "a_punct")),
            q.lastExecution.executedPlan.treeString)
          true
        },
        AssertPunctuatedState(rows = 3, punctuations = 0),
        // notes on the punctuation rows: columns the query does not read
        insert("wide_bids", "(1, NULL, NULL, 'auction closed', true)"),
        insert("wide_auctions", "(1, NULL, NULL, 'sold', true)"),
        ProcessAllAvailable(),
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 1, punctuations = 0),   // auction 1 closed by both: purged
        StopStream,
        StartStream(),
        insert("wide_auctions", "(2, 20, 'desk', NULL, false), (2, NULL, 'no more', NULL, true)"),
        insert("wide_bids", "(2, NULL, 'x', NULL, true)"),
        ProcessAllAvailable(),
        CheckNewAnswer((2L, 1.0, 20L)),
        AssertPunctuatedState(rows = 0, punctuations = 0),
        AssertCounted("numInvalidPunctuationsDropped", 0))
    }
  }

  test("a restart that reads another column of an input is refused, naming the columns to read again; " +
      "reading them again continues the state") {
    def wider() = {
      val b = spark.readStream.table("wide_bids").as("b")
      val a = spark.readStream.table("wide_auctions").as("a")
      b.join(a, $"b.auction" === $"a.id").select($"b.auction", $"b.price", $"b.note", $"a.seller")
    }
    withTables {
      val checkpoint = java.nio.file.Files.createTempDirectory("read-columns").toString
      testStream(joined())(
        StartStream(checkpointLocation = checkpoint),
        insert("wide_bids", "(1, 5.0, NULL, 'n', false)"),
        ProcessAllAvailable(),
        CheckNewAnswer(),
        StopStream)
      // Spark's own state schema check refuses the wider rows first, with its message (raised
      // where the restarted query plans its first micro-batch)
      val bySpark = intercept[Throwable](testStream(wider())(
        StartStream(checkpointLocation = checkpoint),
        insert("wide_auctions", "(1, 10, NULL, NULL, false)"),
        ProcessAllAvailable()))
      val messages = Iterator.iterate(bySpark)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")
      assert(messages.contains("STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"), messages)
      // without it, ours names the stored columns, and reading them again is the fix
      testStream(wider())(
        StartStream(checkpointLocation = checkpoint,
          additionalConfs = Map(SQLConf.STATE_SCHEMA_CHECK_ENABLED.key -> "false")),
        ExpectFailure[PunctuatedAnalysisException](e => {
          val m = e.getMessage
          assert(m.contains("PUNCTUATED_INCOMPATIBLE_CHECKPOINT") &&
            m.contains("the rows stored for it have columns (auction BIGINT, price DOUBLE, is_punct BOOLEAN); " +
              "the query now stores (auction BIGINT, price DOUBLE, note STRING, is_punct BOOLEAN)") &&
            m.contains("make the query read the columns the state holds (spark_catalog.default.wide_bids: " +
              "auction BIGINT, price DOUBLE, is_punct BOOLEAN;") &&
            !m.contains("declare again"), m)
        }))
      testStream(joined())(
        StartStream(checkpointLocation = checkpoint),
        ProcessAllAvailable(),
        CheckNewAnswer((1L, 5.0, 10L)),
        AssertPunctuatedState(rows = 2, punctuations = 0))
    }
  }

  test("a value in a column the join carries still makes a punctuation row invalid") {
    withTables {
      testStream(joined())(
        insert("wide_bids", "(1, 5.0, NULL, NULL, false), (1, 9.0, NULL, NULL, true)"),
        ExpectFailure[SparkException](e =>
          assert(e.getMessage.contains("PUNCTUATED_INVALID_PUNCTUATION") && e.getMessage.contains("price=9.0"),
            e.getMessage)))
      testStream(joined())(
        StartStream(additionalConfs = Map(PunctuatedConf.InvalidPunctuations -> "drop")),
        insert("wide_auctions", "(1, 10, NULL, NULL, false)"),
        ProcessAllAvailable(),
        CheckNewAnswer((1L, 5.0, 10L)),
        AssertCounted("numInvalidPunctuationsDropped", 1))
    }
  }
}

/** The same on the RocksDB state store. */
class JoinReadColumnsRocksDBSuite extends JoinReadColumnsSuite with OnRocksDB
