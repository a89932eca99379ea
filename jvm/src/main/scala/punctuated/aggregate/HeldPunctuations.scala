package punctuated.aggregate

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

import punctuated.input.{AggregateLayout, KeyScheme}
import punctuated.join.ClosedKeysTable

/**
 * A punctuation on a grouping key: "no more rows whose grouping columns at
 * `scheme.constants` equal `constants` (and whose `scheme.range` column is <= `bound`)".
 */
final case class GroupPunctuation(kind: Int, scheme: KeyScheme, constants: UnsafeRow, bound: Option[Any])

/**
 * The punctuations a punctuated aggregation holds in one partition, to tell late rows
 * (user contract: a row matching a punctuation its stream sent earlier, while held), in a
 * Spark state store (versioned with the micro-batch, HDFS-backed or RocksDB):
 *
 * {{{
 *   punctuations   key: (kind INT, constants BINARY)   value: (bound BINARY, closedAt BIGINT)
 *                  key: (-kind, empty)                 value: (summary BINARY, entries BIGINT)
 * }}}
 *
 * A punctuation is held `spark.punctuated.punctuationRetention` micro-batches; one of a
 * scheme that is a range alone (`hour<=`) is held for good as its scheme's highest bound —
 * one row per scheme — so that no late row ever reopens a closed range. Every other one is
 * also remembered for good in its kind's closed-values summary ([[punctuated.join.ClosedKeys]]:
 * intervals of an integral key, or a bounded set, `spark.punctuated.lateRows.maxRemembered`
 * entries per partition and kind), so that a group once closed is never closed again (no
 * second final row) after its punctuation is released. Look-ups are cached per task: one
 * state-store get per (kind, constants) per micro-batch, one per summary.
 *
 * @param keySchema the grouping key's columns
 * @param maxRemembered entries per closed-values summary (0: none)
 */
