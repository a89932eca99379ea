package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.optimizer.RemoveRedundantAliases
import org.apache.spark.sql.catalyst.rules.Rule
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
 */
case class DropOuterJoinCheckFlag(session: SparkSession) extends Rule[LogicalPlan] {
  private val flag = PunctuatedAggregates.CheckFlag

  override def apply(plan: LogicalPlan): LogicalPlan = if (!PunctuatedPlans.ours(plan)) plan else {
    val joins = plan.transformUp {
      case j @ Join(_, _, _, Some(condition), _) if PunctuationColumns.find(j.condition).isDefined =>
        val unflagged = PunctuateStreamingJoins.unflagKeys(condition)
        if (unflagged fastEquals condition) j else j.copy(condition = Some(unflagged))
    }
    if (!joins.exists(_.expressions.exists(_.exists(hasFlag)))) joins
    else RemoveRedundantAliases(joins.transformAllExpressions {
      case a: AttributeReference if a.metadata.contains(flag) =>
        a.withMetadata(unflag(a.metadata))
      case a: Alias if a.explicitMetadata.exists(_.contains(flag)) =>
        Alias(a.child, a.name)(a.exprId, a.qualifier, a.explicitMetadata.map(unflag), a.nonInheritableMetadataKeys)
    })
  }

  private def hasFlag(e: org.apache.spark.sql.catalyst.expressions.Expression) = e match {
    case a: AttributeReference => a.metadata.contains(flag)
    case a: Alias => a.explicitMetadata.exists(_.contains(flag))
    case _ => false
  }

  private def unflag(m: org.apache.spark.sql.types.Metadata) =
    new MetadataBuilder().withMetadata(m).remove(EventTimeWatermark.delayKey).remove(flag).build()
}
