package punctuated.state

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.metric.SQLMetric
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

import punctuated.input.{AggregateLayout, KeyScheme}

/**
 * A punctuation on a grouping key: "no more rows whose grouping columns at
 * `scheme.constants` equal `constants` (and whose range columns are within `bound`: at most
 * its value for one range, in its region for several, [[RangeBounds]])".
 */
final case class GroupPunctuation(kind: Int, scheme: KeyScheme, constants: UnsafeRow, bound: Option[Any])

/**
 * What a punctuated aggregation or deduplication does with the punctuations of one partition:
 * the policy of holding them, over the [[HeldPunctuationTable]] every punctuated operator
 * keeps (ids: the punctuation kinds), in a Spark state store of its own (versioned with the
 * micro-batch, HDFS-backed or RocksDB):
 *
 * {{{
 *   punctuations   key: (kind INT, constants BINARY)   value: (bound BINARY, closedAt BIGINT)
 *                  key: (-kind, empty)                 value: (summary BINARY, entries BIGINT)
 *                  key: (-kind, [1])                   value: (lowest value BINARY, batch BIGINT)   (LowestStoredValues)
 * }}}
 *
 * A punctuation is held `spark.punctuated.punctuationRetention` micro-batches; one of a
 * scheme that is a range alone (`hour<=`) is held for good as its scheme's highest bound —
 * one row per scheme — so that no late row ever reopens a closed range. Every other one is
 * also remembered for good in its kind's closed-values summary ([[punctuated.state.ClosedKeys]]:
 * intervals of an integral key, or a bounded set, `spark.punctuated.lateRows.maxRemembered`
 * entries per partition and kind), so that a group once closed is never closed again (no
 * second final row) after its punctuation is released. Under a UNION a key is closed once
 * every branch closed it ([[releaseCombined]]).
 *
 * Example (`GROUP BY hour`, kind 1 = `hour<=`): after `hold(punctuationFor(1, s, key9), 3,
 * retention = 0)` the bound 9 is held for good, and `closes(1, s, key8)` is true.
 *
 * @param keySchema     the grouping (or deduplication) key's columns
 * @param schemes       the closing schemes by kind
 * @param maxRemembered entries per closed-values summary (0: none)
 */
