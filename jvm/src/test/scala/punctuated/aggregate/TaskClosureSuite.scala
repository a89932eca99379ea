package punctuated.aggregate

import java.nio.file.Files

import org.apache.spark.sql.Row
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.compat.{MemoryStream, StateStoreRDDs}
import punctuated.declaration.Declaration._
import punctuated.dedup.PunctuatedDeduplicateExec
import punctuated.input.PunctuationReplicatingExchangeExec
import punctuated.join.Bid
import punctuated.join.JoinTestData._
import punctuated.spark.TaskClosureChecks

/**
 * The tasks of a punctuated aggregation or deduplication get its operators without the plan
 * below them: the aggregation, its restore step, the deduplication and their replicating
 * shuffle keep their child on the driver
 * (`@transient`), so a task's closure does not carry every stage's operators down to the scans
 * (Spark's own aggregation refers to itself from its generated code, and each operator's
 * closure holds the operator). What runs in the tasks asks them for their columns only.
 *
 * Script: per sensor and 10-minute window sliding by 5 minutes under `sensor; ts<=` (the range
 * goes through the replicating shuffle), first with whole-stage code generation off — every
 * Spark operator above ours then runs interpreted in the tasks and asks ours for its columns
 * there — across a restart; the same for a deduplication under `auction`; then what the
 * operators ship, serialized as a task's closure is.
 */
class TaskClosureSuite extends TaskClosureChecks with PerSensorWindows {
  import testImplicits._
  import EventTimeAggregateSuite._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private val ours: PartialFunction[SparkPlan, SparkPlan] = {
    case p: PunctuatedAggregateExec => p
    case p: PunctuatedRestoreExec => p
    case p: PunctuatedDeduplicateExec => p
    case p: PunctuationReplicatingExchangeExec => p
  }

  private def ShippedWithoutChild(names: String*) = ShippedWithoutChildren(ours, names: _*)

  test("Spark's operators above ours, interpreted in the tasks, read our columns: the batch answer, across a restart") {
    val (input, out) = perSensor()
    val checkpoint = Files.createTempDirectory("punctuated-ckpt").toFile.getCanonicalPath
    testStream(out, OutputMode.Append())(
      StartStream(checkpointLocation = checkpoint, additionalConfs = interpreted),
      AddData(input, reading(1, "10:01", 1.0), reading(2, "10:02", 1.0), reading(1, "10:07", 1.0)),
      CheckNewAnswer(),
      NoWholeStageCodegen,
      AddData(input, noMoreOf(1)),
      CheckNewAnswer(Row(1L, t("09:55"), 1L), Row(1L, t("10:00"), 2L), Row(1L, t("10:05"), 1L)),
      StopStream,
      StartStream(checkpointLocation = checkpoint, additionalConfs = interpreted),
      AddData(input, reading(2, "10:12", 1.0), upTo("10:10")),
      CheckNewAnswer(Row(2L, t("09:55"), 1L), Row(2L, t("10:00"), 1L)),
      AddData(input, upTo("10:30")),
      CheckNewAnswer(Row(2L, t("10:05"), 1L), Row(2L, t("10:10"), 1L)),
      AssertPunctuatedState(rows = 0, punctuations = 2))
  }

  test("a deduplication's tasks, with Spark's operators interpreted: first rows at once, keys forgotten when punctuated") {
    val bids = MemoryStream[Bid]
    val firsts = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
      .dropDuplicates("auction", "bidder").select("auction", "bidder")
    testStream(firsts)(
      StartStream(additionalConfs = interpreted),
      AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5), bid(2, 100, 1.0)),
      CheckNewAnswer((1L, 100L), (1L, 101L), (2L, 100L)),
      NoWholeStageCodegen,
      StopStream,
      StartStream(additionalConfs = interpreted),
      AddData(bids, bid(1, 100, 8.0), bid(2, 102, 1.0), closeBids(1)),
      CheckNewAnswer((2L, 102L)),
      AssertPunctuatedState(rows = 2, punctuations = 0),
      ShippedWithoutChild("PunctuatedDeduplicateExec", "PunctuationReplicatingExchangeExec"))
  }

  test("the aggregation, its restore step and its shuffle ship without the plan below them, with their columns") {
    val (input, out) = perSensor()
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0), upTo("10:00")),
      CheckNewAnswer(),                               // no window ends by 10:00
      // the restore step is ours where ours opens its store (Spark 4.2), Spark's before
      ShippedWithoutChild(Seq("PunctuatedAggregateExec", "PunctuationReplicatingExchangeExec") ++
        (if (StateStoreRDDs.ownReadStore) Seq("PunctuatedRestoreExec") else Nil): _*))
  }
}
