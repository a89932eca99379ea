package punctuated.spark

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, count, sum, window}
import org.apache.spark.sql.streaming.OutputMode
import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
/**
 * Binary joins over schemes with two range attributes (`day<=, level<=` on both inputs, one of
 * them written `level<=, day<=`: the same scheme): each input's staircase of corners purges the
 * other input's stored rows under it (through the range index), corners of one batch and the
 * held region act together, rows under an input's own corners are late, and what both inputs
 * closed — the intersection of their staircases — is passed on as output punctuations, one row
 * per corner, so an aggregation above closes those groups. HDFS-backed store;
 * [[TwoRangeJoinRocksDBSuite]] runs the same on RocksDB.
 */
class TwoRangeJoinSuite extends TwoRangeStreams {
  import testImplicits._

  private def levelsJoin(a: MemoryStream[R], b: MemoryStream[R]): DataFrame = {
    val left = readings(a, "day<=, level<=")
    val right = declare(b.toDF().toDF("sensor", "day", "level", "w", "p"), "alerts",
      Schemes -> "level<=, day<=", Marker -> "p")    // the same scheme, written in another order
    left.join(right, left("day") === right("day") && left("level") === right("level"))
      .select(left("day"), left("level"), left("v"), right("w"))
  }

  test("join: each input's staircase purges the other input's stored rows under it; late rows; restart") {
    val (a, b) = (MemoryStream[R], MemoryStream[R])
    testStream(levelsJoin(a, b))(
      MultiAddData(a, row(0, 1, 1, 10), row(0, 1, 3, 20), row(0, 2, 1, 30))(b, row(0, 1, 1, 7), row(0, 2, 2, 8)),
      CheckNewAnswer((1, 1, 10, 7)),
      AssertPunctuatedState(rows = 5, punctuations = 0),
      // alerts are done with day <= 2 and level <= 1: readings' (1, 1) and (2, 1) go, (1, 3) stays
      AddData(b, upTo(2, 1)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 3, punctuations = 2),   // one region per partition
      // readings are done with day <= 1 and level <= 5: alerts' (1, 1) goes; (2, 2) stays
      AddData(a, upTo(1, 5)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 2, punctuations = 4),
      StopStream,
      StartStream(),
      // after the restart: alerts' (1, 3) meets readings' (1, 3); alerts' (1, 1) and (2, 1) are
      // late (alerts closed them), readings' (1, 2) is late (readings closed it)
      MultiAddData(a, row(0, 1, 2, 40))(b, row(0, 1, 3, 9), row(0, 1, 1, 5), row(0, 2, 1, 6)),
      CheckNewAnswer((1, 3, 20, 9)),
      AssertCounted("numLateRowsDropped", 3))
  }

  test("join then GROUP BY day, level: a group closes once both inputs' staircases cover it (their intersection)") {
    val (a, b) = (MemoryStream[R], MemoryStream[R])
    val counts = levelsJoin(a, b).groupBy("day", "level").agg(count("*").as("n"))
    testStream(counts, OutputMode.Append())(
      MultiAddData(a, row(0, 1, 1, 10), row(0, 1, 3, 20), row(0, 2, 1, 30))(b, row(0, 1, 1, 7), row(0, 1, 3, 8), row(0, 2, 1, 9)),
      CheckNewAnswer(),
      // readings close (1, 5), alerts (2, 1): both have closed (1, 1) only, their intersection
      MultiAddData(a, upTo(1, 5))(b, upTo(2, 1)),
      CheckNewAnswer((1, 1, 1L)),
      StopStream,
      StartStream(),
      // alerts close (2, 5) too: both have now closed (1, 5), so (1, 3); readings never closed day 2
      AddData(b, upTo(2, 5)),
      CheckNewAnswer((1, 3, 1L)),
      AddData(a, upTo(2, 1)),
      CheckNewAnswer((2, 1, 1L)))
  }

  /** Rows added to several streams in one micro-batch. */
  private def AddAll(data: (MemoryStream[R], Seq[R])*) = {
    val actions = data.map { case (s, rows) => AddData(s, rows: _*) }
    StreamProgressLockedActions(actions, desc = actions.mkString("[ ", " | ", " ]"))
  }

