package punctuated.aggregate

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, HashPartitioning, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import punctuated.compat.{StateStoreSaveExec, StatefulOperatorPartitioning, StatefulOperatorStateInfo, StreamingAggregationStateManager}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.{AggregateLayout, PartitionWideRows, Watermarks}
import punctuated.state.{PunctuatedJoinMetrics, PunctuatedStatefulOperator}
import punctuated.state.{GroupPunctuation, GroupPunctuations}

/**
 * The state-store step of a punctuated streaming aggregation: where Spark's
 * `StateStoreSaveExec` waits for a watermark, this operator closes a group as soon as
 * punctuations match all its future rows (Tucker et al. 2003, §5.2 and Table 2, group-by:
 * *pass* the group's final row, *keep* the open groups, *propagate* the punctuation), so an
 * append-mode aggregation needs no event time at all. Spark's own operators compute the
 * aggregates around it; only the decision of what leaves the state is ours.
 *
 * {{{
 *   HashAggregate(final) -> explode(final row, punctuations) -> results
 *     PunctuatedAggregateExec  <- this operator (groups: Spark's aggregation state store;
 *       HashAggregate(merge)                      punctuations: GroupPunctuations)
 *         StateStoreRestoreExec                   (Spark's: merges stored groups in)
 *           HashAggregate(merge) <- Exchange <- HashAggregate(partial, FILTER kind = 0)
 *                                   (replicating: ranges to every partition)
 *
 *   per input group (merged with its stored state), in this micro-batch:
 *     late?    its key is matched by a held or remembered punctuation (GroupPunctuations):
 *              dropped or failing the query (spark.punctuated.lateRows)
 *     closed?  it carries a punctuation on its whole key (it arrived in the same group), or
 *              a partition-wide one (a range, a part of the key: copied to every partition
 *              by the shuffle and read first, [[ThroughShuffle]]; the watermark's `ts<=w`:
 *              [[WatermarkClosing]]) matches
 *              it, or its stream's unique key implies one:
 *              its final row is emitted and its state removed
 *     else     stored
 *   then, if partition-wide punctuations arrived that close something earlier ones did not
 *   (a range above its held bound): one pass over the stored groups closes the ones they
 *   match. Punctuations are held for late rows (see GroupPunctuations).
 * }}}
 *
 * Worked example (`punctuated.schemes = 'hour<='`, `SELECT hour, max(temp) ... GROUP BY hour`):
 * {{{
 *   batch 0: (9, 20.1), (10, 22.0)       -> groups 9 and 10 stored
 *   batch 1: (10, 23.5), punctuation 9   -> group 9 closes: (9, 20.1); 10 stays (max 23.5)
 *   batch 2: (9, 30.0)                   -> late (hour <= 9 is closed): dropped and counted
 * }}}
 *
 * @param keyExpressions the grouping columns (as Spark's `StateStoreSaveExec`)
 * @param stateInfo      state location, set by Spark's incremental planner
 * @param outputMode     Append: final rows only; Update: changed rows (closed groups are
 *                       dropped from state); Complete: every group, none dropped
 * @param stateFormatVersion Spark's aggregation state format
 * @param layout         the closing schemes and hidden columns (from the analyzer's rewrite)
 * @param ordinals       ordinals in the input row of the hidden counts: data rows,
 *                       punctuation kinds (bits), invalid punctuations, punctuation rows
 * @param partitionWide  how the tasks learn partition-wide punctuations: through the shuffle
 *                       ([[ThroughShuffle]]) or gathered first ([[Gathered]])
 * @param emit           output the punctuations (a downstream operator or the results use them)
 * @param settings       the `spark.punctuated.*` settings
 * @param eventTimeWatermark the watermark Spark gives this operator for eviction (ms): the
 *                       range punctuation of the layout's watermark kinds ([[WatermarkClosing]])
 * @param useWatermark   whether it closes groups (watermark kinds, and a sound policy)
 * @param child          Spark's merge step, after its restore step. Transient: the tasks' closure
 *                       holds this operator, and with its child it would carry the whole plan
 *                       below (every stage's operators, to the scans) to every task; what runs
 *                       there reads the child's columns only, kept on the driver ([[childOutput]])
 */
