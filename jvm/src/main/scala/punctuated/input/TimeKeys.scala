package punctuated.input

import scala.collection.mutable
import scala.util.Try

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Expand, LogicalPlan, Project}

import punctuated.input.MonotoneExpressions.{Computed, Definition, Definitions, TimeWindowOf}

/**
 * Grouping keys that a range punctuation on a time column closes through an expression
 * ([[MonotoneExpressions]]): `GROUP BY window(ts, ...)`, `date_trunc('hour', ts)`, `to_date(ts)`
 * and the like, with the declared scheme `ts<=` (Tucker et al. 2003, §5.2 and §7: a group of a
 * non-decreasing function of a punctuated attribute is complete once the punctuation passes
 * its last value). The aggregation's rewrite ([[PunctuatedAggregates]]) uses it to
 *  - compute expression keys as columns first ([[pullOut]], as Spark's optimizer does),
 *  - find how each grouping column is computed ([[definitions]]: projections, and the windows
 *    Spark's `TimeWindowing` builds — a projection for tumbling windows, an `Expand` for sliding
 *    ones),
 *  - fill a closed key on the punctuation row with the bound ([[closing]]), so the operator
 *    closes every group `<= bound` as for any range scheme.
 *
 * {{{
 *   readings schemes "ts<="; GROUP BY window(ts, '10 minutes')
 *   punctuation ts <= 10:09:59.999999  ->  window key filled with (10:00, 10:10) - 1 µs each:
 *   closes [10:00, 10:10) and every earlier window; [10:10, 10:20) stays open
 * }}}
 */
object TimeKeys {

  /** Metadata flag on a grouping column closed through a time expression (read by the safety check). */
  val ClosedOnTime = "punctuated.closedOnTime"
  /** Spark's metadata flag on the column of `window(...)` (`TimeWindow.marker`). */
  val WindowMarker = "spark.timeWindow"

  /**
   * The aggregation with its expression keys computed in a projection below it (each named
   * as the select list names it, else by its SQL), or None when every key is a column.
   */
  def pullOut(a: Aggregate): Option[Aggregate] = {
    val complex = a.groupingExpressions.filterNot(_.isInstanceOf[Attribute])
      .foldLeft(Seq.empty[Expression])((seen, e) => if (seen.exists(_.semanticEquals(e))) seen else seen :+ e)
    if (complex.isEmpty) return None
    val aliases = complex.map { e =>
      val name = a.aggregateExpressions.collectFirst { case al: Alias if al.child.semanticEquals(e) => al.name }
      Alias(e, name.getOrElse(e.sql))()
    }
    def replace(e: Expression): Expression = e match {
      case ae: AggregateExpression => ae
      case x => aliases.find(_.child.semanticEquals(x)).map(_.toAttribute: Expression)
        .getOrElse(x.withNewChildren(x.children.map(replace)))
    }
    Some(a.copy(
      groupingExpressions = a.groupingExpressions.map(replace),
      aggregateExpressions = a.aggregateExpressions.map(replace(_).asInstanceOf[NamedExpression]),
      child = Project(a.child.output ++ aliases, a.child)))
  }

  /** How the columns computed in `plan` (projections, windows) are computed. */
  def definitions(plan: LogicalPlan): Definitions = {
    val defs = mutable.HashMap.empty[ExprId, Definition]
    plan.foreach {
      case Project(list, _) => list.foreach {
        case al: Alias if al.metadata.contains(WindowMarker) => windowOf(al.child).foreach(defs(al.exprId) = _)
        case al: Alias => defs(al.exprId) = Computed(al.child)
        case _ =>
      }
      case e: Expand => e.output.zipWithIndex.foreach {
        case (a, i) if a.metadata.contains(WindowMarker) =>
          e.projections.headOption.flatMap(p => windowOf(p(i))).foreach(defs(a.exprId) = _)
        case _ =>
      }
      case _ =>
    }
    defs.get
  }

  /**
   * For each range attribute of the reaching schemes that is not itself a grouping column:
   * the first grouping position that never decreases with it, and the bound to fill that key
   * with on the punctuation row.
   */
  def closing(grouping: Seq[Attribute], defs: Definitions, ranges: Seq[Attribute]): Map[ExprId, (Int, Expression)] =
    ranges.distinctBy(_.exprId).filterNot(t => grouping.exists(_.exprId == t.exprId)).flatMap { t =>
      grouping.indices.iterator.flatMap { p =>
        MonotoneExpressions.closingBound(grouping(p), t, defs).toOption.map { b =>
          val bound = if (b.dataType == grouping(p).dataType) b else Cast(b, grouping(p).dataType)
          // a punctuation of another scheme leaves `t` NULL: its key stays NULL (a wildcard), not
          // the bound of NULL (for a window, a struct of two NULLs: a value, which a punctuated
          // operator reading this one's output punctuations would take for a set column)
          t.exprId -> (p, If(IsNull(t), Literal(null, grouping(p).dataType), bound))
        }
      }.nextOption()
    }.toMap