  /** The query runs one multi-way join (no binary join) storing `rows` rows in all. */
  private def AssertMultiJoinRows(rows: Long) = AssertOnQuery(s"one multi-way join storing $rows rows") { q =>
    val ops = settledProgress(q).stateOperators.filter(_.operatorName.startsWith("punctuated"))
    assert(ops.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin"), settledProgress(q).json)
    assert(ops.head.numRowsTotal == rows, settledProgress(q).json)
    true
  }

  test("three streams: one multi-way join; a row goes once both other inputs' staircases cover it; late rows; restart") {
    val (a, b, c) = (MemoryStream[R], MemoryStream[R], MemoryStream[R])
    val (x, y) = (readings(a, "day<=, level<="), readings(b, "day<=, level<="))
    val z = declare(c.toDF().toDF("sensor", "day", "level", "u", "p"), "checks", Schemes -> "level<=, day<=", Marker -> "p")
    val joined = x.join(y, x("day") === y("day") && x("level") === y("level"))
      .join(z, x("day") === z("day") && x("level") === z("level"))
      .select(x("day"), x("level"), x("v"), y("v"), z("u"))
    testStream(joined)(
      AddAll(a -> Seq(row(0, 1, 1, 10), row(0, 1, 3, 20)), b -> Seq(row(0, 1, 1, 7)), c -> Seq(row(0, 1, 1, 5))),
      CheckNewAnswer((1, 1, 10, 7, 5)),
      AssertMultiJoinRows(4),
      // b closes day <= 2 and level <= 1, c day <= 1 and level <= 2: a's (1, 1) is under both
      // (every future partner would need a row of b or c that can no longer come); a's (1, 3) is
      // under neither; b's and c's (1, 1) still wait for a
      MultiAddData(b, upTo(2, 1))(c, upTo(1, 2)),
      CheckNewAnswer(),
      AssertMultiJoinRows(3),
      StopStream,
      StartStream(),
      // a closes (1, 1): b's (1, 1) is now under a's and c's corners, c's under a's and b's
      AddData(a, upTo(1, 1)),
      CheckNewAnswer(),
      AssertMultiJoinRows(1),
      // b's (2, 0) is late (b closed it), c's (1, 3) meets a's (1, 3) and b's new (1, 3)
      AddAll(b -> Seq(row(0, 2, 0, 8), row(0, 1, 3, 9)), c -> Seq(row(0, 1, 3, 6))),
      CheckNewAnswer((1, 3, 20, 9, 6)),
      AssertCounted("numLateRowsDropped", 1))
  }

  for (seed <- Seq(28, 7, 2026)) test(s"join, random interleavings (seed $seed): the batch join of the non-late rows, each once; maximal purge; restart") {
    // the contract as a model: a row is late iff its own input punctuated it in an earlier
    // batch; every pair of non-late rows with equal keys is output once; after each batch an
    // input stores exactly its non-late rows the other input's punctuations do not cover (Li et
    // al. 2006, §3; Tucker 2005, purge invariants)
    val rng = new Random(seed)
    val (a, b) = (MemoryStream[R], MemoryStream[R])
    val corners = IndexedSeq(mutable.ArrayBuffer.empty[(Int, Int)], mutable.ArrayBuffer.empty[(Int, Int)])
    val kept = IndexedSeq(mutable.ArrayBuffer.empty[(Int, Int, Int)], mutable.ArrayBuffer.empty[(Int, Int, Int)])
    def covered(i: Int, d: Int, l: Int) = corners(i).exists { case (cd, cl) => d <= cd && l <= cl }
    val out = mutable.ArrayBuffer.empty[Row]
    var serial = 0
    val actions = (0 until 6).flatMap { batch =>
      val elems = IndexedSeq.fill(2)(Seq.fill(3 + rng.nextInt(6)) {
        if (rng.nextInt(5) == 0) upTo(rng.nextInt(5), rng.nextInt(5))
        else { serial += 1; row(0, rng.nextInt(5), rng.nextInt(5), serial) }
      })
      var late = 0L
      val fresh = (0 to 1).map { i =>
        elems(i).collect { case (Some(_), Some(d), Some(l), Some(v), false) => (d, l, v) }
          .filter { case (d, l, _) => val x = covered(i, d, l); if (x) late += 1; !x }
      }
      // pairs with a new row on either side (old x old were output before)
      for ((x, y) <- fresh(0).flatMap(r => (kept(1) ++ fresh(1)).map(r -> _)) ++
          kept(0).flatMap(r => fresh(1).map(r -> _)) if x._1 == y._1 && x._2 == y._2) {
        out += Row(x._1, x._2, x._3, y._3)
      }
      (0 to 1).foreach { i =>
        corners(i) ++= elems(i).collect { case (None, Some(d), Some(l), None, true) => (d, l) }
        kept(i) ++= fresh(i)
      }
      (0 to 1).foreach { i => kept(i).filterInPlace { case (d, l, _) => !covered(1 - i, d, l) } }
      val (stored, output) = (kept.map(_.size).sum.toLong, out.toSeq)
      (if (batch == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
        MultiAddData(a, elems(0): _*)(b, elems(1): _*),
        CheckAnswer(output: _*),
        AssertOnQuery(s"batch $batch: $stored rows stored, $late late") { q =>
          val p = punctuatedProgress(q)
          assert(p.numRowsTotal == stored, p.json)
          assert(p.customMetrics.get("numLateRowsDropped") == late, p.json)
          true
        })
    }
    testStream(levelsJoin(a, b))(actions: _*)
  }

  test("strict safety accepts a join and an aggregation closed by two-range schemes") {
    val (a, b) = (MemoryStream[R], MemoryStream[R])
    val agg = readings(a, "day<=, level<=").groupBy("day", "level").count()
    val q = agg.writeStream.format("memory").queryName("two_ranges_agg").outputMode("append").start()
    try q.processAllAvailable() finally q.stop()
    val j = levelsJoin(a, b).writeStream.format("memory").queryName("two_ranges_join").start()
    try j.processAllAvailable() finally j.stop()
  }
}

class TwoRangeJoinRocksDBSuite extends TwoRangeJoinSuite with OnRocksDB
