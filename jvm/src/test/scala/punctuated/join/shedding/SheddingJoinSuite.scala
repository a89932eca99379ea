package punctuated.join.shedding

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.AnalysisException
import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.execution.streaming.sources.MemorySink
import org.apache.spark.sql.functions.{count, lit}
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/** A row of input L, `(k, v)` (declared, scheme `k`): never punctuated here, so R's rows are never purged. */
object LRow { def apply(k: Long, v: Long): (Long, Long) = (k, v) }
/** A row of input R, `(k, w)` (undeclared): L's rows can never be purged (strict safety needs the budget). */
object RRow { def apply(k: Long, w: Long): (Long, Long) = (k, w) }

/**
 * Load shedding in the binary punctuated join (Das, Gehrke and Riedewald 2005, §4.2) on real
 * Spark state stores: the budget holds in every partition after every batch (read back from
 * the checkpoint with `statestore`), the output is a duplicate-free subset of the exact join,
 * `numRowsShed` counts what the exact state holds more, a restart in the middle gives the same
 * output, PROB beats RAND on a skewed input, and shedding is refused where results would be
 * wrong. On the HDFS-backed store; [[SheddingJoinRocksDBSuite]] runs the same on RocksDB.
 */
class SheddingJoinSuite extends PunctuatedStreamTest {
  import testImplicits._

  /** L and R as streams of one type, so that one action adds a batch to both at once. */
  private def inputs() = {
    val l = MemoryStream[(Long, Long)]
    val r = MemoryStream[(Long, Long)]
    val ld = declare(l.toDF().toDF("k", "v").withColumn("is_punct", lit(false)), "l",
      Schemes -> "k", Marker -> "is_punct")
    (l, r, ld, r.toDF().toDF("k", "w"))
  }

  private def query() = {
    val (l, r, ld, rd) = inputs()
    (l, r, ld.join(rd, ld("k") === rd("k")).select(ld("k"), ld("v"), rd("w")))
  }

  /** Batches of (L rows, R rows): keys 0..5 skewed to 0, every row distinct. */
  private val batches: Seq[(Seq[(Long, Long)], Seq[(Long, Long)])] = (0 until 6).map { b =>
    val ls = (0 until 7).map(i => LRow(if (i % 3 == 0) 0 else (i + b) % 6, 1000 * b + i))
    val rs = (0 until 6).map(i => RRow(if (i % 2 == 0) 0 else (i * b) % 6, 1000 * b + i))
    (ls, rs)
  }

  private def exact(upTo: Int): Set[(Long, Long, Long)] = {
    val ls = batches.take(upTo).flatMap(_._1)
    val rs = batches.take(upTo).flatMap(_._2)
    (for (l <- ls; r <- rs if l._1 == r._1) yield (l._1, l._2, r._2)).toSet
  }

  private def sinkRows(q: StreamExecution): Seq[(Long, Long, Long)] =
    q.sink.asInstanceOf[MemorySink].allData.map(r => (r.getLong(0), r.getLong(1), r.getLong(2)))

  /** Stored data rows per partition, read from the checkpoint's last committed version. */
  private def rowsPerPartition(q: StreamExecution): Map[Int, Long] =
    Seq("left-punctuated-rows", "right-punctuated-rows").flatMap { store =>
      spark.read.format("statestore").option("operatorId", "0").option("storeName", store)
        .load(q.resolvedCheckpointRoot).groupBy("partition_id").count().collect()
        .map(r => r.getInt(0) -> r.getLong(1))
    }.groupMapReduce(_._1)(_._2)(_ + _)

  /** numRowsShed, numRowsShedLeft, numRowsShedRight per batch id, across restarts of one run. */
  private val shedByBatch = scala.collection.mutable.Map.empty[Long, (Long, Long, Long)]

  private def checks(budget: Long, upTo: Int) = AssertOnQuery(s"budget, subset, numRowsShed after $upTo") { q =>
    val perPartition = rowsPerPartition(q)
    assert(perPartition.values.forall(_ <= budget), s"over budget $budget: $perPartition")
    val out = sinkRows(q)
    assert(out.distinct.size == out.size, s"duplicates in $out")
    assert(out.toSet.subsetOf(exact(upTo)), s"false rows: ${out.toSet -- exact(upTo)}")
    // nothing is ever purged here, so the exact state holds every row that arrived
    val arrived = batches.take(upTo).map(b => b._1.size + b._2.size).sum
    // (a trigger without data reports the last batch's operator metrics again: skipped)
    q.recentProgress.filter(p => p.stateOperators.nonEmpty && p.numInputRows > 0).foreach { p =>
      val m = p.stateOperators.head.customMetrics
      shedByBatch(p.batchId) = (m.get("numRowsShed"), m.get("numRowsShedLeft"), m.get("numRowsShedRight"))
    }
    val shed = shedByBatch.values.map(_._1).sum
    val held = punctuatedProgress(q).numRowsTotal
    assert(held == perPartition.values.sum, s"numRowsTotal $held != $perPartition")
    assert(shed == arrived - held, s"numRowsShed $shed != $arrived - $held")
    val left = shedByBatch.values.map(_._2).sum
    val right = shedByBatch.values.map(_._3).sum
    assert(left + right == shed, s"per input $left + $right != $shed")
    true
  }

