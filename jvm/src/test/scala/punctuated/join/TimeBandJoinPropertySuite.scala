package punctuated.join

import scala.collection.mutable
import scala.util.Random

import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of time-band joins ([[TimeBand]]): random interleavings of rows and range
 * punctuations on time (`ts<=c`) on both inputs, compared after every micro-batch with a model
 * of the contract (Tucker et al. 2003 faithfulness and purge invariants):
 *
 *  (a) the output so far is exactly the batch join of all non-late input so far (each row once,
 *      across a restart from the checkpoint);
 *  (b) maximal purge: the operator stores exactly the rows whose band the other input's bound
 *      has not passed (`numRowsTotal`);
 *  (c) `numLateRowsDropped` counts the rows at or below their own input's earlier bound.
 *
 * Join `a.k = b.k AND b.ts BETWEEN a.ts + lo AND a.ts + hi` for several bands (both bounds,
 * lower only, upper only with key punctuations on the other side), integer time, keys in a
 * small domain, time advancing by random steps with rows scattered around the bounds.
 */
class TimeBandJoinPropertySuite extends PunctuatedStreamTest {
  import testImplicits._

  private val batches = 6
  private val rowsPerBatch = 24

  /** (name, lo, hi): b.ts - a.ts in [lo, hi]; None: unbounded. */
  private val bands = Seq(("between", Some(-3L), Some(4L)), ("after", Some(1L), Some(5L)),
    ("lower-only", Some(-2L), None), ("upper-only", None, Some(3L)))

  /** The seeds of each band (RocksDB: the first). */
  protected def seeds: Seq[Int] = Seq(1, 2)

  for ((name, lo, hi) <- bands; seed <- seeds) {
    test(s"random interleavings vs the batch join: $name band, seed $seed") {
      val rng = new Random(name.hashCode * 31 + seed)
      val as = MemoryStream[TimedRow]
      val bs = MemoryStream[TimedRow]
      // an unbounded side is purged by the other input's key punctuations (strict safety)
      val a = declare(as.toDF(), "a", Schemes -> (if (lo.isEmpty) "ts<=; k" else "ts<="), Marker -> "p")
      val b = declare(bs.toDF(), "b", Schemes -> (if (hi.isEmpty) "ts<=; k" else "ts<="), Marker -> "p")
      val cond = Seq(lo.map(l => b("ts") >= a("ts") + l), hi.map(h => b("ts") <= a("ts") + h)).flatten
        .foldLeft(a("k") === b("k"))(_ && _)
      val joined = a.join(b, cond).select(a("k"), a("ts"), a("v"), b("ts"), b("v"))

      // model: per input the non-late rows, its bound, its key punctuations
      val rows = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
      val bound = Array(Long.MinValue, Long.MinValue)
      val keysClosed = IndexedSeq(mutable.Set.empty[Int], mutable.Set.empty[Int])
      val reach = IndexedSeq(hi, lo.map(-_))
      var clock = 0L
      var serial = 0
      def joins(x: TimedRow, y: TimedRow) = x.k == y.k &&
        lo.forall(l => y.ts.get - x.ts.get >= l) && hi.forall(h => y.ts.get - x.ts.get <= h)
      def storedNow(i: Int, r: TimedRow) =
        !reach(i).exists(re => r.ts.get + re <= bound(1 - i)) && !keysClosed(1 - i).contains(r.k.get)
      var lateTotal = 0L
      // the run must exercise what it checks: results, purges by time, late rows
      var purgedByTime = 0

      val actions = (0 until batches).flatMap { batch =>
        clock += 2 + rng.nextInt(4)
        val add = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
        var late = 0L
        val newBound = bound.clone()
        (0 until rowsPerBatch).foreach { _ =>
          val i = rng.nextInt(2)
          rng.nextInt(8) match {
            case 0 =>
              val c = clock - rng.nextInt(4)
              add(i) += TimedRow(None, Some(c), None, p = true)
              newBound(i) = math.max(newBound(i), c)
            case 1 if (if (i == 0) lo.isEmpty else hi.isEmpty) =>
              // a key punctuation (only where the other side's rows need it)
              val k = rng.nextInt(4)
              add(i) += TimedRow(Some(k), None, None, p = true)
            case _ =>
              serial += 1
              val r = TimedRow(Some(rng.nextInt(4)), Some(clock - 4 + rng.nextInt(8)), Some(serial))
              add(i) += r
              if (r.ts.get <= bound(i) || keysClosed(i).contains(r.k.get)) late += 1
              else rows(i) += r
          }
        }
        // key punctuations of this batch take effect at its end (as the bounds)
        for (i <- 0 to 1; p <- add(i) if p.p && p.k.isDefined) keysClosed(i) += p.k.get
        Array.copy(newBound, 0, bound, 0, 2)
        lateTotal += late
        val expected = for (x <- rows(0); y <- rows(1) if joins(x, y))
          yield (x.k.get, x.ts.get, x.v.get, y.ts.get, y.v.get)
        val stored = (0 to 1).map(i => rows(i).count(storedNow(i, _))).sum
        purgedByTime += (0 to 1).map(i => rows(i).count(r => reach(i).exists(re => r.ts.get + re <= bound(1 - i)))).sum
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
      assert(rows.forall(_.nonEmpty) && purgedByTime > 0 && lateTotal > 0,
        s"the run exercised too little: $purgedByTime rows out of their band, $lateTotal late")
    }
  }
}

class TimeBandJoinPropertyRocksDBSuite extends TimeBandJoinPropertySuite with OnRocksDB {
  override protected def seeds: Seq[Int] = Seq(1)
}
