package punctuated.join

import scala.collection.mutable
import scala.util.Random

import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{count, expr, sum}
import org.apache.spark.sql.streaming.OutputMode

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of a band join's output punctuations on time ([[TimeBandJoin.outputBound]])
 * feeding a punctuated aggregation: random interleavings of rows and `ts<=c` punctuations on
 * both inputs of `a.k = b.k AND b.ts - a.ts in [lo, hi]` (integer time), grouped by
 * `<input>.ts div 5` in append mode, compared after every micro-batch with a model:
 *
 *  (a) safety: every group emitted is final — its count and sum are the batch answer over all
 *      non-late input, even for pairs that arrive later (Tucker et al. 2003: a punctuation is a
 *      promise; a premature output punctuation would emit a group short of them);
 *  (b) completeness, as soon as allowed: the groups emitted are exactly those below the output
 *      bound `min(C_i, C_o - reach_i)` the inputs' bounds imply — none held back;
 *  (c) each group once, across a restart from the checkpoint.
 */
class BandOutputPunctuationPropertySuite extends PunctuatedStreamTest {
  import testImplicits._

  private val batches = 7
  private val rowsPerBatch = 24
  private val width = 5L

  /** (name, lo, hi, the input whose time is grouped). */
  private val cases = Seq(("between", -3L, 4L, 0), ("after", 1L, 5L, 0), ("between, by b.ts", -3L, 4L, 1))

  /** The seeds of each case (RocksDB: the first). */
  protected def seeds: Seq[Int] = Seq(1, 2)

  for ((name, lo, hi, by) <- cases; seed <- seeds) {
    test(s"windows over a band join vs the batch answer: $name, seed $seed") {
      val rng = new Random(name.hashCode * 31 + seed)
      val as = MemoryStream[TimedRow]
      val bs = MemoryStream[TimedRow]
      val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
      val b = declare(bs.toDF().toDF("bk", "bts", "bv", "bp"), "b", Schemes -> "bts<=", Marker -> "bp")
      val joined = a.join(b, $"k" === $"bk" && $"bts" >= $"ts" + lo && $"bts" <= $"ts" + hi)
      val out = joined.groupBy(expr(s"${if (by == 0) "ts" else "bts"} div $width").as("w")).agg(count("*").as("n"), sum($"v" * 100 + $"bv").as("s"))

      // model: per input the non-late rows and its bound
      val rows = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
      val bound = Array(Long.MinValue, Long.MinValue)
      val reach = IndexedSeq(hi, -lo)
      var clock = 10L   // times stay positive: `div` and the model's `/` agree
      var serial = 0
      def joins(x: TimedRow, y: TimedRow) = x.k == y.k && y.ts.get - x.ts.get >= lo && y.ts.get - x.ts.get <= hi
      /** The output bound on input `by`'s time: none until both inputs have a bound. */
      def outputBound: Option[Long] =
        if (bound.contains(Long.MinValue)) None else Some(math.min(bound(by), bound(1 - by) - reach(by)))
      var emittedTotal = 0

      val actions = (0 until batches).flatMap { batch =>
        clock += 2 + rng.nextInt(4)
        val add = IndexedSeq(mutable.ArrayBuffer.empty[TimedRow], mutable.ArrayBuffer.empty[TimedRow])
        val newBound = bound.clone()
        (0 until rowsPerBatch).foreach { _ =>
          val i = rng.nextInt(2)
          if (rng.nextInt(7) == 0) {
            val c = clock - rng.nextInt(4)
            add(i) += TimedRow(None, Some(c), None, p = true)
            newBound(i) = math.max(newBound(i), c)
          } else {
            serial += 1
            val r = TimedRow(Some(rng.nextInt(3)), Some(clock - 4 + rng.nextInt(8)), Some(serial))
            add(i) += r
            if (r.ts.get > bound(i)) rows(i) += r
          }
        }
        Array.copy(newBound, 0, bound, 0, 2)
        val pairs = for (x <- rows(0); y <- rows(1) if joins(x, y)) yield (x, y)
        // future rows of input `by` in the output lie above the bound t: their groups are at least (t + 1) div 5
        val closed = outputBound.map(t => (w: Long) => w < (t + 1) / width).getOrElse((_: Long) => false)
        val groups = pairs.groupBy { case (x, y) => (if (by == 0) x else y).ts.get / width }
        val expected = groups.collect { case (w, ps) if closed(w) =>
          (w, ps.size.toLong, ps.map { case (x, y) => x.v.get.toLong * 100 + y.v.get }.sum)
        }.toSeq
        emittedTotal = expected.size
        (if (batch == 3) Seq(StopStream, StartStream()) else Nil) ++ Seq(
          MultiAddData(as, add(0).toSeq: _*)(bs, add(1).toSeq: _*),
          CheckAnswer(expected: _*))
      }
      testStream(out, OutputMode.Append())(actions: _*)
      assert(emittedTotal > 1, s"the run closed too few groups: $emittedTotal")
    }
  }
}

class BandOutputPunctuationPropertyRocksDBSuite extends BandOutputPunctuationPropertySuite with OnRocksDB {
  override protected def seeds: Seq[Int] = Seq(1)
}
