package punctuated.join.shedding

import scala.collection.mutable.ArrayBuffer

import punctuated.spark.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.execution.streaming.sources.MemorySink
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.TimedRow
import punctuated.spark.PunctuatedStreamTest

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

  for (policy <- Seq("life", "rand")) {
    test(s"$policy: a band join sheds within the budget, a subset of the exact join") {
      val out = run(policy, None)
      assert(out.nonEmpty && out.size < exact(steps).size, s"${out.size} of ${exact(steps).size}")
    }
  }
}

class SheddingBandJoinRocksDBSuite extends SheddingBandJoinSuite {
  override protected def sparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
}
