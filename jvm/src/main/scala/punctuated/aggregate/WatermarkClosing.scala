package punctuated.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, BindReferences, Expression, GenericInternalRow, TimeZoneAwareExpression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Join, LogicalPlan}
import org.apache.spark.sql.types.StructType

import punctuated.aggregate.MonotoneExpressions.Definitions
import punctuated.input.{AggregateLayout, KeyScheme, PunctuationKind, WatermarkKind}
import punctuated.join.WatermarkPunctuations

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
 * join's ([[WatermarkPunctuations]]: not under the `max` policy with several watermarks). Not
 * used (the watermark is then ignored, groups close by marker punctuations only): over a
 * join (a join's output rows can carry times far below the watermark), under a UNION of
 * punctuated inputs, or when the watermark column closes no grouping column.
 */
object WatermarkClosing {

  /**
   * The layout with the kinds the input's watermarks close appended (a declared range scheme
   * over the same key position is reused as it is), and their [[WatermarkKind]]s.
   *
   * @param grouping the aggregation's grouping columns
   * @param input    the aggregation's input, with the columns punctuations need
   * @param defs     how computed grouping columns are computed ([[TimeKeys.definitions]])
   */
  def add(layout: AggregateLayout, grouping: Seq[Attribute], input: LogicalPlan, defs: Definitions): AggregateLayout =
    if (layout.isUnion || input.exists { case _: Join | _: Aggregate => true; case _ => false }) layout
    else input.output.filter(WatermarkPunctuations.isWatermarked).foldLeft(layout) { (l, time) =>
      position(grouping, time, defs) match {
        case Some((p, bound)) =>
          val scheme = KeyScheme(Array.empty, Some(p))
          l.closing.indexOf(scheme) match {
            case -1 if l.closing.size < PunctuationKind.MaxKinds =>
              l.copy(closing = l.closing :+ scheme, closingNames = l.closingNames :+ s"${time.name}<= (watermark)",
                branches = l.branches :+ 0,
                watermarks = l.watermarks :+ WatermarkKind(l.closing.size + 1, time, p, bound))
            case -1 => l
            case i => l.copy(watermarks = l.watermarks :+ WatermarkKind(i + 1, time, p, bound))
          }
        case None => l
      }
    }

  /**
   * The `punctuation_kind` column of a rewritten aggregation or deduplication over `input`
   * keyed by `keys`, with its layout extended by [[add]] (the same column when no watermark
   * closes a key).
   */
  def kindColumn(kind: Alias, keys: Seq[Attribute], input: LogicalPlan): (Alias, AggregateLayout) =
    kind.child match {
      case k: PunctuationKind =>
        val layout = add(k.layout, keys, input, TimeKeys.definitions(input))
        if (layout == k.layout) (kind, layout)
        else (Alias(k.copy(layout = layout), kind.name)(exprId = kind.exprId), layout)
      case other => throw new IllegalArgumentException(s"not a punctuation_kind column: $other")
    }

  /** The grouping position the range `time<=` closes and its bound as an expression of `time`. */
  private def position(grouping: Seq[Attribute], time: Attribute, defs: Definitions): Option[(Int, Expression)] =
    grouping.indexWhere(_.exprId == time.exprId) match {
      case -1 => TimeKeys.closing(grouping, defs, Seq(time)).get(time.exprId)
      case p => Some((p, time))
    }

  /**
   * This micro-batch's watermark punctuations as grouping keys (`(kind, key)`: NULL outside
   * the closed position, a wildcard), for a watermark in milliseconds (None, or 0 before the
   * first one: none). Computed on the driver (`timeZone`: the session's, for time expressions).
   */
  def keys(watermarks: Seq[WatermarkKind], keySchema: StructType, watermarkMs: Option[Long],
      timeZone: String): Seq[(Int, UnsafeRow)] =
    WatermarkPunctuations.bound(watermarkMs).toSeq.flatMap { micros =>
      watermarks.map { w =>
        val bound = w.bound.transform {
          case e: TimeZoneAwareExpression if e.timeZoneId.isEmpty => e.withTimeZone(timeZone)
        }
        val value = BindReferences.bindReference(bound, Seq(w.time)).eval(InternalRow(micros))
        val key = new GenericInternalRow(keySchema.length)
        key.update(w.position, value)
        w.kind -> UnsafeProjection.create(keySchema)(key).copy()
      }
    }
}
