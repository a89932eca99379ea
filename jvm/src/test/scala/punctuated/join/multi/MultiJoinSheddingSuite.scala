package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.DataFrame
import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.execution.streaming.sources.MemorySink
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.errors.PunctuatedAnalysisException
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * Load shedding in the multi-way join ([[MultiJoinShedder]]) on real state stores: the chain
 * `a(x) ⋈ b(x, y) ⋈ c(x)` (a.x = b.x, b.y = c.x) whose inputs never punctuate, so only the
 * budget bounds its state. Under the MJoin and under a tree plan, over 1 and 3 partitions
 * (hypercube cells), after every batch: every cell holds at most the budget (read back from
 * the checkpoint with `statestore`), the output is a duplicate-free subset of the batch join,
 * every row stored is held or counted in `numRowsShed`; a restart in the middle gives the same
 * output; a plan migration (`jisc`, `moving_state`) under the budget keeps it and the output a
 * subset; PROB keeps the rows the other inputs send the values of; `strict` accepts the query
 * with a budget and refuses it without; `parallel_track` and an aggregation over the join are
 * refused. HDFS-backed store; [[MultiJoinSheddingRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinSheddingSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def xy(x: Long, y: Long) = XY(Some(x), Some(y))

  private def stream(name: String): (MemoryStream[XY], DataFrame) = {
    val s = MemoryStream[XY]
    (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
      Schemes -> s"${name}_x", Marker -> s"${name}_p"))
  }

  private def chain() = {
    val (a, da) = stream("a")
    val (b, db) = stream("b")
    val (c, dc) = stream("c")
    val joined = da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x"))
      .select(da("a_y"), db("b_x"), db("b_y"), dc("c_y"))
    (a, b, c, joined)
  }

  /** Adds rows to the three inputs in one micro-batch. */
  private def AddAll(a: MemoryStream[XY], as: Seq[XY], b: MemoryStream[XY], bs: Seq[XY], c: MemoryStream[XY],
      cs: Seq[XY]) = {
    val actions = Seq(AddDataMemory(a, as), AddDataMemory(b, bs), AddDataMemory(c, cs))
    StreamProgressLockedActions(actions, desc = actions.mkString("[ ", " | ", " ]"))
  }

  /** Batches of (a, b, c) rows, skewed: every row distinct by its y (a, c) or x (b's y is the join value). */
  private val batches: Seq[(Seq[XY], Seq[XY], Seq[XY])] = (0 until 6).map { t =>
    val as = (0 until 5).map(i => xy(if (i % 2 == 0) 0 else (i + t) % 4, 1000 * t + i))
    val bs = (0 until 5).map(i => xy(if (i % 3 == 0) 0 else (i * t) % 4, if (i % 2 == 0) 0 else (i + t) % 3))
    val cs = (0 until 4).map(i => xy(if (i % 2 == 0) 0 else (i + t) % 3, 2000 * t + i))
    (as, bs, cs)
  }

  /** The batch join of the first `upTo` batches, as a multiset of (a_y, b_x, b_y, c_y). */
  private def exact(upTo: Int): Map[(Long, Long, Long, Long), Int] = {
    val as = batches.take(upTo).flatMap(_._1)
    val bs = batches.take(upTo).flatMap(_._2)
    val cs = batches.take(upTo).flatMap(_._3)
    (for (a <- as; b <- bs if a.x == b.x; c <- cs if b.y == c.x) yield (a.y.get, b.x.get, b.y.get, c.y.get))
      .groupBy(identity).view.mapValues(_.size).toMap
  }

  private def sinkRows(q: StreamExecution): Seq[(Long, Long, Long, Long)] =
    q.sink.asInstanceOf[MemorySink].allData.map(r => (r.getLong(0), r.getLong(1), r.getLong(2), r.getLong(3)))

  /** The stores of a plan, with the classes each row is stored under (a row is one entry per class). */
  private def storesOf(plan: String): Seq[(String, Int)] =
    Seq("input0-mjoin-rows" -> 1, "input1-mjoin-rows" -> 2, "input2-mjoin-rows" -> 1) ++
      (if (plan == "((a ⋈ b) ⋈ c)") Seq("inputs-0-1-mjoin-rows" -> 2) else Nil)

  /** Stored rows (inputs' and nodes') per partition, read from the checkpoint's last version. */
  private def rowsPerPartition(q: StreamExecution, plan: String): Map[Int, Long] =
    storesOf(plan).flatMap { case (store, classes) =>
      spark.read.format("statestore").option("operatorId", "0").option("storeName", store)
        .load(q.resolvedCheckpointRoot).groupBy("partition_id").count().collect()
        .map(r => r.getInt(0) -> r.getLong(1) / classes)
    }.groupMapReduce(_._1)(_._2)(_ + _)

  /** Per batch id, (numUpdatedStateRows, numRowsShed, numRemovedStateRows), across the restarts of one run. */
  private val byBatch = mutable.Map.empty[Long, (Long, Long, Long)]

  private def checks(plan: String, budget: Long, upTo: Int) =
    AssertOnQuery(s"budget per cell, subset, every row held or shed after $upTo") { q =>
      val perPartition = rowsPerPartition(q, plan)
      assert(perPartition.values.forall(_ <= budget), s"over budget $budget: $perPartition")
      val out = sinkRows(q)
      val counts = out.groupBy(identity).view.mapValues(_.size).toMap
      val truth = exact(upTo)
      assert(counts.forall { case (r, k) => truth.getOrElse(r, 0) >= k }, s"false or duplicated rows: " +
        counts.filter { case (r, k) => truth.getOrElse(r, 0) < k })
      q.recentProgress.filter(p => p.stateOperators.nonEmpty && p.durationMs.containsKey("addBatch")).foreach { p =>
        val op = p.stateOperators.head
        byBatch(p.batchId) = (op.numRowsUpdated, op.customMetrics.get("numRowsShed"), op.numRowsRemoved)
        // the rows shed, per input and of the plan's nodes, add up to numRowsShed (an MJoin has no node)
        val parts = (0 to 2).map(i => op.customMetrics.get(s"input${i}RowsShed").longValue)
        val combinations = op.customMetrics.get("numCombinationsShed").longValue
        assert(parts.sum + combinations == op.customMetrics.get("numRowsShed"), op.customMetrics)
        if (plan == "mjoin") assert(combinations == 0L, op.customMetrics)
      }
      val held = punctuatedProgress(q).numRowsTotal
      assert(held == perPartition.values.sum, s"numRowsTotal $held != $perPartition")
      val stored = byBatch.values.map(_._1).sum
      val shed = byBatch.values.map(_._2).sum
      // nothing is ever punctuated: every row removed was shed, every row stored is held or shed
      assert(byBatch.values.map(_._3).sum == shed, s"removed != shed: $byBatch")
      assert(stored - shed == held, s"stored $stored - shed $shed != held $held: $byBatch")
      true
    }

  private def steps(a: MemoryStream[XY], b: MemoryStream[XY], c: MemoryStream[XY], plan: String, budget: Long,
      range: Range) =
    range.flatMap { t =>
      Seq(AddAll(a, batches(t)._1, b, batches(t)._2, c, batches(t)._3), ProcessAllAvailable(), checks(plan, budget, t + 1))
    }

  private def run(plan: String, partitions: Int, policy: String, budget: Long, restartAt: Option[Int]) = {
    val out = mutable.ArrayBuffer.empty[(Long, Long, Long, Long)]
    byBatch.clear()
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString, PunctuatedConf.JoinPlan -> plan,
        PunctuatedConf.SheddingMaxStateRows -> budget.toString, PunctuatedConf.SheddingPolicy -> policy,
        PunctuatedConf.SafetyMode -> "strict") {
      val (a, b, c, joined) = chain()
      val planned = AssertOnQuery("one multi-way join") { q =>
        q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }.size == 1
      }
      val collect = AssertOnQuery("collect") { q => out ++= sinkRows(q); true }
      val all = batches.indices
      val actions = restartAt match {
        case None => steps(a, b, c, plan, budget, all) ++ Seq(planned, collect)
        case Some(n) => steps(a, b, c, plan, budget, 0 until n) ++ Seq(StopStream, StartStream()) ++
          steps(a, b, c, plan, budget, n until batches.size) ++ Seq(planned, collect)
      }
      testStream(joined)(actions: _*)
    }
    out.toSeq
  }

  /**
   * The budget runs: the plan, its partitions (cells) and the shedding policy: each policy once,
   * each plan on one cell and on three (each run takes about 30 s: CI's time).
   */
  protected def budgetRuns: Seq[(String, Int, String)] = Seq(("mjoin", 1, "prob"), ("mjoin", 3, "rand"),
    ("((a ⋈ b) ⋈ c)", 3, "life"))

  for ((plan, partitions, policy) <- budgetRuns) {
    test(s"$plan, $policy, $partitions partition(s): budget per cell, a subset of the join, numRowsShed, restart") {
      val budget = 6L
      val uninterrupted = run(plan, partitions, policy, budget, None)
      val all = exact(batches.size).values.sum
      assert(uninterrupted.nonEmpty && uninterrupted.size < all,
        s"shedding should lose some results: ${uninterrupted.size} of $all")
      val restarted = run(plan, partitions, policy, budget, Some(3))
      assert(restarted.sorted == uninterrupted.sorted, "a restart in the middle changed the output")
    }
  }

  for (strategy <- Seq("jisc", "moving_state")) {
    test(s"a plan migration under a budget ($strategy): the budget kept, a subset of the join, no duplicate", NotOnRocksDB) {
      // ((a ⋈ b) ⋈ c) for three batches, then a restart under (a ⋈ (b ⋈ c)): the new node {b, c}
      // is completed (lazily under jisc) from the inputs' rows that shedding left; one cell
      val budget = 6L
      withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.JoinPlan -> "((a ⋈ b) ⋈ c)",
          PunctuatedConf.SheddingMaxStateRows -> budget.toString, PunctuatedConf.MigrationStrategy -> strategy) {
        val (a, b, c, joined) = chain()
        def Checked(upTo: Int) = AssertOnQuery(s"after batch $upTo") { q =>
          val held = punctuatedProgress(q).numRowsTotal
          assert(held <= budget, s"numRowsTotal $held over $budget: ${settledProgress(q).json}")
          val counts = sinkRows(q).groupBy(identity).view.mapValues(_.size).toMap
          assert(counts.forall { case (r, k) => exact(upTo).getOrElse(r, 0) >= k }, s"false or duplicated rows")
          true
        }
        def batch(t: Int) = Seq(AddAll(a, batches(t)._1, b, batches(t)._2, c, batches(t)._3), ProcessAllAvailable(),
          Checked(t + 1))
        testStream(joined)((0 until 3).flatMap(batch) ++
          Seq(StopStream, StartStream(additionalConfs = Map(PunctuatedConf.JoinPlan -> "(a ⋈ (b ⋈ c))"))) ++
          (3 until batches.size).flatMap(batch) ++
          Seq(AssertOnQuery("migrated, and shed after it") { q =>
            assert(punctuatedCount(q, "numMigrations") == 1 && punctuatedCount(q, "numRowsShed") > 0,
              settledProgress(q).json)
            true
          }): _*)
      }
    }
  }

  test("a row only a shed row could have joined with goes too (chained purge after shedding)", NotOnRocksDB) {
    // batch 0: a(1), b(2, 7), c(7): no result; budget 3. Batch 1: a closes x = 1, b(1, 7)
    // arrives and joins a(1) and c(7). Four rows: PROB as of batch 1's start ranks a(1) lowest
    // (b never sent x = 1) and sheds it; b(1, 7) can then never join an a row again (none
    // stored with x = 1, none to come), so it is purged: b(2, 7) and c(7) are left.
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.JoinPlan -> "mjoin",
        PunctuatedConf.SheddingMaxStateRows -> "3") {
      val (a, b, c, joined) = chain()
      testStream(joined)(
        AddAll(a, Seq(xy(1, 10)), b, Seq(xy(2, 7)), c, Seq(xy(7, 20))), ProcessAllAvailable(),
        AddAll(a, Seq(XY(Some(1), None, p = true)), b, Seq(xy(1, 7)), c, Nil), ProcessAllAvailable(),
        CheckAnswer((10L, 1L, 7L, 20L)),
        AssertOnQuery("a(1) shed, b(1, 7) purged") { q =>
          assert(punctuatedCount(q, "numRowsShed") == 1 && punctuatedCount(q, "numRowsPurged") == 1 &&
            punctuatedProgress(q).numRowsTotal == 2, settledProgress(q).json)
          true
        })
    }
  }

  test("two-range schemes: shedding under a budget beside staircase purges; a subset of the join; nothing left") {
    // a cycle of three on (x, y), each stream declaring "x<=, y<=": a punctuation (cx, cy) closes
    // the rows with x <= cx and y <= cy (Tucker et al. 2003, §3). Budget 4 rows per cell: rows
    // go by shedding and by the corners; the output is a duplicate-free subset of the batch join
    // and, once every stream sent (3, 3), nothing is stored.
    def twoRange(name: String): (MemoryStream[XY], DataFrame) = {
      val s = MemoryStream[XY]
      (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
        Schemes -> s"${name}_x<=, ${name}_y<=", Marker -> s"${name}_p"))
    }
    val rng = new scala.util.Random(20261128)
    val corners = Array.fill(3)(List.empty[(Long, Long)])
    val rounds = (0 until 6).map { t =>
      (0 until 3).map { s =>
        (0 until 6).flatMap { _ =>
          val (x, y) = (1L + rng.nextInt(3), 1L + rng.nextInt(3))
          if (t > 1 && rng.nextInt(6) == 0) { corners(s) ::= (x, y); Some(XY(Some(x), Some(y), p = true)) }
          else if (corners(s).exists { case (cx, cy) => x <= cx && y <= cy }) None
          else Some(xy(x, y))
        }
      }
    } :+ (0 until 3).map(_ => Seq(XY(Some(3L), Some(3L), p = true)))
    def exact(upTo: Int): Map[(Long, Long), Int] = {
      val rows = (0 until 3).map(s => rounds.take(upTo).flatMap(_(s)).filterNot(_.p))
      (for (a <- rows(0); b <- rows(1) if a == b; c <- rows(2) if b == c) yield (a.x.get, a.y.get))
        .groupBy(identity).view.mapValues(_.size).toMap
    }
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "2", PunctuatedConf.JoinPlan -> "mjoin",
        PunctuatedConf.SheddingMaxStateRows -> "4", PunctuatedConf.SafetyMode -> "strict") {
      val ((a, da), (b, db), (c, dc)) = (twoRange("a"), twoRange("b"), twoRange("c"))
      val joined = da.join(db, da("a_x") === db("b_x") && da("a_y") === db("b_y"))
        .join(dc, db("b_x") === dc("c_x") && db("b_y") === dc("c_y")).select(da("a_x"), da("a_y"))
      def Checked(upTo: Int) = AssertOnQuery(s"a subset of the join after round $upTo") { q =>
        val out = q.sink.asInstanceOf[MemorySink].allData.map(r => (r.getLong(0), r.getLong(1)))
        val truth = exact(upTo)
        assert(out.groupBy(identity).forall { case (r, k) => truth.getOrElse(r, 0) >= k.size },
          s"false or duplicated rows: $out, $truth")
        true
      }
      testStream(joined)(rounds.indices.flatMap { t =>
        Seq(AddAll(a, rounds(t)(0), b, rounds(t)(1), c, rounds(t)(2)), ProcessAllAvailable(), Checked(t + 1)) ++
          (if (t == 2) Seq(StopStream, StartStream()) else Nil)
      } ++ Seq(AssertOnQuery("shed some, purged some, nothing left") { q =>
        assert(punctuatedCount(q, "numRowsShed") > 0 && punctuatedCount(q, "numRowsPurged") > 0 &&
          punctuatedProgress(q).numRowsTotal == 0, settledProgress(q).json)
        true
      }): _*)
    }
  }

  test("PROB keeps the rows whose values the other inputs send: more results than RAND", NotOnRocksDB) {
    // batch 0: b sends (5, 1) ten times; batch 1: a sends x = 5 twice and 18 other values, c
    // sends x = 1 twice and 18 others: 50 rows, budget 20. As of batch 1's start only b's
    // values are known, so a(5) and c(1) rank 1 (b sends them), everything else 0 (b's own rows
    // too: a and c sent nothing yet), and PROB keeps a(5) twice and c(1) twice. Batch 2: b
    // sends (5, 1) ten times more: each joins them, 2 × 2 results each.
    def results(policy: String): Int = {
      var n = 0
      withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.JoinPlan -> "mjoin",
          PunctuatedConf.SheddingMaxStateRows -> "20", PunctuatedConf.SheddingPolicy -> policy) {
        val (a, b, c, joined) = chain()
        val b51 = (0 until 10).map(i => xy(5, 1))
        testStream(joined)(
          AddAll(a, Nil, b, b51, c, Nil), ProcessAllAvailable(),
          AddAll(a, (0 until 20).map(i => xy(if (i < 2) 5 else 200 + i, i)), b, Nil,
            c, (0 until 20).map(i => xy(if (i < 2) 1 else 300 + i, 100 + i))), ProcessAllAvailable(),
          AssertOnQuery("40 results, 30 rows shed") { q =>
            assert(sinkRows(q).size == 40 && punctuatedCount(q, "numRowsShed") == 30, settledProgress(q).json)
            true
          },
          AddAll(a, Nil, b, b51, c, Nil), ProcessAllAvailable(),
          AssertOnQuery("count") { q => n = sinkRows(q).size - 40; true })
      }
      n
    }
    val prob = results("prob")
    val rand = results("rand")
    assert(prob == 40, s"PROB kept a(5) and c(1) twice each: $prob")
    assert(prob > rand, s"PROB $prob, RAND $rand")
  }

  test("strict: accepted with a budget (bounded), refused without it", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.JoinPlan -> "mjoin", PunctuatedConf.SafetyMode -> "strict") {
      val (a, b, c, joined) = chain()
      val e = intercept[Exception] {
        testStream(joined)(AddAll(a, Seq(xy(1, 1)), b, Nil, c, Nil), ProcessAllAvailable())
      }
      assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null)
        .exists(_.getMessage.contains("can never be purged")), e.toString)
    }
  }

  test("refused: parallel_track migrations, an aggregation over the join", NotOnRocksDB) {
    withSQLConf(PunctuatedConf.JoinPlan -> "mjoin", PunctuatedConf.SheddingMaxStateRows -> "10",
        PunctuatedConf.MigrationStrategy -> "parallel_track") {
      val (a, b, c, joined) = chain()
      val e = intercept[Exception](testStream(joined)(AddAll(a, Seq(xy(1, 1)), b, Nil, c, Nil), ProcessAllAvailable()))
      val found = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).collectFirst {
        case p: PunctuatedAnalysisException => p
      }
      assert(found.exists(p => p.getMessage.contains("PUNCTUATED_SHEDDING_UNSUPPORTED") &&
        p.getMessage.contains("the multi-way join of a, b, c") && p.getMessage.contains("parallel_track") &&
        p.getMessage.contains("jisc")), e.toString)
    }
    withSQLConf(PunctuatedConf.JoinPlan -> "mjoin", PunctuatedConf.SheddingMaxStateRows -> "10") {
      val (a, b, c, joined) = chain()
      val counted = joined.groupBy("b_x").count()
      val e = intercept[Exception] {
        testStream(counted, org.apache.spark.sql.streaming.OutputMode.Update())(
          AddAll(a, Seq(xy(1, 1)), b, Nil, c, Nil), ProcessAllAvailable())
      }
      // (an aggregation reading the joins keeps them binary joins, each refused as such)
      assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(t =>
        t.getMessage != null && t.getMessage.contains("PUNCTUATED_SHEDDING_UNSUPPORTED") &&
          t.getMessage.contains("its output is read by aggregate")), e.toString)
    }
  }
}

/** [[MultiJoinSheddingSuite]] on RocksDB state stores (one budget run per plan). */
class MultiJoinSheddingRocksDBSuite extends MultiJoinSheddingSuite with OnRocksDB {
  override protected def budgetRuns: Seq[(String, Int, String)] = Seq(("((a ⋈ b) ⋈ c)", 1, "prob"))
}