case class PunctuatedAggregateExec(
    keyExpressions: Seq[Attribute],
    stateInfo: Option[StatefulOperatorStateInfo],
    outputMode: Option[OutputMode],
    stateFormatVersion: Int,
    layout: AggregateLayout,
    ordinals: AggregateOrdinals,
    partitionWide: PartitionWideSource,
    emit: Boolean,
    settings: PunctuatedConf,
    eventTimeWatermark: Option[Long],
    useWatermark: Boolean,
    @transient child: SparkPlan)
  extends UnaryExecNode with PunctuatedStatefulOperator {

  private[aggregate] val stateManager = StreamingAggregationStateManager.createStateManager(
    keyExpressions, child.output, stateFormatVersion)
  /** The input's columns, for the tasks (which do not get the child). */
  private[aggregate] val childOutput: Seq[Attribute] = child.output

  override def shortName: String = "punctuatedAggregate"
  override val stateStoreNames: Seq[String] = Seq(StateStoreId.DEFAULT_STORE_NAME, GroupPunctuations.StoreName)
  override def output: Seq[Attribute] = childOutput
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    if (keyExpressions.isEmpty) AllTuples :: Nil
    else StatefulOperatorPartitioning.getCompatibleDistribution(keyExpressions, getStateInfo, conf) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    metrics // initialise on the driver
    // few rows: shipped in the tasks' closure
    val wide = partitionWide.gather(child, layout, keyExpressions.size) ++
      (if (useWatermark) Watermarks.punctuationKeys(layout.watermarks, keyExpressions.toStructType, eventTimeWatermark,
        conf.sessionLocalTimeZone) else Nil)
    withKeyStore(child.execute(), keyExpressions.toStructType, stateManager.getStateValueSchema) {
      (store, storeConf, hadoopConf, rows) => new PunctuatedAggregateTask(this, store, storeConf, hadoopConf, wide).run(rows)
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)

  /**
   * A batch without new data when the watermark has passed what this operator applied: the
   * groups it closes are emitted then, as Spark's own aggregation emits them.
   */
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    useWatermark && newInputWatermark > 0 && newInputWatermark > eventTimeWatermark.getOrElse(0L)

  // Accessors for the task (metrics are protected in SparkPlan).
  private[aggregate] def metric(name: String) = longMetric(name)
}

/** Ordinals of the hidden counts in the operator's input rows. */
final case class AggregateOrdinals(dataRows: Int, kinds: Int, invalid: Int, received: Int)

/**
 * How the operator's tasks learn a micro-batch's partition-wide punctuations (a range such as
 * `hour<=9`, or a part of the grouping key: they may close groups in every partition).
 */
sealed trait PartitionWideSource {
  /** The ones gathered on the driver before the tasks start (none when they come through the shuffle). */
  def gather(plan: SparkPlan, layout: AggregateLayout, keyLength: Int): Array[(Int, UnsafeRow)]
}

/**
 * Through the aggregation's own shuffle: a [[punctuated.input.PunctuationReplicatingExchangeExec]]
 * ([[AggregatePartitionWideRows]]) sends each partial aggregate carrying a partition-wide
 * kind to every partition, in the same stage as the rest. A task reads its input first for
 * them; a copy away from its home partition (the one `partitioning` names) is a punctuation
 * only, its data (a partial aggregation may have merged rows of the same group into it) is
 * the home copy's.
 *
 * @param partitioning the hash partitioning of the replaced exchange
 */
final case class ThroughShuffle(partitioning: HashPartitioning) extends PartitionWideSource {
  override def gather(plan: SparkPlan, layout: AggregateLayout, keyLength: Int): Array[(Int, UnsafeRow)] =
    Array.empty
}

/**
 * Read again from the aggregation's shuffle in a job of their own (when the exchange below is
 * not one [[ThroughShuffle]] can replace): the shuffle is already computed for the batch, so
 * reading it costs no recomputation, but one more job. Its rows are partial aggregates with
 * the grouping columns first and the punctuation kinds (bits) in the column `kindsBuffer`.
 */
final case class Gathered(kindsBuffer: ExprId) extends PartitionWideSource {
  override def gather(plan: SparkPlan, layout: AggregateLayout, keyLength: Int): Array[(Int, UnsafeRow)] = {
    val wide = layout.partitionWide(keyLength)
    val shuffle = plan.collectFirst { case e: ShuffleExchangeLike => e: SparkPlan }
    if (wide.isEmpty || shuffle.isEmpty) Array.empty
    else {
      val output = shuffle.get.output
      val ordinal = output.indexWhere(_.exprId == kindsBuffer)
      shuffle.get.execute().mapPartitions { iter =>
        val keyProj = UnsafeProjection.create(output.take(keyLength), output)
        iter.flatMap { row =>
          val bits = if (row.isNullAt(ordinal)) 0L else row.getLong(ordinal)
          wide.iterator.filter(k => (bits & (1L << k)) != 0).map(k => k -> keyProj(row).copy())
        }
      }.collect()
    }
  }
}

/**
 * The partial aggregates an aggregation's [[punctuated.input.PunctuationReplicatingExchangeExec]]
 * sends to every partition: those whose punctuation kinds (bits, at `kindsOrdinal`) include a
 * partition-wide one (`mask`).
 */
final case class AggregatePartitionWideRows(kindsOrdinal: Int, mask: Long) extends PartitionWideRows {
  override def isPartitionWide(row: InternalRow): Boolean =
    !row.isNullAt(kindsOrdinal) && (row.getLong(kindsOrdinal) & mask) != 0
}
