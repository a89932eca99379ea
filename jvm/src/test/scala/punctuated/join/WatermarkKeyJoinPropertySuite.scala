package punctuated.join

import java.sql.Timestamp

import scala.collection.mutable
import scala.util.Random

import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of a watermark on a join-key column as a range punctuation
 * ([[WatermarkPunctuations.onKey]]): `a ⋈ b ON a.k = b.k AND a.ts = b.ts`, `a` declared with the
 * scheme `k` (marker rows), `b` undeclared with `withWatermark("ts", "0 seconds")`. Random rows
 * and key punctuations of `a` and rows of `b` (some below `b`'s watermark: late), compared after
 * every micro-batch with a model of the contract:
 *
 *  (a) the output so far is exactly the batch join of all non-late rows (each result once,
 *      across a restart from the checkpoint);
 *  (b) maximal purge: `a`'s rows stored are those whose `ts` `b`'s watermark has not passed,
 *      `b`'s those whose `k` `a` has not punctuated (`numRowsTotal`);
 *  (c) the late rows are counted (`numLateRowsDropped`, over the run);
 *  (d) once `a` has punctuated every key and `b`'s watermark has passed every row, no state is left.
 */
class WatermarkKeyJoinPropertySuite extends PunctuatedStreamTest {
  import testImplicits._

  protected def seeds: Seq[Int] = Seq(1, 2, 3, 4)
  private val batches = 5
  private val rowsPerBatch = 16

  /** 2026-01-01 12:00 plus `m` minutes, in ms. */
  private val base = Timestamp.valueOf("2026-01-01 12:00:00").getTime
  private def at(m: Long) = new Timestamp(base + m * 60000L)

  for (seed <- seeds) {
    test(s"random rows, key punctuations and a rising watermark vs the batch join, seed $seed") {
      val rng = new Random(seed * 7919)
      val (as, bs) = (MemoryStream[StampedRow], MemoryStream[StampedRow])
      val a = declare(as.toDF(), "a", Schemes -> "k", Marker -> "p")
      val b = bs.toDF().drop("p").withWatermark("ts", "0 seconds")
      val joined = a.join(b, a("k") === b("k") && a("ts") === b("ts")).select(a("k"), a("ts"), a("v"), b("v"))

      val rows = IndexedSeq(mutable.ArrayBuffer.empty[StampedRow], mutable.ArrayBuffer.empty[StampedRow])
      val closed = mutable.Set.empty[Int]      // a's punctuated keys
      var watermark = Long.MinValue            // b's watermark (minutes) the join has applied
      var clock = 0L
      var serial = 0
      var late = 0L
      var lateAtStart = 0L   // late rows before the batch being built
      var lateBefore = 0L    // late rows before the restart
      var purgedByWatermark = 0

      def row(k: Int, m: Long) = { serial += 1; StampedRow(Some(k), Some(at(m)), Some(serial)) }
      def minutes(r: StampedRow) = (r.ts.get.getTime - base) / 60000L

      def step(batch: Int, last: Boolean) = {
        clock += 1 + rng.nextInt(3)
        val add = IndexedSeq(mutable.ArrayBuffer.empty[StampedRow], mutable.ArrayBuffer.empty[StampedRow])
        if (last) {
          // a closes every key; b's row far ahead moves the watermark past every row
          (Seq(0, 1, 2, 3, 9)).foreach(k => add(0) += StampedRow(Some(k), None, None, p = true))
          add(1) += row(9, clock + 100)
          rows(1) += add(1).last
        } else (0 until rowsPerBatch).foreach { _ =>
          rng.nextInt(6) match {
            case 0 =>
              add(0) += StampedRow(Some(rng.nextInt(4)), None, None, p = true)
            case 1 | 2 =>
              val r = row(rng.nextInt(4), clock - 3 + rng.nextInt(5))
              add(0) += r
              if (closed.contains(r.k.get)) late += 1 else rows(0) += r
            case _ =>
              val r = row(rng.nextInt(4), clock - 3 + rng.nextInt(5))
              add(1) += r
              if (minutes(r) <= watermark) late += 1 else rows(1) += r
          }
        }
        // at the end of the batch: a's key punctuations; then (a batch without data) the
        // watermark: b's highest time so far
        add(0).filter(_.p).foreach(p => closed += p.k.get)
        val newWatermark = (rows(1).map(minutes) :+ watermark).max
        purgedByWatermark += rows(0).count(r => minutes(r) > watermark && minutes(r) <= newWatermark)
        watermark = newWatermark
        val expected = for (x <- rows(0); y <- rows(1) if x.k == y.k && x.ts == y.ts)
          yield (x.k.get, x.ts.get, x.v.get, y.v.get)
        val stored = rows(0).count(r => minutes(r) > watermark) + rows(1).count(r => !closed.contains(r.k.get))
        // the run's counter starts again at the restart (before batch 2)
        if (batch == 2) lateBefore = lateAtStart
        val lateThisRun = late - lateBefore
        lateAtStart = late
        (if (batch == 2) Seq(StopStream, StartStream()) else Nil) ++ Seq(
          MultiAddData(as, add(0).toSeq: _*)(bs, add(1).toSeq: _*),
          CheckAnswer(expected.toSeq: _*),
          AssertOnQuery(s"batch $batch: $stored rows stored") { q =>
            val p = punctuatedProgress(q)
            assert(p.numRowsTotal == stored, s"rows ${p.numRowsTotal} != $stored: ${p.json}")
            true
          },
          AssertCounted("numLateRowsDropped", lateThisRun))
      }
      val actions = (0 until batches).flatMap(i => step(i, last = false)) ++ step(batches, last = true)
      testStream(joined)(actions: _*)
      assert(rows.forall(_.nonEmpty) && purgedByWatermark > 0,
        s"the run exercised too little: $purgedByWatermark rows purged by the watermark")
    }
  }
}

class WatermarkKeyJoinPropertyRocksDBSuite extends WatermarkKeyJoinPropertySuite with OnRocksDB {
  override protected def seeds: Seq[Int] = Seq(5, 6)
}
