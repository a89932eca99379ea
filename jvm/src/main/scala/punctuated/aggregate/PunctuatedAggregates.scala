package punctuated.aggregate

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Complete}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, EventTimeWatermark, Generate, LogicalPlan, Project}
import org.apache.spark.sql.types.{IntegerType, MetadataBuilder}

import punctuated.conf.PunctuatedConf
import punctuated.input.{AggregateLayout, FoundSource, FoundSources, KindColumn, PunctuationKind, PunctuationOutputs, PunctuationSources, PunctuationTag, RewrittenOperators}
import punctuated.input.{KeyScheme, TimeKeys}

/**
 * The analyzer's rewrite of a streaming GROUP BY over punctuated input (Tucker et al. 2003,
 * §5.2 and Table 2: group-by *passes* a group once punctuations match all its future rows,
 * *keeps* the rest, *propagates* punctuations on grouping attributes). Spark's own
 * aggregation machinery computes the aggregates; the rewrite only tells punctuation rows
 * apart and carries what the physical operator needs:
 *
 * {{{
 *   Aggregate(g, aggs, input)
 *   ==>
 *   Project(g, if(out > 0, NULL, agg) ...)                       results (punctuations: NULLs)
 *     Generate(explode(punctuation_outputs(counts)) AS out)     final row + punctuations
 *       Aggregate(g', aggs FILTER (kind = 0),                      Spark's streaming aggregation;
 *                 punctuation_counts(kind) AS counts)               its state-store save step
 *                                                                   is PunctuatedAggregateExec
 *         Project(read, kind, g')                                   read: the columns the
 *           Project(read, punctuation_kind(...) AS kind)                aggregation, its kind
 *             input (projections on the way keep the punctuations' columns)   and keys read
 * }}}
 *
 * A punctuation row lands in the group its pattern names (its other grouping columns are
 * NULL: wildcards), so a punctuation on the whole grouping key meets the group it closes in
 * the same partition; the data aggregates ignore it (FILTER). `g'` differs from `g` only where
 * a punctuation on a column equal to a grouping column by a join (`a.id = b.auction`)
 * closes that grouping column.
 *
 * Keys that are expressions (`date_trunc('hour', ts)`, `window(ts, ...).start`) are first
 * computed as columns below ([[TimeKeys.pullOut]]); a range scheme on a time column `ts<=`
 * closes a key that never decreases with `ts` (a window, `date_trunc`, ...: [[TimeKeys]],
 * [[MonotoneExpressions]]), its punctuation rows carrying the bound in that key's column
 * (`g'` = `if(kind > 0, bound(ts), g)`), so the operator closes it as any range. Without such a
 * key, an aggregation by expressions is left to Spark (and the safety check). A watermark on
 * the input closes keys of its column too, next to the declared schemes ([[WatermarkClosing]]).
 *
 * Worked example (bids schemes "auction"; `SELECT auction, sum(price) FROM bids GROUP BY auction`):
 * {{{
 *   batch 0: (7, 5.0), (7, 2.0)          -> group 7 stored: rows 2, sum 7.0; nothing emitted
 *   batch 1: (7, 1.0), punctuation 7     -> group 7 closed: emits (7, 8.0), state dropped
 * }}}
 */
object PunctuatedAggregates {

  val CountsColumn = "__punctuation_counts"
  val OutColumn = "__punctuation_out"
  /** Metadata flag on the grouping column that lets Spark's append-mode check pass. */
  val CheckFlag = "punctuated.appendCheck"

  /**
   * The rewrite, or None when the aggregation reads no punctuated stream, or none of their
   * schemes closes a group (then it is Spark's, and the safety check speaks).
   */
  def rewrite(a: Aggregate, conf: PunctuatedConf, caseSensitive: Boolean): Option[LogicalPlan] =
    if (!a.child.isStreaming || isRewritten(a.child)) None
    else TimeKeys.pullOut(a) match {
      // expression keys: only where a range punctuation closes one through a time expression
      case Some(pulled) => rewriteKeys(pulled, conf, caseSensitive, onTimeOnly = true)
      case None => rewriteKeys(a, conf, caseSensitive, onTimeOnly = false)
    }

