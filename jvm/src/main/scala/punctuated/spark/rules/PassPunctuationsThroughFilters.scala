package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, Coalesce, EqualTo, ExprId, Expression, If, Literal, NamedExpression, Not, Or}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Expand, Filter, Generate, Join, LogicalPlan, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.input.{IgnoredPunctuations, PunctuatedInput, PassThrough, PunctuationColumns, PunctuationKind, PunctuationTag, SlidingWindowCopies}

/**
 * Optimizer rule: a filter between a punctuated stream and the punctuated operator that
 * reads its punctuations (a join, an aggregation, a deduplication) lets the punctuation rows
 * through (Tucker et al. 2003, Table 3, select: punctuations pass), by rewriting `cond` to
 * `marker OR cond`. Data rows (marker false or NULL) are filtered exactly as before. Above a
 * sliding window's `Expand` (a row once per window) only the first copy of a punctuation row
 * passes — `IF(marker, copy = 0, cond)`, or a filter of that alone where the window has none:
 * its copies are one punctuation, the window key filled from its bound the same in each
 * ([[punctuated.input.SlidingWindowCopies]]). Only
 * the chain of Filters, Projects and aliases directly under the operator is rewritten, by
 * the steps of [[punctuated.input.PassThrough]] (the one description of how punctuations pass
 * a node); punctuations do not cross any other operator here.
 *
 * Under an aggregation, punctuation rows of schemes that close none of its keys are dropped
 * where the stream is read ([[punctuated.input.IgnoredPunctuations]]); a deduplication passes
 * such rows on to the operators above it, so they reach it.
 *
 * A join input with a `punctuated.unique` key that is part of the join key and a marker
 * column: a data row the filter drops still says "no more rows with this key" (the filtered
 * stream is a subset of the stream). Dropping it would lose that punctuation, and the other
 * input's rows with that key would wait forever for a partner that was filtered away (e.g.
 * bids on auctions of another category). So the filter becomes a projection that turns each
 * dropped data row into the punctuation row of its unique key: marker true, the key columns
 * kept, every other column NULL.
 */
