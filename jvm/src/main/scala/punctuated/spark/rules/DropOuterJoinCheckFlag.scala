package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.optimizer.RemoveRedundantAliases
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreePattern.JOIN
import org.apache.spark.sql.types.MetadataBuilder

import punctuated.aggregate.PunctuatedAggregates
import punctuated.input.PunctuationColumns

/**
 * Optimizer rule: removes the event-time flags that let punctuated operators pass Spark's
 * start-time checks (no watermark is involved in them), so that nothing downstream mistakes
 * the flagged columns for event-time columns: the join keys of a punctuated outer join
 * ([[PunctuateStreamingJoins]]) and the first grouping column of a punctuated aggregation
 * ([[PunctuatedAggregates]], for the append-mode check).
 *
 * A grouping column flagged by an alias of its own (`auction AS auction`, only the flag added)
 * is left a redundant alias: it goes in the same pass, so that the optimizer does not need one
 * more pass over the whole plan for it in every micro-batch.
 *
 * The optimizer runs it in each of its passes over every micro-batch's plan, and only the first
 * finds anything, so the others must cost little: joins are looked for only where the plan has
 * one, and a flag only among the columns each operator outputs (a flagged column anywhere in an
 * expression is the output of the operator below, flagged too: the flags are all removed in one
 * pass), not in every expression.
 */
case class DropOuterJoinCheckFlag(session: SparkSession) extends Rule[LogicalPlan] {
  private val flag = PunctuatedAggregates.CheckFlag

  override def apply(plan: LogicalPlan): LogicalPlan = if (!PunctuatedPlans.ours(plan)) plan else {
    val joins = plan.transformUpWithPruning(_.containsPattern(JOIN)) {
      case j @ Join(_, _, _, Some(condition), _) if PunctuationColumns.find(j.condition).isDefined =>
        val unflagged = PunctuateStreamingJoins.unflagKeys(condition)
        if (unflagged fastEquals condition) j else j.copy(condition = Some(unflagged))
    }
    if (!joins.exists(_.output.exists(_.metadata.contains(flag)))) joins
    else RemoveRedundantAliases(joins.transformAllExpressions {
      case a: AttributeReference if a.metadata.contains(flag) =>
        a.withMetadata(unflag(a.metadata))
      case a: Alias if a.explicitMetadata.exists(_.contains(flag)) =>
        Alias(a.child, a.name)(a.exprId, a.qualifier, a.explicitMetadata.map(unflag), a.nonInheritableMetadataKeys)
    })
  }

  private def unflag(m: org.apache.spark.sql.types.Metadata) =
    new MetadataBuilder().withMetadata(m).remove(EventTimeWatermark.delayKey).remove(flag).build()
}
