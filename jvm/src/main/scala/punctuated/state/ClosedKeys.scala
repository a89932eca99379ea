package punctuated.state

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.hash.Murmur3_x86_32

import punctuated.input.KeyScheme
import punctuated.model.{BoundOps, ClosedIntervals, ClosedSet}

/**
 * The values one stream closed for one [[KeyScheme]] of a punctuated operator's key (a join
 * key, grouping columns, a deduplication key), remembered after its punctuations are released
 * so that late rows are still recognised ([[punctuated.model.ClosedValues]]):
 *
 * {{{
 *   scheme on one integral key column (auction, id ...)   -> ClosedIntervals of its values
 *   any other scheme                                        -> ClosedSet: constants -> highest bound
 * }}}
 *
 * For a scheme on a whole single-column key, the operator's rows are hash-partitioned by that
 * key (as Spark's `HashPartitioning`: Murmur3 hash, seed 42, modulo the partitions), so a
 * partition only ever sees the values that hash to it: a gap of values all hashing elsewhere
 * is bridged, and sequential ids stay one interval per partition. A covered value that hashes
 * elsewhere (it reached this partition after all) is never reported covered.
 *
 * @param scheme     the scheme, over positions of `keySchema`
 * @param keySchema  the operator's key
 * @param limit      entries kept at most (`spark.punctuated.lateRows.maxRemembered`)
 * @param partition  (this partition, number of partitions) of the operator's state
 * @param stored     the summary as stored by [[toBytes]], if any
 */
final class ClosedKeys(
    scheme: KeyScheme,
    keySchema: StructType,
    limit: Int,
    partition: (Int, Int),
    stored: Option[Array[Byte]]) {

  // generated on first look-up: an empty summary (a range scheme's, always) needs none
  private lazy val constantsProj = UnsafeProjection.create(
    scheme.constants.toSeq.map(p => BoundReference(p, keySchema(p).dataType, nullable = true)))
  private val integral: Option[DataType] =
    if (!scheme.hasRange && scheme.constants.length == 1) {
      Some(keySchema(scheme.constants(0)).dataType).filter(ClosedKeys.isIntegral)
    } else None
  private val bounds: Option[RangeBounds] = if (scheme.hasRange) Some(RangeBounds(scheme, keySchema)) else None

  private val intervals: Option[ClosedIntervals] = integral.map { t =>
    val (partitionId, numPartitions) = partition
    if (scheme.isWholeKey(keySchema.length) && numPartitions > 1) {
      val foreign = (v: Long) => ClosedKeys.partitionOf(v, t, numPartitions) != partitionId
      new ClosedIntervals(limit, foreign, maxGap = ClosedKeys.GapsPerPartition * numPartitions)
    } else new ClosedIntervals(limit)
  }
  private val set: Option[ClosedSet[UnsafeRow, Any]] =
    if (integral.isDefined) None
    else Some(new ClosedSet[UnsafeRow, Any](limit, bounds.getOrElse(BoundOps.ordered(ClosedKeys.NoOrdering))))

  private var changed = false

  stored.foreach(load)

  /** Entries remembered. */
  def size: Int = intervals.map(_.size).getOrElse(set.get.size)

  /** Entries forgotten by this instance to stay within the limit. */
  def forgotten: Long = intervals.map(_.forgotten).getOrElse(set.get.forgotten)

  /** Was anything added since it was read? */
  def dirty: Boolean = changed

  /** Is every row with this key (the operator's whole key) closed? */
  def covers(key: InternalRow): Boolean = {
    val constants = constantsProj(key)
    intervals match {
      case Some(i) => !constants.isNullAt(0) && i.covers(ClosedKeys.toLong(constants, integral.get))
      case None =>
        val value = bounds.map(_.peek(key))   // a look-up: nothing kept
        !value.contains(null) && set.get.covers(constants, value)
    }
  }

  /** Does the summary cover the punctuation with these constants (and range bound)? */
  def coversPunctuation(constants: UnsafeRow, bound: Option[Any]): Boolean = intervals match {
    case Some(i) => !constants.isNullAt(0) && i.covers(ClosedKeys.toLong(constants, integral.get))
    case None => set.get.includes(constants, bound)
  }

  /** Closes the values of a punctuation: these constants (up to this bound). */
  def add(constants: UnsafeRow, bound: Option[Any]): Unit = {
    val added = intervals match {
      case Some(i) => !constants.isNullAt(0) && i.add(ClosedKeys.toLong(constants, integral.get))
      case None => set.get.add(constants.copy(), bound.map(InternalRow.copyValue))
    }
    changed ||= added
  }

  /** The summary as stored (see [[ClosedKeys]]'s constructor). */
  def toBytes: Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    intervals match {
      case Some(i) =>
        out.writeByte(ClosedKeys.IntervalsTag)
        val entries = i.entries
        out.writeInt(entries.size)
        entries.foreach { case (lo, hi) => out.writeLong(lo); out.writeLong(hi) }
      case None =>
        out.writeByte(ClosedKeys.SetTag)
        val entries = set.get.entries
        out.writeInt(entries.size)
        entries.foreach { case (constants, bound) =>
          writeBytes(out, constants.getBytes)
          bound match {
            case Some(b) =>
              out.writeBoolean(true)
              writeBytes(out, bounds.get.toBytes(b))
            case None => out.writeBoolean(false)
          }
        }
    }
    out.flush()
    bytes.toByteArray
  }

  private def writeBytes(out: DataOutputStream, b: Array[Byte]): Unit = { out.writeInt(b.length); out.write(b) }

  private def readBytes(in: DataInputStream): Array[Byte] = {
    val b = new Array[Byte](in.readInt())
    in.readFully(b)
    b
  }

  private def load(bytes: Array[Byte]): Unit = {
    val in = new DataInputStream(new ByteArrayInputStream(bytes))
    in.readByte() match {
      case ClosedKeys.IntervalsTag if intervals.isDefined =>
        val n = in.readInt()
        intervals.get.load((0 until n).map(_ => (in.readLong(), in.readLong())))
      case ClosedKeys.SetTag if set.isDefined =>
        val n = in.readInt()
        set.get.load((0 until n).map { _ =>
          val constants = new UnsafeRow(scheme.constants.length)
          val cb = readBytes(in)
          constants.pointTo(cb, cb.length)
          val bound = if (!in.readBoolean()) None else Option(bounds.get.fromBytes(readBytes(in)))
          (constants, bound)
        })
      case tag => throw new IllegalStateException(
        s"closed values of $scheme stored as $tag do not fit the key $keySchema: the key's types " +
          "changed since the checkpoint was written; start the query from a new checkpoint")
    }
  }
}

