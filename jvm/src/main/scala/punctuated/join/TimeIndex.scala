package punctuated.join

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types._

import punctuated.state.StoreNamespace

/**
 * One join input's time state for a [[TimeBand]] in one partition, in two namespaces of the
 * join's shared store: the highest bound of the input's own range punctuations on its time
 * column (`ts<=c`: its rows at or below `c` are late, and the other input's rows whose band
 * ends at or below `c` can go), and, for an input whose rows the other input's bound purges,
 * an ordered index of its stored join keys by time *bucket*.
 *
 * A bucket is `floorDiv(t, width)`; its entry lists the distinct join keys with a stored row
 * whose time falls in it. The open buckets are kept, sorted, in the meta entry. A bound `c` of
 * the other input purges rows with `t <= T` (`T = c - reach`): the buckets up to `floorDiv(T,
 * width)` are read (one get each, never the whole state), their keys' rows read, and those with
 * `t <= T` removed; a key stays in the last bucket only while it has a row there above `T`.
 * The width is the band's width (at least one second for timestamps), fixed in the checkpoint
 * at the first batch, so a purge reads about one band's worth of keys beyond what it removes.
 * (Tucker 2005, purge invariants: the index turns the punctuation's range pattern on time into
 * the stored tuples it matches, as [[RangeIndex]] does for ranges on join keys.)
 *
 * {{{
 *   namespace 1000 + 2n      key (0)              value (bound BIGINT?, width BIGINT, buckets ARRAY<BIGINT>)
 *   namespace 1001 + 2n      key (bucket BIGINT)  value (keys ARRAY<BINARY>)  join keys as UnsafeRow bytes
 * }}}
 *
 * A key a key punctuation purged stays listed until its bucket closes (its look-up then finds
 * no row). Entries are read at most once per task and written back once by [[flush]].
 *
 * @param meta      the meta namespace
 * @param buckets   the bucket namespace (None: the input's rows are not purged by time)
 * @param keyLength join-key columns
 * @param defaultWidth bucket width for a checkpoint that has none yet
 */
