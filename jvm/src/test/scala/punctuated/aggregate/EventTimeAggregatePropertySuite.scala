package punctuated.aggregate

import java.sql.Timestamp

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{col, count, date_trunc, sum, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of windows and time expressions closed by range punctuations on event time
 * (`ts<=`): random interleavings of rows and punctuations (random bounds, at and around window
 * ends, to the microsecond), punctuations of a scheme on `v` that closes no group (dropped above
 * the source: they change nothing and are not received), a stop/restart from the checkpoint
 * before the fourth batch, and rows arriving after their groups closed. After every micro-batch:
 *
 *  (a) the output so far is exactly the groups every punctuation so far completed — a group
 *      `g` of `[start, end)` once some `ts <= T` has `T >= end - 1 µs` — each emitted once, with
 *      the aggregates of its rows that were not late;
 *  (b) the state holds exactly the groups still open (nothing purgeable remains), and late
 *      rows are counted per group they were dropped from;
 *
 * and, after a last punctuation past every row, the output is the batch answer of the same
 * GROUP BY over the rows that were not late, and the state is empty.
 */
class EventTimeAggregatePropertySuite extends PunctuatedStreamTest {
  import testImplicits._
  import EventTimeAggregatePropertySuite._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private val minute = 60000000L
  private val base = EventTimeAggregateSuite.t("09:00").getTime * 1000L

  private val groupings: Seq[Grouping] = Seq(
    Grouping("tumbling window(ts, '10 minutes')", 10 * minute, 10 * minute,
      _.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n"), sum("v").as("total"))
        .select(col("window.start").as("start"), col("n"), col("total"))),
    Grouping("sliding window(ts, '10 minutes', '5 minutes')", 10 * minute, 5 * minute,
      _.groupBy(window(col("ts"), "10 minutes", "5 minutes")).agg(count("*").as("n"), sum("v").as("total"))
        .select(col("window.start").as("start"), col("n"), col("total"))),
    // a size no multiple of the slide: Spark keeps a filter of the window's own above its copies
    Grouping("sliding window(ts, '10 minutes', '4 minutes')", 10 * minute, 4 * minute,
      _.groupBy(window(col("ts"), "10 minutes", "4 minutes")).agg(count("*").as("n"), sum("v").as("total"))
        .select(col("window.start").as("start"), col("n"), col("total"))),
    Grouping("date_trunc('hour', ts)", 60 * minute, 60 * minute,
      _.groupBy(date_trunc("hour", col("ts")).as("start")).agg(count("*").as("n"), sum("v").as("total"))))

  for (g <- groupings; seed <- Seq(1, 2)) test(s"random interleavings: ${g.name}, seed $seed") {
    val rng = new Random(seed * 31 + g.name.hashCode)
    val input = MemoryStream[(Option[Timestamp], Option[Int], Boolean)]
    // "v" closes no group here: its punctuations are dropped above the source, changing nothing
    val df = declare(input.toDF().toDF("ts", "v", "p"), "events", Schemes -> "ts<=; v", Marker -> "p")
    val accepted = mutable.ArrayBuffer.empty[(Long, Int)]
    var bound = base - 1                // the highest punctuation so far: rows at or before it are late
    val emitted = mutable.ArrayBuffer.empty[Row]
    val open = mutable.Map.empty[Long, (Long, Long)]   // group start -> (rows, total)

    def batch(last: Boolean): (Seq[(Option[Timestamp], Option[Int], Boolean)], Long, Int) = {
      val rows = Seq.fill(4 + rng.nextInt(12)) {
        val ts = bound + 1 + (rng.nextInt(3) match {
          case 0 => rng.nextLong().abs % (40 * minute)
          case 1 => (rng.nextInt(8) + 1) * g.slide - 1 - (bound + 1 - base) % g.slide   // just before a boundary
          case _ => rng.nextInt(5) * g.slide - (bound + 1 - base) % g.slide             // on a boundary
        }).max(0L)
        (ts, rng.nextInt(100))
      }
      // late rows: far enough behind the bound that every group of theirs is closed
      val late = if (bound - base > 2 * g.size && rng.nextInt(2) == 0) Seq((bound - g.size - rng.nextInt(1000), 7)) else Nil
      val newBound = if (last) bound + 24 * 60 * minute else rng.nextInt(4) match {
        case 0 => bound                                                         // no punctuation
        case 1 => bound + rng.nextLong().abs % (25 * minute)
        case 2 => bound + g.slide - (bound + 1 - base) % g.slide                // the end of a window - 1 µs
        case _ => bound + g.slide - (bound + 1 - base) % g.slide + 1            // its end
      }
      val punctuations = if (newBound == bound) Nil
        else Seq((Some(ts(newBound)), None, true)) ++ (if (rng.nextBoolean()) Seq((Some(ts(bound)), None, true)) else Nil)
      val data = (rows ++ late).map { case (t, v) => (Some(ts(t)), Some(v), false) }
      val ignored = Seq.fill(rng.nextInt(3))((None, Some(rng.nextInt(100)), true))   // "no more v = ..."
      (rng.shuffle(data ++ punctuations ++ ignored), newBound) match {
        case (all, nb) =>
          var lateGroups = 0L
          rows.foreach { case (t, v) =>
            accepted += ((t, v))
            g.starts(t).foreach { s => val (n, total) = open.getOrElse(s, (0L, 0L)); open(s) = (n + 1, total + v) }
          }
          late.foreach { case (t, _) => lateGroups += g.starts(t).size }
          bound = nb
          open.keys.toSeq.filter(s => s + g.size - 1 <= bound).foreach { s =>
            val (n, total) = open.remove(s).get
            emitted += Row(ts(s), n, total)
          }
          (all, lateGroups, punctuations.size)
      }
    }

    val actions = (0 until 7).flatMap { i =>
      val (rows, lateGroups, received) = batch(last = i == 6)
      val (groups, output) = (open.size.toLong, emitted.toSeq)
      (if (i == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
        AddData(input, rows: _*),
        CheckAnswer(output: _*),
        AssertOnQuery(s"batch $i: $groups open groups, $lateGroups late") { q =>
          val p = punctuatedProgress(q)
          assert(p.numRowsTotal == groups, s"open groups ${p.numRowsTotal} != $groups ${p.json}")
          assert(p.customMetrics.get("numLateRowsDropped") == lateGroups, s"late != $lateGroups ${p.json}")
          // each time punctuation once, however many windows' copies it falls in; the v ones not
          assert(p.customMetrics.get("numPunctuationsReceived") == received, s"received != $received ${p.json}")
          true
        })
    }
    val batchAnswer = g.query(accepted.toSeq.map { case (t, v) => (ts(t), v) }.toDF("ts", "v")).collect().toSeq
    assert(batchAnswer.nonEmpty)
    testStream(g.query(df), OutputMode.Append())(actions ++ Seq(
      CheckAnswer(batchAnswer: _*),
      AssertOnQuery("the state drained") { q => punctuatedProgress(q).numRowsTotal == 0 }): _*)
  }
}

class EventTimeAggregatePropertyRocksDBSuite extends EventTimeAggregatePropertySuite with OnRocksDB

object EventTimeAggregatePropertySuite {
  /** A grouping of fixed-size groups `[start, start + size)` starting every `slide` (aligned at 0). */
  final case class Grouping(name: String, size: Long, slide: Long, query: DataFrame => DataFrame) {
    /** The starts of the groups of a row at `ts` (microseconds since the epoch). */
    def starts(ts: Long): Seq[Long] = {
      val last = ts - Math.floorMod(ts, slide)
      Iterator.iterate(last)(_ - slide).takeWhile(_ > ts - size).toSeq
    }
  }

  def ts(micros: Long): Timestamp = {
    val t = new Timestamp(Math.floorDiv(micros, 1000L))
    t.setNanos((Math.floorMod(micros, 1000000L) * 1000).toInt)
    t
  }
}
