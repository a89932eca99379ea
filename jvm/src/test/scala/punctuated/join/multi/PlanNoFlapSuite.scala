package punctuated.join.multi

import java.io.File
import java.nio.file.Files

import scala.collection.mutable

import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.PlanRecord
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.PunctuatedStreamTest

/**
 * `auto` does not flap under steady input (Li et al. 2006, §5.2: the choice from statistics;
 * Aly et al., JISC, EDBT 2014, §4.1: switching at batch boundaries): the fan-outs it chooses
 * from are rows stored / distinct values ([[MultiJoinDistinctValues]]), the same whichever plan
 * runs and whatever order a batch's rows arrive in.
 *
 * The chain `a(k) ⋈ b(k, v) ⋈ c(v)`, `replanEvery=2`, every batch i: ten rows of a, ten of b
 * with a's keys all on one new value v_i, twelve of c on v_i. Fan-outs from look-ups flapped:
 * under the MJoin c's rows look b up by v (10 rows each) and a's rows probe b before b's rows
 * are stored (0), so the tree looked cheaper (140 against 240); under `((a ⋈ b) ⋈ c)` nothing
 * looks b up by v (fan-out 1 by default) and the MJoin looked cheaper (24 against 32): a switch
 * at every re-planning. Here every re-planning sees the same statistics and keeps its plan.
 * On 1 and 4 partitions, on the HDFS-backed store only: the statistics and the plan's choice do not
 * depend on the provider (PlanReplanEndToEndRocksDBSuite re-plans on RocksDB across a restart).
 */
class PlanNoFlapSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(k: Long, v: Long) = Obs(Some(k), Some(v))

  private def stream(s: MemoryStream[Obs], name: String, k: String, v: String, schemes: String) =
    declare(s.toDF().selectExpr(s"k AS $k", s"v AS $v", s"is_punct AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p")

  private def planLog(checkpoint: String): Map[Long, PlanRecord] =
    Option(new File(checkpoint, "state/0/_punctuated/plan").listFiles()).toSeq.flatten
      .filter(_.getName.forall(_.isDigit))
      .map(f => f.getName.toLong -> PlanRecord.fromJson(new String(Files.readAllBytes(f.toPath), "UTF-8"))).toMap

  private val batches = 12

  protected def partitionCounts: Seq[Int] = Seq(1, 4)

  for (partitions <- partitionCounts) {
    test(s"steady input: auto keeps its plan at every re-planning; fan-outs do not depend on the plan " +
      s"($partitions partitions)") {
      val checkpoint = Files.createTempDirectory("punctuated-no-flap").toFile.getCanonicalPath
      val (a, b, c) = (MemoryStream[Obs], MemoryStream[Obs], MemoryStream[Obs])
      val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_v", "b_k; b_v"),
        stream(c, "c", "c_v", "c_z", "c_v"))
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
        .select(da("a_k"), da("a_x"), db("b_v"), dc("c_z"))
      val seen = mutable.ArrayBuffer.empty[Long]
      val steps = (0 until batches).flatMap { i =>
        val ks = (1L to 10L).map(j => 1000L * i + j)
        val v = 700000L + i
        val zs = (1L to 12L).map(m => 1000L * i + m)
        val expected = for (k <- ks; z <- zs) yield (k, k + 1, v, z)
        Seq(MultiAddData(a -> ks.map(k => row(k, k + 1)), b -> ks.map(k => row(k, v)), c -> zs.map(z => row(v, z))),
          CheckNewAnswer(expected.head, expected.tail: _*),
          AssertOnQuery(s"batch $i: one plan") { q =>
            seen += punctuatedProgress(q).customMetrics.get(MultiJoinMigration.NumMigrations)
            true
          })
      }
      // (4 partitions: the cells of shares (2, 2), every input weighted alike, as the comments count them)
      withSQLConf(PunctuatedConf.SafetyMode -> "warn", SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString,
        PunctuatedConf.ShareWeights -> "equal",
        PunctuatedConf.JoinPlan -> "auto", PunctuatedConf.ReplanEvery -> "2") {
        testStream(joined)(((StartStream(checkpointLocation = checkpoint) +: steps) :+
          AssertOnQuery("the plan log: no switch after the first choice; the same statistics at every re-planning") { _ =>
            val log = planLog(checkpoint)
            assert(log.keySet == (0L until batches.toLong).toSet, log.keySet)
            val trees = (0L until batches.toLong).map(log(_).tree)
            assert(trees.drop(2).distinct.size == 1, trees.map(_.text(_.toString)))
            assert(seen.sum <= 1L && seen.drop(2).forall(_ == 0L), seen)
            // every batch from 1 on reads its predecessor's progress: the same fan-outs each time
            val stats = (1L until batches.toLong).map(log(_).statistics.get)
            stats.foreach(s => assert(s.fanout == stats.head.fanout && s.rate == Seq(10.0, 10.0, 12.0), s.toJson))
            // none is 0 (arrival order) or the default 1 for want of look-ups (b on v under the tree)
            val f = stats.head
            assert(f.fan(0, 0) == 1.0 && f.fan(1, 0) == 1.0 && f.fan(2, 1) == 12.0, f.toJson)
            if (partitions == 1) assert(f.fan(1, 1) == 10.0, f.toJson)
            // 4 partitions: a value of v counts once per cell (k splits b's ten rows of v_i over cells)
            else assert(f.fan(1, 1) > 1.0 && f.fan(1, 1) <= 10.0, f.toJson)
            // and so each re-planning keeps the plan in force
            (2L until batches.toLong by 2).foreach { batch =>
              val best = PlanChoice.choose(PlanNoFlapSuite.inputs, log(batch).statistics.get)
              assert(punctuated.spark.rules.PunctuatedMultiJoinReplan.replan(log(batch - 1).tree, best,
                log(batch).statistics.get, 0.2) == log(batch - 1).tree, s"batch $batch")
            }
            true
          }): _*)
      }
    }
  }
}

object PlanNoFlapSuite {
  /** The chain's inputs as the planner sees them (b punctuates k and v separately). */
  val inputs: Seq[PunctuationReach.Input] = Seq(PunctuationReach.Input("a", Set(0), Seq(Set(0))),
    PunctuationReach.Input("b", Set(0, 1), Seq(Set(0), Set(1))), PunctuationReach.Input("c", Set(1), Seq(Set(1))))
}