object ClosedKeys {
  private val IntervalsTag: Byte = 1
  private val SetTag: Byte = 2

  /** Gaps of at most this many values per partition are checked for values hashing elsewhere. */
  val GapsPerPartition = 16L

  /** Types whose values are whole numbers, so that closed values merge into intervals. */
  def isIntegral(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  private def toLong(row: UnsafeRow, t: DataType): Long = t match {
    case ByteType => row.getByte(0).toLong
    case ShortType => row.getShort(0).toLong
    case IntegerType | DateType => row.getInt(0).toLong
    case _ => row.getLong(0)
  }

  /**
   * The partition Spark's `HashPartitioning` on this one column gives value `v`: its Murmur3
   * hash (seed 42; bytes, shorts, ints and dates hashed as ints, the others as longs) modulo
   * the partitions, as `Pmod(Murmur3Hash(column), numPartitions)` — without boxing, as gaps
   * are checked value by value.
   */
  def partitionOf(v: Long, t: DataType, numPartitions: Int): Int = {
    val hash = t match {
      case ByteType | ShortType | IntegerType | DateType => Murmur3_x86_32.hashInt(v.toInt, 42)
      case _ => Murmur3_x86_32.hashLong(v, 42)
    }
    val mod = hash % numPartitions
    if (mod < 0) mod + numPartitions else mod
  }

  /** A scheme without a range compares no bounds. */
  private object NoOrdering extends Ordering[Any] {
    override def compare(x: Any, y: Any): Int = 0
  }
}

/**
 * A task's closed-value summaries of one operator input, one per scheme: each read from the
 * operator's state store on first use (one get), kept in memory for the task's look-ups, and
 * written back once, by [[flush]], before the store commits — never a store access per row.
 *
 * @param schemes   summary id -> its scheme (a join: the scheme's id; an aggregation: the kind)
 * @param keySchema the operator's key
 * @param limit     entries kept per summary (0: nothing is remembered)
 * @param partition (this partition, number of partitions)
 * @param read      the stored summary with this id, if any
 * @param write     stores a summary: (id, bytes, entries)
 */
final class ClosedKeysTable(
    schemes: Seq[(Int, KeyScheme)],
    keySchema: StructType,
    limit: Int,
    partition: (Int, Int),
    read: Int => Option[Array[Byte]],
    write: (Int, Array[Byte], Long) => Unit) {

  private val loaded = mutable.HashMap.empty[Int, ClosedKeys]
  private val byId = schemes.toMap
  private var dropped = 0L

  def apply(id: Int): ClosedKeys =
    loaded.getOrElseUpdate(id, new ClosedKeys(byId(id), keySchema, limit, partition, read(id)))

  /** Is the whole key closed by the summary `id`? */
  def covers(id: Int, key: InternalRow): Boolean = limit > 0 && byId.contains(id) && apply(id).covers(key)

  /**
   * [[covers]] for summary `id` as a function, a snapshot until the next [[add]]: nothing
   * remembered (none kept, or the summary empty) covers nothing, with no look-up per key.
   */
  def coverer(id: Int): InternalRow => Boolean =
    if (limit <= 0 || !byId.contains(id) || apply(id).size == 0) HeldPunctuationTable.Never
    else { val c = apply(id); key => c.covers(key) }

  /** Does summary `id` cover this punctuation? */
  def coversPunctuation(id: Int, constants: UnsafeRow, bound: Option[Any]): Boolean =
    limit > 0 && byId.contains(id) && apply(id).coversPunctuation(constants, bound)

  /** Remembers a punctuation in summary `id`. */
  def add(id: Int, constants: UnsafeRow, bound: Option[Any]): Unit =
    if (limit > 0 && byId.contains(id)) apply(id).add(constants, bound)

  /** Writes the changed summaries back; returns the entries forgotten in this task. */
  def flush(): Long = {
    loaded.foreach { case (id, c) =>
      if (c.dirty) write(id, c.toBytes, c.size.toLong)
      dropped += c.forgotten
    }
    loaded.clear()
    val forgotten = dropped
    dropped = 0L
    forgotten
  }
}
