package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{And, Coalesce, EqualTo, Expression, If, Literal, Not, Or}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Expand, Filter, LogicalPlan, Project, SubqueryAlias}

/**
 * Punctuation rows that no scheme of a punctuated aggregation reads
 * ([[PunctuationKind.Ignored]]: valid, but closing none of its keys) are dropped where the
 * stream is read, not carried through the window's projection or copies, the partial
 * aggregation and the shuffle to be ignored at the operator (Tucker et al. 2003, §5.2–5.4,
 * Tables 2–4, group-by: it passes, propagates and purges on `groupPs` only, the punctuations
 * over its grouping attributes — "all tuples have arrived for seller #9932" outputs nothing
 * when grouping on items).
 *
 * {{{
 *   bids (auction, dateTime, ..., is_punct), schemes "auction; dateTime<="
 *   GROUP BY window(dateTime, '10 seconds')       kinds: auction -> Ignored, dateTime<= -> 1
 *   Project [..., kind]                           Project [..., kind]
 *     Project [window(dateTime) ...]      ==>       Project [window(dateTime) ...]
 *       StreamingRelation bids                        Filter IF(is_punct, kind <> -2, true)
 *                                                       StreamingRelation bids
 * }}}
 *
 * Not under a deduplication: it passes such punctuations on to the operators above it (Tucker
 * et al. 2003, Table 3, dupelim: punctuations propagate). Data rows (marker false or NULL) are
 * not looked at; an invalid punctuation row (kind -1) still reaches the operator, which counts
 * it or fails the query as configured. The filter
 * goes only where the operator reads one stream through projections, filters, a window's
 * copies, a watermark or a view alias: below a join or a union the rows may matter to
 * another operator (a join purges on schemes the aggregation above ignores), and Spark's
 * optimizer, which pushes a filter down as far as it can, must not carry it there.
 */
object IgnoredPunctuations {

  /**
   * `child` with the filter dropping ignored punctuation rows on top, when one of `kind`'s
   * streams has a scheme it ignores, the filter is not there already (it may have been
   * pushed further down by the optimizer) and the chain below reaches the stream plainly;
   * else `child` itself.
   *
   * @param kind   the operator's punctuation kind (the expression of its kind column)
   * @param markers the marker expressions of `kind`'s streams, as `child` reads them
   */
  def dropped(kind: PunctuationKind, markers: Seq[Expression], child: LogicalPlan): LogicalPlan = {
    val ignores = kind.sources.exists(_.kinds.contains(PunctuationKind.Ignored))
    if (!ignores || markers.isEmpty || !plain(child) || present(kind, child)) child
    else {
      val marker = markers.map {
        case Coalesce(Seq(m, Literal(false, _))) => m
        case m => m
      }.reduce(Or)
      Filter(If(marker, Not(EqualTo(kind, Literal(PunctuationKind.Ignored))), Literal(true)), child)
    }
  }

  /**
   * A filter's condition split into the conjuncts that drop ignored punctuations (they read a
   * [[PunctuationKind]]) and the rest, And-ed (None when nothing else is left).
   *
   * {{{
   *   split(isnotnull(ts) AND IF(p, kind <> -2, true))  // ([IF(p, kind <> -2, true)], Some(isnotnull(ts)))
   * }}}
   */
  def split(condition: Expression): (Seq[Expression], Option[Expression]) = {
    val (ours, rest) = splitConjuncts(condition).partition(_.exists(_.isInstanceOf[PunctuationKind]))
    (ours, rest.reduceOption(And))
  }

  private def splitConjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => splitConjuncts(a) ++ splitConjuncts(b)
    case other => Seq(other)
  }

  /** Only projections, filters, window copies, watermarks and aliases down to one stream. */
  private def plain(plan: LogicalPlan): Boolean = plan match {
    case _: Project | _: Filter | _: Expand | _: SubqueryAlias | _: EventTimeWatermark => plain(plan.children.head)
    case leaf => leaf.children.isEmpty
  }

  /** The filter for this kind is somewhere below already (it carries a copy of the kind). */
  private def present(kind: PunctuationKind, plan: LogicalPlan): Boolean =
    plan.exists(_.expressions.exists(_.exists {
      case k: PunctuationKind => k.layout.counts == kind.layout.counts
      case _ => false
    }))
}
