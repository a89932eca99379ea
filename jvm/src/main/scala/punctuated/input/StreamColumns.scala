package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeSet}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, EventTimeWatermark, Expand, Filter, Join, LogicalPlan, Project, SubqueryAlias, UnaryNode, View}
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2

/**
 * The columns of a micro-batch stream that a query reads, right above the stream where a
 * filter reads it: a projection that Spark's optimizer leaves where it is, in the plan every
 * micro-batch re-optimizes. It is replaced by an ordinary projection before planning
 * ([[StreamColumns.toProjection]]), so the physical plan is what it always was.
 *
 * Why: a micro-batch data source's scan keeps every column of the stream (Spark does not
 * prune it), and Spark's `ColumnPruning` then rewrites `Project(Filter(scan))` in every pass
 * of every micro-batch's optimizer: it puts a projection of the columns read between the
 * filter and the scan, and its `removeProjectBeforeFilter` takes that projection out again.
 * The plan comes out equal, but as new nodes up to the root, so every later rule walks the
 * whole plan again instead of skipping the parts it already found nothing to do in (Spark's
 * tree-node pruning remembers that per node). A filter right above a declared stream is
 * common here: a window's `ts IS NOT NULL`, `marker OR cond` for joins. With this node below
 * the filter, nothing is left for `ColumnPruning` to do there.
 *
 * {{{
 *   Project([window(ts), price, kind], Filter(is_punct OR ts IS NOT NULL, stream(auction, bidder, price, ts, is_punct)))
 *   ==> (once, when the query starts)
 *   Project([window(ts), price, kind], Filter(is_punct OR ts IS NOT NULL,
 *     StreamColumns([price, ts, is_punct], stream(auction, bidder, price, ts, is_punct))))
 * }}}
 *
 * Only data source V2 streams (`StreamingRelationV2`: a micro-batch scan of all columns);
 * a V1 source's micro-batch arrives under a projection of its own, which the optimizer prunes.
 *
 * @param columns the stream's columns the plan above reads, in the stream's order
 */
case class StreamColumns(columns: Seq[Attribute], child: LogicalPlan) extends UnaryNode {
  override def output: Seq[Attribute] = columns
  override def maxRows: Option[Long] = child.maxRows
  override protected def withNewChildInternal(newChild: LogicalPlan): StreamColumns = copy(child = newChild)
}

object StreamColumns {

  /**
   * The plan with a [[StreamColumns]] right above each V2 stream a filter reads (through
   * subquery aliases and views) whose columns are not all read, and the projections above it
   * without the columns that no longer reach them: the columns read computed from the root down
   * as Spark's `ColumnPruning` would leave them, so that it finds nothing to prune there. Below
   * any node not named in [[readFrom]] (a union, a window, a `Generate`, whose unrequired
   * columns are positions in its child's output, ...) every column counts as read.
   *
   * Example: `Aggregate([w], [max(price)], Project([window(ts) AS w, auction, price, ts],
   * Filter(ts IS NOT NULL, stream(auction, price, ts))))` reads `price, ts` from the stream:
   * `auction` goes from the stream's columns and from the projection.
   */
  def pruned(plan: LogicalPlan): LogicalPlan = prune(plan, plan.outputSet, underFilter = false)

  private def prune(node: LogicalPlan, needed: AttributeSet, underFilter: Boolean): LogicalPlan = node match {
    case s: StreamingRelationV2 if underFilter && !s.outputSet.subsetOf(needed) =>
      StreamColumns(s.output.filter(needed.contains), s)
    case _ if node.children.isEmpty => node
    case _ =>
      val newChildren = node.children.map { c =>
        prune(c, readFrom(node, c, needed), node.isInstanceOf[Filter] || (underFilter && keepsRows(node)))
      }
      if (newChildren.zip(node.children).forall { case (n, c) => n eq c }) node
      else node.withNewChildren(newChildren) match {
        // columns pruned below: the projection keeps the ones read above it (the others
        // would no longer resolve)
        case p @ Project(list, _) => p.copy(projectList = list.filter(e => needed.contains(e.toAttribute)))
        case other => other
      }
  }

  /** Nodes between a filter and its stream that pass rows and columns as they are. */
  private def keepsRows(node: LogicalPlan): Boolean = node.isInstanceOf[SubqueryAlias] || node.isInstanceOf[View]

  /** The columns of `child` that `node` reads, given the columns read from `node` (`needed`). */
  private def readFrom(node: LogicalPlan, child: LogicalPlan, needed: AttributeSet): AttributeSet = node match {
    case Project(list, _) => AttributeSet(list.filter(e => needed.contains(e.toAttribute)).flatMap(_.references))
    case a: Aggregate => a.references
    case _: Filter | _: SubqueryAlias | _: View | _: EventTimeWatermark | _: Join | _: Expand | _: Deduplicate |
         _: StreamColumns =>
      AttributeSet(child.output.filter(a => needed.contains(a) || node.references.contains(a)))
    case _ => child.outputSet
  }

  /** Each [[StreamColumns]] as the projection it stands for (before physical planning). */
  def toProjection(plan: LogicalPlan): LogicalPlan =
    if (!plan.exists(_.isInstanceOf[StreamColumns])) plan
    else plan.transformUp { case StreamColumns(columns, child) => Project(columns, child) }
}
