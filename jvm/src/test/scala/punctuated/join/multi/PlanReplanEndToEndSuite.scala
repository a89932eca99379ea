package punctuated.join.multi

import java.io.File
import java.nio.file.Files

import scala.collection.mutable

import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.PlanRecord
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}
import punctuated.spark.rules.PunctuatedMultiJoinReplan

/**
 * `auto` re-planning end to end (Aly et al., JISC, EDBT 2014, §3 and §4.1: a plan switch at a
 * micro-batch boundary while the query runs; the choice after Li et al. 2006, §5.2): a real
 * streaming chain `a(k) ⋈ b(k, v) ⋈ c(v)` under `spark.punctuated.join.plan=auto` and
 * `spark.punctuated.join.replanEvery=2`, whose inputs' statistics flip twice:
 *
 * {{{
 *   batches  input (per batch)                                    plan              why
 *   0-3      A: 10 rows of each, one-to-one keys                  mjoin (0-5)       the defaults, then A's statistics (the MJoin ~14% cheaper)
 *   4-11     B: 10 a, 10 b on one v, 100 c on ten v's,            ((a ⋈ b) ⋈ c)     switch at 6 (from batch 5's statistics: ~40-45% saving)
 *               ten of them on b's v (skew)
 *            (stop and restart after batch 7)
 *   12-15    C: 10 a, 10 b, 15 c, one-to-one                      ((a ⋈ b) ⋈ c)     the MJoin is cheaper by ~6% < 20%: kept (hysteresis)
 *   16-19    A': A with 90 more b rows matching nothing           mjoin             switch back at 18 (~30% saving)
 *   20       every value punctuated                               mjoin             no data rows left
 * }}}
 *
 * Every batch from 1 on also punctuates the previous batch's values (a and b close its values
 * of k, b and c its values of v), so the state holds about one batch: `auto`'s fan-outs are rows stored /
 * distinct values ([[MultiJoinObserved]]), and they show the phase running, not the history.
 *
 * After every batch the new output is exactly the batch join's new rows (exactly once, also
 * across the restart after the switch); each switch counts `numMigrations` = 1 in its batch
 * and 0 elsewhere; at the end the plan log (`<checkpoint>/state/0/_punctuated/plan/<batch>`)
 * is checked batch by batch: a plan changes only at a re-planning batch, and there to what
 * [[PunctuatedMultiJoinReplan.replan]] gives for the statistics the record carries, with the
 * stable stretches (B over three re-plannings, C over two) not switching.
 * [[PlanReplanEndToEndRocksDBSuite]] runs the same on RocksDB.
 */
class PlanReplanEndToEndSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(k: Long, v: Long) = Obs(Some(k), Some(v))
  private def close(k: Option[Long], v: Option[Long]) = Obs(k, v, is_punct = true)

  private def stream(s: MemoryStream[Obs], name: String, k: String, v: String, schemes: String) =
    declare(s.toDF().selectExpr(s"k AS $k", s"v AS $v", s"is_punct AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p")

  /** The plan log of operator 0: batch -> record. */
  private def planLog(checkpoint: String): Map[Long, PlanRecord] =
    Option(new File(checkpoint, "state/0/_punctuated/plan").listFiles()).toSeq.flatten
      .filter(_.getName.forall(_.isDigit))
      .map(f => f.getName.toLong -> PlanRecord.fromJson(new String(Files.readAllBytes(f.toPath), "UTF-8"))).toMap

  /** The chain's inputs as the planner sees them (b punctuates k and v separately). */
  private val inputs = Seq(PunctuationReach.Input("a", Set(0), Seq(Set(0))),
    PunctuationReach.Input("b", Set(0, 1), Seq(Set(0), Set(1))), PunctuationReach.Input("c", Set(1), Seq(Set(1))))
  private val tree = Join(Seq(Join(Seq(Input(0), Input(1))), Input(2)))

  /** The batches: per batch the rows of a, b and c (k, v), and the plan expected to run it. */
  private def workload: Seq[(Seq[(Long, Long)], Seq[(Long, Long)], Seq[(Long, Long)], Join)] = {
    def oneToOne(i: Int, extraC: Int) = {
      val ks = (1L to 10L).map(j => 1000L * i + j)
      (ks.map(k => (k, k)), ks.map(k => (k, 500000L + k)),
        ks.map(k => (500000L + k, k)) ++ ks.take(extraC).map(k => (500000L + k, 900000L + k)))
    }
    def skew(i: Int) = {
      val ks = (1L to 10L).map(j => 1000L * i + j)
      (ks.map(k => (k, k)), ks.map(k => (k, 700000L + i)), (1L to 10L).map(m => (700000L + i, 1000L * i + m)) ++
        (1L to 90L).map(m => (800000L + 10L * i + (m - 1) / 10, 1000L * i + 10 + m)))
    }
    // A with b ten times as fast (its other 90 rows meet no a and no c): each tree stores b's rows' combinations
    def fastB(i: Int) = {
      val (a, b, c) = oneToOne(i, 0)
      (a, b ++ (1L to 90L).map(m => (1000L * i + 100 + m, 600000L + 1000L * i + m)), c)
    }
    (0 until 20).map { i =>
      val (a, b, c) = if (i < 4) oneToOne(i, 0) else if (i >= 16) fastB(i) else if (i < 12) skew(i) else oneToOne(i, 5)
      (a, b, c, if (i < 6 || i >= 18) mjoin(3) else tree)
    }
  }

  protected def runs: Seq[(String, Int)] = Seq("jisc" -> 1, "jisc" -> 4, "moving_state" -> 4)

  for ((strategy, partitions) <- runs) {
    test(s"auto re-plans from observed statistics with hysteresis, exactly once across a restart " +
      s"($strategy, $partitions partitions)") {
      val checkpoint = Files.createTempDirectory("punctuated-replan-e2e").toFile.getCanonicalPath
      val (a, b, c) = (MemoryStream[Obs], MemoryStream[Obs], MemoryStream[Obs])
      val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_v", "b_k; b_v"),
        stream(c, "c", "c_v", "c_z", "c_v"))
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
        .select(da("a_k"), da("a_x"), db("b_v"), dc("c_z"))
      val batches = workload
      val (as, bs, cs) = (mutable.ArrayBuffer.empty[(Long, Long)], mutable.ArrayBuffer.empty[(Long, Long)],
        mutable.ArrayBuffer.empty[(Long, Long)])
      // the batch join of everything so far
      def answer: Set[(Long, Long, Long, Long)] = {
        val aBy = as.groupBy(_._1)
        val bBy = bs.groupBy(_._2)
        cs.flatMap { case (v, z) =>
          bBy.getOrElse(v, Nil).flatMap { case (k, _) => aBy.getOrElse(k, Nil).map { case (_, x) => (k, x, v, z) } }
        }.toSet
      }
      def migrations(expected: Long, plan: Join) = AssertOnQuery(s"plan ${plan.text(_.toString)}, $expected migration(s)") { q =>
        val op = punctuatedProgress(q)
        assert(op.customMetrics.get(MultiJoinMigration.NumMigrations) == expected, settledProgress(q).json)
        val m = q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }
        assert(m.size == 1 && m.head.joinPlan == plan.canonical, m.map(_.joinPlan))
        true
      }
      val steps = batches.zipWithIndex.flatMap { case ((ra, rb, rc, plan), i) =>
        val before = answer
        as ++= ra; bs ++= rb; cs ++= rc
        val added = (answer -- before).toSeq
        val switched = i > 0 && batches(i - 1)._4 != plan
        // the previous batch's values of k and v, punctuated by every input having the column
        val (pa, pb, pc) = if (i == 0) (Nil, Nil, Nil) else {
          val (qa, qb, qc, _) = batches(i - 1)
          val (ks, vs) = ((qa.map(_._1) ++ qb.map(_._1)).distinct, (qb.map(_._2) ++ qc.map(_._1)).distinct)
          (ks.map(k => close(Some(k), None)), ks.map(k => close(Some(k), None)) ++ vs.map(v => close(None, Some(v))),
            vs.map(v => close(Some(v), None)))
        }
        Seq(MultiAddData(a -> (ra.map((row _).tupled) ++ pa), b -> (rb.map((row _).tupled) ++ pb),
          c -> (rc.map((row _).tupled) ++ pc)),
          CheckNewAnswer(added.head, added.tail: _*), migrations(if (switched) 1L else 0L, plan)) ++
          (if (i == 7) Seq(StopStream, StartStream(checkpointLocation = checkpoint)) else Nil)
      }
      // batch 20: every value of k and v punctuated by every input having the column: no data row stays
      val (allKs, allVs) = ((as.map(_._1) ++ bs.map(_._1)).distinct.toSeq, (bs.map(_._2) ++ cs.map(_._1)).distinct.toSeq)
      val closing = MultiAddData(a -> allKs.map(k => close(Some(k), None)),
        b -> (allKs.map(k => close(Some(k), None)) ++ allVs.map(v => close(None, Some(v)))),
        c -> allVs.map(v => close(Some(v), None)))
      // (4 partitions: the cells of shares (2, 2), every input weighted alike, as the comments count them)
      withSQLConf(PunctuatedConf.SafetyMode -> "warn", SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString,
        PunctuatedConf.ShareWeights -> "equal",
        PunctuatedConf.JoinPlan -> "auto", PunctuatedConf.ReplanEvery -> "2",
        PunctuatedConf.MigrationStrategy -> strategy) {
        testStream(joined)((StartStream(checkpointLocation = checkpoint) +: steps) ++ Seq(
          closing, CheckNewAnswer(), migrations(0L, mjoin(3)),
          AssertOnQuery("every stored row purged") { q =>
            assert(punctuatedProgress(q).numRowsTotal == 0, settledProgress(q).json)
            true
          },
          AssertOnQuery("the plan log: switches only at re-planning batches, as the hysteresis rule says") { _ =>
            val log = planLog(checkpoint)
            assert(log.keySet == (0L to 20L).toSet, log.keySet)
            (1L to 20L).foreach { batch =>
              val (prev, now) = (log(batch - 1).tree, log(batch).tree)
              val stats = log(batch).statistics.get
              if (batch % 2 == 0) {
                val best = PlanChoice.choose(inputs, stats)
                assert(now == PunctuatedMultiJoinReplan.replan(prev, best, stats, 0.2),
                  s"batch $batch: $prev -> $now, best $best under ${stats.toJson}")
              } else assert(now == prev, s"batch $batch is no re-planning batch: $prev -> $now")
              assert(log(batch).migration.isDefined == (now != prev), s"batch $batch: ${log(batch)}")
            }
            // the first switch: the skew batch 5 showed (c 100 rows, ten b rows per v) makes the tree cheaper by ~40%
            // (4 partitions: b's rows of its v split over the two cells of k, so v counts once in each: 5)
            val skewed = log(6L).statistics.get
            assert(skewed.rate == Seq(10.0, 10.0, 100.0) && skewed.fan(1, 1) == (if (partitions == 1) 10.0 else 5.0) &&
              skewed.fan(2, 1) == 10.0, skewed.toJson)
            assert(PlanCost.cost(tree, skewed) < 0.8 * PlanCost.cost(mjoin(3), skewed), skewed.toJson)
            // hysteresis: under C's statistics (batch 14) the MJoin is cheaper, by less than the threshold
            val c14 = log(14L).statistics.get
            val (costTree, costMJoin) = (PlanCost.cost(tree, c14), PlanCost.cost(mjoin(3), c14))
            assert(costMJoin < costTree && costMJoin >= 0.8 * costTree, s"$costMJoin vs $costTree: ${c14.toJson}")
            assert(log(14L).tree == tree && log(16L).tree == tree)
            // the switch back at 18: A's statistics make the MJoin cheaper by more than 20%
            val a18 = log(18L).statistics.get
            assert(PlanCost.cost(mjoin(3), a18) < 0.8 * PlanCost.cost(tree, a18), a18.toJson)
            true
          }): _*)
      }
    }
  }
}

/** [[PlanReplanEndToEndSuite]] on RocksDB state stores. */
class PlanReplanEndToEndRocksDBSuite extends PlanReplanEndToEndSuite with OnRocksDB {
  override protected def runs: Seq[(String, Int)] = Seq("jisc" -> 4)
}
