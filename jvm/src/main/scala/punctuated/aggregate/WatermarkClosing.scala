package punctuated.aggregate

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import punctuated.input.MonotoneExpressions.Definitions
import punctuated.input.TimeKeys
import punctuated.input.{AggregateLayout, Watermarks}

/**
 * Watermarks as punctuations of a punctuated aggregation (Tucker et al. 2003, §3: a
 * watermark is the range punctuation "no more tuples with ts <= w"). A streaming GROUP BY
 * over a declared stream whose schemes close groups becomes a punctuated aggregation; when
 * the stream also has a `withWatermark` column `ts` and a grouping column is `ts` or never
 * decreases with it (`window(ts, ...)`, `date_trunc`, ...: [[MonotoneExpressions]]), the
 * watermark Spark gives the aggregation for eviction closes those groups at each micro-batch
 * as a `ts<=w` punctuation would — with no marker rows — next to the declared schemes'
 * punctuations: a group closes when either closes it, and its later rows are late (dropped
 * or failing by `spark.punctuated.lateRows`), as Spark's own aggregation drops them.
 *
 * {{{
 *   readings (k, ts, v) schemes "k", withWatermark("ts", "10 seconds")
 *   GROUP BY window(ts, '10 seconds'), k
 *   batch 0: (1, 0:01), (2, 0:03), (1, 0:12)   watermark 0      nothing closes
 *   batch 1: (1, 0:25)                         watermark 0:15   [0:00, 0:10) closes for k 1 and 2
 *   batch 2: punctuation k = 1                                  k 1's [0:10, 0:20), [0:20, 0:30) close
 * }}}
 *
 * Which watermark: the one Spark's `IncrementalExecution` assigns the aggregation for eviction
 * (the query's global watermark as it reaches it), under the same soundness rule as a band
 * join's ([[Watermarks.soundPolicy]]: not under the `max` policy with several watermarks). Not
 * used (the watermark is then ignored, groups close by marker punctuations only): over a
 * join (a join's output rows can carry times far below the watermark), under a UNION of
 * punctuated inputs, or when the watermark column closes no grouping column.
 */
object WatermarkClosing {

  /**
   * The `punctuation_kind` column of a rewritten aggregation over `input` grouped by
   * `grouping`, with the kinds its watermarks close ([[Watermarks.closingKinds]]): a grouping
   * column that is the watermark column, or a window or closable time expression of it.
   */
  def kindColumn(kind: Alias, grouping: Seq[Attribute], input: LogicalPlan): (Alias, AggregateLayout) = {
    val defs = TimeKeys.definitions(input)
    Watermarks.closingKinds(kind, input, position(grouping, _, defs))
  }

  /** The grouping position the range `time<=` closes and its bound as an expression of `time`. */
  private def position(grouping: Seq[Attribute], time: Attribute, defs: Definitions): Option[(Int, Expression)] =
    grouping.indexWhere(_.exprId == time.exprId) match {
      case -1 => TimeKeys.closing(grouping, defs, Seq(time)).get(time.exprId)
      case p => Some((p, time))
    }
}