  private def rewriteKeys(a: Aggregate, conf: PunctuatedConf, caseSensitive: Boolean,
      onTimeOnly: Boolean): Option[LogicalPlan] = {
    val grouping = a.groupingExpressions.collect { case g: Attribute => g }
    if (grouping.isEmpty || grouping.size != a.groupingExpressions.size || grouping.size >= 24) return None
    val found = readColumnsOnly(PunctuationSources.find(a.child, caseSensitive).getOrElse(return None), a)

    // keys closed by a range on a time column through a monotone expression (window, date_trunc)
    val ranges = found.sources.flatMap(_.schemes.flatMap(_._1.collect { case (at, punctuated.declaration.AttributeKind.AtMost) => at }))
    val onTime = TimeKeys.closing(grouping, TimeKeys.definitions(a.child), ranges)
    val (declaredKind, declared, substituted) = KindColumn(grouping, found, conf, useEqualities = true,
      ranges = at => onTime.get(at.exprId).map(_._1)).getOrElse(return None)
    val filled: Map[Int, Expression] = onTime.values.toMap
    // the input's watermarks close groups too (next to the declared schemes, never alone)
    val (kindAlias, layout) = WatermarkClosing.kindColumn(declaredKind, grouping, found.plan)
    if (onTimeOnly && !declared.closing.exists(_.ranges.exists(r => filled.contains(r._1))) &&
      !layout.watermarks.exists(w => grouping(w.position).exprId != w.time.exprId)) return None
    val kind = kindAlias.toAttribute

    // g': the grouping columns, filled from equal columns on punctuation rows; the first one
    // flagged as an event-time column for Spark's append-mode check only
    val visible = found.plan.outputSet
    val groupAliases = grouping.zipWithIndex.map { case (g, i) =>
      val value: Expression =
        if (filled.contains(i)) If(GreaterThan(kind, Literal(0)), filled(i), g)
        else if (!substituted.contains(i)) g
        else If(GreaterThan(kind, Literal(0)),
          Coalesce(PunctuationSources.equalTo(g, found.equal).filter(visible.contains)), g)
      if (i == 0 || substituted.contains(i) || filled.contains(i)) {
        val md = new MetadataBuilder().withMetadata(g.metadata)
        if (i == 0) md.putLong(EventTimeWatermark.delayKey, 0L).putBoolean(CheckFlag, true)
        if (filled.contains(i)) md.putBoolean(TimeKeys.ClosedOnTime, true)
        Some(Alias(value, g.name)(explicitMetadata = Some(md.build())))
      } else None
    }
    val newGrouping: Seq[Attribute] = grouping.zip(groupAliases).map {
      case (_, Some(al)) => al.toAttribute
      case (g, None) => g
    }
    val replace: Map[ExprId, Attribute] = grouping.zip(newGrouping).collect {
      case (g, n) if g.exprId != n.exprId => g.exprId -> n
    }.toMap
    // the input's columns the aggregation, its kind and its keys read (the others are pruned here,
    // not by the optimizer in every micro-batch)
    val read = a.references ++ kindAlias.references ++ AttributeSet(groupAliases.flatten.flatMap(_.references))
    val withKind = Project(found.plan.output.filter(read.contains) :+ kindAlias, found.plan)
    // above it, what the aggregation reads: its keys (the substituted ones as g'), inputs and kind
    val aggregated = AttributeSet(a.references.filterNot(at => replace.contains(at.exprId)))
    val input = Project(withKind.output.filter(at => aggregated.contains(at) || at.exprId == kindAlias.exprId) ++
      groupAliases.flatten, withKind)

    // the aggregation: user aggregates see data rows only; the hidden counts for the operator
    val isData = PunctuationSources.isData(kind)
    def outside(e: Expression): Expression = e match {
      case ae: AggregateExpression =>
        ae.copy(filter = Some(ae.filter.map(f => And(f, isData)).getOrElse(isData)))
      case at: Attribute if replace.contains(at.exprId) => replace(at.exprId)
      case other => other.withNewChildren(other.children.map(outside))
    }
    val out = AttributeReference(OutColumn, IntegerType, nullable = false)()
    val isPunctuation = GreaterThan(out, Literal(0))
    val results = ArrayBuffer.empty[NamedExpression]
    val top = a.aggregateExpressions.map {
      case at: Attribute if replace.contains(at.exprId) =>
        Alias(replace(at.exprId), at.name)(exprId = at.exprId, qualifier = at.qualifier,
          explicitMetadata = Some(at.metadata))
      case at: Attribute => results += at; at
      case al: Alias =>
        val inner = Alias(outside(al.child), al.name)()
        results += inner
        Alias(If(isPunctuation, Literal(null, al.dataType), inner.toAttribute), al.name)(
          exprId = al.exprId, qualifier = al.qualifier, explicitMetadata = al.explicitMetadata)
      case other => results += other; other
    }
    val counts = Alias(AggregateExpression(PunctuationCounts(PunctuationTag(kindAlias)), Complete,
      isDistinct = false, filter = None, resultId = layout.counts), CountsColumn)()
    val aggregate = Aggregate(newGrouping,
      (newGrouping.filterNot(g => results.exists(_.exprId == g.exprId)) ++ results.toSeq) :+ counts,
      input, a.hint)
    val generate = Generate(Explode(PunctuationOutputs(counts.toAttribute)),
      unrequiredChildIndex = Nil, outer = false, qualifier = None, generatorOutput = Seq(out), aggregate)
    val marker = if (!conf.emitPunctuations) Nil
      else Seq(Alias(isPunctuation, markerName(found))())
    Some(Project(top ++ marker, generate))
  }