case class PassPunctuationsThroughFilters(session: SparkSession) extends Rule[LogicalPlan] {

  /**
   * A unique-key join input always reaches the join with its marker column first, filtered
   * or not, so that its column order (which the join's state layout follows) is the same in
   * every micro-batch — also in one whose input is empty, where the optimizer replaces the
   * projection below by an empty relation with that projection's columns.
   */
  private def markerFirst(plan: LogicalPlan, markers: LogicalPlan => Seq[Expression],
      unique: Set[ExprId]): LogicalPlan =
    markers(plan).collectFirst { case m: Attribute => m } match {
      case Some(m) if unique.nonEmpty && plan.output.head.exprId != m.exprId =>
        Project(m +: plan.output.filterNot(_.exprId == m.exprId), plan)
      case _ => plan
    }

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.ours(plan)) plan
    else {
      // the kind columns aggregations read (by their layouts' ids), looked up once if needed
      lazy val aggregated: Set[ExprId] = plan.collect {
        case a: Aggregate => PunctuationTag.kinds(a.aggregateExpressions).values.map(_.layout.counts)
      }.flatten.toSet
      plan.transformUp {
        case j @ Join(left, right, _, cond, _) if cond.isDefined => PunctuationColumns.find(cond).fold(j: LogicalPlan) { mark =>
          val markerIds = (mark.left.toSeq ++ mark.right).flatMap(_.markerIds).toSet
          def markers(p: LogicalPlan): Seq[Expression] = p.output.filter(a => markerIds.contains(a.exprId))
          val (leftKeys, rightKeys) = j match {
            case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) => (keyIds(lk), keyIds(rk))
            case _ => (Set.empty[ExprId], Set.empty[ExprId])
          }
          val (lu, ru) = (uniqueInKey(mark.left, leftKeys), uniqueInKey(mark.right, rightKeys))
          val newLeft = markerFirst(passThrough(left, markers, lu), markers, lu)
          val newRight = markerFirst(passThrough(right, markers, ru), markers, ru)
          if ((newLeft eq left) && (newRight eq right)) j
          else {
            // the join's columns keep their order: a marker moved first below it must not
            // reorder the query's result where no projection is left above the join
            val joined = j.copy(left = newLeft, right = newRight)
            if (joined.output.map(_.exprId) == j.output.map(_.exprId)) joined else Project(j.output, joined)
          }
        }
        case p @ Project(list, child) if list.exists(_.exists(_.isInstanceOf[PunctuationKind])) =>
          val kinds = list.flatMap(_.collect { case k: PunctuationKind => k })
          val all = kinds.flatMap(k => k.sources.map(s => k.children(s.marker)))
          def markers(node: LogicalPlan): Seq[Expression] = all.filter(_.references.subsetOf(node.outputSet))
          val passed = passThrough(child, markers, Set.empty)
          // under an aggregation, punctuation rows of schemes that close none of its keys go no
          // further (a deduplication passes them on to the operators above it)
          val newChild = kinds.filter(k => aggregated.contains(k.layout.counts)).foldLeft(passed)((c, k) =>
            IgnoredPunctuations.dropped(k, k.sources.map(s => k.children(s.marker)), c))
          if (newChild eq child) p else p.copy(child = newChild)
      }
    }

  private def keyIds(keys: Seq[Expression]): Set[ExprId] = keys.collect { case a: Attribute => a.exprId }.toSet

  /** The unique key's column ids at the join input, if all of them are join keys. */
  private def uniqueInKey(input: Option[PunctuatedInput], keys: Set[ExprId]): Set[ExprId] =
    input.map(_.uniqueKeyIds(keys)).getOrElse(Set.empty)

  /**
   * Rewrites the filters on the way down from the operator, following the steps
   * [[PassThrough.step]] classifies — but only projections, filters, subquery aliases, a
   * band-only join's bucket Generate and a sliding window's Expand (the chain the optimizer leaves directly under the operator). Every other step ends the
   * rewrite, as punctuations are not to be let through any further here: a view is gone by
   * the time this optimizer rule runs, and a watermark, join, union, aggregation or
   * deduplication below is left as it is.
   *
   * {{{
   *   Join(Filter(c, Project(l, Filter(d, EventTimeWatermark(Filter(e, s))))), ...)
   *   // c and d become `marker OR c`, `marker OR d`; e (below the watermark) is left alone
   * }}}
   */
  private def passThrough(plan: LogicalPlan, markers: LogicalPlan => Seq[Expression],
      unique: Set[ExprId]): LogicalPlan =
    (PassThrough.step(plan), plan) match {
      case (PassThrough.Transparent(e: Expand), f @ Filter(condition, _))
          if unique.isEmpty && markers(e).nonEmpty && PassThrough.step(e).isInstanceOf[PassThrough.Transparent] =>
        // the window's own filter (windows whose size is no multiple of their slide): the
        // first copy of a punctuation row passes, every data row as before
        val expand = expandChild(e, markers, unique)
        if (SlidingWindowCopies.isNumbered(expand)) { if (expand eq e) f else f.copy(child = expand) }
        else {
          val (copies, copy) = SlidingWindowCopies.numbered(expand)
          Filter(If(markers(e).map(bare).reduce(Or), EqualTo(copy, Literal(0)), condition), copies)
        }
      case (PassThrough.Transparent(child), f @ Filter(condition, _)) =>
        val newChild = passThrough(child, markers, unique)
        val visible = markers(child)
        visible.collectFirst { case m: Attribute => m } match {
          case Some(m) if unique.nonEmpty &&
              unique.subsetOf(child.output.map(_.exprId).toSet) && !onlyNotNull(condition, m) =>
            uniqueAsPunctuations(condition, m, unique, newChild)
          case _ => visible.map(bare).reduceOption(Or) match {
            // the filter that drops ignored punctuations (IgnoredPunctuations), merged into
            // this one by the optimizer, stays as it is; the rest lets punctuations through
            case Some(m) => IgnoredPunctuations.split(condition) match {
              case (Nil, _) if !isRewritten(condition, m) => Filter(Or(m, condition), newChild)
              case (ours, Some(rest)) if ours.nonEmpty && !isRewritten(rest, m) =>
                Filter(And(ours.reduce(And), Or(m, rest)), newChild)
              case _ => if (newChild eq child) f else f.copy(child = newChild)
            }
            case _ => if (newChild eq child) f else f.copy(child = newChild)
          }
        }
      case (PassThrough.Projection(p @ Project(list, child)), _) =>
        // a marker or key column may be renamed by this projection (aliases get new ids)
        val renamed = list.collect { case a @ Alias(c: Attribute, _) => a.exprId -> c }.toMap
        def below(node: LogicalPlan): Seq[Expression] =
          markers(p).map(_.transform { case a: Attribute if renamed.contains(a.exprId) => renamed(a.exprId) }) ++
            markers(node)
        val renamedUnique = unique.flatMap(id => renamed.get(id).map(_.exprId))
        val newChild = passThrough(child, n => below(n).filter(_.references.subsetOf(n.outputSet)).distinct,
          unique ++ renamedUnique)
        if (newChild eq child) p else p.copy(child = newChild)
      case (PassThrough.Transparent(child), s: SubqueryAlias) =>
        val newChild = passThrough(child, markers, unique)
        if (newChild eq child) s else s.copy(child = newChild)
      case (PassThrough.Transparent(child), g: Generate) =>
        // a band-only join's bucket copies (the only Generate PassThrough sees through)
        val newChild = passThrough(child, markers, unique)
        if (newChild eq child) g else g.copy(child = newChild)
      case (PassThrough.Transparent(_), e: Expand) =>
        // a sliding window's copies, with no filter of the window's own above (its size is a
        // multiple of its slide): only the first copy of a punctuation row goes on
        val expand = expandChild(e, markers, unique)
        if (markers(e).isEmpty || SlidingWindowCopies.isNumbered(expand)) expand
        else {
          val (copies, copy) = SlidingWindowCopies.numbered(expand)
          Filter(If(markers(e).map(bare).reduce(Or), EqualTo(copy, Literal(0)), Literal(true)), copies)
        }
      case _ => plan
    }

  /**
   * A sliding window's `Expand` with the filters below rewritten: the optimizer pushes the
   * window's `ts IS NOT NULL` below it, where it would drop every punctuation on another
   * column (`auction`, ts NULL).
   */
  private def expandChild(e: Expand, markers: LogicalPlan => Seq[Expression], unique: Set[ExprId]): Expand = {
    val newChild = passThrough(e.child, markers, unique)
    if (newChild eq e.child) e else e.copy(child = newChild)
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

  /**
   * `a IS NOT NULL AND ...` (as the optimizer infers for join keys, possibly already
   * rewritten to `marker OR ...`): drops no key's rows. Decided on the condition's substance,
   * so that every micro-batch's plan (and so the join input's column order, which its state
   * layout follows) is the same whatever order the optimizer's rules ran in.
   */
  private def onlyNotNull(condition: Expression, m: Attribute): Boolean = condition match {
    case org.apache.spark.sql.catalyst.expressions.And(a, b) => onlyNotNull(a, m) && onlyNotNull(b, m)
    case Or(a, c) if a.semanticEquals(m) => onlyNotNull(c, m)
    case Or(a, b) => onlyNotNull(a, m) && onlyNotNull(b, m)
    case org.apache.spark.sql.catalyst.expressions.IsNotNull(_: Attribute) => true
    // a marker column (under any of its names): what an earlier rewrite put in front
    case Coalesce(Seq(a: Attribute, Literal(false, _))) => a.dataType == org.apache.spark.sql.types.BooleanType
    case a: Attribute => a.dataType == org.apache.spark.sql.types.BooleanType
    case _ => false
  }

  /**
   * A marker as a filter reads it: `coalesce(m, false)` is `m` in a condition (a NULL marker
   * drops the row either way), and written so the optimizer has nothing left to simplify in it
   * (which would cost every micro-batch's optimizer one more pass over the whole plan).
   */
  private def bare(marker: Expression): Expression = marker match {
    case Coalesce(Seq(m, Literal(false, _))) => m
    case Coalesce(Seq(m)) => m // what the optimizer has left of the above by the time this rule runs
    case m => m
  }

  private def isRewritten(condition: Expression, m: Expression) = condition match {
    case Or(a, _) => a.semanticEquals(m)
    case If(a, _, _) => a.semanticEquals(m) // a sliding window's first copy (above)
    case _ => false
  }
}