final class TimeIndex(meta: StoreNamespace, buckets: Option[StoreNamespace], keyLength: Int,
    defaultWidth: Long) {
  import TimeIndex._

  // (the projections are generated when first used: a task opens an index per input, and
  // most batches write few of its entries)
  private val metaKey = StoreNamespace.intRow(0)
  private lazy val metaProj = UnsafeProjection.create(MetaValueSchema)
  private lazy val bucketKeyProj = UnsafeProjection.create(BucketKeySchema)
  private lazy val bucketValueProj = UnsafeProjection.create(BucketValueSchema)

  private var loaded = false
  private var ownBound: Option[Long] = None
  private var width: Long = defaultWidth
  private val open = mutable.TreeSet.empty[Long]
  private var metaDirty = false

  private def load(): Unit = if (!loaded) {
    loaded = true
    Option(meta.get(metaKey)).foreach { v =>
      ownBound = if (v.isNullAt(0)) None else Some(v.getLong(0))
      width = v.getLong(1)
      val a = v.getArray(2)
      for (i <- 0 until a.numElements()) open += a.getLong(i)
    }
    if (width <= 0) width = 1
  }

  /** The input's highest punctuated time bound so far (as of the last flush or this task's raise). */
  def bound: Option[Long] = { load(); ownBound }

  /** Raises the input's own bound to `c`; returns whether it rose. */
  def raise(c: Long): Boolean = {
    load()
    if (ownBound.exists(_ >= c)) false else { ownBound = Some(c); metaDirty = true; true }
  }

  private final class Bucket(val keys: mutable.HashSet[UnsafeRow], var dirty: Boolean)
  private val touched = mutable.HashMap.empty[Long, Bucket]

  private def bucketKey(b: Long) = bucketKeyProj(new GenericInternalRow(Array[Any](b))).copy()

  private def bucket(b: Long): Bucket = touched.getOrElseUpdate(b, {
    val keys = mutable.HashSet.empty[UnsafeRow]
    buckets.flatMap(ns => Option(ns.get(bucketKey(b)))).foreach { v =>
      val a = v.getArray(0)
      for (i <- 0 until a.numElements()) {
        val bytes = a.getBinary(i)
        val k = new UnsafeRow(keyLength)
        k.pointTo(bytes, bytes.length)
        keys += k
      }
    }
    new Bucket(keys, dirty = false)
  })

  def bucketOf(t: Long): Long = Math.floorDiv(t, { load(); width })

  /** A row with join key `key` and time `t` was stored. */
  def add(key: UnsafeRow, t: Long): Unit = {
    val b = bucketOf(t)
    val bk = bucket(b)
    if (!bk.keys.contains(key)) { bk.keys += key.copy(); bk.dirty = true }
    if (open.add(b)) metaDirty = true
  }

  /**
   * The stored join keys that may have rows with time `<= upTo`, and the buckets they were
   * read from (to be settled by [[settle]] once the rows are purged).
   */
  def keysUpTo(upTo: Long): (Array[UnsafeRow], Seq[Long]) = {
    load()
    val last = bucketOf(upTo)
    val bs = open.rangeTo(last).toSeq
    (bs.flatMap(b => bucket(b).keys).distinct.toArray, bs)
  }

  /**
   * After a purge up to `upTo` over `bs`: the buckets below the last are dropped; the last
   * one keeps the keys that `stillThere(key, bucket)` says still have a row in it.
   */
  def settle(upTo: Long, bs: Seq[Long], stillThere: (UnsafeRow, Long) => Boolean): Unit = {
    val last = bucketOf(upTo)
    bs.foreach { b =>
      val bk = bucket(b)
      val before = bk.keys.size
      if (b < last) bk.keys.clear()
      else bk.keys.filterInPlace(k => stillThere(k, b))
      if (bk.keys.size != before) bk.dirty = true
      if (bk.keys.isEmpty && open.remove(b)) metaDirty = true
    }
  }

  /** Open buckets' key entries in this partition, as of this task (for tests and metrics). */
  def numOpenBuckets: Int = { load(); open.size }

  /** Writes what this task changed back to the store (before it commits). */
  def flush(): Unit = {
    for ((b, bk) <- touched if bk.dirty) buckets.foreach { ns =>
      if (bk.keys.isEmpty) ns.remove(bucketKey(b))
      else ns.put(bucketKey(b), bucketValueProj(new GenericInternalRow(Array[Any](
        new GenericArrayData(bk.keys.iterator.map(_.getBytes).toArray[Any])))))
      bk.dirty = false
    }
    if (metaDirty) {
      meta.put(metaKey, metaProj(new GenericInternalRow(Array[Any](
        ownBound.map(Long.box).orNull, width, new GenericArrayData(open.toArray[Any])))).copy())
      metaDirty = false
    }
  }
}

object TimeIndex {
  val MetaKeySchema: StructType = new StructType().add("meta", IntegerType, nullable = false)
  val MetaValueSchema: StructType = new StructType().add("bound", LongType, nullable = true)
    .add("width", LongType, nullable = false).add("buckets", ArrayType(LongType, containsNull = false), nullable = false)
  val BucketKeySchema: StructType = new StructType().add("bucket", LongType, nullable = false)
  val BucketValueSchema: StructType =
    new StructType().add("keys", ArrayType(BinaryType, containsNull = false), nullable = false)

  /** The namespaces of input `number`'s time state (after every namespace of [[JoinInputLayout]]). */
  def metaNamespace(number: Int): Int = 1000 + 2 * number
  def bucketNamespace(number: Int): Int = 1001 + 2 * number

  /** The bucket width for a band: its width in the column's unit, at least one second for timestamps. */
  def widthFor(band: TimeBand): Long = {
    val unit = band.dataType match {
      case TimestampType | TimestampNTZType => 1000000L
      case _ => 1L
    }
    val span = (band.reach(0).toSeq ++ band.reach(1)).map(Math.abs).sum
    Math.max(unit, span)
  }
}
