package punctuated.join

import java.sql.Timestamp

import org.apache.spark.sql.{AnalysisException, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.internal.SQLConf

import punctuated.declaration.Declaration._
import punctuated.input.BandBucketColumns
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Band-only joins (`b.ts BETWEEN a.ts - X AND a.ts + Y`, no equality predicate) run as an
 * equi-join on time buckets ([[BandBuckets]], [[punctuated.spark.rules.BucketBandOnlyJoins]])
 * and purge on the inputs' range punctuations on time like any band join; scripted batch by
 * batch on the HDFS-backed store, [[BandOnlyJoinRocksDBSuite]] the same on RocksDB. The
 * stored-row counts include the replicated input's copies (one per bucket its band covers).
 */
class BandOnlyJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(ts: Long, v: Int) = TimedRow(Some(0), Some(ts), Some(v))
  private def upTo(c: Long) = TimedRow(None, Some(c), None, p = true)

  /** a ⋈ b on b.ts BETWEEN a.ts - 2 AND a.ts + 3 only (integer time): width 6. */
  private def bandOnly(joinType: String = "inner", aSchemes: String = "ts<=", bSchemes: String = "ts<=") = {
    val (as, bs) = (MemoryStream[TimedRow], MemoryStream[TimedRow])
    val a = declare(as.toDF(), "a", Schemes -> aSchemes, Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> bSchemes, Marker -> "p")
    val joined = a.join(b, b("ts").between(a("ts") - 2, a("ts") + 3), joinType)
    val out = if (joinType.contains("semi") || joinType.contains("anti")) joined.select(a("ts"), a("v"))
      else joined.select(a("ts"), b("ts"))
    (as, bs, out)
  }

  private def AssertRows(rows: Long) = AssertOnQuery(s"$rows rows stored") { q =>
    val p = punctuatedProgress(q)
    assert(p.numRowsTotal == rows, s"numRowsTotal ${p.numRowsTotal} != $rows: ${p.json}")
    true
  }
  private def ExpectBucketPlan = AssertOnQuery("one punctuated band join on the time buckets") { q =>
    val joins = q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
    assert(joins.size == 1 && joins.head.band.isDefined, joins)
    assert(joins.head.leftKeys.forall(BandBucketColumns.isBucket) && joins.head.leftKeys.size == 1, joins.head.leftKeys)
    true
  }

  test("inner: results as the batch join, copies purged with their row, drains to nothing, restart") {
    val (as, bs, joined) = bandOnly()
    testStream(joined)(
      // a's bands [8, 13], [12, 17], [18, 23]: 10 covers buckets 1 and 2 (width 6), 14 and 20 one each
      AddData(as, row(10, 0), row(14, 0), row(20, 0)),
      CheckNewAnswer(),
      ExpectBucketPlan,
      AssertRows(4),
      AddData(bs, row(12, 0), row(7, 0), row(14, 0), row(18, 0)),
      CheckNewAnswer((10L, 12L), (14L, 12L), (14L, 14L), (20L, 18L)),
      AssertRows(8),
      StopStream,
      StartStream(),
      // b: ts <= 13 puts a's 10 out of reach (10 + 3): both its copies go
      AddData(bs, upTo(13)),
      CheckNewAnswer(),
      AssertRows(6),
      AssertCounted("numRowsPurged", 2),
      AssertCounted("numPunctuationsReceived", 1),
      // a: ts <= 9 puts b's 7 out of reach (7 + 2); a one-copy punctuation all the same
      AddData(as, upTo(9)),
      CheckNewAnswer(),
      AssertRows(5),
      AssertCounted("numPunctuationsReceived", 2),
      // b's 13 after b said <= 13: late
      AddData(bs, row(13, 1)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AddData(as, upTo(16)),
      CheckNewAnswer(),
      AssertRows(3),
      StopStream,
      StartStream(),
      // an a row at 21 (band [19, 24]) meets the new b 19 and 24; b's 19 meets the stored a 20 too
      AddData(as, row(21, 1)),
      AddData(bs, row(19, 1), row(24, 1)),
      CheckNewAnswer((21L, 19L), (21L, 24L), (20L, 19L)),
      AddData(as, upTo(40)),
      AddData(bs, upTo(40)),
      CheckNewAnswer(),
      AssertRows(0),
      AssertMetric("numTimeIndexBuckets", 0))
  }

  test("a punctuation of another scheme (time NULL) reaches the join through the bucket copies", NotOnRocksDB) {
    // a's own key punctuations: the optimizer's inferred `ts IS NOT NULL` below the copies must let them pass
    val (as, bs, joined) = bandOnly(aSchemes = "ts<=; k")
    testStream(joined)(
      AddData(as, row(10, 0), TimedRow(Some(1), None, None, p = true)),
      CheckNewAnswer(),
      AssertCounted("numPunctuationsReceived", 1),
      AddData(bs, row(12, 0)),
      CheckNewAnswer((10L, 12L)))
  }

  test("left outer: each unmatched row once, null-padded when the other input's bound passes its band", NotOnRocksDB) {
    val (as, bs, joined) = bandOnly("left_outer")
    testStream(joined)(
      AddData(as, row(10, 0), row(20, 0)),
      AddData(bs, row(11, 0), row(13, 0)),
      CheckNewAnswer((10L, 11L), (10L, 13L)),
      AddData(bs, upTo(23)),
      CheckNewAnswer(Row(20L, null)),
      AddData(as, upTo(30)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("right outer: the right input is the single side, its unmatched rows once", NotOnRocksDB) {
    val (as, bs, joined) = bandOnly("right_outer")
    testStream(joined)(
      AddData(as, row(10, 0)),
      AddData(bs, row(9, 0), row(12, 0), row(30, 0)),
      CheckNewAnswer((10L, 9L), (10L, 12L)),
      // a: ts <= 28 passes b's 30's band (30 + 2 > 28: not yet); a: ts <= 32 passes it
      AddData(as, upTo(28)),
      CheckNewAnswer(),
      AddData(as, upTo(32)),
      CheckNewAnswer(Row(null, 30L)),
      AddData(bs, upTo(40)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("left semi and left anti: each left row once, however many buckets its partners sit in", NotOnRocksDB) {
    for (kind <- Seq("left_semi", "left_anti")) {
      val (as, bs, joined) = bandOnly(kind)
      val semi = kind == "left_semi"
      testStream(joined)(
        AddData(as, row(10, 1), row(20, 2)),
        // 10's partners 8 and 13 fall in buckets 1 and 2
        AddData(bs, row(8, 0), row(13, 0)),
        if (semi) CheckNewAnswer((10L, 1)) else CheckNewAnswer(),
        AddData(bs, upTo(30)),
        if (semi) CheckNewAnswer() else CheckNewAnswer((20L, 2)),
        AddData(as, upTo(30)),
        CheckNewAnswer(),
        AssertRows(0))
    }
  }

  test("timestamps with INTERVAL bounds, and SQL: the band alone joins and purges", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p").createOrReplaceTempView("band_only_a")
    declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p").createOrReplaceTempView("band_only_b")
    val joined = spark.sql("SELECT a.v AS av, b.v AS bv FROM band_only_a a JOIN band_only_b b " +
      "ON b.ts BETWEEN a.ts - INTERVAL 5 MINUTES AND a.ts + INTERVAL 10 MINUTES")
    def at(min: Int) = Some(Timestamp.valueOf(f"2026-01-01 12:$min%02d:00"))
    def r(min: Int, v: Int) = StampedRow(Some(0), at(min), Some(v))
    def upTo(min: Int) = StampedRow(None, at(min), None, p = true)
    testStream(joined)(
      AddData(as, r(0, 1), r(30, 2)),
      AddData(bs, r(9, 10), r(11, 11), r(26, 12)),
      CheckNewAnswer((1, 10), (2, 12)),
      ExpectBucketPlan,
      // b: ts <= 12:10 puts a's 12:00 out of reach; a: ts <= 12:40 every b row (12:26 + 5 min)
      AddData(bs, upTo(10)),
      AddData(as, upTo(40)),
      CheckNewAnswer(),
      AddData(bs, upTo(45)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("a watermark acts as the time punctuation of its input; a window over the output closes", NotOnRocksDB) {
    def t(m: Int) = new Timestamp(Timestamp.valueOf("2026-01-01 12:00:00").getTime + m * 60000L)
    def r(m: Int) = StampedRow(Some(0), Some(t(m)), Some(m))
    def upTo(m: Int) = StampedRow(None, Some(t(m)), None, p = true)
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    // a: no time punctuations, a watermark instead; b: ts<= markers
    val a = declare(as.toDF(), "a", Schemes -> "k", Marker -> "p").withWatermark("ts", "1 minute")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
    val joined = a.join(b, b("ts").between(a("ts"), a("ts") + expr("INTERVAL 5 MINUTES")))
    testStream(joined.select(a("ts"), b("ts")))(
      MultiAddData(as, r(0), r(10))(bs, r(2), r(20)),
      CheckNewAnswer((t(0), t(2))),
      ExpectBucketPlan,
      AssertOnQuery("a's watermark is its time punctuation") { q =>
        q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
          .flatMap(_.band).map(_.watermarked) == Seq(IndexedSeq(true, false))
      },
      AddData(bs, upTo(15)),       // a's 0 and 10 go (their bands end at 5 and 15)
      CheckNewAnswer(),
      AddData(as, r(16), r(8)),    // 16 meets b's 20; 8 is late by a's watermark (12:09)
      CheckNewAnswer((t(16), t(20))),
      AddData(as, r(40)),          // watermark 12:39: b's 20 goes
      AddData(bs, upTo(50)),       // a's 16 and 40 go
      CheckNewAnswer(),
      AssertRows(0))

    // a punctuated aggregation over the output: windows of b.ts close on the join's output punctuations
    val (as2, bs2) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val a2 = declare(as2.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b2 = declare(bs2.toDF().toDF("bk", "bts", "bv", "bp"), "b", Schemes -> "bts<=", Marker -> "bp")
    val windows = a2.join(b2, expr("bts BETWEEN ts AND ts + INTERVAL 5 MINUTES"))
      .groupBy(org.apache.spark.sql.functions.window(expr("bts"), "10 minutes").as("w")).count()
      .select(expr("w.start"), expr("count"))
    testStream(windows, org.apache.spark.sql.streaming.OutputMode.Append())(
      MultiAddData(as2, r(1), r(3), r(12))(bs2, r(4), r(6), r(14)),
      CheckNewAnswer(),
      // a: ts <= 12:20 and b: ts <= 12:20: every row of b.ts before 12:10 is final
      AddData(as2, upTo(20)),
      AddData(bs2, upTo(20)),
      CheckNewAnswer((t(0), 4L), (t(10), 1L)))
  }

  test("in a join of three streams the band-only join stays a binary band join, purged by its band", NotOnRocksDB) {
    val (as, bs, cs) = (MemoryStream[TimedRow], MemoryStream[TimedRow], MemoryStream[TimedRow])
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=; k", Marker -> "p")
    val c = declare(cs.toDF().toDF("ck", "cts", "cv", "cp"), "c", Schemes -> "ck", Marker -> "cp")
    val ab = a.join(b, b("ts").between(a("ts") - 2, a("ts") + 3))
    val abc = ab.join(c, b("k") === c("ck")).select(a("ts"), b("ts"), c("cv"))
    // c's rows wait forever (the band-only join passes on time punctuations only): strict says
    // so; under warn the plan is what is checked here
    val e = intercept[AnalysisException](abc.writeStream.format("memory").queryName("three_strict").start())
    assert(e.getMessage.contains("The state of input c of the join ON k = ck can never be purged"), e.getMessage)
    withSQLConf(punctuated.conf.PunctuatedConf.SafetyMode -> "warn") { testStream(abc)(
      AddData(as, row(10, 0)),
      AddData(bs, TimedRow(Some(1), Some(12), Some(0)), TimedRow(Some(2), Some(30), Some(0))),
      AddData(cs, TimedRow(Some(1), Some(0), Some(7))),
      CheckNewAnswer((10L, 12L, 7)),
      AssertOnQuery("two binary joins, the lower one on the buckets with the band") { q =>
        val joins = q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
        joins.size == 2 && joins.exists(j => j.band.isDefined && j.leftKeys.forall(BandBucketColumns.isBucket))
      }) }
  }

  test("strict safety: the band alone must purge each input; the message names the time column", NotOnRocksDB) {
    // b punctuates no time: a's rows could wait forever (no key punctuation can help: no key)
    val (_, _, unsafe) = bandOnly(bSchemes = "v")
    val e = intercept[AnalysisException] {
      unsafe.writeStream.format("memory").queryName("band_only_unsafe").start().stop()
    }
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    assert(e.getMessage.contains("The state of input a of the band-only join ON") &&
      e.getMessage.contains("('punctuated.schemes' = 'ts<=')") && !e.getMessage.contains(BandBucketColumns.Prefix),
      e.getMessage)
    assert(!e.getMessage.contains("The state of input b "), e.getMessage)
  }

  test("a restart with another band is refused before the state is touched: the buckets' width changed") {
    val checkpoint = java.nio.file.Files.createTempDirectory("band-only").toFile.getCanonicalPath
    val (as, bs, joined) = bandOnly()
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint),
      AddData(as, row(10, 0)),
      CheckNewAnswer(),
      StopStream)
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
    val wider = a.join(b, b("ts").between(a("ts") - 2, a("ts") + 5)).select(a("ts"), b("ts"))
    testStream(wider)(
      StartStream(checkpointLocation = checkpoint),
      AddData(bs, row(12, 0)),
      ExpectFailure[punctuated.errors.PunctuatedAnalysisException] { e =>
        val a = e.asInstanceOf[AnalysisException]
        assert(a.getCondition == punctuated.errors.PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
        assert(a.getMessage.contains("time buckets 6 wide") && a.getMessage.contains("now makes them 8 wide"),
          a.getMessage)
      })
    // the same band continues, with the row the refused run left unread
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint),
      AddData(bs, row(11, 0)),
      CheckNewAnswer((10L, 12L), (10L, 11L)))
  }

  test("over a band join's output: the lower join's time punctuations stay punctuations, never rows", NotOnRocksDB) {
    // ab = a ⋈ b ON k AND b.ts BETWEEN a.ts AND a.ts + 3 emits output punctuations on a.ts and
    // b.ts (their markers set); abc = ab ⋈ c ON c.ts BETWEEN b.ts - 1 AND b.ts + 1 (no key):
    // the upper join copies ab's rows into buckets, and must see those rows as punctuations (one
    // copy, bucket NULL) and purge ab's rows by them, never join or store them as rows
    val (as, bs, cs) = (MemoryStream[TimedRow], MemoryStream[TimedRow], MemoryStream[TimedRow])
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b = declare(bs.toDF().toDF("bk", "bts", "bv", "bp"), "b", Schemes -> "bts<=", Marker -> "bp")
    val c = declare(cs.toDF().toDF("ck", "cts", "cv", "cp"), "c", Schemes -> "cts<=", Marker -> "cp")
    val ab = a.join(b, a("k") === b("bk") && b("bts").between(a("ts"), a("ts") + 3))
    val abc = ab.join(c, c("cts").between(ab("bts") - 1, ab("bts") + 1)).select(a("ts"), b("bts"), c("cts"))
    def upTo(t: Long) = TimedRow(None, Some(t), None, p = true)
    val AllRows = (rows: Long) => AssertOnQuery(s"$rows rows in both joins") { q =>
      val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
      assert(ops.length == 2 && ops.map(_.numRowsTotal).sum == rows, ops.map(_.json).mkString("\n"))
      true
    }
    testStream(abc)(
      AddData(as, TimedRow(Some(1), Some(10), Some(0)), TimedRow(Some(2), Some(20), Some(0))),
      AddData(bs, TimedRow(Some(1), Some(12), Some(0)), TimedRow(Some(2), Some(22), Some(0))),
      AddData(cs, TimedRow(Some(0), Some(13), Some(0)), TimedRow(Some(0), Some(30), Some(0))),
      CheckNewAnswer((10L, 12L, 13L)),
      AssertOnQuery("the upper join runs on the buckets, the lower on the key") { q =>
        val joins = q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
        joins.size == 2 && joins.count(_.leftKeys.forall(BandBucketColumns.isBucket)) == 1
      },
      // a and b close time up to 25: ab emits output punctuations on its time columns, which
      // reach the upper join as punctuations (never as rows) and close bts there
      AddData(as, upTo(25)),
      AddData(bs, upTo(25)),
      CheckNewAnswer(),
      // a new pair after the punctuations still meets c's 30 through its bucket
      AddData(as, TimedRow(Some(3), Some(27), Some(0))),
      AddData(bs, TimedRow(Some(3), Some(29), Some(0))),
      CheckNewAnswer((27L, 29L, 30L)),
      AddData(as, upTo(60)),
      AddData(bs, upTo(60)),
      AddData(cs, upTo(60)),
      CheckNewAnswer(),
      AllRows(0))
  }

  test("what cannot run on buckets is refused naming why, whatever the safety mode", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[TimedRow], MemoryStream[TimedRow])
    val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
    val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
    val cases = Seq(
      ("one-sided", a.join(b, b("ts") >= a("ts") - 2), "open on one side"),
      ("full outer", a.join(b, b("ts").between(a("ts") - 2, a("ts") + 3), "full_outer"), "full outer join"),
      ("empty", a.join(b, b("ts").between(a("ts") + 3, a("ts") - 2)), "band is empty"))
    for ((name, joined, why) <- cases; mode <- Seq("strict", "off"))
      withSQLConf(punctuated.conf.PunctuatedConf.SafetyMode -> mode) {
        val e = intercept[AnalysisException] {
          joined.writeStream.format("memory").queryName(s"band_only_${name.replace(' ', '_')}_$mode").start().stop()
        }
        assert(e.getCondition == "PUNCTUATED_BAND_ONLY_JOIN", e.getMessage)
        assert(e.getMessage.contains(why) && e.getMessage.contains("Fix:"), s"$name: ${e.getMessage}")
      }
  }
}

class BandOnlyJoinRocksDBSuite extends BandOnlyJoinSuite with OnRocksDB
