package punctuated.join.multi

import java.io.File
import java.nio.file.Files

import punctuated.compat.{MemoryStream, StreamExecution}
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.PlanRecord
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/** A row of [[MultiJoinObservedSuite]]'s streams: two columns and the marker. */
case class Obs(k: Option[Long], v: Option[Long], is_punct: Boolean = false)

/**
 * The multi-way join observes the statistics `auto` chooses from ([[MultiJoinObserved]]): a
 * chain `a(k, x) ⋈ b(k, v) ⋈ c(v, z)` where c is much faster than a and b; the plan log's
 * record of each batch carries the statistics the previous batch showed (rates exact, stored
 * sizes, fan-outs = rows stored / distinct values, whatever the batch looked up), the choice
 * under them picks the tree the cost model predicts for such skew, a restart keeps the plan
 * and the statistics, and the MJoin's probe orders follow them. On 1 and 4 partitions (2 x 2
 * cells: a's and c's rows copied to two cells each, counted once; b's rows of v = 7 split over
 * the two cells of k, so v = 7 counts once in each). HDFS-backed state store;
 * [[MultiJoinObservedRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinObservedSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def row(k: Long, v: Long) = Obs(Some(k), Some(v))

  private def stream(s: MemoryStream[Obs], name: String, k: String, v: String, schemes: String) =
    declare(s.toDF().selectExpr(s"k AS $k", s"v AS $v", s"is_punct AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p")

  /** The plan log of operator 0: batch -> record. */
  private def planLog(checkpoint: String): Map[Long, PlanRecord] =
    Option(new File(checkpoint, "state/0/_punctuated/plan").listFiles()).toSeq.flatten
      .filter(_.getName.forall(_.isDigit))
      .map(f => f.getName.toLong -> PlanRecord.fromJson(new String(Files.readAllBytes(f.toPath), "UTF-8"))).toMap

  private def multiJoin(q: StreamExecution) = {
    val found = q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }
    assert(found.size == 1, q.lastExecution.executedPlan.treeString)
    found.head
  }

  /** The chain's inputs as the planner sees them (b punctuates k and v separately). */
  private val inputs = Seq(PunctuationReach.Input("a", Set(0), Seq(Set(0))),
    PunctuationReach.Input("b", Set(0, 1), Seq(Set(0), Set(1))), PunctuationReach.Input("c", Set(1), Seq(Set(1))))

  for (partitions <- Seq(1, 4)) {
    test(s"the plan record carries the previous batch's statistics; auto's choice and probe orders follow them " +
      s"($partitions partitions)") {
      val checkpoint = Files.createTempDirectory("punctuated-mjoin-observed").toFile.getCanonicalPath
      val (a, b, c) = (MemoryStream[Obs], MemoryStream[Obs], MemoryStream[Obs])
      val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_v", "b_k; b_v"),
        stream(c, "c", "c_v", "c_z", "c_v"))
      val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
        .select(da("a_k"), da("a_x"), db("b_v"), dc("c_z"))
      // batch 0: ten rows of a (k = 1..10), ten of b (k = 1..10, all v = 7), 300 of c (v = 7):
      // each c row finds the ten b rows by v and each of them one a row by k
      val as = (1L to 10L).map(k => row(k, 100 + k))
      val bs = (1L to 10L).map(k => row(k, 7))
      def cs(zs: Seq[Long]) = zs.map(z => row(7, z))
      def results(zs: Seq[Long]) = for (z <- zs; k <- 1L to 10L) yield (k, 100 + k, 7L, z)
      val zs0 = 1L to 300L
      val zs1 = 301L to 500L
      // what batch 0 leaves in state: rows stored / distinct values (whatever order rows came in)
      // b's ten rows of v = 7: one value on 1 partition, one in each of the two cells of k on 4
      val bOnV = if (partitions == 1) 10.0 else 5.0
      val batch0 = MultiJoinStatistics(Seq(10.0, 10.0, 300.0), Seq(10.0, 10.0, 300.0), Seq(
        Map(0 -> 1.0), // ten rows of a, ten values of k
        Map(0 -> 1.0, 1 -> bOnV), // ten rows of b, ten values of k (a's rows came first: no matter)
        Map(1 -> 300.0))) // 300 rows of c, all v = 7 (b's rows came first: no matter)
      // (the cells above are the shares (2, 2) of every input weighted alike; by batch 0's rows,
      // mostly c's, they would be (1, 4): MultiJoinShareWeightsSuite)
      withSQLConf(PunctuatedConf.SafetyMode -> "warn", SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString,
          PunctuatedConf.ShareWeights -> "equal") {
        testStream(joined)(
          AddData(a, as: _*), AddData(b, bs: _*), AddData(c, cs(zs0): _*),
          StartStream(checkpointLocation = checkpoint),
          CheckNewAnswer(results(zs0).head, results(zs0).tail: _*),
          AddData(c, cs(zs1): _*),
          CheckNewAnswer(results(zs1).head, results(zs1).tail: _*),
          AssertOnQuery("batch 1's record carries batch 0's statistics; probe orders follow them") { q =>
            val log = planLog(checkpoint)
            assert(log.keySet == Set(0L, 1L), log)
            // batch 0 was chosen under the defaults: the MJoin
            assert(log(0).statistics.contains(PlanChoice.statistics(None, inputs)), log(0))
            assert(log(0).tree == mjoin(3) && log(1).tree == mjoin(3))
            val seen = log(1).statistics.get
            assert(seen == batch0, seen.toJson)
            // b's rows probe a first: a's fan-out on k (1) is below c's on v (300)
            assert(log(1).probeOrders == Seq(Seq(1, 2), Seq(0, 2), Seq(1, 0)), log(1).probeOrders)
            assert(log(1).probeOrders == PlanCost.probeOrders(mjoin(3), seen))
            assert(multiJoin(q).probeOrder(1) == Seq(0, 2))
            // the metrics behind them, after batch 1 (500 rows of c on v = 7), each value once
            val m = punctuatedProgress(q).customMetrics
            def metric(name: String): Long = Option(m.get(name)).map(_.longValue).getOrElse(-1L)
            assert(Seq(metric("input0DistinctValues.c0"), metric("input1DistinctValues.c0"),
              metric("input1DistinctValues.c1"), metric("input2DistinctValues.c1")) ==
              Seq(10L, 10L, if (partitions == 1) 1L else 2L, 1L), m)
            assert((0 to 2).map(j => metric(s"input${j}UncountedCells")) == Seq(0L, 0L, 0L), m)
            // such skew (c fast, ten b rows per v): the cost model picks ((a ⋈ b) ⋈ c)
            assert(PlanChoice.choose(inputs, seen) == Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))),
              PlanChoice.ranked(inputs, seen))
            // MJoin: a's and b's 10 rows x (1 + 300) each, c's 300 x (bOnV + bOnV);
            // the tree: 20 probes + 20 writes + 0.1 at (a ⋈ b), its 20 new rows x 300 and c's 300 x bOnV at the root
            assert(PlanCost.cost(mjoin(3), seen) == 6020.0 + 600 * bOnV)
            assert(math.abs(PlanCost.cost(Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))), seen) -
              (6040.1 + 300 * bOnV)) < 1e-6)
            true
          },
          StopStream,
          StartStream(checkpointLocation = checkpoint),
          AddData(a, row(11, 111)),
          CheckNewAnswer(),
          AssertOnQuery("a restart keeps the plan and starts from the recorded statistics") { q =>
            val log = planLog(checkpoint)
            assert(log.keySet == Set(0L, 1L, 2L), log)
            // the first batch after a restart has no progress to read: the latest record's
            assert(log(2).statistics.contains(batch0), log(2))
            assert(log(2).tree == mjoin(3) && multiJoin(q).joinPlan == mjoin(3))
            assert(log(2).probeOrders == log(1).probeOrders)
            true
          },
          AddData(b, row(11, 8)),
          CheckNewAnswer(),
          AssertOnQuery("the batch after the restart's first reads its progress") { q =>
            val seen = planLog(checkpoint)(3).statistics.get
            assert(seen.rate == Seq(1.0, 0.0, 0.0), seen.toJson)
            assert(seen.stored == Seq(11.0, 10.0, 500.0), seen.toJson)
            // what the state holds, whatever batch 2 looked up (a(11) found no b; nothing looked b up by v)
            assert(seen.fanout == Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> bOnV), Map(1 -> 500.0)), seen.toJson)
            true
          },
          StopStream)
      }
    }
  }
}

class MultiJoinObservedRocksDBSuite extends MultiJoinObservedSuite with OnRocksDB