  /** Is this key (of a rewritten aggregation) closed through a time expression? */
  def closedOnTime(key: Expression): Boolean = key.exists {
    case a: Attribute => a.metadata.contains(ClosedOnTime)
    case _ => false
  }

  /**
   * Why the range punctuations on `ranges` close no group of the key `e` (an expression of one
   * of them that is not monotone, e.g. `hour(ts)`), with the fix; None if `e` does not use them.
   */
  def notClosable(e: Expression, ranges: Seq[Attribute], input: LogicalPlan,
      operator: String = "aggregation"): Option[String] = {
    val (what, by) = if (operator == "aggregation") ("group", "Group by") else ("key", "Deduplicate on")
    val defs = definitions(input)
    ranges.distinctBy(_.exprId).find(t => e.references.exists(_.exprId == t.exprId)).flatMap { t =>
      // shown as written (`hour(ts)`, not `hour(spark_catalog.default.readings.ts)`)
      val plain = e.transform { case a: AttributeReference => a.withQualifier(Nil) }
      MonotoneExpressions.closingBound(plain, t, defs).left.toOption.map { why =>
        s"the range punctuations on ${t.name} close no $what of ${plain.sql}: $why. $by an expression " +
          s"that never decreases as ${t.name} grows instead — window(${t.name}, '1 hour'), " +
          s"date_trunc('hour', ${t.name}), to_date(${t.name}) (docs/aggregation.md, \"Windows and time expressions\")"
      }
    }
  }

  /**
   * Why `attr>=` punctuations (`atLeast`: the attributes declared so) close no group of the key
   * `e` computed from one of them (`window(ts, ...)`, `date_trunc('hour', ts)`), with the fix;
   * None if `e` uses none. Such a key's groups end at increasing times, so a punctuation saying
   * "no more rows at or after c" never shows one complete; only `attr<=` does.
   */
  def closedOnlyFromBelow(e: Expression, atLeast: Seq[Attribute], operator: String = "aggregation"): Option[String] = {
    val plain = e.transform { case a: AttributeReference => a.withQualifier(Nil) }
    closedOnlyFromBelow(plain.sql, e.references.toSeq, atLeast, operator)
  }

  /** The same for the key column `key` of `input` computed there (a window, a projection). */
  def closedOnlyFromBelow(key: Attribute, defs: Definitions, atLeast: Seq[Attribute], operator: String): Option[String] =
    defs(key.exprId).flatMap {
      case Computed(e) => closedOnlyFromBelow(e, atLeast, operator)
      case TimeWindowOf(t, _) => closedOnlyFromBelow(s"window(${t.name}, ...)", Seq(t), atLeast, operator)
      case _ => None
    }

  private def closedOnlyFromBelow(shown: String, uses: Seq[Attribute], atLeast: Seq[Attribute],
      operator: String): Option[String] = {
    val (what, by) = if (operator == "aggregation") ("group", "group by") else ("key", "deduplicate on")
    atLeast.distinctBy(_.exprId).find(t => uses.exists(_.exprId == t.exprId)).map { t =>
      s"'${t.name}>=' punctuations close no $what of $shown: its ${what}s are closed only by " +
        s"range punctuations '${t.name}<=' (\"no more rows at or before c\"). Declare '${t.name}<=' on the stream and " +
        s"punctuate it, or $by ${t.name} itself (which '${t.name}>=' closes)"
    }
  }

  /** A fixed-size window `named_struct(start, s(ts), end, e(ts))`: its time column and size. */
  private def windowOf(e: Expression): Option[TimeWindowOf] = e match {
    case c: CreateNamedStruct if c.valExprs.size == 2 && e.references.size == 1 =>
      val time = e.references.head
      def size(at: Long): Option[Long] = Try {
        val bound = c.transform { case a: Attribute => Literal(at, a.dataType) }
        val row = bound.eval().asInstanceOf[org.apache.spark.sql.catalyst.InternalRow]
        row.getLong(1) - row.getLong(0)
      }.toOption
      (size(0L), size(1000000000123L)) match {
        case (Some(a), Some(b)) if a == b && a > 0 => Some(TimeWindowOf(time, a))
        case _ => None
      }
    case _ => None
  }
}
