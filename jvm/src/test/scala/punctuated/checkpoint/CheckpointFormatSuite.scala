package punctuated.checkpoint

import org.apache.spark.sql.AnalysisException
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.errors.{PunctuatedAnalysisException, PunctuatedErrors}
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * State checkpoint format version 2 (RocksDB, per-store checkpoint ids) is refused by every
 * punctuated operator when it is planned, before any state store is opened, with our error
 * naming the setting and the fix; version 1 (the default) runs.
 */
class CheckpointFormatSuite extends PunctuatedStreamTest with OnRocksDB {
  import testImplicits._

  private val v2 = PunctuatedErrors.CheckpointFormatVersionKey -> "2"

  private def refusedV2(operator: String)(e: Throwable): Unit = {
    val cause = Iterator.iterate(e)(_.getCause).takeWhile(_ != null)
      .collectFirst { case a: AnalysisException if a.getCondition == PunctuatedErrors.UnsupportedCheckpointFormat => a }
    assert(cause.isDefined, s"expected ${PunctuatedErrors.UnsupportedCheckpointFormat}, got $e")
    val message = cause.get.getMessage
    Seq(operator, s"${PunctuatedErrors.CheckpointFormatVersionKey}=1", "new checkpoint location")
      .foreach(m => assert(message.contains(m), s"'$m' in $message"))
  }

  private def bids() = {
    val input = MemoryStream[(Long, Option[Long], Option[Boolean])]
    val df = declare(input.toDF().toDF("auction", "price", "is_punct"), "bids",
      "punctuated.schemes" -> "auction", "punctuated.marker" -> "is_punct")
    (input, df)
  }

  test("aggregation: format version 2 is refused when planned; version 1 runs") {
    val (input, df) = bids()
    val totals = df.groupBy("auction").agg(org.apache.spark.sql.functions.sum("price").as("total"))
    withSQLConf(v2) {
      testStream(totals, OutputMode.Append())(
        AddData(input, (1L, Some(5L), None)),
        ExpectFailure[PunctuatedAnalysisException](refusedV2("punctuatedAggregate")))
    }
    testStream(totals, OutputMode.Append())( // a new checkpoint: the stream from its start
      AddData(input, (1L, Some(5L), None), (1L, None, Some(true))),
      CheckNewAnswer((1L, 10L)))
  }

  test("join and deduplication: format version 2 is refused") {
    val (left, l) = bids()
    val right = MemoryStream[(Long, Long)]
    val r = declare(right.toDF().toDF("id", "seller"), "auctions", "punctuated.unique" -> "id")
    val joined = r.join(l, r("id") === l("auction")).select("id", "price")
    val (input, df) = bids()
    withSQLConf(v2) {
      testStream(joined)(
        AddData(right, (1L, 7L)),
        ExpectFailure[PunctuatedAnalysisException](refusedV2("punctuatedSymmetricHashJoin")))
      testStream(df.dropDuplicates("auction").select("auction"))(
        AddData(input, (1L, Some(5L), None)),
        ExpectFailure[PunctuatedAnalysisException](refusedV2("punctuatedDeduplicate")))
    }
  }
}
