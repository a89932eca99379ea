package punctuated.dedup

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, HashPartitioning, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import punctuated.compat.{StatefulOperatorPartitioning, StatefulOperatorStateInfo, StreamingDeduplicateExec}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.{IntegerType, StructType}

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.{AggregateLayout, PartitionWideRows, PunctuationKind, PunctuationReplicatingExchangeExec, Watermarks}
import punctuated.state.{GroupPunctuation, GroupPunctuations, PunctuatedJoinMetrics, PunctuatedStatefulOperator, StoreNamespace}

/**
 * Punctuation-purging streaming deduplication (Tucker et al. 2003, Table 2, duplicate
 * elimination): like Spark's `StreamingDeduplicateExec`, the first row of each key is
 * emitted and the key remembered; unlike it, a key is forgotten as soon as punctuations say
 * no row with it can come again (*keep* invariant), with no watermark; the punctuations are
 * passed on (*propagate*). A watermark on a key column (`dropDuplicates("id", "ts")` over a
 * `withWatermark("ts", ...)` stream) forgets keys too, as the range punctuation `ts<=w`
 * (`WatermarkClosing`), next to the declared schemes.
 *
 * {{{
 *   input rows (data + punctuations, with their kind)
 *        |
 *        v
 *   data row: late (a held or remembered punctuation
 *             matches it: GroupPunctuations)?         -> dropped (spark.punctuated.lateRows)
 *             key seen?                               -> dropped (a duplicate)
 *             else                                    -> emitted, key stored
 *   punctuation row: noted (and emitted when a downstream operator or the results use it)
 *   end of batch: keys matched by this batch's punctuations are forgotten — a whole-key one
 *   by one removal, partition-wide ones (copied to every partition by the shuffle) by one pass over
 *   the seen keys; punctuations are held for late rows (GroupPunctuations)
 * }}}
 *
 * Worked example (`bids` schemes "auction", `dropDuplicates("auction", "bidder")`):
 * {{{
 *   batch 0: (1, 100), (1, 100), (1, 101)   -> (1, 100), (1, 101); 2 keys stored
 *   batch 1: (1, 100), punctuation 1        -> nothing new; keys of auction 1 forgotten: 0 stored
 * }}}
 *
 * @param keyExpressions the deduplication key
 * @param kindOrdinal    ordinal of the `punctuation_kind` column in the input rows
 * @param stateInfo      state location, set by Spark's incremental planner
 * @param layout         the closing schemes (from the analyzer's rewrite)
 * @param replicated     the partitioning of the [[punctuated.input.PunctuationReplicatingExchangeExec]]
 *                       below, which brings partition-wide punctuations to every partition (a
 *                       task counts and emits only the copy at home, the partition the hash
 *                       names); `None`: they are gathered from the shuffle below first
 * @param emit           output punctuation rows
 * @param settings       the `spark.punctuated.*` settings
 * @param eventTimeWatermark the watermark Spark gives this operator for eviction (ms): the range
 *                       punctuation of the layout's watermark kinds (`WatermarkClosing`)
 * @param useWatermark   whether it forgets keys (watermark kinds, and a sound policy)
 * @param child          the input, distributed by the key (transient, as
 *                       [[punctuated.aggregate.PunctuatedAggregateExec]]'s: the tasks' closure
 *                       holds this operator, not the plan below it)
 */
