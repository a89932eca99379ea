package punctuated.join

import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{DataType, NullType, TimestampType}

import punctuated.compat.StateStoreWriter
import punctuated.input.{InputSpec, KeyScheme, Watermarks}

/**
 * Watermarks as punctuations (Tucker et al. 2003, §3: a watermark is a range punctuation on
 * event time, "no more tuples with ts <= w"): the event-time watermark Spark gives a
 * punctuated band join acts, at each micro-batch, as the range punctuation `ts<=w` of every
 * input whose own `withWatermark` column is the band's time column, with no marker rows.
 *
 * Which watermark: the one Spark's `IncrementalExecution` assigns the join for eviction
 * (`eventTimeWatermarkForEviction`), i.e. the query's global watermark (under
 * `spark.sql.streaming.multipleWatermarkPolicy`) as it reaches the join. It is a punctuation of
 * an input only when sound for that input:
 *  - the input's band column carries a real watermark (the `withWatermark` column; the
 *    `delayKey` metadata the punctuated rewrite puts on join keys or grouping columns to pass
 *    Spark's checks is flagged and never counts);
 *  - under the `min` policy (Spark's default) the global watermark is at most each input's
 *    own, so an input's row at or below it is late by that input's own watermark too. Under
 *    `max` (with more than one watermark in the query) the global watermark can run ahead of
 *    a slower input's, whose on-time rows would then count as late: watermarks are then not
 *    used as punctuations at all (logged once per planning), and only marker rows purge.
 *
 * Spark's watermark 0 ("none yet", the first batches) is no bound. The watermark is in
 * milliseconds; the bound is in the column's microseconds.
 *
 * {{{
 *   a.withWatermark("ts", "1 minute") JOIN b.withWatermark("ts", "1 minute")
 *     ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 5 MINUTES
 *   global watermark 12:10 -> as if a and b each said ts<=12:10: a's rows at or before 12:05 go,
 *   b's at or before 12:10 go; a later row of a at 12:09 is late (dropped or fails by policy)
 * }}}
 */
object WatermarkPunctuations extends Logging {

  /** Does this attribute carry a real event-time watermark (from `withWatermark`)? ([[Watermarks]]) */
  def isWatermarked(a: Attribute): Boolean = Watermarks.isWatermarked(a)

  /**
   * Per input of a band join, whether Spark's watermark is a punctuation of it: its band
   * column (`time`, looked up by id in the input's output) is its watermark column, and the
   * policy is sound (see the object's doc). `watermarks` is the number of `withWatermark`
   * operators in the query.
   */
  def inputs(times: IndexedSeq[Attribute], outputs: IndexedSeq[Seq[Attribute]], conf: SQLConf,
      watermarks: Int): IndexedSeq[Boolean] = {
    val marked = times.indices.map { i =>
      outputs(i).find(_.exprId == times(i).exprId).exists(isWatermarked)
    }
    if (marked.contains(true) && !soundPolicy(conf, watermarks)) {
      logWarning(s"Punctuated: spark.sql.streaming.multipleWatermarkPolicy is 'max': the global " +
        s"watermark can pass a slower input's own, so it is not used as a range punctuation of the band " +
        s"join's inputs (${times.map(_.name).mkString(", ")}); their state is purged by marker punctuations " +
        "only. Fix: set the policy to 'min' (Spark's default) to purge by watermark.")
      times.map(_ => false)
    } else marked
  }

  /**
   * Is the global watermark a bound on every watermarked input's own (the `min` policy, or a
   * single `withWatermark` in the query)?
   */
  def soundPolicy(conf: SQLConf, watermarks: Int): Boolean = Watermarks.soundPolicy(conf, watermarks)

  /**
   * A join without a band, whose join key holds an input's watermark column (`ON a.k = b.k AND
   * a.ts = b.ts`, `b.withWatermark("ts", ...)`): the watermark is that input's range
   * punctuation on the key position, the scheme `ts<=` with no constants — it purges the other
   * input's stored rows whose `ts` it passes, found through the range index, and makes the
   * input's rows at or below a watermark the join applied late. Returns the input's spec with
   * that scheme ([[InputSpec.watermark]]), or unchanged: no key column carries a real watermark
   * (the first one that does is used), the policy is not sound (`sound`, see the object's doc),
   * or the input is the output of a stateful operator (a join's or an aggregation's rows can
   * carry times below the watermark Spark passes on).
   *
   * {{{
   *   keys (k, ts) of b, b.ts watermarked   -> b's spec + KeyScheme([], [1 <=]), "ts<= (watermark)"
   * }}}
   */
  def onKey(spec: InputSpec, keys: Seq[Expression], input: SparkPlan, sound: Boolean): InputSpec = {
    val position = keys.indexWhere {
      case a: Attribute => input.output.find(_.exprId == a.exprId).exists(isWatermarked)
      case _ => false
    }
    val fromState = input.exists(_.isInstanceOf[StateStoreWriter])
    if (position < 0 || !sound || fromState) spec
    else spec.copy(watermark = Some(KeyScheme.atMost(Array.empty, position) ->
      s"${keys(position).asInstanceOf[Attribute].name}<= (watermark)"))
  }

  /**
   * This batch's range punctuation of an input's watermark on its join key (`ts<=w` as a join
   * key with NULL elsewhere), if the input has one ([[onKey]]) and Spark's watermark is set.
   */
  def keyPunctuation(spec: InputSpec, keyLength: Int, watermarkMs: Option[Long]): Option[(KeyScheme, UnsafeRow)] =
    for ((scheme, _) <- spec.watermark; micros <- bound(watermarkMs)) yield {
      val position = scheme.ranges.head._1
      val key = new GenericInternalRow(keyLength)
      key.update(position, micros)
      // a timestamp's internal value at the range position (TIMESTAMP_NTZ has the same), NULL elsewhere
      val types = Array.tabulate[DataType](keyLength)(i => if (i == position) TimestampType else NullType)
      scheme -> UnsafeProjection.create(types)(key).copy()
    }

  /** The bound `ts<=c` (microseconds) a watermark in milliseconds stands for (None: no watermark yet). */
  def bound(watermarkMs: Option[Long]): Option[Long] = Watermarks.bound(watermarkMs)

  /**
   * Per input, this batch's band bound: the highest of its gathered marker punctuations and,
   * for a watermark-fed input, the watermark's bound.
   */
  def bounds(gathered: IndexedSeq[Option[Long]], band: TimeBand, watermarkMs: Option[Long]): IndexedSeq[Option[Long]] =
    gathered.indices.map { i =>
      val w = if (band.watermarked(i)) bound(watermarkMs) else None
      (gathered(i).toSeq ++ w).maxOption
    }
}
