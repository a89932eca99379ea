package punctuated.join

import java.sql.Timestamp

import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{col, count, expr, max, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.aggregate.PunctuatedAggregateExec
import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * A time-band join's output punctuations on time ([[TimeBandJoin.outputBound]]): windows of a
 * punctuated aggregation over the join's output, keyed by one input's time column, close once
 * no future result can fall in them — when that input's own bound and the other input's bound
 * less the band's reach have both passed the window's end. Append mode, no watermark; HDFS-backed
 * store ([[BandOutputPunctuationRocksDBSuite]]: RocksDB).
 */
class BandOutputPunctuationSuite extends PunctuatedStreamTest {
  import testImplicits._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private def t(s: String) = Timestamp.valueOf(s"2026-01-01 $s")
  private def r(k: Int, s: String, v: Int) = StampedRow(Some(k), Some(t(s)), Some(v))
  /** "No more rows with ts <= s". */
  private def upTo(s: String) = StampedRow(None, Some(t(s)), None, p = true)

  /**
   * a ⋈ b on k with b.ts BETWEEN a.ts - 2 min AND a.ts + 3 min (reach: a 3 min, b 2 min), a
   * declaring `aSchemes`, b the same on its renamed columns (`bk`, `bts`, `bv`, marker `bp`, so
   * an aggregation names each column unambiguously).
   */
  private def bandJoin(aSchemes: String = "ts<=")
      : (MemoryStream[StampedRow], MemoryStream[StampedRow], DataFrame) = {
    val as = MemoryStream[StampedRow]
    val bs = MemoryStream[StampedRow]
    val a = declare(as.toDF(), "a", Schemes -> aSchemes, Marker -> "p")
    val b = declare(bs.toDF().select(col("k").as("bk"), col("ts").as("bts"), col("v").as("bv"), col("p").as("bp")),
      "b", Schemes -> aSchemes.split(";").map(x => "b" + x.trim).mkString("; "), Marker -> "bp")
    (as, bs, a.join(b, col("k") === col("bk") &&
      col("bts").between(col("ts") - expr("INTERVAL 2 MINUTES"), col("ts") + expr("INTERVAL 3 MINUTES"))))
  }

  /** Over [[bandJoin]] declaring `ts<=`: per 10-minute window of `a.ts`, the joined rows and their largest b value. */
  private def windowsOverBand(): (MemoryStream[StampedRow], MemoryStream[StampedRow], DataFrame) = {
    val (as, bs, joined) = bandJoin()
    val out = joined.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n"), max("bv").as("top"))
      .select(col("window.start"), col("window.end"), col("n"), col("top"))
    (as, bs, out)
  }

  private def ExpectPunctuatedAggregation = AssertOnQuery("the aggregation is Punctuated's") { q =>
    q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }.size == 1
  }

  test("a window of a.ts closes when a's bound and b's bound less a's reach pass its end") {
    val (as, bs, out) = windowsOverBand()
    testStream(out, OutputMode.Append())(
      AddData(as, r(1, "10:01:00", 0), r(2, "10:09:30", 0), r(3, "10:12:00", 0)),
      AddData(bs, r(1, "10:02:00", 5), r(3, "10:13:00", 7)),
      CheckNewAnswer(),
      ExpectPunctuatedAggregation,
      // b alone: a may still send rows at any time, no window of a.ts is final
      AddData(bs, upTo("10:12:00")),
      CheckNewAnswer(),
      // a says ts <= 10:30, but a's stored 10:09:30 may still meet a b row up to 10:12:30:
      // the output bound on a.ts is min(10:30, 10:12 - 3 min) = 10:09, short of 10:10
      AddData(as, upTo("10:30:00")),
      CheckNewAnswer(),
      StopStream,
      StartStream(),
      AddData(bs, r(2, "10:12:10", 9)),
      CheckNewAnswer(),
      // b: ts <= 10:13 -> a.ts <= 10:10: [10:00, 10:10) is final, with the row that came last
      AddData(bs, upTo("10:13:00")),
      CheckNewAnswer(Row(t("10:00:00"), t("10:10:00"), 2L, 9)),
      // b: ts <= 10:40 -> a.ts <= 10:30: [10:10, 10:20) is final
      AddData(bs, upTo("10:40:00")),
      CheckNewAnswer(Row(t("10:10:00"), t("10:20:00"), 1L, 7)),
      AssertOnQuery("every state is purged: the join's and the aggregation's") { q =>
        settledProgress(q).stateOperators.forall(_.numRowsTotal == 0)
      })
  }

  test("the output bound never moves back: repeated and weaker punctuations emit nothing new", NotOnRocksDB) {
    val (as, bs, out) = windowsOverBand()
    testStream(out, OutputMode.Append())(
      AddData(as, r(1, "10:05:00", 0), r(1, "10:15:00", 0)),
      AddData(bs, r(1, "10:06:00", 1), r(1, "10:16:00", 2)),
      CheckNewAnswer(),
      AddData(as, upTo("10:20:00")),
      AddData(bs, upTo("10:14:00")),
      // a.ts <= min(10:20, 10:11) = 10:11
      CheckNewAnswer(Row(t("10:00:00"), t("10:10:00"), 1L, 1)),
      AddData(bs, upTo("10:12:00"), upTo("10:14:00")),
      AddData(as, upTo("10:19:00")),
      CheckNewAnswer(),
      AddData(bs, upTo("10:23:00")),
      CheckNewAnswer(Row(t("10:10:00"), t("10:20:00"), 1L, 2)))
  }

  test("the time columns projected away before the aggregation: groups of k close by the key punctuations alone", NotOnRocksDB) {
    val (as, bs, joined) = bandJoin("k; ts<=")   // b: "bk; bts<="
    val out = joined.select(col("k"), col("bv"), col("p"), col("bp")).groupBy("k").agg(count("*").as("n"))
    testStream(out, OutputMode.Append())(
      AddData(as, r(1, "10:00:00", 0)),
      AddData(bs, r(1, "10:01:00", 5)),
      CheckNewAnswer(),
      // both time bounds pass: nothing the aggregation can read (no invalid punctuation either)
      AddData(as, upTo("10:30:00")),
      AddData(bs, upTo("10:30:00")),
      CheckNewAnswer(),
      AddData(as, StampedRow(Some(1), None, None, p = true)),
      AddData(bs, StampedRow(Some(1), None, None, p = true)),
      CheckNewAnswer((1, 1L)))
  }
}

class BandOutputPunctuationRocksDBSuite extends BandOutputPunctuationSuite with OnRocksDB
