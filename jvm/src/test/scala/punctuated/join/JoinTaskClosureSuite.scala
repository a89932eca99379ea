package punctuated.join

import java.nio.file.Files

import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.input.PunctuationReplicatingExchangeExec
import punctuated.join.multi.{PunctuatedMultiJoinExec, XYRows}
import punctuated.spark.TaskClosureChecks

/**
 * The tasks of a punctuated join get it without the plan below it: the binary join keeps its
 * inputs' plans on the driver (`@transient`; its tasks read each input's columns and
 * partitioning from [[JoinInputPlan]]), and so does the multi-way join (its tasks read the
 * children's columns from `childOutputs`). A join's tasks get the operator with their
 * closure; with its children they would get every operator below it, down to the scans.
 *
 * Script: a join on `day` under `day<=` on both inputs (the ranges go through the replicating
 * shuffle) and a chain of three streams run as one multi-way join, each with whole-stage code
 * generation off — Spark's operators above the join then run interpreted in the tasks and
 * ask it for its columns there — across a restart, to the batch answer and the state the
 * punctuations leave; then what the operators ship, serialized as a task's closure is.
 */
class JoinTaskClosureSuite extends TaskClosureChecks with XYRows with DayRangeJoin {
  import testImplicits._

  private val ours: PartialFunction[SparkPlan, SparkPlan] = {
    case p: PunctuatedSymmetricHashJoinExec => p
    case p: PunctuatedMultiJoinExec => p
    case p: PunctuationReplicatingExchangeExec => p
  }

  test("a range join's tasks, Spark's operators above it interpreted: the batch answer across a restart, shipped without its inputs") {
    val (readings, days, joined) = dayRangeJoin()
    val checkpoint = Files.createTempDirectory("punctuated-ckpt").toFile.getCanonicalPath
    testStream(joined)(
      StartStream(checkpointLocation = checkpoint, additionalConfs = interpreted),
      AddData(readings, (Some(1), Some(7L), false), (Some(2), Some(7L), false), (Some(5), Some(8L), false)),
      AddData(days, (Some(1), Some("mon"), false)),
      CheckNewAnswer((1, 7L, "mon")),
      NoWholeStageCodegen,
      AddData(days, (Some(3), None, true)),            // no more days <= 3: readings 1, 2 go
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 2, punctuations = 2),
      StopStream,
      StartStream(checkpointLocation = checkpoint, additionalConfs = interpreted),
      // a reading for day 1 meets the stored day 1 (not stored: days <= 3 are closed); then
      // "no more readings <= 4": day 1 goes, and the days' "<= 3" with it
      AddData(readings, (Some(1), Some(9L), false), (Some(4), None, true)),
      CheckNewAnswer((1, 9L, "mon")),
      AddData(days, (Some(5), Some("fri"), false)),
      CheckNewAnswer((5, 8L, "fri")),
      AssertPunctuatedState(rows = 2, punctuations = 2),  // reading 5, day 5; "readings <= 4" twice
      ShippedWithoutChildren(ours, "PunctuatedSymmetricHashJoinExec", "PunctuationReplicatingExchangeExec"))
  }

  test("a multi-way join's tasks, Spark's operators above it interpreted: the batch answer across a restart, shipped without its inputs") {
    val confs = interpreted ++ Map(SQLConf.SHUFFLE_PARTITIONS.key -> "4", PunctuatedConf.JoinPlan -> "mjoin",
      PunctuatedConf.SafetyMode -> "warn")
    val (a, da) = stream("a", "a_k", "a_w", "a_k")
    val (b, db) = stream("b", "b_k", "b_v", "b_k; b_v")
    val (c, dc) = stream("c", "c_v", "c_w", "c_v")
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
      .select(da("a_k"), db("b_v"), da("a_w"), dc("c_w"))
    val checkpoint = Files.createTempDirectory("punctuated-ckpt").toFile.getCanonicalPath
    withSQLConf(confs.toSeq: _*) {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint, additionalConfs = confs),
        AddData(a, xy(1, 10)), AddData(b, xy(1, 7)), AddData(c, xy(7, 20)),
        CheckNewAnswer((1L, 7L, 10L, 20L)),
        NoWholeStageCodegen,
        StopStream,
        StartStream(checkpointLocation = checkpoint, additionalConfs = confs),
        AddData(b, xy(1, 8)), AddData(c, xy(8, 21)),
        CheckNewAnswer((1L, 8L, 10L, 21L)),
        // every value punctuated by every input that has it: nothing left
        AddData(b, onX(1)), AddData(c, onX(7)), AddData(c, onX(8)),
        AddData(a, onX(1)), AddData(b, onY(7)), AddData(b, onY(8)),
        CheckNewAnswer(),
        AssertPunctuatedState(rows = 0, punctuations = 0),
        ShippedWithoutChildren(ours, "PunctuatedMultiJoinExec"))
    }
  }
}