  /** The batches of `range`, checked after each (`checked`) or after the last only. */
  private def steps(l: MemoryStream[(Long, Long)], r: MemoryStream[(Long, Long)], budget: Long, range: Range,
      checked: Boolean) =
    range.flatMap { b =>
      // both inputs' rows in one micro-batch
      Seq(MultiAddData(l, batches(b)._1: _*)(r, batches(b)._2: _*), ProcessAllAvailable()) ++
        (if (checked || b == range.last) Seq(checks(budget, b + 1)) else Nil)
    }

  private def run(partitions: Int, policy: String, budget: Long, restartAt: Option[Int]): Seq[(Long, Long, Long)] = {
    val out = ArrayBuffer.empty[(Long, Long, Long)]
    shedByBatch.clear()
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString,
        PunctuatedConf.SheddingMaxStateRows -> budget.toString, PunctuatedConf.SheddingPolicy -> policy) {
      val (l, r, joined) = query()
      val planned = AssertOnQuery("punctuated join") { q =>
        q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size == 1
      }
      val collect = AssertOnQuery("collect") { q => out ++= sinkRows(q); true }
      val all = 0 until batches.size
      val actions = restartAt match {
        case None => steps(l, r, budget, all, checked = false) ++ Seq(planned, collect)
        case Some(n) =>
          // the sink is kept across the restart (the memory sink of one testStream)
          steps(l, r, budget, 0 until n, checked = true) ++ Seq(StopStream, StartStream()) ++
            steps(l, r, budget, n until batches.size, checked = true) ++ Seq(planned, collect)
      }
      testStream(joined)(actions: _*)
    }
    out.toSeq
  }

  /** The budget runs: partitions and shedding policy. */
  protected def budgetRuns: Seq[(Int, String)] = Seq(1 -> "prob", 3 -> "life", 3 -> "rand")

  for ((partitions, policy) <- budgetRuns) {
    test(s"$policy, $partitions partition(s): budget kept, a subset of the exact join, numRowsShed, restart") {
      val budget = 4L
      val uninterrupted = run(partitions, policy, budget, None)
      assert(uninterrupted.nonEmpty && uninterrupted.size < exact(batches.size).size,
        s"shedding should lose some results: ${uninterrupted.size} of ${exact(batches.size).size}")
      val restarted = run(partitions, policy, budget, Some(3))
      assert(restarted.sorted == uninterrupted.sorted, "a restart in the middle changed the output")
    }
  }

  test("PROB keeps the rows whose value the other input sends often: more results than RAND", NotOnRocksDB) {
    def results(policy: String): Int = {
      var n = 0
      withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
          PunctuatedConf.SheddingMaxStateRows -> "5", PunctuatedConf.SheddingPolicy -> policy) {
        val (l, r, joined) = query()
        testStream(joined)(
          AddData(r, (0 until 20).map(i => RRow(1, i)): _*),          // R sends value 1 often
          ProcessAllAvailable(),
          AddData(l, (Seq(LRow(1, 0), LRow(1, 1)) ++ (2 until 32).map(i => LRow(100 + i, i))): _*),
          ProcessAllAvailable(),
          AddData(r, (100 until 110).map(i => RRow(1, i)): _*),       // ... and again
          ProcessAllAvailable(),
          AssertOnQuery("count") { q => n = sinkRows(q).count(_._3 >= 100); true })
      }
      n
    }
    val prob = results("prob")
    val rand = results("rand")
    assert(prob == 20, s"PROB kept both rows of the frequent value: $prob")
    assert(prob > rand, s"PROB $prob, RAND $rand")
  }

  test("rows shed from keys no row of the batch touched leave holes that later rows never overwrite", NotOnRocksDB) {
    // Batch 1: L holds keys 0..9 (5 rows each) and one row of key 99; batch 2: R sends key 99
    // 20 times, so its rows outrank L's keys 0..9 (R never sent those): 20 of L's rows go, from
    // keys no row of batch 2 touched, at places inside their keys' runs of rows. Batch 3: one
    // more L row per key. Every row that arrived is held or counted as shed, none overwritten.
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1",
        PunctuatedConf.SheddingMaxStateRows -> "51", PunctuatedConf.SheddingPolicy -> "prob") {
      val (l, r, joined) = query()
      val arrivals = Seq(51, 20, 10)
      def held(q: StreamExecution) = punctuatedProgress(q).numRowsTotal
      def shed(q: StreamExecution) = punctuatedCount(q, "numRowsShed")
      def Accounted(batches: Int) = AssertOnQuery(s"every row held or shed after batch $batches") { q =>
        assert(held(q) + shed(q) == arrivals.take(batches).sum, s"held ${held(q)} + shed ${shed(q)} != " +
          s"${arrivals.take(batches).sum} arrived: ${settledProgress(q).json}")
        assert(rowsPerPartition(q).values.sum == held(q), s"the store holds ${rowsPerPartition(q)}, not ${held(q)}")
        // the layout's invariant: a key's n rows sit under slots 0 .. n-1 (a probe reads them so)
        val slots = spark.read.format("statestore").option("operatorId", "0")
          .option("storeName", "left-punctuated-rows").load(q.resolvedCheckpointRoot).select("key").collect()
          .map { row => val k = row.getStruct(0); (k.get(0), k.getLong(k.length - 1)) }
          .groupMap(_._1)(_._2)
        slots.foreach { case (key, found) =>
          assert(found.sorted.toSeq == (0L until found.length), s"key $key: slots ${found.sorted.mkString(", ")}")
        }
        true
      }
      testStream(joined)(
        AddData(l, ((0 until 10).flatMap(k => (0 until 5).map(i => LRow(k, 10 * k + i))) :+ LRow(99, 999)): _*),
        ProcessAllAvailable(),
        Accounted(1),
        AddData(r, (0 until 20).map(i => RRow(99, i)): _*),
        ProcessAllAvailable(),
        Accounted(2),
        AssertOnQuery("the rows shed are L's rows of keys 0..9") { q => shed(q) == 20 },
        AddData(l, (0 until 10).map(k => LRow(k, 500 + k)): _*),
        ProcessAllAvailable(),
        Accounted(3))
    }
  }

  test("strict safety accepts the unpurgeable join only with a budget", NotOnRocksDB) {
    val (_, _, joined) = query()
    val e = intercept[AnalysisException](joined.writeStream.format("memory").queryName("nobudget").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    withSQLConf(PunctuatedConf.SheddingMaxStateRows -> "10") {
      val q = joined.writeStream.format("memory").queryName("budget").start()
      try q.processAllAvailable() finally q.stop()
    }
  }

  test("shedding is refused for outer, semi and anti joins and for joins read by an aggregation", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.SheddingMaxStateRows -> "10", PunctuatedConf.SafetyMode -> "warn") {
      for (how <- Seq("left_outer", "right_outer", "full_outer", "left_semi", "left_anti")) {
        val (_, _, ld, rd) = inputs()
        val joined = ld.join(rd, ld("k") === rd("k"), how)
        val e = intercept[AnalysisException](joined.writeStream.format("memory").queryName(s"q_$how").start())
        assert(e.getCondition == "PUNCTUATED_SHEDDING_UNSUPPORTED", e.getMessage)
        assert(e.getMessage.contains(PunctuatedConf.SheddingMaxStateRows) && e.getMessage.contains("Fix"), e.getMessage)
      }
      val (_, _, joined) = query()
      val counted = joined.groupBy("k").agg(count("*"))
      val e = intercept[AnalysisException](
        counted.writeStream.format("memory").outputMode("update").queryName("agg").start())
      assert(e.getCondition == "PUNCTUATED_SHEDDING_UNSUPPORTED", e.getMessage)
      assert(e.getMessage.contains("aggregate"), e.getMessage)
      val deduped = joined.dropDuplicates("k")
      val e2 = intercept[AnalysisException](deduped.writeStream.format("memory").queryName("dedup").start())
      assert(e2.getCondition == "PUNCTUATED_SHEDDING_UNSUPPORTED", e2.getMessage)
    }
  }

  test("invalid settings fail naming the setting and the allowed values", NotOnRocksDB) {
    for ((key, value, expected) <- Seq(
        (PunctuatedConf.SheddingMaxStateRows, "-1", "> 0"),
        (PunctuatedConf.SheddingPolicy, "lru", "prob, life, rand"),
        (PunctuatedConf.SheddingHistoryRows, "x", "> 0"),
        (PunctuatedConf.SheddingHistoryValues, "0", "> 0"))) {
      withSQLConf(key -> value) {
        val e = intercept[IllegalArgumentException](PunctuatedConf(SQLConf.get))
        assert(e.getMessage.contains(key) && e.getMessage.contains(expected), e.getMessage)
      }
    }
    withSQLConf(PunctuatedConf.SheddingMaxStateRows -> "7", PunctuatedConf.SheddingPolicy -> "LIFE") {
      val s = PunctuatedConf(SQLConf.get).shedding
      assert(s.maxStateRows.contains(7L) && s.policy == "life" && s.historyRows == 100000 && s.historyValues == 10000)
    }
    assert(!PunctuatedConf(SQLConf.get).shedding.enabled)
  }
}

/** [[SheddingJoinSuite]] on RocksDB state stores (two budget runs). */
class SheddingJoinRocksDBSuite extends SheddingJoinSuite with OnRocksDB {
  override protected def budgetRuns: Seq[(Int, String)] = Seq(1 -> "prob", 3 -> "life")
}
