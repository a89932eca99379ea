package punctuated.aggregate

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, GreaterThan, If, KnownNullable, Literal, NamedExpression}
import org.apache.spark.sql.catalyst.expressions.Explode
import org.apache.spark.sql.catalyst.optimizer.CollapseProject
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Generate, LogicalPlan, Project}
import org.apache.spark.sql.execution.{GenerateExec, ProjectExec, SparkPlan}

import punctuated.input.PunctuationOutputs

/**
 * A punctuated aggregation whose output punctuations nothing uses, with its final rows only:
 * in the logical plan when the query starts ([[logical]]), else in the physical plan (below).
 *
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
 *   +- Generate explode(punctuation_outputs(counts))            =>  +- HashAggregate(final)
 *      +- HashAggregate(final)                                          +- PunctuatedAggregate (emit = false)
 *         +- PunctuatedAggregate (emit = false)
 * }}}
 *
 * Kept where the operator emits (a chained aggregation reads its punctuations; the results show
 * them with `spark.punctuated.emitPunctuations`).
 */
object FinalRowsOnly {

  /**
   * The logical rewrite, on the whole query when it starts (the plan every micro-batch re-optimizes):
   * where the projection above an aggregation's `Generate` reads `out` only in
   * `IF(out > 0, NULL, x)` (no operator above and no result column reads the punctuations), the
   * `Generate` goes and each such column is `x`. Then the aggregation's physical operator has
   * nothing that uses its punctuations (`emit = false`), so it outputs the same rows as the
   * physical rewrite below; its hidden counts (`punctuation_counts`) stay referenced by the last
   * result column ([[FinalValue]]), which keeps them from column pruning and keeps the aggregates
   * in their order (the state's schema). Output columns, types and nullability are the projection's.
   * The projection left is folded into the aggregation (as the optimizer's `CollapseProject` would
   * fold it again in every micro-batch).
   *
   * {{{
   *   Project [if (out > 0) null else starts AS starts, if (out > 0) null else bids AS bids]
   *   +- Generate explode(punctuation_outputs(counts)) AS out
   *      +- Aggregate [window], [window.start AS starts, count(1) FILTER (kind = 0) AS bids, counts]
   *   ==>
   *   Aggregate [window], [window.start AS starts,
   *                        final_value(knownnullable(count(1) FILTER (kind = 0)), punctuation_counts(...)) AS bids]
   * }}}
   */
  def logical(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case Project(list, Generate(Explode(outputs: PunctuationOutputs), _, _, _, Seq(out), child))
        if list.exists(_.isInstanceOf[Alias]) &&
          !list.exists(e => withoutOut(e, out, reference = None).references.exists(_.exprId == out.exprId)) =>
      val columns = list.map(e => withoutOut(e, out, reference = None).asInstanceOf[NamedExpression])
      val last = columns.lastIndexWhere(_.isInstanceOf[Alias])
      val kept = columns.updated(last, columns(last) match {
        case a: Alias =>
          Alias(FinalValue(a.child, outputs.children), a.name)(a.exprId, a.qualifier, a.explicitMetadata,
            a.nonInheritableMetadataKeys)
      })
      collapsed(kept, child)
  }

  /**
   * `Project(list, child)`, folded into the aggregation below as the optimizer's
   * `CollapseProject` would fold it in every micro-batch: here once, when the query starts.
   */
  private def collapsed(list: Seq[NamedExpression], child: LogicalPlan): LogicalPlan = child match {
    case agg: Aggregate if CollapseProject.canCollapseExpressions(list, agg.aggregateExpressions, false) &&
        list.forall(_.references.forall(at => agg.aggregateExpressions.exists(_.exprId == at.exprId))) =>
      agg.copy(aggregateExpressions = CollapseProject.buildCleanedProjectList(list, agg.aggregateExpressions))
    case _ => Project(list, child)
  }

  def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
    case p @ ProjectExec(list, GenerateExec(Explode(_: PunctuationOutputs), _, _, Seq(out), child))
        if !emits(child) =>
      val projected = ProjectExec(list.map(e => withoutOut(e, out, Some(Literal(0))).asInstanceOf[NamedExpression]), child)
      projected.copyTagsFrom(p)
      projected
  }

  /** Does the nearest punctuated aggregation below emit its punctuations (unknown: yes)? */
  private def emits(child: SparkPlan): Boolean =
    child.collectFirst { case a: PunctuatedAggregateExec => a.emit }.getOrElse(true)

  /**
   * `e` with `out` always 0: `IF(out > 0, NULL, x)` is `x` (as nullable as the IF was), and any
   * other `out` is `reference` (None: left as it is).
   */
  private def withoutOut(e: Expression, out: Attribute, reference: Option[Expression]): Expression = e.transformDown {
    case If(GreaterThan(a: Attribute, Literal(0, _)), Literal(null, _), x) if a.exprId == out.exprId =>
      if (x.nullable) x else KnownNullable(x)
    case a: Attribute if a.exprId == out.exprId && reference.isDefined => reference.get
  }
}