class GroupPunctuations(
    stateInfo: StatefulOperatorStateInfo,
    partitionId: Int,
    keySchema: StructType,
    schemes: Seq[(Int, KeyScheme)],
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    maxRemembered: Int) {

  import GroupPunctuations._

  val store: StateStore = {
    val id = StateStoreProviderId(
      StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, partitionId, StoreName),
      stateInfo.queryRunId)
    DamagedCheckpoint.opening(id, stateInfo.storeVersion, hadoopConf) {
      StateStore.get(id, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema),
        stateInfo.storeVersion, None, None, useColumnFamilies = false, storeConf, hadoopConf)
    }
  }

  private val byKind = schemes.toMap
  private val table = {
    val ns = StoreNamespace.whole(store)
    new HeldPunctuationTable(Some(ns), Some(ns), ClosedSummaries.BesideHeld(ns), schemes, keySchema,
      maxRemembered, (partitionId, stateInfo.numPartitions))
  }

  private def pureRange(s: KeyScheme): Boolean = s.constants.isEmpty && s.hasRange

  private var lowest: Option[LowestStoredValues] = None

  /**
   * The lowest values the schemes that are one range alone see among the stored groups (an
   * aggregation's, which lowers them as it stores groups: [[LowestStoredValues]]).
   */
  def lowestStored: LowestStoredValues = lowest.getOrElse {
    val single = schemes.collect { case (k, s) if pureRange(s) => k -> table.bounds(s) }
      .collect { case (k, b: RangeBounds.Single) => k -> b }
    val made = new LowestStoredValues(StoreNamespace.whole(store), single, stateInfo.storeVersion)
    lowest = Some(made)
    made
  }

  /**
   * Can `p` (a micro-batch's partition-wide punctuation) close a stored group? Not when it is
   * one range alone and its bound is below every stored group's value.
   */
  def mayCloseStored(p: GroupPunctuation): Boolean =
    !pureRange(p.scheme) || p.bound.forall(b => lowestStored.mayCover(p.kind, b))

  /** The punctuation of `kind` that would close the group with this key. */
  def punctuationFor(kind: Int, scheme: KeyScheme, key: InternalRow): GroupPunctuation =
    GroupPunctuation(kind, scheme, table.constantsOf(scheme, key).copy(), table.boundOf(scheme, key))

  /** Punctuations `ps` (a micro-batch's partition-wide ones) indexed for matching groups. */
  def index(ps: Seq[GroupPunctuation]): HeldPunctuationTable#PunctuationIndex =
    table.index(ps.map(p => (p.scheme, p.constants, p.bound)))

  /** Is this group closed by a held or remembered punctuation of `kind`? */
  def closes(kind: Int, scheme: KeyScheme, key: InternalRow): Boolean = table.covers(kind, scheme, key)

  /**
   * [[closes]] for `kind` as a function, for a task's run of look-ups before it holds or
   * remembers anything ([[HeldPunctuationTable.coverer]]: a snapshot until the next change).
   */
  def closer(kind: Int, scheme: KeyScheme): InternalRow => Boolean = table.coverer(kind, scheme)

  /**
   * Did earlier punctuations already close everything `p` closes (a range alone: a held bound
   * at least as high; otherwise: remembered)? Then no stored group matches `p`: a group it
   * covers was closed when they came, or was late. (Only true when known; a forgotten value: false.)
   */
  def alreadyClosed(p: GroupPunctuation): Boolean =
    if (pureRange(p.scheme)) (table.held(p.kind, p.scheme, p.constants), p.bound) match {
      case (Some((Some(h), _)), Some(b)) => table.bounds(p.scheme).includes(h, b)
      case _ => false
    }
    else table.remembers(p.kind, p.constants, p.bound)

  /** Remembers the values `p` closes for good (a range alone is held for good instead). */
  def remember(p: GroupPunctuation): Unit =
    if (!pureRange(p.scheme)) table.remember(p.kind, p.constants, p.bound)

  /**
   * Holds `p` from micro-batch `batch` (a range one: its highest bound so far). A range
   * alone is held for good; others only with a retention.
   */
  def hold(p: GroupPunctuation, batch: Long, retention: Int): Unit = {
    remember(p)
    if (retention > 0 || pureRange(p.scheme)) table.holdGreatest(p.kind, p.scheme, p.constants, p.bound, batch)
  }

  /** Releases the punctuation of `kind` with these constants (a union's, once its key closed). */
  def release(kind: Int, constants: UnsafeRow): Unit = table.release(kind, byKind(kind), constants)

  /**
   * Under a UNION: releases the punctuations on one value (no range) once every branch holds
   * one with the same scheme and constants — the key they name is closed for good then.
   * Ranges stay, as their highest bound.
   */
  def releaseCombined(arrived: Seq[GroupPunctuation], layout: AggregateLayout): Unit =
    arrived.filterNot(_.scheme.hasRange).distinct.foreach { p =>
      val same = layout.closing.zipWithIndex.collect { case (s, i) if s == p.scheme => i + 1 }
      val everyBranch = layout.kindsByBranch.forall(_.exists(k =>
        same.contains(k) && table.held(k, byKind(k), p.constants).isDefined))
      if (everyBranch) same.foreach(k => release(k, p.constants))
    }

  /** Writes the changed summaries back (before the store commits); returns the entries forgotten. */
  def flushClosed(): Long = table.flushClosed()

  /**
   * Releases punctuations held `retention` micro-batches (not ranges alone) and returns how
   * many stay held (a partition-wide punctuation is held by every partition, and each copy
   * is state: all are counted): one pass over this small store per micro-batch.
   */
  def releaseExpired(batch: Long, retention: Int): Long =
    table.releaseExpired(batch, retention, kind => byKind.get(kind).exists(pureRange))

  /** Closed-value entries remembered, as of the last [[flushClosed]]. */
  def numRemembered: Long = table.numRemembered

  /**
   * Ends the micro-batch: writes the summaries back, releases what `retention` lets go and
   * commits the store, counting forgotten and remembered closed values and the punctuations
   * still held (every partition's copy: each is state) in the operator's metrics.
   */
  def commit(batch: Long, retention: Int, metric: String => SQLMetric): Unit = {
    metric(PunctuatedJoinMetrics.ClosedValuesForgotten) += flushClosed()
    metric(PunctuatedJoinMetrics.PunctuationsHeld) += releaseExpired(batch, retention)
    metric(PunctuatedJoinMetrics.ClosedValuesRemembered) += numRemembered
    lowest.foreach(_.flush())
    store.commit()
  }
}

object GroupPunctuations {
  val StoreName = "punctuations"
  val KeySchema: StructType = new StructType().add("kind", IntegerType, nullable = false)
    .add("constants", BinaryType, nullable = false)
  val ValueSchema: StructType = new StructType().add("bound", BinaryType, nullable = true)
    .add("closedAt", LongType, nullable = false)
}
