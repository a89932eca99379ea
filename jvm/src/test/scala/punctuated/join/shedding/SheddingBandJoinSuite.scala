package punctuated.join.shedding

import scala.collection.mutable.ArrayBuffer

import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.execution.streaming.sources.MemorySink
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.TimedRow
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Load shedding in a time-band join: the paper's sliding window (Das, Gehrke and Riedewald
 * 2005, §2.1, window w = 3) as `a.k = b.k AND b.ts BETWEEN a.ts - 2 AND a.ts + 2`, each input
 * punctuating `ts <= step` every micro-batch, with a budget of 3 rows in one partition. The
 * shedding estimators and the band's time index share the `punctuated-meta` store in distinct
 * namespaces (they once collided: the second batch failed reading a time-index entry as an
 * estimator). Checks after every batch: at most the budget stored, the output a duplicate-free
 * subset of the exact band join, and (PROB) a restart in the middle gives the same output. On the
 * HDFS-backed store; [[SheddingBandJoinRocksDBSuite]] runs the same on RocksDB.
 */
class SheddingBandJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val steps = 6
  private val budget = 3L
  /** Step s: a sends keys 0, 0, 1 and b sends 0, 1, 2 (Zipf-like skew to 0); v = a unique id. */
  private def aRows(s: Int) = Seq(0, 0, 1).zipWithIndex.map { case (k, i) => TimedRow(Some(k), Some(s.toLong), Some(10 * s + i)) }
  private def bRows(s: Int) = Seq(0, 1, 2).zipWithIndex.map { case (k, i) => TimedRow(Some(k), Some(s.toLong), Some(10 * s + i)) }
  private def upTo(s: Int) = TimedRow(None, Some(s.toLong), None, p = true)

  /** (a.v, b.v) of the exact band join over the first `upTo` steps. */
  private def exact(upTo: Int): Set[(Int, Int)] =
    (for (x <- 0 until upTo; y <- 0 until upTo; a <- aRows(x); b <- bRows(y)
          if a.k == b.k && math.abs(x - y) <= 2) yield (a.v.get, b.v.get)).toSet

  private def sinkRows(q: StreamExecution): Seq[(Int, Int)] =
    q.sink.asInstanceOf[MemorySink].allData.map(r => (r.getInt(0), r.getInt(1)))

  private def check(upTo: Int) = AssertOnQuery(s"budget and subset after step $upTo") { q =>
    val held = punctuatedProgress(q).numRowsTotal
    assert(held <= budget, s"$held rows stored, budget $budget")
    val out = sinkRows(q)
    assert(out.distinct.size == out.size, s"duplicates in $out")
    assert(out.toSet.subsetOf(exact(upTo)), s"false rows: ${out.toSet -- exact(upTo)}")
    true
  }

  private def run(policy: String, restartAt: Option[Int]): Seq[(Int, Int)] = {
    val out = ArrayBuffer.empty[(Int, Int)]
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
        PunctuatedConf.SheddingMaxStateRows -> budget.toString, PunctuatedConf.SheddingPolicy -> policy) {
      val as = MemoryStream[TimedRow]
      val bs = MemoryStream[TimedRow]
      val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
      val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
      val joined = a.join(b, a("k") === b("k") && b("ts").between(a("ts") - 2, a("ts") + 2)).select(a("v"), b("v"))
      val actions = (0 until steps).flatMap { s =>
        Seq(MultiAddData(as, aRows(s) :+ upTo(s): _*)(bs, bRows(s) :+ upTo(s): _*), ProcessAllAvailable(),
          check(s + 1)) ++ (if (restartAt.contains(s)) Seq(StopStream, StartStream()) else Nil)
      }
      testStream(joined)(actions ++ Seq(AssertOnQuery("collect") { q => out ++= sinkRows(q); true }): _*)
    }
    out.toSeq
  }

  test("prob: a band join sheds within the budget, a subset of the exact join, the same after a restart") {
    val uninterrupted = run("prob", None)
    assert(uninterrupted.nonEmpty && uninterrupted.size < exact(steps).size,
      s"shedding should lose some results: ${uninterrupted.size} of ${exact(steps).size}")
    assert(run("prob", Some(2)).sorted == uninterrupted.sorted, "a restart in the middle changed the output")
  }

  /**
   * LIFE over a band ranks by time left in the band (the paper's `w - age`), PROB by frequency:
   * band reach 10 both ways, budget 1. Batch 0: b sends key 1 three times and key 2 twice (at
   * ts 50, purged at once by a's ts<=90) so that b's estimator has them. Batch 1: a stores
   * A1 (k 1, ts 100) and A2 (k 2, ts 108), b says ts<=109: A1 has 100 + 10 - 109 + 1 = 2 left
   * (priority 0.6 x 2), A2 has 10 (0.4 x 10). PROB keeps A1, LIFE keeps A2. Batch 2: b sends
   * keys 1 and 2 at ts 110, in both rows' bands: the output says which row was kept.
   */
  private def keptBy(policy: String): Seq[(Int, Int)] = {
    var out = Seq.empty[(Int, Int)]
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
        PunctuatedConf.SheddingMaxStateRows -> "1", PunctuatedConf.SheddingPolicy -> policy) {
      val as = MemoryStream[TimedRow]
      val bs = MemoryStream[TimedRow]
      val a = declare(as.toDF(), "a", Schemes -> "ts<=", Marker -> "p")
      val b = declare(bs.toDF(), "b", Schemes -> "ts<=", Marker -> "p")
      val joined = a.join(b, a("k") === b("k") && b("ts").between(a("ts") - 10, a("ts") + 10)).select(a("v"), b("v"))
      def row(k: Int, ts: Long, v: Int) = TimedRow(Some(k), Some(ts), Some(v))
      def upTo(ts: Long) = TimedRow(None, Some(ts), None, p = true)
      testStream(joined)(
        MultiAddData(as, upTo(90))(bs, row(1, 50, 1), row(1, 50, 2), row(1, 50, 3), row(2, 50, 4), row(2, 50, 5)),
        ProcessAllAvailable(),
        AssertOnQuery("b's rows purged by a's bound") { q => punctuatedProgress(q).numRowsTotal == 0 },
        MultiAddData(as, row(1, 100, 101), row(2, 108, 102))(bs, upTo(109)),
        ProcessAllAvailable(),
        AssertOnQuery("one row kept, one shed") { q =>
          val p = punctuatedProgress(q)
          p.numRowsTotal == 1 && p.customMetrics.get("numRowsShed") == 1
        },
        AddData(bs, row(1, 110, 6), row(2, 110, 7)),
        ProcessAllAvailable(),
        AssertOnQuery("collect") { q => out = sinkRows(q); true })
    }
    out
  }

  test("life: over a band the row with more time left in its band is kept; prob keeps the more frequent") {
    assert(keptBy("prob") == Seq((101, 6)), "prob keeps A1 (b sent key 1 more often)")
    assert(keptBy("life") == Seq((102, 7)), "life keeps A2 (10 left in its band against 2)")
  }

  for (policy <- Seq("life", "rand")) {
    test(s"$policy: a band join sheds within the budget, a subset of the exact join") {
      val out = run(policy, None)
      assert(out.nonEmpty && out.size < exact(steps).size, s"${out.size} of ${exact(steps).size}")
    }
  }
}

class SheddingBandJoinRocksDBSuite extends SheddingBandJoinSuite with OnRocksDB
