package punctuated.join

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.Row
import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of band-only joins ([[BandBuckets]]: `b.ts BETWEEN a.ts + lo AND a.ts + hi`, no
 * equality predicate, run on time buckets): random interleavings of rows and range punctuations
 * on time (`ts<=c`) on both inputs, compared after every micro-batch with a model of the
 * contract (Tucker et al. 2003 faithfulness and purge invariants):
 *
 *  (a) the output so far is exactly the batch join of all non-late input so far, each row once
 *      (no pair twice although one input's rows are copied into two buckets), across a restart;
 *      for the left outer join also the left rows whose band the right input's bound passed
 *      without a partner, null-padded, once;
 *  (b) maximal purge: the operator stores exactly the rows whose band the other input's bound
 *      has not passed, the replicated input's row once per bucket it covers (`numRowsTotal`);
 *  (c) `numLateRowsDropped` counts the rows at or below their own input's earlier bound (the
 *      replicated input's once per copy).
 */
class BandOnlyJoinPropertySuite extends PunctuatedStreamTest {
  import testImplicits._

  private val batches = 6
  private val rowsPerBatch = 24

  /** (name, lo, hi): b.ts - a.ts in [lo, hi]. */
  private val bands = Seq(("between", -3L, 4L), ("after", 1L, 5L), ("before", -6L, -2L))

  /** The seeds of each band and join type. */
  protected def seeds: Seq[Int] = Seq(1, 2)

  for ((name, lo, hi) <- bands; joinType <- Seq("inner", "left_outer"); seed <- seeds) {
    test(s"random interleavings vs the batch join: $joinType, $name band, seed $seed") {
      val rng = new Random((name + joinType).hashCode * 31 + seed)
      val as = MemoryStream[TimedRow]
      val bs = MemoryStream[TimedRow]
      val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
      val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
      val joined = a.join(b, b("ts") >= a("ts") + lo && b("ts") <= a("ts") + hi, joinType)
        .select(a("ts"), a("v"), b("ts"), b("v"))

      // the bucket layout (BandBuckets): inner copies a's rows, left outer b's
      val width = hi - lo + 1
      val replicated = if (joinType == "inner") 0 else 1
      val (from, to) = if (replicated == 0) (lo, hi) else (-hi, -lo)
      def copies(i: Int, t: Long): Int =
        if (i != replicated) 1 else (Math.floorDiv(t + to, width) - Math.floorDiv(t + from, width) + 1).toInt

      val rows = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
      val bound = Array(Long.MinValue, Long.MinValue)
      val reach = IndexedSeq(hi, -lo)
      var clock = 0L
      var serial = 0
      def joins(x: TimedRow, y: TimedRow) = y.ts.get - x.ts.get >= lo && y.ts.get - x.ts.get <= hi
      def gone(i: Int, r: TimedRow) = r.ts.get + reach(i) <= bound(1 - i)
      var lateTotal = 0L
      var purged = 0
      var padded = 0

      val actions = (0 until batches).flatMap { batch =>
        clock += 2 + rng.nextInt(4)
        val add = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
        var late = 0L
        val newBound = bound.clone()
        (0 until rowsPerBatch).foreach { _ =>
          val i = rng.nextInt(2)
          if (rng.nextInt(7) == 0) {
            val c = clock - rng.nextInt(4)
            add(i) += TimedRow(None, Some(c), None, p = true)
            newBound(i) = math.max(newBound(i), c)
          } else {
            serial += 1
            val t = clock - 5 + rng.nextInt(10)
            // the left outer join's right rows at multiples of 10 only: some left bands hold none
            val r = TimedRow(Some(rng.nextInt(3)), Some(if (joinType == "inner" || i == 0) t else t - Math.floorMod(t, 10L)), Some(serial))
            add(i) += r
            if (r.ts.get <= bound(i)) late += copies(i, r.ts.get) else rows(i) += r
          }
        }
        Array.copy(newBound, 0, bound, 0, 2)
        lateTotal += late
        val pairs = for (x <- rows(0); y <- rows(1) if joins(x, y))
          yield Row(x.ts.get, x.v.get, y.ts.get, y.v.get)
        val unmatched = if (joinType == "inner") Nil else
          rows(0).filter(x => gone(0, x) && !rows(1).exists(joins(x, _))).map(x => Row(x.ts.get, x.v.get, null, null))
        val expected = pairs ++ unmatched
        val stored = (0 to 1).map(i => rows(i).filterNot(gone(i, _)).map(r => copies(i, r.ts.get)).sum).sum
        purged += (0 to 1).map(i => rows(i).count(gone(i, _))).sum
        padded += unmatched.size
        val lateNow = late
        (if (batch == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
          MultiAddData(as, add(0).toSeq: _*)(bs, add(1).toSeq: _*),
          CheckAnswer(expected.toSeq: _*),
          AssertOnQuery(s"batch $batch: $stored rows stored, $lateNow late") { q =>
            val p = punctuatedProgress(q)
            assert(p.numRowsTotal == stored, s"rows ${p.numRowsTotal} != $stored: ${p.json}")
            assert(p.customMetrics.get("numLateRowsDropped") == lateNow,
              s"late ${p.customMetrics.get("numLateRowsDropped")} != $lateNow: ${p.json}")
            true
          })
      }
      testStream(joined)(actions: _*)
      assert(rows.forall(_.nonEmpty) && purged > 0 && lateTotal > 0 && (joinType == "inner" || padded > 0),
        s"the run exercised too little: $purged rows out of their band, $lateTotal late, $padded padded")
    }
  }
}

/** [[BandOnlyJoinPropertySuite]] on RocksDB state stores (one seed). */
class BandOnlyJoinPropertyRocksDBSuite extends BandOnlyJoinPropertySuite with OnRocksDB {
  override protected def seeds: Seq[Int] = Seq(1)
}
