package punctuated.spark

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, count, max, sum, window}
import org.apache.spark.sql.streaming.OutputMode
import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._

/**
 * Schemes with two range attributes (`day<=, level<=`): a punctuation `(d, l)` says "no more
 * rows with day <= d and level <= l" (Tucker et al. 2003, §3: a conjunction of range
 * patterns), so punctuations close a staircase of corners (`punctuated.model.RangeRegion`):
 * after `(2, 1)` and `(1, 5)` the groups `(1, 4)` and `(2, 1)` are closed, `(2, 2)` is not.
 * Aggregations emit and deduplications forget what the staircase covers; rows inside it are
 * late; the staircase survives a restart from the checkpoint (joins: [[TwoRangeJoinSuite]]).
 * HDFS-backed store; [[TwoRangeSchemeRocksDBSuite]] runs the same on RocksDB.
 */
class TwoRangeSchemeSuite extends TwoRangeStreams {
  import testImplicits._


  test("aggregation: GROUP BY day, level emits the groups a staircase of 'day<=, level<=' punctuations covers; late rows; restart") {
    val s = MemoryStream[R]
    val agg = readings(s, "day<=, level<=").groupBy("day", "level").agg(count("*").as("n"), sum("v").as("total"))
    testStream(agg, OutputMode.Append())(
      AddData(s, row(0, 1, 1, 10), row(0, 1, 3, 20), row(0, 2, 1, 30), row(0, 2, 2, 40), row(0, 3, 1, 50)),
      CheckNewAnswer(),
      // (2, 1) closes day <= 2 with level <= 1 only
      AddData(s, upTo(2, 1)),
      CheckNewAnswer((1, 1, 1L, 10L), (2, 1, 1L, 30L)),
      AssertPunctuatedState(rows = 3, punctuations = 2),   // the region, a copy in each of 2 partitions
      // (1, 5) is below (2, 1) in day, above it in level: both corners are kept. (1, 4) comes in
      // the same micro-batch as (1, 5), so it is not late: its group is final at once
      AddData(s, upTo(1, 5), row(0, 1, 4, 1), row(0, 2, 1, 2), row(0, 2, 3, 60)),
      CheckNewAnswer((1, 3, 1L, 20L), (1, 4, 1L, 1L)),
      AssertCounted("numLateRowsDropped", 1),               // (2, 1): under the corner (2, 1) held
      AssertPunctuatedState(rows = 3, punctuations = 2),    // (2, 2), (3, 1), (2, 3)
      StopStream,
      StartStream(),
      // the staircase comes back from the checkpoint: (1, 2) is still late
      AddData(s, row(0, 1, 2, 99), row(0, 3, 2, 7)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      // (3, 2) covers (2, 2), (3, 1), (3, 2), not (2, 3)
      AddData(s, upTo(3, 2)),
      CheckNewAnswer((2, 2, 1L, 40L), (3, 1, 1L, 50L), (3, 2, 1L, 7L)),
      AssertPunctuatedState(rows = 1, punctuations = 2))
  }

  test("deduplication: 'sensor, day<=, level<=' forgets the keys its punctuations cover, per sensor; restart") {
    val s = MemoryStream[R]
    val firsts = readings(s, "sensor, day<=, level<=").dropDuplicates("sensor", "day", "level")
      .select("sensor", "day", "level", "v")
    testStream(firsts)(
      AddData(s, row(1, 1, 1, 1), row(1, 1, 1, 2), row(1, 2, 2, 3), row(2, 1, 1, 4)),
      CheckNewAnswer((1, 1, 1, 1), (1, 2, 2, 3), (2, 1, 1, 4)),
      AssertPunctuatedState(rows = 3, punctuations = 0),
      // sensor 1: (1, 3) and (2, 1); (1, 1, 1) is forgotten, (1, 2, 2) is not
      AddData(s, upTo(1, 1, 3), upTo(1, 2, 1)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 2, punctuations = 0),
      StopStream,
      StartStream(),
      // remembered after the restart: (1, 1, 2) and (1, 2, 1) are late; sensor 2 is untouched
      AddData(s, row(1, 1, 2, 5), row(1, 2, 1, 6), row(1, 2, 3, 7), row(2, 1, 2, 8)),
      CheckNewAnswer((1, 2, 3, 7), (2, 1, 2, 8)),
      AssertCounted("numLateRowsDropped", 2))
  }

  test("a window of one range column and another range column: 'ts<=, level<=' closes (window, level) groups") {
    def at(seconds: Double) = Some(new java.sql.Timestamp((seconds * 1000).toLong))
    val s = MemoryStream[(Option[java.sql.Timestamp], Option[Int], Option[Int], Boolean)]
    val out = declare(s.toDF().toDF("ts", "level", "v", "p"), "timed", Schemes -> "ts<=, level<=", Marker -> "p")
      .groupBy(window(col("ts"), "10 seconds"), col("level")).agg(count("*").as("n"))
      .select(col("window.start").cast("long").as("start"), col("level"), col("n"))
    testStream(out, OutputMode.Append())(
      AddData(s, (at(1), Some(1), Some(1), false), (at(2), Some(3), Some(1), false), (at(12), Some(1), Some(1), false)),
      CheckNewAnswer(),
      // "no more rows at or before 10 s with level <= 2": closes [0 s, 10 s) for level 1 only
      AddData(s, (at(10), Some(2), None, true)),
      CheckNewAnswer((0L, 1, 1L)),
      StopStream,
      StartStream(),
      // a late row under the corner; then (25 s, 5) closes the rest
      AddData(s, (at(5), Some(2), Some(1), false)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AddData(s, (at(25), Some(5), None, true)),
      CheckNewAnswer((0L, 3, 1L), (10L, 1, 1L)),
      AssertPunctuatedState(rows = 0, punctuations = 2))
  }

  test("union of two streams: a group closes once both streams' staircases cover it (setCombine)") {
    val (a, b) = (MemoryStream[R], MemoryStream[R])
    val ra = readings(a, "day<=, level<=")
    val rb = declare(b.toDF().toDF("sensor", "day", "level", "v", "p"), "readings_b",
      Schemes -> "day<=, level<=", Marker -> "p")
    val agg = ra.union(rb).groupBy("day", "level").agg(count("*").as("n"))
    testStream(agg, OutputMode.Append())(
      MultiAddData(a, row(0, 1, 1, 1), row(0, 2, 2, 1), upTo(2, 2))(b, row(0, 1, 1, 1), upTo(1, 3)),
      CheckNewAnswer((1, 1, 2L)),           // (1, 1) under both; (2, 2) only under a's (2, 2)
      StopStream,
      StartStream(),
      AddData(b, upTo(3, 1), row(0, 1, 1, 5)),
      CheckNewAnswer(),                     // b: (1, 3), (3, 1): (2, 2) still open in b; (1, 1) late
      AssertCounted("numLateRowsDropped", 1),
      AddData(b, upTo(2, 2)),
      CheckNewAnswer((2, 2, 1L)))
  }
  test("an aggregation's output punctuations keep both ranges: a second aggregation closes on them; restart") {
    // the first aggregation's output is punctuated by 'day<=, level<=' (Tucker et al. 2003,
    // Table 2: group-by passes on punctuations on grouping attributes), every range of it
    val s = MemoryStream[R]
    val perSensor = readings(s, "day<=, level<=").groupBy("day", "level", "sensor").agg(sum("v").as("total"))
    val perCell = perSensor.groupBy("day", "level").agg(count("*").as("sensors"), max("total").as("top"))
    testStream(perCell, OutputMode.Append())(
      AddData(s, row(0, 1, 1, 10), row(1, 1, 1, 5), row(0, 1, 3, 20), row(0, 2, 1, 30), row(0, 2, 2, 40)),
      CheckNewAnswer(),
      AddData(s, upTo(2, 1)),
      CheckNewAnswer((1, 1, 2L, 10L), (2, 1, 1L, 30L)),
      StopStream,
      StartStream(),
      // (1, 5) closes (1, 3) alone: (2, 2) is above (2, 1) in level and (1, 5) in day
      AddData(s, upTo(1, 5), row(1, 2, 2, 1)),
      CheckNewAnswer((1, 3, 1L, 20L)),
      AddData(s, upTo(3, 3)),
      CheckNewAnswer((2, 2, 2L, 40L)),
      AssertOnQuery("neither aggregation holds a group") { q =>
        val last = q.recentProgress.filter(_.durationMs.containsKey("addBatch")).last
        assert(last.stateOperators.length == 2 && last.stateOperators.forall(_.numRowsTotal == 0), last.json)
        true
      })
  }

  test("random interleavings: 'c, day<=, level<=' against the batch answer; maximal purge; restart") {
    // the contract as a model: a row is late iff a punctuation of an earlier batch covers it;
    // a group is final (emitted once, its state dropped) in the batch whose punctuations cover
    // it; the state holds exactly the groups no punctuation covers (Tucker et al. 2003, Table 2)
    val rng = new Random(20261128)
    val s = MemoryStream[R]
    val out = readings(s, "sensor, day<=, level<=").groupBy("sensor", "day", "level")
      .agg(count("*").as("n"), sum("v").as("total"))
    val corners = mutable.Map.empty[Int, Seq[(Int, Int)]].withDefaultValue(Nil)
    def covered(c: Int, d: Int, l: Int, by: Seq[(Int, Int)]) = by.exists { case (cd, cl) => d <= cd && l <= cl }
    val open = mutable.Map.empty[(Int, Int, Int), (Long, Long)]
    val emitted = mutable.ArrayBuffer.empty[Row]
    val actions = (0 until 6).flatMap { batch =>
      val elems = (0 until 20).flatMap { c =>
        Seq.fill(rng.nextInt(6)) {
          if (rng.nextInt(4) == 0) upTo(c, rng.nextInt(5), rng.nextInt(5))
          else row(c, rng.nextInt(5), rng.nextInt(5), rng.nextInt(10))
        }
      }
      var late = 0L
      elems.foreach {
        case (Some(c), Some(d), Some(l), Some(v), false) =>
          if (covered(c, d, l, corners(c))) late += 1
          else { val (n, t) = open.getOrElse((c, d, l), (0L, 0L)); open((c, d, l)) = (n + 1, t + v) }
        case _ =>
      }
      val arrived = elems.collect { case (Some(c), Some(d), Some(l), None, true) => c -> (d, l) }
      arrived.foreach { case (c, corner) => corners(c) = corners(c) :+ corner }
      open.keys.toSeq.filter { case (c, d, l) => covered(c, d, l, arrived.filter(_._1 == c).map(_._2)) }.foreach { k =>
        val (n, t) = open.remove(k).get
        emitted += Row(k._1, k._2, k._3, n, t)
      }
      val (groups, output) = (open.size.toLong, emitted.toSeq)
      (if (batch == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
        AddData(s, elems: _*),
        CheckAnswer(output: _*),
        AssertOnQuery(s"batch $batch: $groups open groups, $late late rows") { q =>
          val p = punctuatedProgress(q)
          assert(p.numRowsTotal == groups, p.json)
          assert(p.customMetrics.get("numLateRowsDropped") == late, p.json)
          true
        })
    }
    testStream(out, OutputMode.Append())(actions: _*)
  }
}

class TwoRangeSchemeRocksDBSuite extends TwoRangeSchemeSuite with OnRocksDB
