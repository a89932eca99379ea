package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.join.PunctuationColumns

/**
 * Optimizer rule: removes the event-time flag that [[PunctuateStreamingJoins]] put on the
 * join keys of a punctuated outer join for Spark's start-time check, so that nothing
 * downstream mistakes the keys for event-time columns.
 */
case class DropOuterJoinCheckFlag(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j @ Join(_, _, _, Some(condition), _) if PunctuationColumns.find(j.condition).isDefined =>
      val unflagged = PunctuateStreamingJoins.unflagKeys(condition)
      if (unflagged fastEquals condition) j else j.copy(condition = Some(unflagged))
  }
}
