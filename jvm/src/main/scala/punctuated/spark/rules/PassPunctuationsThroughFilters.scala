package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Or}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.join.PunctuationColumns

/**
 * Optimizer rule: a filter between a declared source and a punctuated join lets the
 * punctuation rows through (Tucker et al. 2003, Table 3, select: punctuations pass), by
 * rewriting `cond` to `marker OR cond`. Data rows (marker false or NULL) are filtered
 * exactly as before. Only the chain of Filters, Projects and aliases directly under the join
 * is rewritten; punctuations do not cross any other operator.
 */
case class PassPunctuationsThroughFilters(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j @ Join(left, right, _, cond, _) if PunctuationColumns.find(cond).isDefined =>
      val marker = PunctuationColumns.find(cond).get
      val markerIds = (marker.left.toSeq ++ marker.right).flatMap(_.markerId).toSet
      val newLeft = passThrough(left, markerIds)
      val newRight = passThrough(right, markerIds)
      if ((newLeft eq left) && (newRight eq right)) j else j.copy(left = newLeft, right = newRight)
  }

  private def passThrough(plan: LogicalPlan, markerIds: Set[org.apache.spark.sql.catalyst.expressions.ExprId]): LogicalPlan = {
    def markerIn(p: LogicalPlan): Option[Attribute] = p.output.find(a => markerIds.contains(a.exprId))
    plan match {
      case f @ Filter(condition, child) =>
        val newChild = passThrough(child, markerIds)
        markerIn(child) match {
          case Some(m) if !isRewritten(condition, m) => Filter(Or(m, condition), newChild)
          case _ => if (newChild eq child) f else f.copy(child = newChild)
        }
      case p @ Project(list, child) =>
        // the marker may be renamed by this projection (aliases get new ids)
        val renamed = list.collect {
          case a @ org.apache.spark.sql.catalyst.expressions.Alias(c: Attribute, _)
              if markerIds.contains(a.exprId) => c.exprId
        }
        val newChild = passThrough(child, markerIds ++ renamed)
        if (newChild eq child) p else p.copy(child = newChild)
      case s @ SubqueryAlias(_, child) =>
        val newChild = passThrough(child, markerIds)
        if (newChild eq child) s else s.copy(child = newChild)
      case other => other
    }
  }

  private def isRewritten(condition: org.apache.spark.sql.catalyst.expressions.Expression, m: Attribute) =
    condition match {
      case Or(a: Attribute, _) => a.exprId == m.exprId
      case _ => false
    }
}
