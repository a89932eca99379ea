package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Deduplicate, Distinct, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.conf.PunctuatedConf
import punctuated.dedup.PunctuatedDeduplicates

/**
 * Post-hoc resolution rule: a streaming `dropDuplicates` / `DISTINCT` / `UNION` over input
 * whose punctuations close keys becomes a punctuated deduplication (see
 * [[PunctuatedDeduplicates]]): seen keys are forgotten once punctuated. Others are left
 * exactly as they are.
 */
case class PunctuateStreamingDeduplicates(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.involved(plan)) plan
    else plan.resolveOperatorsUp {
    case d @ (_: Deduplicate | _: Distinct) if d.isStreaming =>
      PunctuatedDeduplicates.rewrite(d, PunctuatedConf(session.sessionState.conf),
        session.sessionState.conf.caseSensitiveAnalysis).getOrElse(d)
  }
}
