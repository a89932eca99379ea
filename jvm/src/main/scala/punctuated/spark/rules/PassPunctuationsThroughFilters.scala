package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, Or}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.aggregate.PunctuationKind
import punctuated.join.PunctuationColumns

/**
 * Optimizer rule: a filter between a punctuated stream and the punctuated operator that
 * reads its punctuations (a join, an aggregation) lets the punctuation rows through
 * (Tucker et al. 2003, Table 3, select: punctuations pass), by rewriting `cond` to
 * `marker OR cond`. Data rows (marker false or NULL) are filtered exactly as before. Only
 * the chain of Filters, Projects and aliases directly under the operator is rewritten;
 * punctuations do not cross any other operator.
 */
case class PassPunctuationsThroughFilters(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j @ Join(left, right, _, cond, _) if PunctuationColumns.find(cond).isDefined =>
      val mark = PunctuationColumns.find(cond).get
      val markerIds = (mark.left.toSeq ++ mark.right).flatMap(_.markerId).toSet
      def markers(p: LogicalPlan): Seq[Expression] = p.output.filter(a => markerIds.contains(a.exprId))
      val newLeft = passThrough(left, markers)
      val newRight = passThrough(right, markers)
      if ((newLeft eq left) && (newRight eq right)) j else j.copy(left = newLeft, right = newRight)
    case p @ Project(list, child) if list.exists(_.exists(_.isInstanceOf[PunctuationKind])) =>
      val kinds = list.flatMap(_.collect { case k: PunctuationKind => k })
      val all = kinds.flatMap(k => k.sources.map(s => k.children(s.marker)))
      def markers(node: LogicalPlan): Seq[Expression] = all.filter(_.references.subsetOf(node.outputSet))
      val newChild = passThrough(child, markers)
      if (newChild eq child) p else p.copy(child = newChild)
  }

  private def passThrough(plan: LogicalPlan, markers: LogicalPlan => Seq[Expression]): LogicalPlan =
    plan match {
      case f @ Filter(condition, child) =>
        val newChild = passThrough(child, markers)
        markers(child).reduceOption(Or) match {
          case Some(m) if !isRewritten(condition, m) => Filter(Or(m, condition), newChild)
          case _ => if (newChild eq child) f else f.copy(child = newChild)
        }
      case p @ Project(list, child) =>
        // a marker column may be renamed by this projection (aliases get new ids)
        val renamed = list.collect { case a @ Alias(c: Attribute, _) => a.exprId -> c }.toMap
        def below(node: LogicalPlan): Seq[Expression] =
          markers(p).map(_.transform { case a: Attribute if renamed.contains(a.exprId) => renamed(a.exprId) }) ++
            markers(node)
        val newChild = passThrough(child, n => below(n).filter(_.references.subsetOf(n.outputSet)).distinct)
        if (newChild eq child) p else p.copy(child = newChild)
      case s @ SubqueryAlias(_, child) =>
        val newChild = passThrough(child, markers)
        if (newChild eq child) s else s.copy(child = newChild)
      case other => other
    }

  private def isRewritten(condition: Expression, m: Expression) = condition match {
    case Or(a, _) => a.semanticEquals(m)
    case _ => false
  }
}
