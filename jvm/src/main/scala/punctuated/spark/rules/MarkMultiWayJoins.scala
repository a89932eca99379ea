package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.conf.PunctuatedConf
import punctuated.input.PunctuationColumns
import punctuated.join.multi.MultiJoinGroups

/**
 * Optimizer rule (every micro-batch): stamps each join of a group that runs as one multi-way
 * join ([[MultiJoinGroups]]) with the group's number in its [[PunctuationColumns]] mark, so
 * that the physical rule ([[PlanPunctuatedMultiJoins]]) finds the group among Spark's planned
 * joins. Marks of joins in no group lose a stale number. Nothing else changes.
 *
 * {{{
 *   Join(b.v = c.v AND punctuation_columns(...))            -> multiJoin = Some(0)
 *     Join(a.k = b.k AND punctuation_columns(...))          -> multiJoin = Some(0)
 * }}}
 */
case class MarkMultiWayJoins(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!plan.isStreaming || !plan.exists(_.isInstanceOf[Join]) || !PunctuatedPlans.ours(plan)) plan
    else {
      val conf = session.sessionState.conf
      val groups = MultiJoinGroups.of(plan, PunctuatedConf.joinPlan(conf), PunctuatedConf.emitPunctuations(conf))
      def groupOf(j: Join): Option[Int] = groups.indexWhere(_.joins.exists(_ eq j)) match {
        case -1 => None
        case g => Some(g)
      }
      plan.transformDown {
        case j: Join if PunctuationColumns.find(j.condition).exists(_.multiJoin != groupOf(j)) =>
          val g = groupOf(j)
          j.copy(condition = j.condition.map(_.transform { case m: PunctuationColumns => m.copy(multiJoin = g) }))
      }
    }
}
