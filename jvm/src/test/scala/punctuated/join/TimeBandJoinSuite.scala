package punctuated.join

import punctuated.input.PunctuationReplicatingExchangeExec

import java.sql.{Date, Timestamp}

import org.apache.spark.sql.{AnalysisException, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{date_add, expr}

import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/** A row of a band join's input: key, time, value, marker (NULL = None). */
case class TimedRow(k: Option[Int], ts: Option[Long], v: Option[Int], p: Boolean = false)
case class StampedRow(k: Option[Int], ts: Option[Timestamp], v: Option[Int], p: Boolean = false)
case class DatedRow(k: Option[Int], d: Option[Date], v: Option[Int], p: Boolean = false)

/**
 * Time-band joins (`a.k = b.k AND b.ts BETWEEN a.ts - X AND a.ts + Y`) purge on the inputs'
 * range punctuations on time ([[TimeBand]], [[TimeBandJoin]]), scripted batch by batch on the
 * HDFS-backed store; [[TimeBandJoinRocksDBSuite]] runs the same on RocksDB.
 */
class TimeBandJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(k: Int, ts: Long, v: Int) = TimedRow(Some(k), Some(ts), Some(v))
  /** "No more rows with ts <= c". */
  private def upTo(c: Long) = TimedRow(None, Some(c), None, p = true)
  private def keyClosed(k: Int) = TimedRow(Some(k), None, None, p = true)

  /** a ⋈ b on k with b.ts BETWEEN a.ts - 2 AND a.ts + 3 (integer time): reach (3, 2). */
  private def bandJoin(joinType: String = "inner", aSchemes: String = "ts<=", bSchemes: String = "ts<=") = {
    val as = MemoryStream[TimedRow]
    val bs = MemoryStream[TimedRow]
    val a = declare(as.toDF(), "a", Schemes -> aSchemes, Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> bSchemes, Marker -> "p")
    val joined = a.join(b, a("k") === b("k") && b("ts").between(a("ts") - 2, a("ts") + 3), joinType)
    (as, bs, joined.select(a("k"), a("ts"), b("ts")))
  }

  private def AssertRows(rows: Long) = AssertOnQuery(s"$rows rows stored") { q =>
    val p = punctuatedProgress(q)
    assert(p.numRowsTotal == rows, s"numRowsTotal ${p.numRowsTotal} != $rows: ${p.json}")
    true
  }
  private def ExpectBandPlan = AssertOnQuery("planned with the band, punctuations replicated") { q =>
    val plan = q.lastExecution.executedPlan
    val joins = plan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
    joins.size == 1 && joins.head.band.isDefined &&
      plan.collect { case r: PunctuationReplicatingExchangeExec => r }.size == 2
  }

  test("a unique key's punctuations are released with the rows the band purges: they do not pile up", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[TimedRow], MemoryStream[TimedRow])
    // a: one row per k (its unique key), like NEXMark's people; b: ts<= only
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Unique -> "k", Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
    val joined = a.join(b, a("k") === b("k") && b("ts").between(a("ts") - 2, a("ts") + 3)).select(a("k"), a("ts"), b("ts"))
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 10, 0), row(3, 20, 0)),
      CheckNewAnswer(),
      AssertMetric("numPunctuationsHeld", 3),     // k = 1, 2, 3 closed: held until they can go
      AddData(bs, row(1, 12, 0), upTo(13)),
      CheckNewAnswer((1, 10L, 12L)),
      // a's rows at 10 are out of reach (10 + 3 <= 13): gone, and so are the punctuations on
      // their keys; b's bound is held by both partitions, k = 3 waits with its row (b's 12 is
      // not stored: a closed k = 1)
      AssertRows(1),
      AssertMetric("numPunctuationsHeld", 3),
      // k = 1 is still closed: a later b row of it is not stored (and a's 1 would be late)
      AddData(bs, row(1, 14, 0), row(3, 21, 0)),
      CheckNewAnswer((3, 20L, 21L)),
      AssertRows(1),
      AddData(as, row(1, 30, 0)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1))
  }

  test("BETWEEN: results as the batch join, each side purged once the other passes its band") {
    val (as, bs, joined) = bandJoin()
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 10, 0), row(3, 20, 0)),
      CheckNewAnswer(),
      ExpectBandPlan,
      AddData(bs, row(1, 12, 0), row(1, 7, 0), row(2, 14, 0), row(3, 18, 0)),
      // (1, 10) meets 12 (in [8, 13]), not 7; (2, 10) not 14; (3, 20) meets 18
      CheckNewAnswer((1, 10L, 12L), (3, 20L, 18L)),
      AssertRows(7),
      // b: ts <= 12. a's rows at 10 (band up to 13) stay
      AddData(bs, upTo(12)),
      CheckNewAnswer(),
      AssertRows(7),
      AssertCounted("numPunctuationsReceived", 1),
      // the bound ts<=12 is a range punctuation held by each of the 2 partitions
      AssertMetric("numPunctuationsHeld", 2),
      AssertOnQuery("the time indexes hold buckets") { q =>
        punctuatedProgress(q).customMetrics.get("numTimeIndexBuckets") > 0
      },
      // b: ts <= 13: a's rows at 10 go (10 + 3 <= 13), (3, 20) stays
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(5),
      AssertMetric("numRowsPurged", 2),
      // a: ts <= 9: b's 7 goes (7 + 2 <= 9); a: ts <= 16: 12 and 14 go
      AddData(as, upTo(9)),
      CheckNewAnswer(),
      AssertRows(4),
      AssertMetric("numPunctuationsHeld", 4),   // both inputs' bounds, in each partition
      AddData(as, upTo(16)),
      CheckNewAnswer(),
      AssertRows(2),
      // both inputs past every band: state drains to 0
      AddData(as, upTo(30)),
      AddData(bs, upTo(30)),
      CheckNewAnswer(),
      AssertRows(0),
      AssertMetric("numTimeIndexBuckets", 0))
  }

  test("late rows are dropped and counted; rows whose band the other input closed are joined, not stored", NotOnRocksDB) {
    val (as, bs, joined) = bandJoin()
    testStream(joined)(
      AddData(as, row(1, 10, 0)),
      CheckNewAnswer(),
      AddData(bs, upTo(11), row(1, 11, 0)),   // same batch: not late
      CheckNewAnswer((1, 10L, 11L)),
      AssertRows(2),
      AssertCounted("numLateRowsDropped", 0),
      // b's 11 again after b said <= 11: late
      AddData(bs, row(1, 11, 1)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      // an a row at 8: its band [6, 11] lies at or below b's 11: joined with the stored 11, not stored
      AddData(as, row(1, 8, 0)),
      CheckNewAnswer((1, 8L, 11L)),
      AssertRows(2),
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(1))
  }

  test("stop and restart in the middle of a band: exactly once, bounds and index kept") {
    val (as, bs, joined) = bandJoin()
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 11, 0)),
      CheckNewAnswer(),
      AddData(bs, upTo(11)),
      CheckNewAnswer(),
      StopStream,
      StartStream(),
      AddData(bs, row(1, 12, 0), row(2, 14, 0)),
      CheckNewAnswer((1, 10L, 12L), (2, 11L, 14L)),
      AssertRows(4),
      // b's bound of before the restart still makes 11 late
      AddData(bs, row(1, 11, 1)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      StopStream,
      StartStream(),
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(3),
      AddData(as, upTo(20), row(1, 14, 0)),
      CheckNewAnswer((1, 14L, 12L)),
      AddData(bs, upTo(20)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("key punctuations keep working alongside: a row goes when either rule says so", NotOnRocksDB) {
    val (as, bs, joined) = bandJoin(bSchemes = "ts<=; k")
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 10, 0)),
      CheckNewAnswer(),
      AddData(bs, keyClosed(1)),
      CheckNewAnswer(),
      AssertRows(1),
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("left outer: a row b's bound put out of reach is emitted null-padded, no watermark", NotOnRocksDB) {
    val (as, bs, joined) = bandJoin("left_outer")
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 10, 0)),
      CheckNewAnswer(),
      AddData(bs, row(1, 13, 0)),
      CheckNewAnswer((1, 10L, 13L)),
      AddData(bs, upTo(13)),
      CheckNewAnswer(Row(2, 10L, null)),
      AssertRows(1))
  }

  test("strict and one-sided forms on timestamps (INTERVAL) and dates (date_add)", NotOnRocksDB) {
    val as = MemoryStream[StampedRow]
    val bs = MemoryStream[StampedRow]
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
    // b.ts in (a.ts - 2 min, a.ts + 3 min): reach (3 min - 1 µs, 2 min - 1 µs)
    val joined = a.join(b, a("k") === b("k") && b("ts") > a("ts") - expr("INTERVAL 2 MINUTES") &&
      b("ts") < a("ts") + expr("INTERVAL 3 MINUTES")).select(a("k"), b("v"))
    def ts(s: String) = Some(Timestamp.valueOf(s"2026-01-01 $s"))
    def r(k: Int, s: String, v: Int) = StampedRow(Some(k), ts(s), Some(v))
    def upTo(s: String) = StampedRow(None, ts(s), None, p = true)
    testStream(joined)(
      AddData(as, r(1, "12:00:00", 0), r(2, "12:00:00", 0)),
      CheckNewAnswer(),
      AddData(bs, r(1, "12:03:00", 1), r(2, "12:02:59.999999", 2)),
      CheckNewAnswer((2, 2)),
      AddData(bs, upTo("12:02:59.999998")),
      CheckNewAnswer(),
      AssertRows(4),
      AddData(bs, upTo("12:02:59.999999")),
      CheckNewAnswer(),
      AssertRows(2),
      // b's row at 12:02:59.999999 can meet a rows up to 12:04:59.999998
      AddData(as, upTo("12:04:59.999998")),
      CheckNewAnswer(),
      AssertRows(1))

    // one bound only, on dates: b.d <= a.d + 1 day: a purged by b's d<=, b by a's key punctuations
    val ad = MemoryStream[DatedRow]
    val bd = MemoryStream[DatedRow]
    val a2 = declare(ad.toDF(), "a2", Schemes -> "k", Marker -> "p")
    val b2 = declare(bd.toDF(), "b2", Schemes -> "d<=", Marker -> "p")
    val j2 = a2.join(b2, a2("k") === b2("k") && b2("d") <= date_add(a2("d"), 1)).select(a2("k"), b2("v"))
    def d(s: String) = Some(Date.valueOf(s))
    testStream(j2)(
      AddData(ad, DatedRow(Some(1), d("2026-01-01"), Some(0)), DatedRow(Some(2), d("2026-01-05"), Some(0))),
      CheckNewAnswer(),
      AddData(bd, DatedRow(Some(1), d("2026-01-02"), Some(7))),
      CheckNewAnswer((1, 7)),
      AddData(bd, DatedRow(None, d("2026-01-02"), None, p = true)),
      CheckNewAnswer(),
      AssertRows(2),   // a's 01-01 purged; b's row waits for a's key punctuation
      AddData(ad, DatedRow(Some(1), None, None, p = true)),
      CheckNewAnswer(),
      AssertRows(1))
  }

  test("strict safety: a band join is refused when the other input has no range on its time column", NotOnRocksDB) {
    // b punctuates neither its join key nor its time column: a's rows could wait forever
    val (_, _, joined) = bandJoin(bSchemes = "v")
    val e = intercept[AnalysisException] {
      joined.writeStream.format("memory").queryName("band").start().stop()
    }
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    assert(e.getMessage.contains("The state of input a of the join") &&
      e.getMessage.contains("declare a range scheme on b's time column ('punctuated.schemes' = 'ts<=')"),
      e.getMessage)
    // b's own rows are purged by a's ts<= through the band: only a is named
    assert(!e.getMessage.contains("The state of input b "), e.getMessage)
    // with a range on b's time column the same join starts
    val (_, _, safe) = bandJoin(bSchemes = "ts<=")
    safe.writeStream.format("memory").queryName("band_safe").start().stop()
  }

  test("SQL BETWEEN (a Between until the optimizer replaces it): strict safety counts the band, rows purge by it", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[TimedRow], MemoryStream[TimedRow])
    // b punctuates only its time column: a's rows can go by the band alone
    declare(as.toDF(), "a", Schemes -> "k", Marker -> "p").createOrReplaceTempView("band_sql_a")
    declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p").createOrReplaceTempView("band_sql_b")
    val joined = spark.sql("SELECT a.k, a.ts, b.ts FROM band_sql_a a JOIN band_sql_b b " +
      "ON a.k = b.k AND b.ts BETWEEN a.ts - 2 AND a.ts + 3")
    testStream(joined)(
      AddData(as, row(1, 10, 0), row(2, 10, 0)),
      CheckNewAnswer(),
      AssertOnQuery("planned with the band") { q =>
        q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p.band.isDefined } == Seq(true)
      },
      AddData(bs, row(1, 12, 0), row(2, 14, 0)),
      CheckNewAnswer((1, 10L, 12L)),
      AssertRows(4),
      // b: ts <= 13 passes both a rows' bands (10 + 3); b's rows wait for a's key punctuations
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(2),
      AddData(as, keyClosed(1), keyClosed(2)),
      CheckNewAnswer(),
      AssertRows(0))
  }
}

class TimeBandJoinRocksDBSuite extends TimeBandJoinSuite with OnRocksDB
