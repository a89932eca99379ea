package punctuated.join

import java.sql.Timestamp

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.AttributeReference
import org.apache.spark.sql.catalyst.plans.logical.EventTimeWatermark
import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.functions.{expr, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{MetadataBuilder, TimestampType}

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Watermarks as punctuations ([[WatermarkPunctuations]], Tucker et al. 2003: a watermark is
 * the range punctuation `ts<=w` on event time): a band join of watermarked streams purges
 * with no marker rows, mixes with marker punctuations, treats late rows by policy, and keeps
 * Spark's watermark flowing to Spark's own operators downstream. HDFS-backed store;
 * [[WatermarkPunctuationJoinRocksDBSuite]] runs the same on RocksDB.
 */
class WatermarkPunctuationJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  /** 2026-01-01 12:00 plus `m` minutes. */
  private def t(m: Int) = new Timestamp(Timestamp.valueOf("2026-01-01 12:00:00").getTime + m * 60000L)
  private def r(k: Int, m: Int) = StampedRow(Some(k), Some(t(m)), Some(0))
  private def upTo(m: Int) = StampedRow(None, Some(t(m)), None, p = true)

  /** An input declared with `schemes` (no marker rows need be sent), watermarked on ts if `delay`. */
  private def input(s: MemoryStream[StampedRow], name: String, schemes: String, delay: Option[String]) = {
    val d = declare(s.toDF(), name, Schemes -> schemes, Marker -> "p")
    delay.fold(d)(d.withWatermark("ts", _))
  }

  /** a ⋈ b on k with b.ts BETWEEN a.ts AND a.ts + 5 minutes: a's rows wait for b's bound 5 min. */
  private def band(a: DataFrame, b: DataFrame, joinType: String = "inner") =
    a.join(b, a("k") === b("k") && b("ts").between(a("ts"), a("ts") + expr("INTERVAL 5 MINUTES")), joinType)

  private def both(aSchemes: String = "k", bSchemes: String = "k", delay: Option[String] = Some("1 minute")) = {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val (a, b) = (input(as, "a", aSchemes, delay), input(bs, "b", bSchemes, delay))
    (as, bs, band(a, b).select(a("k"), a("ts"), b("ts")))
  }

  private def AssertRows(rows: Long) = AssertOnQuery(s"$rows rows stored") { q =>
    val p = punctuatedProgress(q)
    assert(p.numRowsTotal == rows, s"numRowsTotal ${p.numRowsTotal} != $rows: ${p.json}")
    true
  }

  /** A custom metric of the punctuated join summed over the run's batches (no-data ones included). */
  private def total(q: StreamExecution, name: String): Long = {
    settledProgress(q)
    q.recentProgress.flatMap(_.stateOperators.filter(_.operatorName.startsWith("punctuated")))
      .map(_.customMetrics.get(name).longValue).sum
  }
  private def AssertLate(n: Long) = AssertOnQuery(s"$n late rows") { q =>
    assert(total(q, "numLateRowsDropped") == n, s"late rows: ${total(q, "numLateRowsDropped")} != $n")
    true
  }

  private def ExpectWatermarked(left: Boolean, right: Boolean) = AssertOnQuery(s"watermarked ($left, $right)") { q =>
    val joins = q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
    assert(joins.size == 1 && joins.head.band.map(_.watermarked) == Some(IndexedSeq(left, right)),
      joins.map(_.band).mkString)
    true
  }

  test("a band join of two watermarked streams purges as the watermark advances, no marker rows, restart") {
    val (as, bs, joined) = both()
    testStream(joined)(
      MultiAddData(as, r(1, 0), r(2, 0), r(3, 10))(bs, r(1, 3), r(2, 6), r(3, 12)),
      // watermark min(10, 12) - 1 = 12:09 then acts as ts<=12:09 of both inputs (a no-data batch):
      // b's 3 and 6 go (a can send nothing at or before them), a's 0s go (0 + 5 <= 9)
      CheckNewAnswer((1, t(0), t(3)), (3, t(10), t(12))),
      ExpectWatermarked(left = true, right = true),
      AssertRows(2),
      AssertOnQuery("no marker rows, no punctuations held") { q =>
        total(q, "numPunctuationsReceived") == 0 && total(q, "numRowsPurged") == 4
      },
      // a's 8 is at or below the watermark that purged: late, dropped; b's 14 meets 10 and 11
      MultiAddData(as, r(3, 11), r(1, 8))(bs, r(3, 14)),
      CheckNewAnswer((3, t(11), t(12)), (3, t(10), t(14)), (3, t(11), t(14))),
      AssertLate(1),
      AssertRows(4),
      StopStream,
      StartStream(),
      // the watermark (10) and the bounds survive the restart: b's 9 is late
      MultiAddData(as, r(4, 20))(bs, r(4, 22), r(3, 9)),
      CheckNewAnswer((4, t(20), t(22))),
      AssertLate(1),   // progress restarts with the query: the 9 alone
      AssertRows(2),   // watermark 19: b's 12 and 14 go, a's 10 and 11 go
      StopStream,
      StartStream(),
      MultiAddData(as, r(5, 40))(bs, r(5, 41)),
      CheckNewAnswer((5, t(40), t(41))),
      AssertRows(2))   // watermark 39: everything before 40 purged
  }

  test("the batch answer exactly once: all results equal the batch join of the rows that were on time") {
    val (as, bs, joined) = both()
    val aRows = Seq(r(1, 0), r(1, 2), r(2, 4), r(1, 7), r(2, 9), r(1, 13))
    val bRows = Seq(r(1, 1), r(2, 5), r(1, 6), r(2, 12), r(1, 14), r(1, 18))
    val expected = for (x <- aRows; y <- bRows if x.k == y.k && !y.ts.get.before(x.ts.get) &&
      !y.ts.get.after(new Timestamp(x.ts.get.getTime + 5 * 60000L))) yield (x.k.get, x.ts.get, y.ts.get)
    testStream(joined)(
      MultiAddData(as, aRows.take(2): _*)(bs, bRows.take(2): _*),
      MultiAddData(as, aRows.slice(2, 4): _*)(bs, bRows.slice(2, 4): _*),
      MultiAddData(as, aRows.drop(4): _*)(bs, bRows.drop(4): _*),
      CheckAnswer(expected: _*),
      AssertLate(0))
  }

  test("a watermark-fed input mixed with marker punctuations on the other input", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val a = input(as, "a", "k", Some("1 minute"))
    val b = input(bs, "b", "ts<=", None)   // not watermarked: bounded by its ts<= markers
    val joined = band(a, b).select(a("k"), a("ts"), b("ts"))
    testStream(joined)(
      MultiAddData(as, r(1, 0), r(2, 10))(bs, r(1, 2), r(2, 20)),
      // a's watermark 12:09 closes b's 2; b sent no bound yet: a's rows stay
      CheckNewAnswer((1, t(0), t(2))),
      ExpectWatermarked(left = true, right = false),
      AssertRows(3),
      AddData(bs, upTo(5)),       // b: ts<=12:05 -> a's 0 goes (0 + 5 <= 5)
      CheckNewAnswer(),
      AssertRows(2),
      AddData(bs, upTo(15)),      // a's 10 goes
      CheckNewAnswer(),
      AssertRows(1),
      AddData(as, r(2, 16), r(2, 8)),  // 16 meets b's 20; 8 is late by a's watermark
      CheckNewAnswer((2, t(16), t(20))),
      AssertLate(1),
      AssertRows(2),
      AddData(bs, r(2, 17)),      // b's 17 is above b's bound 15: joined with a's 16
      CheckNewAnswer((2, t(16), t(17))))
  }

  test("late rows by policy: fail names the input", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (as, bs, joined) = both()
      testStream(joined)(
        MultiAddData(as, r(1, 10))(bs, r(1, 12)),
        CheckNewAnswer((1, t(10), t(12))),
        AddData(as, r(1, 5)),
        ExpectFailure[org.apache.spark.SparkException](e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains(" of a ") &&
            e.getMessage.contains("arrived after a had its event-time watermark or a range punctuation pass its time"),
            e.getMessage)))
    }
  }

  test("left outer: a row the other input's watermark puts out of reach is emitted null-padded", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val (a, b) = (input(as, "a", "k", Some("1 minute")), input(bs, "b", "k", Some("1 minute")))
    val joined = band(a, b, "left_outer").select(a("k"), a("ts"), b("ts"))
    testStream(joined)(
      MultiAddData(as, r(1, 0), r(2, 0))(bs, r(1, 4), r(3, 30)),
      // watermark min(0, 30) - 1 = 11:59: no band ends there yet
      CheckNewAnswer(Row(1, t(0), t(4))),
      MultiAddData(as, r(4, 30))(bs, r(4, 31)),
      // watermark 12:29: a's rows at 12:00 are out of reach; (2, 12:00) never matched
      CheckNewAnswer(Row(4, t(30), t(31)), Row(2, t(0), null)))
  }

  test("a Spark windowed aggregation after the join still gets its watermark and emits in append mode", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val (a, b) = (input(as, "a", "k", Some("1 minute")), input(bs, "b", "k", Some("1 minute")))
    val counts = band(a, b).select(a("ts").as("ats")).groupBy(window($"ats", "10 minutes").as("w")).count()
      .select($"w.start".as("start"), $"count")
    testStream(counts, org.apache.spark.sql.streaming.OutputMode.Append())(
      MultiAddData(as, r(1, 0), r(2, 3))(bs, r(1, 1), r(2, 4)),
      CheckNewAnswer(),
      AssertOnQuery("Spark's own aggregation below the sink, our join below it") { q =>
        val plan = q.lastExecution.executedPlan
        plan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size == 1 &&
          plan.collect { case s: punctuated.compat.StateStoreSaveExec => s }.size == 1
      },
      // the watermark passes 12:10 + the band: window [12:00, 12:10) closes and is emitted once
      MultiAddData(as, r(3, 30))(bs, r(3, 31)),
      CheckNewAnswer((t(0), 2L)),
      MultiAddData(as, r(4, 50))(bs, r(4, 52)),
      CheckNewAnswer((t(30), 1L)))
  }

  test("which inputs a watermark punctuates: the band column's own, not the rewrite's flags, not under max", NotOnRocksDB) {
    // the flag the outer-join rewrite puts on keys carries delayKey but is no watermark
    val flagged = AttributeReference("ts", TimestampType)().withMetadata(new MetadataBuilder()
      .putLong(EventTimeWatermark.delayKey, 0L).putBoolean("punctuated.outerJoinCheck", true).build())
    val real = AttributeReference("ts", TimestampType)().withMetadata(new MetadataBuilder()
      .putLong(EventTimeWatermark.delayKey, 60000L).build())
    assert(!WatermarkPunctuations.isWatermarked(flagged) && WatermarkPunctuations.isWatermarked(real))
    assert(WatermarkPunctuations.bound(Some(0L)).isEmpty && WatermarkPunctuations.bound(Some(2L)) == Some(2000L))

    // a watermark on another column than the band's is no bound on the band
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p").withColumn("other", $"ts")
      .withWatermark("other", "1 minute")
    val b = input(bs, "b", "ts<=", Some("1 minute"))
    testStream(band(a, b).select(a("k"), b("v")))(
      MultiAddData(as, r(1, 0))(bs, r(1, 1)),
      CheckNewAnswer((1, 0)),
      ExpectWatermarked(left = false, right = true))

    // under the max policy with two watermarks, none is a punctuation
    withSQLConf(SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY.key -> "max") {
      val (as2, bs2, joined) = both("ts<=", "ts<=")
      testStream(joined)(
        MultiAddData(as2, r(1, 0))(bs2, r(1, 1), r(2, 30)),
        CheckNewAnswer((1, t(0), t(1))),
        ExpectWatermarked(left = false, right = false),
        AssertRows(3))
    }
  }
}

class WatermarkPunctuationJoinRocksDBSuite extends WatermarkPunctuationJoinSuite with OnRocksDB
