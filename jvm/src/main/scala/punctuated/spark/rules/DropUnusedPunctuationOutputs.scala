package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStream

import punctuated.aggregate.FinalRowsOnly
import punctuated.conf.PunctuatedConf

/**
 * Post-hoc resolution rule, applied to the whole query when it starts (its plan is then rooted
 * at `WriteToStream`, the plan every micro-batch re-optimizes): a punctuated aggregation whose
 * output punctuations nothing uses (no punctuated operator above reads them, the results do
 * not show them) loses the `Generate` that would produce them ([[FinalRowsOnly.logical]]), so
 * that Spark's optimizer, which runs on every micro-batch's plan, has less plan to go over.
 * Same rows. With `spark.punctuated.emitPunctuations=true` the plan is left as it is (the
 * physical plan still drops what it can).
 *
 * It runs at start, not on every DataFrame, for the same reason as
 * [[DropUnconsumedPunctuations]]: only the whole query says what reads an aggregation's output.
 */
case class DropUnusedPunctuationOutputs(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case w: WriteToStream if w.inputQuery.isStreaming &&
        !PunctuatedConf.emitPunctuations(session.sessionState.conf) && PunctuatedPlans.ours(w.inputQuery) =>
      val query = AnalysisHelper.allowInvokingTransformsInAnalyzer(FinalRowsOnly.logical(w.inputQuery))
      if (query eq w.inputQuery) w else w.copy(inputQuery = query)
    case other => other
  }
}
