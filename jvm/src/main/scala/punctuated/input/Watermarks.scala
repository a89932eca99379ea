package punctuated.input

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, BindReferences, Expression, GenericInternalRow, TimeZoneAwareExpression, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{StructType, TimestampNTZType, TimestampType}

/**
 * Spark's event-time watermarks read as range punctuations (Tucker et al. 2003, §3: a watermark
 * is the punctuation "no more tuples with ts <= w"), what every punctuated operator shares: which
 * columns carry a real watermark, when the query's global watermark is a sound bound, and the
 * bound a watermark stands for. The band join (`punctuated.join.WatermarkPunctuations`), the
 * aggregation and the deduplication (`punctuated.aggregate.WatermarkClosing`) build on it.
 *
 * {{{
 *   withWatermark("ts", "1 minute"), global watermark 12:10 (ms)
 *   Watermarks.bound(Some(w)) = Some(w * 1000)   "no more rows with ts <= 12:10" (µs)
 * }}}
 */
object Watermarks extends Logging {

  /** Flags of metadata the punctuated rewrite adds with a fake `delayKey` (not a watermark). */
  private val FakeFlags = Seq("punctuated.outerJoinCheck", "punctuated.appendCheck")

  /** Does this attribute carry a real event-time watermark (from `withWatermark`)? */
  def isWatermarked(a: Attribute): Boolean =
    a.metadata.contains(EventTimeWatermark.delayKey) && !FakeFlags.exists(a.metadata.contains) &&
      (a.dataType == TimestampType || a.dataType == TimestampNTZType)

  /**
   * Is the global watermark a bound on every watermarked input's own (the `min` policy, or a
   * single `withWatermark` in the query)? Under `max` with several, the global watermark can run
   * ahead of a slower input's own, whose on-time rows would then count as late.
   */
  def soundPolicy(conf: SQLConf, watermarks: Int): Boolean =
    watermarks <= 1 || conf.getConf(SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY).toLowerCase != "max"

  /**
   * For a punctuated aggregation or deduplication whose keys a watermark closes: is the policy
   * sound ([[soundPolicy]])? Logged when it is not.
   */
  def usable(conf: SQLConf, watermarks: Int, operator: String, columns: Seq[String]): Boolean = {
    val sound = soundPolicy(conf, watermarks)
    if (!sound) logWarning(s"Punctuated: spark.sql.streaming.multipleWatermarkPolicy is 'max': the global " +
      s"watermark can pass a slower input's own, so it is not used as a range punctuation of the $operator " +
      s"(${columns.mkString(", ")}); its keys close by marker punctuations only. Fix: set the policy to " +
      "'min' (Spark's default) to close them by watermark too.")
    sound
  }

  /**
   * The `punctuation_kind` column of a rewritten aggregation or deduplication over `input` with
   * its layout's closing kinds extended by the input's watermarks: for each watermarked column
   * `time` of the input that `closes` maps to a key position and the bound there (an expression
   * of `time`), the range kind `<position><=` is appended after the declared ones (a declared
   * range scheme over the same position is reused) with its [[WatermarkKind]]. The same column
   * when no watermark closes a key, under a UNION, or over a join or an aggregation (their
   * output rows can carry times far below the watermark).
   *
   * {{{
   *   dropDuplicates("id", "ts") over withWatermark("ts", ...), schemes "id"
   *   closes = keyColumn(Seq(id, ts)): ts -> (1, ts)   => kinds "id", "ts<= (watermark)"
   * }}}
   */
  def closingKinds(kind: Alias, input: LogicalPlan, closes: Attribute => Option[(Int, Expression)]): (Alias, AggregateLayout) =
    kind.child match {
      case k: PunctuationKind =>
        val layout = extend(k.layout, input, closes)
        if (layout == k.layout) (kind, layout)
        else (Alias(k.copy(layout = layout), kind.name)(exprId = kind.exprId), layout)
      case other => throw new IllegalArgumentException(s"not a punctuation_kind column: $other")
    }

  /** The watermark `time<=` closes a key column that is `time` itself. */
  def keyColumn(keys: Seq[Attribute]): Attribute => Option[(Int, Expression)] = time =>
    Some(keys.indexWhere(_.exprId == time.exprId)).filter(_ >= 0).map(p => (p, time))

  private def extend(layout: AggregateLayout, input: LogicalPlan,
      closes: Attribute => Option[(Int, Expression)]): AggregateLayout =
    if (layout.isUnion || input.exists { case _: Join | _: Aggregate => true; case _ => false }) layout
    else input.output.filter(isWatermarked).foldLeft(layout) { (l, time) =>
      closes(time) match {
        case Some((p, bound)) =>
          val scheme = KeyScheme.atMost(Array.empty, p)
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

  /** The bound `ts<=c` (microseconds) a watermark in milliseconds stands for (None: no watermark yet). */
  def bound(watermarkMs: Option[Long]): Option[Long] = watermarkMs.filter(_ > 0).map(_ * 1000L)

  /**
   * This micro-batch's watermark punctuations as keys of an aggregation or deduplication
   * (`(kind, key)`: NULL outside the closed position, a wildcard), for a watermark in
   * milliseconds (None, or 0 before the first one: none). Computed on the driver (`timeZone`:
   * the session's, for time expressions in a [[WatermarkKind]]'s bound).
   */
  def punctuationKeys(watermarks: Seq[WatermarkKind], keySchema: StructType, watermarkMs: Option[Long],
      timeZone: String): Seq[(Int, UnsafeRow)] =
    bound(watermarkMs).toSeq.flatMap { micros =>
      watermarks.map { w =>
        val b = w.bound.transform {
          case e: TimeZoneAwareExpression if e.timeZoneId.isEmpty => e.withTimeZone(timeZone)
        }
        val value = BindReferences.bindReference(b, Seq(w.time)).eval(InternalRow(micros))
        val key = new GenericInternalRow(keySchema.length)
        key.update(w.position, value)
        w.kind -> UnsafeProjection.create(keySchema)(key).copy()
      }
    }
}
