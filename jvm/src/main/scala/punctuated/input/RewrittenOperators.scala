package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Explode, GreaterThan, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Generate, LogicalPlan, Project}

import punctuated.declaration.AttributeKind

/**
 * Recognises, in a plan, the operators the analyzer has already rewritten for punctuated
 * input (aggregations and deduplications), by the [[PunctuationKind]] column below them.
 * The pass-through walk ([[PunctuationSources]]) and the operator packages use it, so that
 * the input model never depends on an operator package.
 *
 * {{{
 *   Generate(explode(punctuation_outputs(...)))       aggregateOutput: a punctuated stream
 *     Aggregate(g', ..., Project(_, Project(cols, punctuation_kind(...) AS kind)))
 *   Deduplicate(keys, Project(input.*, punctuation_kind(...) AS kind))   isDeduplicateInput
 *   Deduplicate(keys', Project(_, keys', Project(input.*, punctuation_kind(...) AS kind)))  (keys on time)
 * }}}
 */
object RewrittenOperators {

  /** Is this the input of an already rewritten aggregation? */
  def isAggregateInput(plan: LogicalPlan): Boolean = plan match {
    case Project(_, Project(list, _)) => list.exists(_.exists(_.isInstanceOf[PunctuationKind]))
    case _ => false
  }

  /**
   * Is this the input of an already rewritten deduplication? (Its kind column in the
   * projection, or, with keys closed on time, in the one below the keys' projection.)
   */
  def isDeduplicateInput(plan: LogicalPlan): Boolean = plan match {
    case Project(list, child) => list.exists(_.exists(_.isInstanceOf[PunctuationKind])) || (child match {
      case Project(inner, _) => inner.exists(_.exists(_.isInstanceOf[PunctuationKind]))
      case _ => false
    })
    case _ => false
  }

  /** The layout of the aggregation at this node, if it is a rewritten one. */
  def aggregateLayout(plan: LogicalPlan): Option[(Aggregate, AggregateLayout)] = plan match {
    case a @ Aggregate(_, _, Project(_, Project(list, _)), _) =>
      list.collectFirst { case Alias(k: PunctuationKind, _) => a -> k.layout }
    case _ => None
  }

  /**
   * A rewritten aggregation's output as a punctuated stream (Tucker et al. 2003, Table 2,
   * group-by propagates punctuations on grouping attributes): its marker is `out > 0`, its
   * schemes the closing schemes over the grouping columns. None under a union of inputs
   * (its closing is a setCombine, not one scheme) or for another generator.
   */
  def aggregateOutput(g: Generate): Option[FoundSource] = g.generator match {
    case Explode(_: PunctuationOutputs) =>
      aggregateLayout(g.child).filterNot(_._2.isUnion).map { case (a, layout) =>
        val grouping = a.groupingExpressions.collect { case x: Attribute => x }
        val schemes = layout.closing.zip(layout.closingNames).map { case (ks, text) =>
          (ks.constants.toSeq.map(p => grouping(p) -> (AttributeKind.Constant: AttributeKind)) ++
            ks.ranges.map { case (p, ge) => grouping(p) -> AttributeKind.of(isRange = true, ge) }) -> text
        }
        FoundSource(
          name = s"aggregation over ${layout.streams.mkString(", ")}",
          marker = GreaterThan(g.generatorOutput.head, Literal(0)),
          columns = grouping,
          schemes = schemes,
          unique = None)
      }
    case _ => None
  }
}
