package punctuated.aggregate

import org.apache.spark.SparkException
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.functions.sum
import org.apache.spark.sql.streaming.OutputMode

import punctuated.compat.StreamExecution
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration
import punctuated.spark.PunctuatedStreamTest

/**
 * A punctuated aggregation over a wide catalog table (parquet, read as a file stream) reads
 * the columns it needs and no others: the marker, the schemes' columns and the columns its
 * keys and aggregates read. Spark prunes the rest from the scan, as it does for its own
 * aggregation; a value in a pruned column of a punctuation row is not seen (the contract:
 * such a column is a wildcard), while one in a column the aggregation reads still makes the
 * row invalid.
 */
class ReadColumnsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val columns = "auction BIGINT, price DOUBLE, url STRING, note STRING, is_punct BOOLEAN"
  private val declared = Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct")

  /** The columns each file scan of the last micro-batch reads. */
  private def scanned(q: StreamExecution): Seq[Set[String]] =
    q.lastExecution.executedPlan.collect { case f: FileSourceScanExec => f.requiredSchema.fieldNames.toSet }

  /**
   * One INSERT as one file: the running stream lists the table's directory while an INSERT of
   * several files commits them one by one, and could read a punctuation row in one micro-batch
   * and the data row of the same INSERT, now late, in the next.
   */
  private def insert(values: String) = Execute(s"INSERT $values") { _ =>
    sql(s"INSERT INTO wide_bids SELECT /*+ REPARTITION(1) */ * FROM VALUES $values")
  }

  test("a wide table: the scan reads the marker, the scheme's and the aggregated columns only; " +
      "a punctuation's unread columns are not checked; restart") {
    withDeclaredTable("wide_bids", columns, declared) {
      val totals = spark.readStream.table("wide_bids").groupBy("auction").agg(sum("price").as("total"))
      testStream(totals, OutputMode.Append())(
        insert("(1, 5.0, 'a', 'b', false), (1, 2.0, 'c', NULL, false), (2, 1.0, NULL, NULL, false)"),
        ProcessAllAvailable(),
        CheckNewAnswer(),
        AssertOnQuery("the scan reads auction, price and is_punct") { q =>
          assert(scanned(q) == Seq(Set("auction", "price", "is_punct")), q.lastExecution.executedPlan.treeString)
          true
        },
        // a note on the punctuation row: a column the query does not read
        insert("(1, NULL, NULL, 'closed by the auction house', true)"),
        ProcessAllAvailable(),
        CheckNewAnswer((1L, 7.0)),
        StopStream,
        StartStream(),
        insert("(2, 4.0, 'd', NULL, false), (2, NULL, NULL, NULL, true)"),
        ProcessAllAvailable(),
        CheckNewAnswer((2L, 5.0)),
        AssertCounted("numInvalidPunctuationsDropped", 0))
    }
  }

  test("a value in a column the aggregation reads still makes a punctuation row invalid") {
    withDeclaredTable("wide_bids", columns, declared) {
      val totals = spark.readStream.table("wide_bids").groupBy("auction").agg(sum("price").as("total"))
      testStream(totals, OutputMode.Append())(
        insert("(1, 5.0, NULL, NULL, false), (1, 9.0, NULL, NULL, true)"),
        ExpectFailure[SparkException](e =>
          assert(e.getMessage.contains("PUNCTUATED_INVALID_PUNCTUATION") && e.getMessage.contains("price=9.0"), e.getMessage)))
      val dropped = spark.readStream.table("wide_bids").groupBy("auction").agg(sum("price").as("total"))
      testStream(dropped, OutputMode.Append())(
        StartStream(additionalConfs = Map(PunctuatedConf.InvalidPunctuations -> "drop")),
        insert("(1, NULL, NULL, NULL, true)"),
        ProcessAllAvailable(),
        CheckNewAnswer((1L, 5.0)),
        AssertCounted("numInvalidPunctuationsDropped", 1))
    }
  }
}
