package punctuated.aggregate

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.streaming.OutputMode

import punctuated.errors.PunctuatedErrors
import punctuated.input.PunctuationReplicatingExchangeExec
import punctuated.state.{GroupPunctuation, GroupPunctuations, PunctuatedJoinMetrics}

/**
 * One partition's work for one micro-batch (see [[PunctuatedAggregateExec]]).
 *
 * @param wideKeys the partition-wide punctuations known before the task reads its input
 *                 (gathered on the driver, the watermark's); with [[ThroughShuffle]], those of
 *                 the input rows are added when the task reads them
 */
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
  // the output punctuations a group closed by an implied (unique-key) punctuation carries
  private val impliedBits = if (!op.emit) 0L else layout.implied
    .filter(k => layout.closing(k - 1).isWholeKey(keyLength)).foldLeft(0L)((b, k) => b | (1L << k))
  private val wholeKeyBits = schemes.collect { case (k, s) if s.isWholeKey(keyLength) => 1L << k }.foldLeft(0L)(_ | _)
  private val keyProj = UnsafeProjection.create(op.keyExpressions, op.childOutput)
  private val wideKinds = layout.partitionWide(keyLength).foldLeft(0L)((b, k) => b | (1L << k))
  // this batch's partition-wide punctuations (set once, before any group is processed)
  private var wide: Seq[GroupPunctuation] = Nil
  private var wideIndex = held.index(Nil)
  private val Append = OutputMode.Append()
  private val Update = OutputMode.Update()
  private val Complete = OutputMode.Complete()
  private val mode = op.outputMode.getOrElse(Append)

  // Spark's timing metrics: the batch's updates (from the first input row on) and the commits
  private var started = 0L
  // the metrics updated per input group, looked up once
  private val invalidDropped = op.metric(InvalidPunctuationsDropped)
  private val received = op.metric(PunctuationsReceived)
  private val purged = op.metric(RowsPurged)
  private val removed = op.metric("numRemovedStateRows")
  private val updatedRows = op.metric("numUpdatedStateRows")

  def run(iter: Iterator[InternalRow]): Iterator[InternalRow] = {
    started = System.nanoTime()
    val local = op.partitionWide match {
      case ThroughShuffle(partitioning) if wideKinds != 0 =>
        // every partition-wide punctuation of the batch is among this partition's input rows
        val rows = iter.map(_.asInstanceOf[UnsafeRow].copy()).toArray
        lazy val homeOf = PunctuationReplicatingExchangeExec.homeOf(partitioning, op.childOutput)
        val arrived = rows.filter(r => (bitsOf(r) & wideKinds) != 0)
        setWide(wideKeys.toSeq ++ arrived.toSeq.flatMap { r =>
          val key = keyProj(r).copy()
          schemes.collect { case (k, _) if (bitsOf(r) & wideKinds & (1L << k)) != 0 => k -> key }
        })
        rows.iterator.filter(r => (bitsOf(r) & wideKinds) == 0 || homeOf(r) == partitionId)
      case _ =>
        setWide(wideKeys.toSeq)
        iter
    }
    if (layout.isUnion) runUnion(local) else runSingle(local)
  }

  private def setWide(keys: Seq[(Int, UnsafeRow)]): Unit = {
    wide = keys.map { case (k, key) => held.punctuationFor(k, layout.closing(k - 1), key) }.distinct
    wideIndex = held.index(wide)
  }

  private def bitsOf(row: InternalRow): Long = if (row.isNullAt(ords.kinds)) 0L else row.getLong(ords.kinds)

  private def runSingle(iter: Iterator[InternalRow]): Iterator[InternalRow] = {
    // the lowest stored values are written back in every micro-batch, even one without input
    // rows: an entry a micro-batch skipped would not be trusted by the next (LowestStoredValues)
    held.lowestStored
    val out = ArrayBuffer.empty[InternalRow]
    val closedHere = ArrayBuffer.empty[GroupPunctuation]
    // nothing is held or remembered until every group is processed: the late check's look-ups
    // are resolved once, as one function per scheme
    val lateChecks = schemes.map { case (k, s) => held.closer(k, s) }.toArray
    val isLate = (key: UnsafeRow) => lateChecks.exists(_(key))
    // no copy: group() keeps nothing of the row but the copies withCounts makes
    iter.foreach { r => group(r.asInstanceOf[UnsafeRow], out, closedHere, isLate) }
    // a pass over the stored groups only when a partition-wide punctuation closes something new
    // (a range punctuation repeated, not above the held bound, or below every stored group's
    // value matches no stored group)
    if (mode != Complete && wide.exists(p => !held.alreadyClosed(p) && held.mayCloseStored(p))) scan(out)
    if (mode == Complete) stored(out)
    (closedHere ++ wide).distinct.foreach(p => held.hold(p, batch, settings.punctuationRetention))
    finish(out, settings.punctuationRetention)
  }

  /** Releases expired punctuations, commits both stores, reports the metrics. */
  private def finish(out: ArrayBuffer[InternalRow], retention: Int): Iterator[InternalRow] = {
    val updated = System.nanoTime()
    op.metric("allUpdatesTimeMs") += (updated - started) / 1000000
    held.commit(batch, retention, op.metric)
    op.stateManager.commit(store)
    op.metric("commitTimeMs") += (System.nanoTime() - updated) / 1000000
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
      invalidDropped += invalid
      received += row.getLong(ords.received) - invalid
      val bits = bitsOf(row)
      val key = keyProj(row)
      schemes.foreach { case (k, s) =>
        if ((bits & (1L << k)) != 0 && s.isWholeKey(keyLength)) arrived += held.punctuationFor(k, s, key)
      }
      val dataRows = row.getLong(ords.dataRows)
      if (dataRows > 0 && closed(key)) { late(key, dataRows); false } else dataRows > 0
    }
    (arrived ++ wide).distinct.foreach(p => held.hold(p, batch, Int.MaxValue))
    def close(row: UnsafeRow, key: UnsafeRow): Unit = {
      purged += 1
      removed += 1
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
        updatedRows += 1
        if (mode == Update) out += withCounts(row, row.getLong(ords.dataRows), 0L)
      }
    }
    if (mode != Complete && wide.nonEmpty) {
      op.stateManager.iterator(store).filter(p => closed(keyProj(p.value))).map(_.value.copy()).toArray.foreach { v =>
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
  private def group(row: UnsafeRow, out: ArrayBuffer[InternalRow], closedHere: ArrayBuffer[GroupPunctuation],
      isLate: UnsafeRow => Boolean): Unit = {
    val dataRows = row.getLong(ords.dataRows)
    val bits = bitsOf(row)
    val invalid = row.getLong(ords.invalid)
    invalidDropped += invalid
    received += row.getLong(ords.received) - invalid
    val key = keyProj(row)
    schemes.foreach { case (k, s) => if ((bits & (1L << k)) != 0) closedHere += held.punctuationFor(k, s, key) }
    val emitted = if (op.emit && mode != Complete) bits else 0L
    if (dataRows == 0) {
      if (emitted != 0) out += withCounts(row, 0L, emitted)
    } else if (isLate(key)) {
      late(key, dataRows)
      if (emitted != 0) out += withCounts(row, 0L, emitted)
    } else {
      val closed = mode != Complete && ((bits & wholeKeyBits) != 0 || layout.implied.nonEmpty ||
        wideIndex.covers(key))
      layout.implied.foreach(k => closedHere += held.punctuationFor(k, layout.closing(k - 1), key))
      if (closed) {
        if (op.stateManager.get(store, key) != null) op.stateManager.remove(store, key)
        purged += 1
        removed += 1
        out += withCounts(row, dataRows, emitted | impliedBits)
      } else {
        op.stateManager.put(store, withCounts(row, dataRows, 0L))
        held.lowestStored.stored(key)
        updatedRows += 1
        if (mode == Update) out += withCounts(row, dataRows, emitted)
        else if (emitted != 0) out += withCounts(row, 0L, emitted)
      }
    }
  }

  /**
   * One pass over the stored groups for this batch's partition-wide punctuations; the groups
   * left give the ranges' lowest stored values anew.
   */
  private def scan(out: ArrayBuffer[InternalRow]): Unit = {
    // only the closed groups are copied (the iterator's rows are reused buffers)
    val closed = ArrayBuffer.empty[UnsafeRow]
    held.lowestStored.passed(op.stateManager.iterator(store).flatMap { p =>
      val key = keyProj(p.value)
      if (wideIndex.covers(key)) { closed += p.value.copy(); None } else Some(key)
    })
    closed.foreach { v =>
      op.stateManager.remove(store, keyProj(v).copy())
      purged += 1
      removed += 1
      if (mode == Append) out += v
    }
  }

  private def stored(out: ArrayBuffer[InternalRow]): Unit =
    op.stateManager.values(store).foreach(v => out += v.copy())

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

  /**
   * The row with its hidden data-row count and punctuation kinds set as given, and its counts
   * of invalid and received punctuations zeroed: this batch has counted them, and a stored
   * row's counts would be merged into (and counted with) the next batch's.
   */
  private def withCounts(row: UnsafeRow, dataRows: Long, bits: Long): UnsafeRow = {
    val copy = row.copy()
    copy.setLong(ords.dataRows, dataRows)
    if (bits == 0) copy.setNullAt(ords.kinds) else copy.setLong(ords.kinds, bits)
    copy.setLong(ords.invalid, 0L)
    copy.setLong(ords.received, 0L)
    copy
  }
}
