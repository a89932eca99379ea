package punctuated.input

import org.apache.spark.sql.catalyst.plans.logical.{Deduplicate, EventTimeWatermark, Expand, Filter, Generate, Join, LogicalPlan, Project, SubqueryAlias, Union, View}

/**
 * How punctuations pass a node of a logical plan (Tucker et al. 2003, Table 3: select and
 * project pass punctuations, a join and a union emit their own; Table 2: group-by propagates
 * punctuations on its grouping attributes, duplicate elimination passes them): the one
 * classification every walk over punctuated input follows — which streams reach an operator
 * ([[PunctuationSources]]), which schemes reach it for the safety check, which join a join
 * input comes from. Behind any other node ([[PassThrough.Stop]]) punctuations are lost.
 *
 * {{{
 *   PassThrough.step(Filter(cond, child))           = Transparent(child)
 *   PassThrough.step(Project(list, child))          = Projection(list, child)
 *   PassThrough.step(join with punctuation_columns) = PunctuatedJoin(join, columns)
 *   PassThrough.step(Aggregate(...))                = Stop   (its output is the Generate above)
 * }}}
 *
 * Where a stream is declared is asked separately ([[DeclaredStreams.declaredAt]]): a walk
 * decides whether a declaration ends it.
 */
object PassThrough {

  sealed trait Step

  /**
   * Rows and columns pass as they are: Filter, SubqueryAlias, View, EventTimeWatermark,
 * [[StreamColumns]] (the columns read, above a stream), and
   * the Expand of sliding windows (each row once per window; a punctuation row's copies are
   * one punctuation), and the Generate copying a band-only join's input into its time buckets
   * ([[punctuated.join.BandBuckets]]).
   */
  final case class Transparent(child: LogicalPlan) extends Step

  /** A projection: columns pass, possibly renamed. */
  final case class Projection(node: Project) extends Step

  /** A punctuated join: it emits output punctuations for keys both its inputs closed. */
  final case class PunctuatedJoin(join: Join, columns: PunctuationColumns) extends Step

  /** A union: an output punctuation once every input punctuated (setCombine). */
  final case class UnionOf(union: Union) extends Step

  /** A punctuated aggregation's output (the Generate above it), as a punctuated stream. */
  final case class AggregateOutput(generate: Generate, stream: FoundSource) extends Step

  /** A punctuated deduplication: its input's punctuations pass. */
  final case class DeduplicateOf(node: Deduplicate) extends Step

  /** Punctuations do not pass. */
  case object Stop extends Step

  def step(node: LogicalPlan): Step = node match {
    case p: Project => Projection(p)
    case _: Filter | _: SubqueryAlias | _: View | _: EventTimeWatermark | _: StreamColumns => Transparent(node.children.head)
    case e: Expand if e.output.exists(_.metadata.contains("spark.timeWindow")) => Transparent(e.child)
    case j: Join => PunctuationColumns.find(j.condition).map(PunctuatedJoin(j, _)).getOrElse(Stop)
    case u: Union => UnionOf(u)
    case g: Generate if BandBucketColumns.isBucketGenerate(g) => Transparent(g.child)
    case g: Generate => RewrittenOperators.aggregateOutput(g).map(AggregateOutput(g, _)).getOrElse(Stop)
    case d: Deduplicate if RewrittenOperators.isDeduplicateInput(d.child) => DeduplicateOf(d)
    case _ => Stop
  }
}
