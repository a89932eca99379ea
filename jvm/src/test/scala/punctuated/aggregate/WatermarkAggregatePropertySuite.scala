package punctuated.aggregate

import java.sql.Timestamp

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.Row
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{col, count, sum, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of watermarks as punctuations of a punctuated aggregation ([[WatermarkClosing]]):
 * `GROUP BY window(ts, '10 seconds'), k` over a stream declaring `k` and watermarked on `ts`
 * (5 seconds delay), random interleavings of rows (some behind the watermark) and `k`
 * punctuations, a stop/restart from the checkpoint before the fourth batch. The oracle
 * follows Spark's watermark (after each batch: the highest time seen minus the delay; a batch
 * without data follows when it rose) and Tucker et al.'s group-by invariants. After every
 * micro-batch:
 *
 *  (a) the output so far is exactly the groups closed so far — by a punctuation on their `k`,
 *      or by a watermark `w` with `end - 1 µs <= w` — each emitted once, with the aggregates of
 *      its rows that were not late (a row is late when its group was closed before its batch);
 *  (b) the state holds exactly the groups still open (nothing purgeable remains);
 *
 * and, after every `k` is punctuated, the output is the batch answer of the same GROUP BY over
 * the rows that were not late, and the state is empty.
 */
class WatermarkAggregatePropertySuite extends PunctuatedStreamTest {
  import testImplicits._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private val second = 1000000L
  private val size = 10 * second
  private val delay = 5 * second
  private val base = Timestamp.valueOf("2026-01-01 12:00:00").getTime * 1000L
  private def ts(micros: Long) = new Timestamp(micros / 1000L)

  private def query(df: org.apache.spark.sql.DataFrame) =
    df.groupBy(window(col("ts"), "10 seconds"), col("k")).agg(count("*").as("n"), sum("v").as("total"))
      .select(col("window.start").as("start"), col("k"), col("n"), col("total"))

  for (seed <- Seq(1, 2, 3)) test(s"random interleavings of rows, k punctuations and a rising watermark, seed $seed") {
    val rng = new Random(seed)
    val input = MemoryStream[(Option[Int], Option[Timestamp], Option[Int], Boolean)]
    val df = declare(input.toDF().toDF("k", "ts", "v", "p"), "events", Schemes -> "k", Marker -> "p")
      .withWatermark("ts", "5 seconds")
    val keys = 1 to 5
    val punctuated = mutable.Set.empty[Int]
    var clock = base + 30 * second
    var maxSeen = Long.MinValue
    var watermark = 0L                         // µs; 0: none yet
    val accepted = mutable.ArrayBuffer.empty[(Int, Long, Int)]
    val open = mutable.Map.empty[(Long, Int), (Long, Long)]   // (start, k) -> (rows, total)
    val emitted = mutable.ArrayBuffer.empty[Row]
    var late, byWatermark = 0

    def closed(start: Long, k: Int): Boolean =
      punctuated.contains(k) || (watermark > 0 && start + size - 1 <= watermark)
    def close(): Unit = open.keys.toSeq.filter { case (s, k) => closed(s, k) }.foreach { g =>
      val (n, total) = open.remove(g).get
      emitted += Row(ts(g._1), g._2, n, total)
      if (!punctuated.contains(g._2)) byWatermark += 1
    }

    /** One batch's rows (data and punctuations), applied to the oracle. */
    def batch(last: Boolean): Seq[(Option[Int], Option[Timestamp], Option[Int], Boolean)] = {
      clock += rng.nextInt(12) * second + rng.nextInt(1000) * 1000L
      val rows = Seq.fill(3 + rng.nextInt(8)) {
        (keys(rng.nextInt(keys.size)), clock - 15 * second + rng.nextInt(25) * second + rng.nextInt(3) * 1000L, rng.nextInt(100))
      }
      val newlyPunctuated = if (last) keys.filterNot(punctuated.contains)
        else if (rng.nextInt(3) == 0) Seq(keys(rng.nextInt(keys.size))).filterNot(punctuated.contains) else Nil
      // rows of groups closed before this batch are late; the rest count
      rows.foreach { case (k, t, v) =>
        val start = t - Math.floorMod(t - base, size)
        if (!closed(start, k)) {
          accepted += ((k, t, v))
          val (n, total) = open.getOrElse((start, k), (0L, 0L))
          open((start, k)) = (n + 1, total + v)
        } else late += 1
      }
      punctuated ++= newlyPunctuated
      close()                                             // this batch, at the watermark it ran with
      maxSeen = (rows.map(_._2) :+ maxSeen).max
      val next = (maxSeen - delay) / 1000L * 1000L        // Spark's watermark, in whole milliseconds
      if (next > watermark) { watermark = next; close() } // the batch without data that follows
      rng.shuffle(rows.map { case (k, t, v) => (Some(k), Some(ts(t)), Some(v), false) } ++
        newlyPunctuated.map(k => (Some(k), None, None, true)))
    }

    val actions = (0 until 7).flatMap { i =>
      val rows = batch(last = i == 6)
      val (groups, output) = (open.size.toLong, emitted.toSeq)
      (if (i == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
        AddData(input, rows: _*),
        CheckAnswer(output: _*),
        AssertOnQuery(s"batch $i: $groups open groups") { q =>
          val p = punctuatedProgress(q)
          assert(p.numRowsTotal == groups, s"open groups ${p.numRowsTotal} != $groups ${p.json}")
          true
        })
    }
    val batchAnswer = query(accepted.toSeq.map { case (k, t, v) => (k, ts(t), v) }.toDF("k", "ts", "v")).collect().toSeq
    // the interleaving has late rows and groups the watermark closed before their k's punctuation
    assert(batchAnswer.nonEmpty && late > 0 && byWatermark > 0, s"late $late, closed by the watermark $byWatermark")
    testStream(query(df), OutputMode.Append())(actions ++ Seq(
      CheckAnswer(batchAnswer: _*),
      AssertOnQuery("the state drained") { q => punctuatedProgress(q).numRowsTotal == 0 }): _*)
  }
}

class WatermarkAggregatePropertyRocksDBSuite extends WatermarkAggregatePropertySuite with OnRocksDB