case class PunctuatedDeduplicateExec(
    keyExpressions: Seq[Attribute],
    kindOrdinal: Int,
    stateInfo: Option[StatefulOperatorStateInfo],
    layout: AggregateLayout,
    replicated: Option[HashPartitioning],
    emit: Boolean,
    settings: PunctuatedConf,
    eventTimeWatermark: Option[Long],
    useWatermark: Boolean,
    @transient child: SparkPlan)
  extends UnaryExecNode with PunctuatedStatefulOperator {

  /** The input's columns, for the tasks (which do not get the child). */
  private[dedup] val childOutput: Seq[Attribute] = child.output

  override def shortName: String = "punctuatedDeduplicate"
  override val stateStoreNames: Seq[String] = Seq(StateStoreId.DEFAULT_STORE_NAME, GroupPunctuations.StoreName)
  override def output: Seq[Attribute] = childOutput
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    StatefulOperatorPartitioning.getCompatibleDistribution(keyExpressions, getStateInfo, conf) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    metrics
    // few rows: shipped in the tasks' closure
    val wide = gatherWide() ++ (if (useWatermark) Watermarks.punctuationKeys(layout.watermarks,
      keyExpressions.toStructType, eventTimeWatermark, conf.sessionLocalTimeZone) else Nil)
    withKeyStore(child.execute(), keyExpressions.toStructType, PunctuatedDeduplicateExec.ValueSchema) {
      (store, storeConf, hadoopConf, rows) => new PunctuatedDeduplicateTask(this, store, storeConf, hadoopConf, wide).run(rows)
    }
  }

  /** This batch's partition-wide punctuations (kind, key), read again from the shuffle. */
  private def gatherWide(): Array[(Int, UnsafeRow)] = {
    val wide = layout.partitionWide(keyExpressions.size)
    child.collectFirst { case e: ShuffleExchangeLike => e: SparkPlan } match {
      case Some(shuffle) if wide.nonEmpty && replicated.isEmpty =>
        val (ordinal, keys, output) = (kindOrdinal, keyExpressions, shuffle.output)
        shuffle.execute().mapPartitions { iter =>
          val keyProj = UnsafeProjection.create(keys, output)
          iter.filter(r => wide.contains(r.getInt(ordinal))).map(r => r.getInt(ordinal) -> keyProj(r).copy())
        }.collect()
      case _ => Array.empty
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)

  /** A batch without new data when the watermark has passed what this operator applied (keys to forget). */
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    useWatermark && newInputWatermark > 0 && newInputWatermark > eventTimeWatermark.getOrElse(0L)

  private[dedup] def metric(name: String) = longMetric(name)
}

object PunctuatedDeduplicateExec {
  val ValueSchema: StructType = new StructType().add("seen", IntegerType, nullable = false)
}

