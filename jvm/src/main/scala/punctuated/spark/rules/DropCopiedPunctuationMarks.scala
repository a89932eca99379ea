package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.{And, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.input.PunctuationColumns

/**
 * Optimizer rule (every micro-batch, before the extension's other optimizer rules): removes
 * the copies of a join's [[PunctuationColumns]] mark that Spark's constraint propagation
 * (`InferFiltersFromConstraints`) adds. From `a.c = b.c` and the mark
 * `punctuation_columns(a.c, a.p, b.c, b.p)` it infers `punctuation_columns(b.c, a.p, b.c, b.p)`
 * — always TRUE, so harmless to the rows, but its columns are no longer the declared ones,
 * and a copy taken for the mark would decode an input's punctuations by another input's
 * columns.
 *
 * In a join condition, the mark is the conjunct whose left input's columns come from the
 * join's left input and right input's from its right one (the copies' columns cross over), and
 * among those the first whose columns carry the declared names; every other mark is dropped.
 * A mark in a filter is always a copy (Spark pushed it below a join): dropped.
 *
 * {{{
 *   Join(a.c = b.c AND mark(a.c, b.c) AND mark(b.c, b.c))   ->  Join(a.c = b.c AND mark(a.c, b.c))
 *   Filter(mark(b.c, b.c) AND b.x > 1)                       ->  Filter(b.x > 1)
 * }}}
 */
object DropCopiedPunctuationMarks extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.ours(plan)) plan
    else plan.transform {
    case j @ Join(left, right, _, Some(condition), _) if marks(condition).size > 1 =>
      val all = marks(condition)
      def sides(m: PunctuationColumns) = {
        val leftCount = m.leftInput.map(_._2.size).getOrElse(1)
        m.children.take(leftCount).forall(_.references.subsetOf(left.outputSet)) &&
          m.children.drop(leftCount).forall(_.references.subsetOf(right.outputSet))
      }
      val kept = PunctuationColumns.find(Some(all.filter(sides).reduceOption[Expression](And)
        .getOrElse(all.reduce[Expression](And))))
      j.copy(condition = without(condition, m => !kept.exists(_ eq m)))
    case f @ Filter(condition, child) if marks(condition).nonEmpty =>
      without(condition, _ => true) match {
        case Some(rest) => f.copy(condition = rest)
        case None => child
      }
  }

  private def marks(e: Expression): Seq[PunctuationColumns] = e.collect { case m: PunctuationColumns => m }

  /** The conjuncts of `e` without the marks `drop` selects (None if nothing is left). */
  private def without(e: Expression, drop: PunctuationColumns => Boolean): Option[Expression] = e match {
    case And(a, b) => (without(a, drop), without(b, drop)) match {
      case (Some(x), Some(y)) => Some(And(x, y))
      case (x, y) => x.orElse(y)
    }
    case m: PunctuationColumns if drop(m) => None
    case other => Some(other)
  }
}
