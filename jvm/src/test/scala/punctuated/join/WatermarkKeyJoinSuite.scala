package punctuated.join

import java.sql.Timestamp

import org.apache.spark.sql.{AnalysisException, DataFrame}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Watermarks as punctuations of joins without a time band ([[WatermarkPunctuations.onKey]],
 * Tucker et al. 2003, §3: a watermark is the range punctuation `ts<=w`): when a join key holds
 * an input's `withWatermark` column (`ON a.k = b.k AND a.ts = b.ts`), the watermark purges the
 * other input's stored rows whose `ts` it passes — through the range index, with no marker row —
 * makes that input's later rows at or below it late, and counts as a range scheme for `strict`
 * safety (Li et al. 2006, Theorem 1). Key punctuations of the other input work alongside.
 * HDFS-backed store; [[WatermarkKeyJoinRocksDBSuite]] runs the same on RocksDB.
 */
class WatermarkKeyJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  /** 2026-01-01 12:00 plus `m` minutes. */
  private def t(m: Int) = new Timestamp(Timestamp.valueOf("2026-01-01 12:00:00").getTime + m * 60000L)
  private def r(k: Int, m: Int, v: Int = 0) = StampedRow(Some(k), Some(t(m)), Some(v))
  private def close(k: Int) = StampedRow(Some(k), None, None, p = true)

  /** a declared with scheme `k` (marker p), b as given; joined on k and ts. */
  private def join(a: DataFrame, b: DataFrame): DataFrame =
    a.join(b, a("k") === b("k") && a("ts") === b("ts")).select(a("k"), a("ts"), a("v"), b("v"))

  private def declaredA(as: MemoryStream[StampedRow], watermark: Boolean = false) = {
    val d = declare(as.toDF(), "a", Schemes -> "k", Marker -> "p")
    if (watermark) d.withWatermark("ts", "0 seconds") else d
  }

  /** b undeclared, with a watermark on ts (the join's second key column) if `watermark`. */
  private def plainB(bs: MemoryStream[StampedRow], watermark: Boolean = true) = {
    val d = bs.toDF().drop("p")
    if (watermark) d.withWatermark("ts", "0 seconds") else d
  }

  private def AssertRows(rows: Long) = AssertOnQuery(s"$rows rows stored") { q =>
    val p = punctuatedProgress(q)
    assert(p.numRowsTotal == rows, s"numRowsTotal ${p.numRowsTotal} != $rows: ${p.json}")
    true
  }

  private def ExpectKeyWatermark(left: Boolean, right: Boolean) = AssertOnQuery(s"key watermarks ($left, $right)") { q =>
    val joins = q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }
    assert(joins.size == 1, q.lastExecution.executedPlan.toString)
    val got = (joins.head.leftSpec.watermark.map(_._2), joins.head.rightSpec.watermark.map(_._2))
    assert(got == (if (left) Some("ts<= (watermark)") else None, if (right) Some("ts<= (watermark)") else None), got)
    true
  }

  test("an undeclared input's watermark on a join-key column purges the declared input's rows, no marker rows; restart") {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val joined = join(declaredA(as), plainB(bs))
    testStream(joined)(
      MultiAddData(as, r(1, 0, 1), r(2, 5, 2))(bs, r(1, 0, 10), r(3, 10, 30)),
      // b's watermark becomes 12:10 (its highest time, no delay): as b's range punctuation
      // ts<=12:10 it purges a's rows at 12:00 and 12:05 (a batch without data runs for it);
      // b's rows wait for a's key punctuations
      CheckNewAnswer((1, t(0), 1, 10)),
      ExpectKeyWatermark(left = false, right = true),
      AssertRows(2),   // b's (1, 12:00) and (3, 12:10)
      AssertCounted("numRowsPurged", 2),
      AssertCounted("numPunctuationsReceived", 0),
      // a closes k = 1 (a prefix of the key (k, ts)): b's (1, 12:00) goes
      AddData(as, close(1)),
      CheckNewAnswer(),
      AssertRows(1),
      // a's row at 12:10 meets b's stored one; it is not stored: b has said ts<=12:10
      AddData(as, r(3, 10, 3)),
      CheckNewAnswer((3, t(10), 3, 30)),
      AssertRows(1),
      // b's row at 12:05 is at or below the watermark the join applied: late, dropped
      AddData(bs, r(2, 5, 20)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      StopStream,
      StartStream(),
      // the held bound survives the restart: b's 12:08 is late; 12:20 joins a's 12:20
      MultiAddData(as, r(4, 20, 4), close(3))(bs, r(4, 20, 40), r(4, 8, 41)),
      CheckNewAnswer((4, t(20), 4, 40)),
      AssertCounted("numLateRowsDropped", 1),
      // watermark 12:20: a's 12:20 goes; a closed 3: b's (3, 12:10) goes; b's (4, 12:20) waits for k = 4
      AssertRows(1),
      AddData(as, close(4)),
      CheckNewAnswer(),
      AssertRows(0))
  }

  test("the batch answer exactly once, both inputs watermarked: the global watermark punctuates both") {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    val a = declaredA(as, watermark = true)
    val b = plainB(bs)
    val aRows = Seq(r(1, 0, 1), r(1, 2, 2), r(2, 2, 3), r(1, 7, 4), r(2, 9, 5), r(1, 13, 6))
    val bRows = Seq(r(1, 0, 7), r(2, 2, 8), r(1, 7, 9), r(2, 12, 10), r(1, 13, 11), r(2, 9, 12))
    val expected = for (x <- aRows; y <- bRows if x.k == y.k && x.ts == y.ts) yield (x.k.get, x.ts.get, x.v.get, y.v.get)
    testStream(join(a, b))(
      MultiAddData(as, aRows.take(2): _*)(bs, bRows.take(2): _*),
      MultiAddData(as, aRows.slice(2, 4): _*)(bs, bRows.slice(2, 4): _*),
      MultiAddData(as, aRows.drop(4): _*)(bs, bRows.drop(4): _*),
      CheckAnswer(expected: _*),
      ExpectKeyWatermark(left = true, right = true),
      AssertCounted("numLateRowsDropped", 0),
      // a row above every watermark on both sides moves the global watermark to 12:30:
      // every stored row goes, with no key punctuation at all
      MultiAddData(as, r(9, 30, 0))(bs, r(9, 30, 0)),
      CheckNewAnswer((9, t(30), 0, 0)),
      AssertRows(0))
  }

  test("strict safety counts a watermark on a join-key column as a range scheme, and only there", NotOnRocksDB) {
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    // without b's watermark, nothing b sends purges a's rows
    val unsafe = join(declaredA(as), plainB(bs, watermark = false))
    val e = intercept[AnalysisException](unsafe.writeStream.format("memory").queryName("unsafe").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY" && e.getMessage.contains("input a "), e.getMessage)
    // a watermark on a column that is not a join key bounds nothing either
    val (a, b) = (declaredA(as), plainB(bs))
    val off = a.join(b, a("k") === b("k"))
    val e2 = intercept[AnalysisException](off.writeStream.format("memory").queryName("unsafe2").start())
    assert(e2.getCondition == "PUNCTUATED_UNSAFE_QUERY", e2.getMessage)
    // on a join-key column it does: the query starts (the run above shows the purge)
    val q = join(declaredA(as), plainB(bs)).writeStream.format("memory").queryName("safe").start()
    try assert(q.isActive) finally q.stop()
  }

  test("three streams: strict counts a watermark on a join column of a multi-way group as that input's range scheme", NotOnRocksDB) {
    // a(k) ⋈ b(k, ts) ⋈ c(ts), a "k", b "k; ts", c undeclared: only c's watermark on ts closes
    // c for a's and b's rows (Li et al. 2006, Theorem 2, c's range scheme on its join column)
    val (as, bs, cs) = (MemoryStream[StampedRow], MemoryStream[StampedRow], MemoryStream[StampedRow])
    def chain(watermark: Boolean) = {
      val a = declaredA(as)
      val b = declare(bs.toDF(), "b", Schemes -> "k; ts", Marker -> "p")
      val c = plainB(cs, watermark)
      a.join(b, a("k") === b("k")).join(c, b("ts") === c("ts")).select(a("k"), a("v"), b("v"), c("v"))
    }
    val e = intercept[AnalysisException](chain(watermark = false).writeStream.format("memory").queryName("mj_unsafe").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY" && e.getMessage.contains("multi-way join"), e.getMessage)
    val q = chain(watermark = true).writeStream.format("memory").queryName("mj_safe").start()
    try {
      as.addData(r(1, 0, 1)); bs.addData(r(1, 0, 10)); cs.addData(r(1, 0, 100))
      q.processAllAvailable()
      assert(spark.table("mj_safe").count() == 1)
      val plan = q.asInstanceOf[punctuated.compat.StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
      assert(plan.collect { case m: multi.PunctuatedMultiJoinExec => m }.size == 1, plan)
    } finally q.stop()
  }

  test("a watermark added to a running query's key column is refused before the state is touched; removing it resumes") {
    val checkpoint = java.nio.file.Files.createTempDirectory("wm-key").toFile.getCanonicalPath
    val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(join(declaredA(as), plainB(bs, watermark = false)))(
        StartStream(checkpointLocation = checkpoint),
        MultiAddData(as, r(1, 0, 1))(bs, r(1, 0, 10), r(2, 5, 20)),
        CheckNewAnswer((1, t(0), 1, 10)),
        StopStream)
    }
    // a's stored rows were never indexed for a range on ts: they would never be purged
    testStream(join(declaredA(as), plainB(bs)))(
      StartStream(checkpointLocation = checkpoint),
      AddData(bs, r(3, 7, 30)),
      ExpectFailure[punctuated.errors.PunctuatedAnalysisException] { e =>
        val m = e.getMessage
        assert(m.contains("PUNCTUATED_INCOMPATIBLE_CHECKPOINT") || m.contains("scheme 'ts<= (watermark)' needs a range index"), m)
        assert(m.contains("'ts<= (watermark)' needs a range index") && m.contains("new checkpoint location"), m)
      })
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(join(declaredA(as), plainB(bs, watermark = false)))(
        StartStream(checkpointLocation = checkpoint),
        AddData(as, r(3, 7, 3)),
        CheckNewAnswer((3, t(7), 3, 30)))
    }
  }

  test("three streams: a watermark on a join column is the multi-way join's range punctuation there; restart") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1") {
      val (as, bs, cs) = (MemoryStream[StampedRow], MemoryStream[StampedRow], MemoryStream[StampedRow])
      val a = declaredA(as)
      val b = declare(bs.toDF(), "b", Schemes -> "k", Marker -> "p").withWatermark("ts", "0 seconds")
      val c = declare(cs.toDF(), "c", Schemes -> "k", Marker -> "p")
      val ab = a.join(b, a("k") === b("k") && a("ts") === b("ts"))
      val abc = ab.join(c, a("k") === c("k")).select(a("k"), a("v"), b("v"), c("v"))
      testStream(abc)(
        MultiAddData((as, Seq(r(1, 0, 1), r(2, 5, 2))), (bs, Seq(r(1, 0, 10), r(3, 10, 30))), (cs, Seq(r(1, 0, 100)))),
        CheckNewAnswer((1, 1, 10, 100)),
        AssertOnQuery("one multi-way join, b's watermark its range punctuation on ts") { q =>
          val plan = q.lastExecution.executedPlan
          assert(plan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.isEmpty, plan)
          val m = plan.collect { case m: multi.PunctuatedMultiJoinExec => m }
          assert(m.size == 1 && m.head.inputs.map(_.spec.watermark.map(_._2)) == Seq(None, Some("ts<= (watermark)"), None),
            m.map(_.inputs.map(_.spec.watermark)))
          true
        },
        StopStream,
        StartStream(),
        // b's watermark is 12:10 (from the offset log): a(2, 12:05) has no partner left in b
        // (found through a's range index); a(1, 12:00) still needs c to close k = 1
        AddData(as, close(5)),
        CheckNewAnswer(),
        AssertRows(4),
        AddData(bs, r(4, 8, 40)),      // at or below b's watermark the join applied: late
        CheckNewAnswer(),
        AssertCounted("numLateRowsDropped", 1),
        AssertRows(4),
        AddData(cs, close(1)),
        CheckNewAnswer(),
        AssertRows(3),     // a(1, 12:00) purged: b closed 12:00 by its watermark, c closed k = 1
        AddData(as, close(1), close(3)),
        CheckNewAnswer(),
        AssertRows(0))
    }
  }

  test("three streams: a watermark added to a multi-way join's key column is refused (no range index); removing it resumes") {
    val checkpoint = java.nio.file.Files.createTempDirectory("wm-mj").toFile.getCanonicalPath
    val (as, bs, cs) = (MemoryStream[StampedRow], MemoryStream[StampedRow], MemoryStream[StampedRow])
    def query(watermark: Boolean) = {
      val a = declaredA(as)
      val b = declare(bs.toDF(), "b", Schemes -> "k", Marker -> "p")
      val b2 = if (watermark) b.withWatermark("ts", "0 seconds") else b
      val c = declare(cs.toDF(), "c", Schemes -> "k", Marker -> "p")
      a.join(b2, a("k") === b2("k") && a("ts") === b2("ts")).join(c, a("k") === c("k"))
        .select(a("k"), a("v"), b2("v"), c("v"))
    }
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1") {
      testStream(query(watermark = false))(
        StartStream(checkpointLocation = checkpoint),
        MultiAddData((as, Seq(r(1, 0, 1))), (bs, Seq(r(1, 0, 10))), (cs, Seq(r(1, 0, 100)))),
        CheckNewAnswer((1, 1, 10, 100)),
        StopStream)
      // a's stored keys were never indexed for a range on ts: they would never be found by it
      testStream(query(watermark = true))(
        StartStream(checkpointLocation = checkpoint),
        AddData(cs, r(2, 7, 200)),
        ExpectFailure[punctuated.errors.PunctuatedAnalysisException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_INCOMPATIBLE_CHECKPOINT") &&
            e.getMessage.contains("'ts<= (watermark) of input 1' needs a range index"), e.getMessage)
        })
      testStream(query(watermark = false))(
        StartStream(checkpointLocation = checkpoint),
        AddData(as, r(1, 5, 2)), AddData(bs, r(1, 5, 20)),
        CheckNewAnswer((1, 2, 20, 100)))
    }
  }

  for (perOperator <- Seq(true, false)) {
    test(s"three streams, a watermark on another column, per-operator watermarks $perOperator: one multi-way join", NotOnRocksDB) {
      // Spark's per-operator propagation looks each stateful operator up by id in the previous
      // batch's plan: the group's lower join stands there as a member holding nothing (without
      // it the batch after the watermark was first set failed)
      withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
          SQLConf.STATEFUL_OPERATOR_ALLOW_MULTIPLE.key -> perOperator.toString) {
        val (as, bs, cs) = (MemoryStream[StampedRow], MemoryStream[StampedRow], MemoryStream[StampedRow])
        val a = declaredA(as)
        val b = declare(bs.toDF(), "b", Schemes -> "k", Marker -> "p").withWatermark("ts", "0 seconds")
        val c = declare(cs.toDF(), "c", Schemes -> "k", Marker -> "p")
        val abc = a.join(b, a("k") === b("k")).join(c, a("k") === c("k")).select(a("k"), a("v"), b("v"), c("v"))
        testStream(abc)(
          MultiAddData((as, Seq(r(1, 0, 1), r(2, 5, 2))), (bs, Seq(r(1, 0, 10), r(3, 10, 30))), (cs, Seq(r(1, 0, 100)))),
          CheckNewAnswer((1, 1, 10, 100)),
          AssertOnQuery("the plan") { q =>
            val plan = q.lastExecution.executedPlan
            val (binary, multiWay, members) = (plan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size,
              plan.collect { case m: multi.PunctuatedMultiJoinExec => m }.size,
              plan.collect { case m: multi.MultiJoinMemberExec => m }.size)
            assert((binary, multiWay, members) == (0, 1, if (perOperator) 1 else 0), s"${(binary, multiWay, members)} $plan")
            val ops = settledProgress(q).stateOperators.map(_.operatorName).toSeq.sorted
            assert(ops == (if (perOperator) Seq("punctuatedMultiJoin", "punctuatedMultiJoinMember")
              else Seq("punctuatedMultiJoin")), ops)
            true
          },
          // batches after the watermark (12:10) is set
          MultiAddData((as, Seq(r(3, 20, 3))), (cs, Seq(r(3, 20, 300)))),
          CheckNewAnswer((3, 3, 30, 300)),
          StopStream,
          StartStream(),
          MultiAddData((as, Seq(close(1), close(2), close(3))), (bs, Seq(close(1), close(2), close(3))),
            (cs, Seq(close(1), close(2), close(3)))),
          CheckNewAnswer(),
          AssertOnQuery("no rows left in the multi-way join") { q =>
            val op = settledProgress(q).stateOperators.find(_.operatorName == "punctuatedMultiJoin").get
            assert(op.numRowsTotal == 0, op.json)
            true
          })
      }
    }
  }

  test("late rows by policy: fail names the input and the watermark", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
      testStream(join(declaredA(as), plainB(bs)))(
        MultiAddData(as, r(1, 10))(bs, r(1, 10)),
        CheckNewAnswer((1, t(10), 0, 0)),
        AddData(bs, r(1, 5)),
        ExpectFailure[org.apache.spark.SparkException](e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("ts<= (watermark)"),
            e.getMessage)))
    }
  }

  test("under the max policy with two watermarks, neither is a punctuation (and strict says so)", NotOnRocksDB) {
    withSQLConf(SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY.key -> "max") {
      val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
      val e = intercept[AnalysisException](join(declaredA(as, watermark = true), plainB(bs))
        .writeStream.format("memory").queryName("max").start())
      assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY" && e.getMessage.contains("input a "), e.getMessage)
    }
    withSQLConf(SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY.key -> "max", PunctuatedConf.SafetyMode -> "warn") {
      val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
      testStream(join(declaredA(as, watermark = true), plainB(bs)))(
        MultiAddData(as, r(1, 0))(bs, r(1, 0), r(2, 30)),
        CheckNewAnswer((1, t(0), 0, 0)),
        ExpectKeyWatermark(left = false, right = false),
        AssertRows(3))
    }
  }
}

class WatermarkKeyJoinRocksDBSuite extends WatermarkKeyJoinSuite with OnRocksDB
