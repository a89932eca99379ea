package punctuated.aggregate

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, GreaterThan, If, KnownNullable, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.Explode
import org.apache.spark.sql.execution.{GenerateExec, ProjectExec, SparkPlan}

import punctuated.input.PunctuationOutputs

/**
 * The physical plan of a punctuated aggregation whose output punctuations nothing uses (no
 * punctuated operator downstream, not in the results: its [[PunctuatedAggregateExec]] has
 * `emit = false`): the `Generate` that would explode each output group into its final row and
 * its punctuations goes, and so do the projection's `IF(out > 0, NULL, ...)`.
 *
 * Such an operator outputs only groups with data rows and no punctuation kinds (it emits no
 * punctuation-only row and clears the kinds of every row it outputs), so `punctuation_outputs`
 * is `[0]` for each of them: the `Generate` yields each row once with `out = 0`, and every
 * `IF(out > 0, NULL, x)` is `x`. The rewrite only saves the work (the generated code of the
 * final stage, in every micro-batch); the rows and the columns' types and nullability stay.
 *
 * {{{
 *   Project [if (out > 0) null else starts AS starts, ...]        Project [knownnullable(starts) AS starts, ...]
 *   +- Generate explode(punctuation_outputs(rows, kinds, ...))  =>  +- HashAggregate(final)
 *      +- HashAggregate(final)                                          +- PunctuatedAggregate (emit = false)
 *         +- PunctuatedAggregate (emit = false)
 * }}}
 *
 * Kept where the operator emits (a chained aggregation reads its punctuations; the results show
 * them with `spark.punctuated.emitPunctuations`).
 */
object FinalRowsOnly {

  def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case p @ ProjectExec(list, GenerateExec(Explode(_: PunctuationOutputs), _, _, Seq(out), child))
        if !emits(child) =>
      val projected = ProjectExec(list.map(e => withoutOut(e, out).asInstanceOf[NamedExpression]), child)
      projected.copyTagsFrom(p)
      projected
  }

  /** Does the nearest punctuated aggregation below emit its punctuations (unknown: yes)? */
  private def emits(child: SparkPlan): Boolean =
    child.collectFirst { case a: PunctuatedAggregateExec => a.emit }.getOrElse(true)

  /** `e` with `out` always 0: `IF(out > 0, NULL, x)` is `x` (as nullable as the IF was). */
  private def withoutOut(e: Expression, out: Attribute): Expression = e.transformDown {
    case If(GreaterThan(a: Attribute, Literal(0, _)), Literal(null, _), x) if a.exprId == out.exprId =>
      if (x.nullable) x else KnownNullable(x)
    case a: Attribute if a.exprId == out.exprId => Literal(0)
  }
}