/** One partition's work for one micro-batch (see [[PunctuatedDeduplicateExec]]). */
private[dedup] class PunctuatedDeduplicateTask(
    op: PunctuatedDeduplicateExec,
    store: StateStore,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    wideKeys: Array[(Int, UnsafeRow)]) {

  import PunctuatedJoinMetrics._

  private val layout = op.layout
  private val keyLength = op.keyExpressions.length
  private val batch = op.getStateInfo.storeVersion
  private val partitionId = org.apache.spark.TaskContext.getPartitionId()
  private val schemes = layout.closing.zipWithIndex.map { case (s, i) => (i + 1) -> s }
  private val held = new GroupPunctuations(op.getStateInfo, partitionId, op.keyExpressions.toStructType,
    schemes, storeConf, hadoopConf, op.settings.maxRemembered)
  private val keyProj = UnsafeProjection.create(op.keyExpressions, op.childOutput)
  private lazy val homeOf = op.replicated.map(PunctuationReplicatingExchangeExec.homeOf(_, op.childOutput))
  // the constant value of every stored key (one INT, 1), written directly: no code generated per task
  private val seen = StoreNamespace.intRow(1)

  def run(iter: Iterator[InternalRow]): Iterator[InternalRow] = {
    val started = System.nanoTime()
    val out = ArrayBuffer.empty[InternalRow]
    val closing = ArrayBuffer.empty[GroupPunctuation]
    val newKeys = ArrayBuffer.empty[UnsafeRow]
    // partition-wide ones: gathered first, or arriving here as copies (replicated)
    val arrived = ArrayBuffer.from(wideKeys.iterator.map { case (k, key) =>
      held.punctuationFor(k, layout.closing(k - 1), key) })
    // nothing is held or remembered until every row is read: the late check's look-ups are
    // resolved once, as one function per scheme (under a union: every branch's, per key)
    val isLate: InternalRow => Boolean =
      if (layout.isUnion) closedByAll
      else { val checks = schemes.map { case (k, s) => held.closer(k, s) }.toArray; key => checks.exists(_(key)) }
    iter.foreach { row =>
      row.getInt(op.kindOrdinal) match {
        case PunctuationKind.Data =>
          val key = keyProj(row)
          if (isLate(key)) late(row)
          else if (store.get(key) == null) {
            store.put(key.copy(), seen)
            op.metric("numUpdatedStateRows") += 1
            if (layout.implied.nonEmpty) newKeys += key.copy()
            out += row.copy()
          }
        case PunctuationKind.Invalid => op.metric(InvalidPunctuationsDropped) += 1
        case PunctuationKind.Ignored =>
          op.metric(PunctuationsReceived) += 1
          if (op.emit) out += row.copy()
        case k =>
          val s = layout.closing(k - 1)
          if (s.isWholeKey(keyLength)) closing += held.punctuationFor(k, s, keyProj(row))
          else if (homeOf.isDefined) arrived += held.punctuationFor(k, s, keyProj(row))
          if (homeOf.forall(_(row) == partitionId)) {   // one copy of a replicated one counts
            op.metric(PunctuationsReceived) += 1
            if (op.emit) out += row.copy()
          }
      }
    }
    val wide = arrived.distinct.toSeq
    if (layout.isUnion) {
      // setCombine: a key is forgotten once every branch's punctuations cover it
      (closing ++ wide).distinct.foreach(p => held.hold(p, batch, Int.MaxValue))
      val done = closing.map(_.constants).filter(closedByAll) ++
        (if (wide.isEmpty) Nil else store.iterator().filter(p => closedByAll(p.key)).map(_.key.copy()).toArray.toSeq)
      done.foreach(forget)
      held.releaseCombined((closing ++ wide).toSeq, layout)
    } else {
      // whole-key punctuations: one removal each; implied ones (a unique key): the new keys,
      // whose unique-key values are remembered as closed (a later row with one is late)
      closing.foreach(p => forget(p.constants))
      newKeys.foreach(forget)
      for (key <- newKeys; k <- layout.implied) held.remember(held.punctuationFor(k, layout.closing(k - 1), key))
      if (wide.nonEmpty) {
        val index = held.index(wide)
        store.iterator().filter(p => index.covers(p.key)).map(_.key.copy()).toArray.foreach(forget)
      }
      (closing ++ wide).distinct.foreach(p => held.hold(p, batch, op.settings.punctuationRetention))
    }
    val retention = if (layout.isUnion) Int.MaxValue else op.settings.punctuationRetention
    val updated = System.nanoTime()
    op.metric("allUpdatesTimeMs") += (updated - started) / 1000000
    held.commit(batch, retention, op.metric)
    store.commit()
    op.metric("commitTimeMs") += (System.nanoTime() - updated) / 1000000
    op.reportStoreMetrics(store, held.store)
    op.metric("numOutputRows") += out.size
    out.iterator
  }

  private def closedByAll(key: InternalRow): Boolean =
    layout.kindsByBranch.forall(_.exists(k => held.closes(k, layout.closing(k - 1), key)))

  /** Forgets a seen key (a whole key's constants are the key itself). */
  private def forget(key: UnsafeRow): Unit =
    if (store.get(key) != null) {
      store.remove(key)
      op.metric(RowsPurged) += 1
      op.metric("numRemovedStateRows") += 1
    }

  private def late(row: InternalRow): Unit = {
    if (op.settings.failOnLateRows) {
      throw PunctuatedErrors.lateRow(
        s"A row of ${layout.streams.mkString(", ")} arrived after a punctuation " +
          s"${if (op.useWatermark) "or the watermark " else ""}matching it")
    }
    op.metric(LateRowsDropped) += 1
  }
}

/**
 * The rows a deduplication's [[punctuated.input.PunctuationReplicatingExchangeExec]] sends to
 * every partition: punctuations (the `punctuation_kind` column at `kindOrdinal`) of the
 * partition-wide kinds `kinds`.
 */
final case class DeduplicatePartitionWideRows(kindOrdinal: Int, kinds: Set[Int]) extends PartitionWideRows {
  override def isPartitionWide(row: InternalRow): Boolean = kinds.contains(row.getInt(kindOrdinal))
}
