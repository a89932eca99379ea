package punctuated.aggregate

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import punctuated.compat.{StateStoreSaveExec, StatefulOperatorPartitioning, StatefulOperatorStateInfo, StreamingAggregationStateManager}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.{AggregateLayout, Watermarks}
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
 *
 *   per input group (merged with its stored state), in this micro-batch:
 *     late?    its key is matched by a held or remembered punctuation (GroupPunctuations):
 *              dropped or failing the query (spark.punctuated.lateRows)
 *     closed?  it carries a punctuation on its whole key (it arrived in the same group), or
 *              a partition-wide one (a range, a part of the key; gathered from all
 *              partitions first; the watermark's `ts<=w`: [[WatermarkClosing]]) matches
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
 * @param partitionWide  the gathered partition-wide punctuations (see [[gather]])
 * @param emit           output the punctuations (a downstream operator or the results use them)
 * @param settings       the `spark.punctuated.*` settings
 * @param eventTimeWatermark the watermark Spark gives this operator for eviction (ms): the
 *                       range punctuation of the layout's watermark kinds ([[WatermarkClosing]])
 * @param useWatermark   whether it closes groups (watermark kinds, and a sound policy)
 * @param child          Spark's merge step, after its restore step
 */
case class PunctuatedAggregateExec(
    keyExpressions: Seq[Attribute],
    stateInfo: Option[StatefulOperatorStateInfo],
    outputMode: Option[OutputMode],
    stateFormatVersion: Int,
    layout: AggregateLayout,
    ordinals: AggregateOrdinals,
    partitionWide: Option[PartitionWideSource],
    emit: Boolean,
    settings: PunctuatedConf,
    eventTimeWatermark: Option[Long],
    useWatermark: Boolean,
    child: SparkPlan)
  extends UnaryExecNode with PunctuatedStatefulOperator {

  private[aggregate] val stateManager = StreamingAggregationStateManager.createStateManager(
    keyExpressions, child.output, stateFormatVersion)

  override def shortName: String = "punctuatedAggregate"
  override val stateStoreNames: Seq[String] = Seq(StateStoreId.DEFAULT_STORE_NAME, GroupPunctuations.StoreName)
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    if (keyExpressions.isEmpty) AllTuples :: Nil
    else StatefulOperatorPartitioning.getCompatibleDistribution(keyExpressions, getStateInfo, conf) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    metrics // initialise on the driver
    val coordinator = stateStoreCoordinator
    val storeConf = new StateStoreConf(conf)
    val hadoopConf = broadcastHadoopConf()
    // few rows: shipped in the tasks' closure
    val wide = partitionWide.map(_.gather(child, layout, keyExpressions.size)).getOrElse(Array.empty) ++
      (if (useWatermark) Watermarks.punctuationKeys(layout.watermarks, keyExpressions.toStructType, eventTimeWatermark,
        conf.sessionLocalTimeZone) else Nil)
    val rdd = child.execute().mapPartitionsWithStateStore(
      getStateInfo,
      keyExpressions.toStructType,
      stateManager.getStateValueSchema,
      NoPrefixKeyStateEncoderSpec(keyExpressions.toStructType),
      session.sessionState,
      Some(coordinator)) { (store, iter) =>
      new PunctuatedAggregateTask(this, store, storeConf, hadoopConf.value.value, wide).run(iter)
    }
    // a store Spark cannot load is reported with its damaged files
    new punctuated.state.DamagedStateRDD(rdd, getStateInfo, hadoopConf)
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
  /**
   * Spark's metrics of the operator's stores: `numRowsTotal` from the data store only (the
   * groups or keys), memory and the provider's custom metrics summed over it and the
   * held-punctuations store (Spark's `setStoreMetrics` reports one store).
   */
  private[aggregate] def reportStoreMetrics(store: StateStore, heldStore: StateStore): Unit = {
    setStoreMetrics(store)
    longMetric("stateMemory") += heldStore.metrics.memoryUsedBytes
    setStoreCustomMetrics(heldStore.metrics.customMetrics)
    setOperatorMetrics(stateStoreNames.size)
  }
}

/** Ordinals of the hidden counts in the operator's input rows. */
final case class AggregateOrdinals(dataRows: Int, kinds: Int, invalid: Int, received: Int)

/**
 * Where this micro-batch's partition-wide punctuations are read from: the aggregation's
 * shuffle (already computed for the batch; reading it again costs no recomputation), whose
 * rows are partial aggregates with the grouping columns first and the punctuation kinds
 * (bits) in the column `kindsBuffer`. The shuffle is looked up in the plan being executed.
 */
final case class PartitionWideSource(kindsBuffer: ExprId) {
  def gather(plan: SparkPlan, layout: AggregateLayout, keyLength: Int): Array[(Int, UnsafeRow)] = {
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

/** One partition's work for one micro-batch (see [[PunctuatedAggregateExec]]). */
private[aggregate] class PunctuatedAggregateTask(
    op: PunctuatedAggregateExec,
    store: StateStore,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    wideKeys: Array[(Int, UnsafeRow)]) {

  import PunctuatedJoinMetrics._

  private val layout = op.layout
  private val ords = op.ordinals
  private val keyLength = op.keyExpressions.length
  private val settings = op.settings
  private val batch = op.getStateInfo.storeVersion
  private val partitionId = org.apache.spark.TaskContext.getPartitionId()
  private val schemes = layout.closing.zipWithIndex.map { case (s, i) => (i + 1) -> s }
  private val held = new GroupPunctuations(op.getStateInfo, partitionId,
    op.keyExpressions.toStructType, schemes, storeConf, hadoopConf, settings.maxRemembered)
  private val wholeKeyBits = schemes.collect { case (k, s) if s.isWholeKey(keyLength) => 1L << k }.foldLeft(0L)(_ | _)
  private val keyProj = UnsafeProjection.create(op.keyExpressions, op.child.output)
  private val wide: Seq[GroupPunctuation] = wideKeys.toSeq.map { case (k, key) =>
    held.punctuationFor(k, layout.closing(k - 1), key)
  }.distinct
  private val wideIndex = held.index(wide)
  private val Append = OutputMode.Append()
  private val Update = OutputMode.Update()
  private val Complete = OutputMode.Complete()
  private val mode = op.outputMode.getOrElse(Append)

  def run(iter: Iterator[InternalRow]): Iterator[InternalRow] =
    if (layout.isUnion) runUnion(iter) else runSingle(iter)

  private def runSingle(iter: Iterator[InternalRow]): Iterator[InternalRow] = {
    val out = ArrayBuffer.empty[InternalRow]
    val closedHere = ArrayBuffer.empty[GroupPunctuation]
    iter.foreach { r => group(r.asInstanceOf[UnsafeRow].copy(), out, closedHere) }
    // a pass over the stored groups only when a partition-wide punctuation closes something new
    // (a range punctuation repeated, or not above the held bound, matches no stored group)
    if (mode != Complete && wide.exists(p => !held.alreadyClosed(p))) scan(out)
    if (mode == Complete) stored(out)
    (closedHere ++ wide).distinct.foreach(p => held.hold(p, batch, settings.punctuationRetention))
    finish(out, settings.punctuationRetention)
  }

  /** Releases expired punctuations, commits both stores, reports the metrics. */
  private def finish(out: ArrayBuffer[InternalRow], retention: Int): Iterator[InternalRow] = {
    held.commit(batch, retention, op.metric)
    op.stateManager.commit(store)
    op.reportStoreMetrics(store, held.store)
    op.metric("numOutputRows") += out.size
    out.iterator
  }

  /**
   * Under a UNION (setCombine, Tucker et al. 2003, Table 3): a group closes only when every
   * branch's punctuations cover it, so each branch's are held until then — ranges alone as
   * their highest bound, whole keys until their group closes. Late: already covered by every
   * branch. Output punctuations are not produced.
   */
  private def runUnion(iter: Iterator[InternalRow]): Iterator[InternalRow] = {
    val out = ArrayBuffer.empty[InternalRow]
    val byBranch = layout.kindsByBranch
    def closed(key: InternalRow) =
      byBranch.forall(_.exists(k => held.closes(k, layout.closing(k - 1), key)))
    val rows = iter.map(_.asInstanceOf[UnsafeRow].copy()).toArray
    val arrived = ArrayBuffer.empty[GroupPunctuation]
    val data = rows.filter { row =>
      val invalid = row.getLong(ords.invalid)
      op.metric(InvalidPunctuationsDropped) += invalid
      op.metric(PunctuationsReceived) += row.getLong(ords.received) - invalid
      val bits = if (row.isNullAt(ords.kinds)) 0L else row.getLong(ords.kinds)
      val key = keyProj(row)
      schemes.foreach { case (k, s) =>
        if ((bits & (1L << k)) != 0 && s.isWholeKey(keyLength)) arrived += held.punctuationFor(k, s, key)
      }
      val dataRows = row.getLong(ords.dataRows)
      if (dataRows > 0 && closed(key)) { late(key, dataRows); false } else dataRows > 0
    }
    (arrived ++ wide).distinct.foreach(p => held.hold(p, batch, Int.MaxValue))
    def close(row: UnsafeRow, key: UnsafeRow): Unit = {
      op.metric(RowsPurged) += 1
      op.metric("numRemovedStateRows") += 1
      if (mode == Append) out += withCounts(row, row.getLong(ords.dataRows), 0L)
    }
    data.foreach { row =>
      val key = keyProj(row).copy()
      if (mode != Complete && closed(key)) {
        if (op.stateManager.get(store, key) != null) op.stateManager.remove(store, key)
        close(row, key)
        if (mode == Update) out += withCounts(row, row.getLong(ords.dataRows), 0L)
      } else {
        op.stateManager.put(store, withCounts(row, row.getLong(ords.dataRows), 0L))
        op.metric("numUpdatedStateRows") += 1
        if (mode == Update) out += withCounts(row, row.getLong(ords.dataRows), 0L)
      }
    }
    if (mode != Complete && wide.nonEmpty) {
      op.stateManager.iterator(store).map(_.value.copy()).filter(v => closed(keyProj(v))).toArray.foreach { v =>
        val key = keyProj(v).copy()
        op.stateManager.remove(store, key)
        close(v, key)
      }
    }
    if (mode == Complete) stored(out)
    held.releaseCombined((arrived ++ wide).toSeq, layout)
    finish(out, Int.MaxValue)
  }

  /** One input group, merged with its stored state. */
  private def group(row: UnsafeRow, out: ArrayBuffer[InternalRow], closedHere: ArrayBuffer[GroupPunctuation]): Unit = {
    val dataRows = row.getLong(ords.dataRows)
    val bits = if (row.isNullAt(ords.kinds)) 0L else row.getLong(ords.kinds)
    val invalid = row.getLong(ords.invalid)
    op.metric(InvalidPunctuationsDropped) += invalid
    op.metric(PunctuationsReceived) += row.getLong(ords.received) - invalid
    val key = keyProj(row)
    schemes.foreach { case (k, s) => if ((bits & (1L << k)) != 0) closedHere += held.punctuationFor(k, s, key) }
    val emitted = if (op.emit && mode != Complete) bits else 0L
    if (dataRows == 0) {
      if (emitted != 0) out += withCounts(row, 0L, emitted)
    } else if (isLate(key)) {
      late(key, dataRows)
      if (emitted != 0) out += withCounts(row, 0L, emitted)
    } else {
      val implied = layout.implied.filter(k => layout.closing(k - 1).isWholeKey(keyLength))
      val closed = mode != Complete && ((bits & wholeKeyBits) != 0 || layout.implied.nonEmpty ||
        wideIndex.covers(key))
      layout.implied.foreach(k => closedHere += held.punctuationFor(k, layout.closing(k - 1), key))
      val impliedBits = if (op.emit) implied.foldLeft(0L)((b, k) => b | (1L << k)) else 0L
      if (closed) {
        if (op.stateManager.get(store, key) != null) op.stateManager.remove(store, key)
        op.metric(RowsPurged) += 1
        op.metric("numRemovedStateRows") += 1
        out += withCounts(row, dataRows, emitted | impliedBits)
      } else {
        op.stateManager.put(store, withCounts(row, dataRows, 0L))
        op.metric("numUpdatedStateRows") += 1
        if (mode == Update) out += withCounts(row, dataRows, emitted)
        else if (emitted != 0) out += withCounts(row, 0L, emitted)
      }
    }
  }

  /** One pass over the stored groups for this batch's partition-wide punctuations. */
  private def scan(out: ArrayBuffer[InternalRow]): Unit = {
    val closed = op.stateManager.iterator(store).map(p => p.value.copy())
      .filter(v => wideIndex.covers(keyProj(v))).toArray
    closed.foreach { v =>
      op.stateManager.remove(store, keyProj(v).copy())
      op.metric(RowsPurged) += 1
      op.metric("numRemovedStateRows") += 1
      if (mode == Append) out += v
    }
  }

  private def stored(out: ArrayBuffer[InternalRow]): Unit =
    op.stateManager.values(store).foreach(v => out += v.copy())

  private def isLate(key: UnsafeRow): Boolean =
    schemes.exists { case (k, s) => held.closes(k, s, key) }

  private def late(key: UnsafeRow, rows: Long): Unit = {
    if (settings.failOnLateRows) {
      val shown = op.keyExpressions.zipWithIndex.map { case (a, i) =>
        s"${a.name}=${if (key.isNullAt(i)) "NULL" else key.get(i, a.dataType)}"
      }.mkString("(", ", ", ")")
      throw PunctuatedErrors.lateRow(
        s"Rows of group $shown of ${layout.streams.mkString(", ")} arrived after a punctuation " +
          s"${if (op.useWatermark) "or the watermark " else ""}closed the group")
    }
    op.metric(LateRowsDropped) += rows
  }

  /** The row with its hidden data-row count and punctuation kinds set as given. */
  private def withCounts(row: UnsafeRow, dataRows: Long, bits: Long): UnsafeRow = {
    val copy = row.copy()
    copy.setLong(ords.dataRows, dataRows)
    if (bits == 0) copy.setNullAt(ords.kinds) else copy.setLong(ords.kinds, bits)
    copy
  }
}