  /**
   * The streams' columns a punctuation row is read and checked over: the marker, the columns of
   * the schemes and those the aggregation itself reads (its keys and its aggregates' inputs). A
   * column the query does not read stays unread, so Spark still prunes it from the scan of a
   * wide table (a file or Delta stream; a micro-batch V2 source's scan is built unpruned), as
   * when the query projects first: a non-NULL value there is not seen (user contract: such a
   * column is a wildcard).
   *
   * {{{
   *   bids (auction, bidder, price, url, dateTime, is_punct), schemes "auction; dateTime<="
   *   SELECT window, max(price) FROM bids GROUP BY window(dateTime, '10 seconds')
   *     columns read: auction, dateTime (schemes), price (max); bidder and url are pruned
   * }}}
   */
  private[aggregate] def readColumnsOnly(found: FoundSources, a: Aggregate): FoundSources = {
    val read = a.references
    found.copy(sources = found.sources.map { s =>
      val needed = s.needed.map(_.exprId).toSet
      s.copy(columns = s.columns.filter(c => read.contains(c) || needed.contains(c.exprId)))
    })
  }

  /** Is this the input of an already rewritten aggregation? */
  def isRewritten(plan: LogicalPlan): Boolean = RewrittenOperators.isAggregateInput(plan)

  private def markerName(found: FoundSources): String =
    found.sources.flatMap(_.marker.references.headOption).map(_.name).headOption.getOrElse("is_punct")

  /** The layout of the aggregation under this node, if it is a rewritten one. */
  def layoutOf(plan: LogicalPlan): Option[(Aggregate, AggregateLayout)] = RewrittenOperators.aggregateLayout(plan)

  /** A rewritten aggregation's output as a punctuated stream (chained aggregations). */
  def sourceOf(g: Generate): Option[FoundSource] = RewrittenOperators.aggregateOutput(g)
}
