package punctuated.join.multi

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.execution.streaming.runtime.{MemoryStream, StreamExecution}
import org.apache.spark.sql.internal.SQLConf

import punctuated.checkpoint.PlanRecord
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.PunctuatedStreamTest

/** A row of [[MultiJoinObservedSuite]]'s streams: two columns and the marker. */
case class Obs(k: Option[Long], v: Option[Long], is_punct: Boolean = false)

/**
 * The multi-way join observes the statistics `auto` chooses from ([[MultiJoinObserved]]): a
 * chain `a(k, x) ⋈ b(k, v) ⋈ c(v, z)` where c is much faster than a and b; the plan log's
 * record of each batch carries the statistics the previous batch showed (rates exact, stored
 * sizes, fan-outs), the choice under them picks the tree the cost model predicts for such
 * skew, a restart keeps the plan and the statistics, and the MJoin's probe orders follow them.
 * On 1 and 4 partitions (2 x 2 cells: a's and c's rows copied to two cells each, counted
 * once). HDFS-backed state store; [[MultiJoinObservedRocksDBSuite]] runs the same on RocksDB.
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
      // what batch 0 shows (input order: a's rows, then b's, then c's, in every cell)
      val batch0 = MultiJoinStatistics(Seq(10.0, 10.0, 300.0), Seq(10.0, 10.0, 300.0), Seq(
        Map(0 -> 1.0), // b's 10 rows and c's 300 x 10 partial results find one a row each by k
        Map(0 -> 0.0, 1 -> 10.0), // a's rows came before b's; c's rows find ten b rows each by v
        Map(1 -> 0.0))) // b's rows came before c's
      withSQLConf(PunctuatedConf.SafetyMode -> "warn", SQLConf.SHUFFLE_PARTITIONS.key -> partitions.toString) {
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
            // b's rows probe c first: c's fan-out on v (0) is below a's on k (1)
            assert(log(1).probeOrders == Seq(Seq(1, 2), Seq(2, 0), Seq(1, 0)), log(1).probeOrders)
            assert(log(1).probeOrders == PlanCost.probeOrders(mjoin(3), seen))
            assert(multiJoin(q).probeOrder(1) == Seq(2, 0))
            // such skew (c fast, ten b rows per v): the cost model picks ((a ⋈ b) ⋈ c)
            assert(PlanChoice.choose(inputs, seen) == Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))),
              PlanChoice.ranked(inputs, seen))
            // c's 300 rows x (10 b rows + 10 a rows) against 300 x 10 at the root + 20 at (a ⋈ b)
            assert(PlanCost.cost(mjoin(3), seen) == 6000.0)
            assert(PlanCost.cost(Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))), seen) == 3020.0)
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
            // a(11) found no b by k; nothing looked b up by v: 1
            assert(seen.fanout == Seq(Map(0 -> 1.0), Map(0 -> 0.0, 1 -> 1.0), Map(1 -> 1.0)), seen.toJson)
            true
          },
          StopStream)
      }
    }
  }
}

class MultiJoinObservedRocksDBSuite extends MultiJoinObservedSuite {
  override protected def sparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
}