class HeldPunctuations(
    stateInfo: StatefulOperatorStateInfo,
    partitionId: Int,
    keySchema: StructType,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    maxRemembered: Int) {

  import HeldPunctuations._

  val store: StateStore = {
    val id = StateStoreProviderId(
      StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, partitionId, StoreName),
      stateInfo.queryRunId)
    StateStore.get(id, KeySchema, ValueSchema, NoPrefixKeyStateEncoderSpec(KeySchema),
      stateInfo.storeVersion, None, None, useColumnFamilies = false, storeConf, hadoopConf)
  }

  private val keyProj = UnsafeProjection.create(Seq(
    BoundReference(0, IntegerType, nullable = false), BoundReference(1, BinaryType, nullable = false)))
  private val valueProj = UnsafeProjection.create(Seq(
    BoundReference(0, BinaryType, nullable = true), BoundReference(1, LongType, nullable = false)))
  private val constantsProjs = mutable.HashMap.empty[KeyScheme, UnsafeProjection]
  private val boundProjs = mutable.HashMap.empty[Int, UnsafeProjection]
  private val orderings = mutable.HashMap.empty[Int, Ordering[Any]]
  private val cache = mutable.HashMap.empty[(Int, Seq[Byte]), Option[(Option[Any], Long)]]

  private def constantsProj(s: KeyScheme) = constantsProjs.getOrElseUpdate(s,
    UnsafeProjection.create(s.constants.toSeq.map(p => BoundReference(p, keySchema(p).dataType, nullable = true))))
  private def boundProj(p: Int) = boundProjs.getOrElseUpdate(p,
    UnsafeProjection.create(Seq(BoundReference(0, keySchema(p).dataType, nullable = true))))
  private def ordering(p: Int) = orderings.getOrElseUpdate(p, TypeUtils.getInterpretedOrdering(keySchema(p).dataType))

  /** The punctuation of `kind` that would close the group with this key. */
  def punctuationFor(kind: Int, scheme: KeyScheme, key: InternalRow): GroupPunctuation =
    GroupPunctuation(kind, scheme, constantsProj(scheme)(key).copy(),
      scheme.range.map(p => InternalRow.copyValue(key.get(p, keySchema(p).dataType))))

  /**
   * Punctuations `ps` (a micro-batch's partition-wide ones) indexed for matching groups: per
   * scheme and constants, the greatest bound. Matching a group is then one hash look-up per
   * scheme, not a comparison with every punctuation.
   */
  def index(ps: Seq[GroupPunctuation]): PunctuationIndex = {
    val bounds = mutable.HashMap.empty[(KeyScheme, UnsafeRow), Option[Any]]
    ps.foreach { p =>
      p.scheme.range match {
        case None => bounds((p.scheme, p.constants)) = None
        case Some(r) => p.bound.foreach { b =>
          val greatest = bounds.get((p.scheme, p.constants)).flatten match {
            case Some(c) if ordering(r).gteq(c, b) => c
            case _ => b
          }
          bounds((p.scheme, p.constants)) = Some(greatest)
        }
      }
    }
    new PunctuationIndex(bounds.keys.map(_._1).toSeq.distinct, bounds)
  }

  /** [[index]]: does one of the indexed punctuations match the group with this key? */
  final class PunctuationIndex private[HeldPunctuations] (
      schemes: Seq[KeyScheme], bounds: mutable.HashMap[(KeyScheme, UnsafeRow), Option[Any]]) {
    def isEmpty: Boolean = schemes.isEmpty
    def covers(key: InternalRow): Boolean = schemes.exists { s =>
      bounds.get((s, constantsProj(s)(key))).exists { bound =>
        s.range.forall(r => !key.isNullAt(r) && bound.exists(b =>
          ordering(r).lteq(key.get(r, keySchema(r).dataType), b)))
      }
    }
  }

  /** Is this group closed by a held or remembered punctuation of `kind`? */
  def closes(kind: Int, scheme: KeyScheme, key: InternalRow): Boolean =
    held(kind, constantsProj(scheme)(key)).exists { case (bound, _) =>
      scheme.range.forall(r => !key.isNullAt(r) && bound.exists(b =>
        ordering(r).lteq(key.get(r, keySchema(r).dataType), b)))
    } || closed.covers(kind, key)

  // ---- closed values (remembered for good, compactly) ----------------------------------

  private val schemesByKind = mutable.LinkedHashMap.empty[Int, KeyScheme]
  private def summaryKey(kind: Int): UnsafeRow =
    keyProj(new GenericInternalRow(Array[Any](-kind, Array.emptyByteArray)))
  private lazy val closed = new ClosedKeysTable(schemesByKind.toSeq, keySchema, maxRemembered,
    (partitionId, stateInfo.numPartitions),
    kind => Option(store.get(summaryKey(kind))).map(_.getBinary(0)),
    (kind, bytes, entries) =>
      store.put(summaryKey(kind), valueProj(new GenericInternalRow(Array[Any](bytes, entries)))))
  private var remembered = 0L

  /** Closed-value entries remembered after the last [[releaseExpired]] (counted kinds only). */
  def numRemembered: Long = remembered

  /** Remembers the values `p` closes for good (a range alone is held for good instead). */
  def remember(p: GroupPunctuation): Unit =
    if (!(p.scheme.constants.isEmpty && p.scheme.range.isDefined)) closed.add(p.kind, p.constants, p.bound)

  /** Writes the changed summaries back (before the store commits); returns the entries forgotten. */
  def flushClosed(): Long = closed.flush()

  private def held(kind: Int, constants: UnsafeRow): Option[(Option[Any], Long)] =
    cache.getOrElseUpdate((kind, constants.getBytes.toSeq), {
      Option(store.get(storeKey(kind, constants))).map { v =>
        val bound = if (v.isNullAt(0)) None else {
          val r = new UnsafeRow(1)
          val bytes = v.getBinary(0)
          r.pointTo(bytes, bytes.length)
          Some(InternalRow.copyValue(r.get(0, schemeRangeType(kind))))
        }
        (bound, v.getLong(1))
      }
    })

  private val rangeTypes = mutable.HashMap.empty[Int, DataType]
  private def schemeRangeType(kind: Int): DataType = rangeTypes(kind)

  private def storeKey(kind: Int, constants: UnsafeRow): UnsafeRow =
    keyProj(new GenericInternalRow(Array[Any](kind, constants.getBytes)))

  /**
   * Holds `p` from micro-batch `batch` (a range one: its highest bound so far). A range
   * alone is held for good; others only with a retention.
   */
  def hold(p: GroupPunctuation, batch: Long, retention: Int): Unit = {
    val pureRange = p.scheme.constants.isEmpty && p.scheme.range.isDefined
    remember(p)
    if (retention > 0 || pureRange) {
      p.scheme.range.foreach(r => rangeTypes(p.kind) = keySchema(r).dataType)
      val current = held(p.kind, p.constants)
      val bound = (current.flatMap(_._1), p.bound, p.scheme.range) match {
        case (Some(c), Some(b), Some(r)) => Some(if (ordering(r).gteq(c, b)) c else b)
        case (c, b, _) => b.orElse(c)
      }
      val boundBytes = (bound, p.scheme.range) match {
        case (Some(b), Some(r)) => boundProj(r)(new GenericInternalRow(Array[Any](b))).getBytes
        case _ => null
      }
      store.put(storeKey(p.kind, p.constants), valueProj(new GenericInternalRow(Array[Any](boundBytes, batch))))
      cache((p.kind, p.constants.getBytes.toSeq)) = Some((bound, batch))
    }
  }

  /** Releases the punctuation of `kind` with these constants (a union's, once its key closed). */
  def release(kind: Int, constants: UnsafeRow): Unit = {
    store.remove(storeKey(kind, constants))
    cache((kind, constants.getBytes.toSeq)) = None
  }

  /**
   * Under a UNION: releases the punctuations on one value (no range) once every branch holds
   * one with the same scheme and constants — the key they name is closed for good then.
   * Ranges stay, as their highest bound.
   */
  def releaseCombined(arrived: Seq[GroupPunctuation], layout: AggregateLayout): Unit =
    arrived.filter(_.scheme.range.isEmpty).distinct.foreach { p =>
      val same = layout.closing.zipWithIndex.collect { case (s, i) if s == p.scheme => i + 1 }
      val everyBranch = layout.kindsByBranch.forall(_.exists(k => same.contains(k) && held(k, p.constants).isDefined))
      if (everyBranch) same.foreach(k => release(k, p.constants))
    }

  /** Registers each kind's scheme (the range column type is needed to read held bounds). */
  def register(kind: Int, scheme: KeyScheme): Unit = {
    scheme.range.foreach(r => rangeTypes(kind) = keySchema(r).dataType)
    schemesByKind(kind) = scheme
  }

  /**
   * Releases punctuations held `retention` micro-batches (not ranges alone) and counts what
   * stays held and the entries of the closed-values summaries ([[numRemembered]]) of the kinds
   * `counted` names (the operators count all: a partition-wide punctuation is held, and its
   * values remembered, by every partition, and each copy is state): one pass over this small
   * store per micro-batch.
   */
  def releaseExpired(batch: Long, retention: Int, pureRange: Int => Boolean, counted: Int => Boolean): Long = {
    var heldCount = 0L
    remembered = 0L
    store.iterator().map(p => (p.key.copy(), p.value.getLong(1))).toArray.foreach { case (k, value) =>
      val kind = k.getInt(0)
      if (kind < 0) { if (counted(-kind)) remembered += value } // a summary: value = its entries
      else if (!pureRange(kind) && batch - value >= retention) store.remove(k)
      else if (counted(kind)) heldCount += 1
    }
    heldCount
  }
}

object HeldPunctuations {
  val StoreName = "punctuations"
  val KeySchema: StructType = new StructType().add("kind", IntegerType, nullable = false)
    .add("constants", BinaryType, nullable = false)
  val ValueSchema: StructType = new StructType().add("bound", BinaryType, nullable = true)
    .add("closedAt", LongType, nullable = false)
}
