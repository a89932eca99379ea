package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.aggregate.PunctuatedAggregates
import punctuated.conf.PunctuatedConf

/**
 * Post-hoc resolution rule: a streaming GROUP BY whose input carries punctuations that close
 * groups (a declared stream, a punctuated join's or aggregation's output) becomes a
 * punctuated aggregation (see [[PunctuatedAggregates]]): it runs in append mode without a
 * watermark, emitting each group's final row once punctuations close it. Runs after
 * [[PunctuateStreamingJoins]] (a join's output punctuations are found through its mark).
 * Aggregations over undeclared input are left exactly as they are.
 */
case class PunctuateStreamingAggregates(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.involved(plan)) plan
    else plan.resolveOperatorsUp {
    case a: Aggregate if a.isStreaming =>
      PunctuatedAggregates.rewrite(a, PunctuatedConf(session.sessionState.conf),
        session.sessionState.conf.caseSensitiveAnalysis).getOrElse(a)
  }
}
