package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Coalesce, ExprId, Expression, If, Literal, NamedExpression, Not, Or}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.join.{InputDeclaration, PunctuationColumns}

/**
 * Optimizer rule: a filter between a declared source and a punctuated join lets the
 * punctuation rows through (Tucker et al. 2003, Table 3, select: punctuations pass), by
 * rewriting `cond` to `marker OR cond`. Data rows (marker false or NULL) are filtered
 * exactly as before. Only the chain of Filters, Projects and aliases directly under the join
 * is rewritten; punctuations do not cross any other operator.
 *
 * An input with a `punctuated.unique` key that is part of the join key and a marker column:
 * a data row the filter drops still says "no more rows with this key" (the filtered stream
 * is a subset of the stream). Dropping it would lose that punctuation, and the other input's
 * rows with that key would wait forever for a partner that was filtered away (e.g. bids on
 * auctions of another category). So the filter becomes a projection that turns each dropped
 * data row into the punctuation row of its unique key: marker true, the key columns kept,
 * every other column NULL.
 */
case class PassPunctuationsThroughFilters(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j @ Join(left, right, _, cond, _) if PunctuationColumns.find(cond).isDefined =>
      val marker = PunctuationColumns.find(cond).get
      val markerIds = (marker.left.toSeq ++ marker.right).flatMap(_.markerId).toSet
      val (leftKeys, rightKeys) = j match {
        case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) => (keyIds(lk), keyIds(rk))
        case _ => (Set.empty[ExprId], Set.empty[ExprId])
      }
      val newLeft = passThrough(left, markerIds, uniqueInKey(marker.left, leftKeys))
      val newRight = passThrough(right, markerIds, uniqueInKey(marker.right, rightKeys))
      if ((newLeft eq left) && (newRight eq right)) j else j.copy(left = newLeft, right = newRight)
  }

  private def keyIds(keys: Seq[Expression]): Set[ExprId] = keys.collect { case a: Attribute => a.exprId }.toSet

  /** The unique key's column ids at the join input, if all of them are join keys. */
  private def uniqueInKey(decl: Option[InputDeclaration], keys: Set[ExprId]): Set[ExprId] =
    decl.flatMap { d =>
      d.declaration.unique.flatMap { u =>
        val ids = u.names.map(d.columns.get)
        if (ids.nonEmpty && ids.forall(_.exists(keys.contains))) Some(ids.flatten.toSet) else None
      }
    }.getOrElse(Set.empty)

  private def passThrough(plan: LogicalPlan, markerIds: Set[ExprId], unique: Set[ExprId]): LogicalPlan = {
    def markerIn(p: LogicalPlan): Option[Attribute] = p.output.find(a => markerIds.contains(a.exprId))
    plan match {
      case f @ Filter(condition, child) =>
        val newChild = passThrough(child, markerIds, unique)
        markerIn(child) match {
          case Some(m) if unique.nonEmpty && unique.subsetOf(child.output.map(_.exprId).toSet) =>
            uniqueAsPunctuations(condition, m, unique, newChild)
          case Some(m) if !isRewritten(condition, m) => Filter(Or(m, condition), newChild)
          case _ => if (newChild eq child) f else f.copy(child = newChild)
        }
      case p @ Project(list, child) =>
        // the marker may be renamed by this projection (aliases get new ids)
        val renamed = list.collect {
          case a @ Alias(c: Attribute, _) if markerIds.contains(a.exprId) => c.exprId
        }
        val renamedUnique = list.collect {
          case a @ Alias(c: Attribute, _) if unique.contains(a.exprId) => c.exprId
        }
        val newChild = passThrough(child, markerIds ++ renamed, unique ++ renamedUnique)
        if (newChild eq child) p else p.copy(child = newChild)
      case s @ SubqueryAlias(_, child) =>
        val newChild = passThrough(child, markerIds, unique)
        if (newChild eq child) s else s.copy(child = newChild)
      case other => other
    }
  }

  /** `Filter(cond)` as a projection: rows it drops become their unique key's punctuation. */
  private def uniqueAsPunctuations(condition: Expression, m: Attribute, unique: Set[ExprId],
      child: LogicalPlan): LogicalPlan = {
    val isPunct = Coalesce(Seq(m, Literal(false)))
    val keep = Or(isPunct, Coalesce(Seq(condition, Literal(false))))
    val list: Seq[NamedExpression] = child.output.map { a =>
      if (a.exprId == m.exprId) Alias(Or(isPunct, Not(keep)), a.name)(exprId = a.exprId)
      else if (unique.contains(a.exprId)) a
      else Alias(If(keep, a, Literal(null, a.dataType)), a.name)(exprId = a.exprId)
    }
    // The columns keep their ids (the join and the operators above refer to them), so the
    // marker goes first: a projection with its child's output in the same order would be
    // removed as a no-op (RemoveNoopOperators compares ids), dropping the filter with it.
    val (markerFirst, rest) = list.partition(_.exprId == m.exprId)
    Project(markerFirst ++ rest, child)
  }

  private def isRewritten(condition: Expression, m: Attribute) =
    condition match {
      case Or(a: Attribute, _) => a.exprId == m.exprId
      case _ => false
    }
}
