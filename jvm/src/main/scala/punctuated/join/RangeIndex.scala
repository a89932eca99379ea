package punctuated.join

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.util.{GenericArrayData, TypeUtils}
import org.apache.spark.sql.types._

import punctuated.input.KeyScheme
import punctuated.state.{RangeBounds, StoreNamespace}

/**
 * Index of one join input's stored join keys for the other input's punctuations that do not
 * fix a whole key: ranges (`c, k<=`: "no more rows with c = 5 and k <= 17") and key prefixes
 * (`c` over key `(c, k)`). With it such a punctuation purges by look-ups, never by a pass
 * over every stored row.
 *
 * The purge needs the stored rows a punctuation matches (Tucker 2005, purge invariants of
 * symmetric hash join: a punctuation of one input finds the tuples of the other input's hash
 * table that can no longer join; Tucker et al. 2003, §5.4, keep invariants: keep only tuples
 * no punctuation of the opposite input matches). A range pattern matches many join keys
 * (ibid. §3, range patterns), and a hash table can only look up one key: the index turns the
 * pattern into the keys it matches. The rows store is
 * prefix-scannable by the whole join key only, so the index lists, per scheme of the other
 * input and per values of the scheme's constant attributes (a "slot"), the distinct join keys
 * stored under them. A punctuation reads its one slot, keeps the keys whose range value is
 * `<=` its bound (all of them, for a prefix scheme), and the caller prefix-scans and removes
 * each of those keys. Unrelated keys (other constants) are never read; keys of the same slot
 * above the bound are read as index entries only, never as rows. Works for any ordered type
 * of the range attribute.
 *
 * {{{
 *   an input's range-index namespace of the shared store ([[StoreNamespace]]):
 *                   key:   (scheme INT, constants BINARY)   as the held punctuations
 *                   value: (keys ARRAY<BINARY>)             the distinct stored join keys,
 *                                                           as UnsafeRow bytes
 * }}}
 *
 * The index is exact at every commit: a key is listed in every slot it belongs to while the
 * input stores at least one row with it (a key a semi join's first match may have emptied is
 * checked at commit, see [[JoinInputState.removeRow]]). Slots are read at most once per task (on first use) into memory,
 * changed there as rows are stored and keys purged, and written back once, by [[flush]],
 * before the store commits: one get and at most one put per slot touched in a micro-batch.
 * A slot's size is the number of open keys sharing its constants; a scheme without
 * constants (`day<=` over key `day`) has one slot per partition.
 *
 * The number of entries (a key listed in a slot is one entry; a key is listed once per
 * indexed scheme) is kept in a namespace of its own ([[JoinInputLayout.indexEntries]]), one
 * count per input, changed by [[flush]] by what the task changed in its slots: the
 * `numRangeIndexEntries` metric never reads the index. A checkpoint written before the count
 * existed is counted once, by one pass over the index, in the first micro-batch after it.
 *
 * @param store     the index namespace (key [[JoinInputState.PunctKeySchema]], value [[RangeIndex.ValueSchema]])
 * @param counts    the namespace of the entry count (key [[RangeIndex.CountKeySchema]],
 *                  value [[RangeIndex.CountValueSchema]])
 * @param keySchema types of the join key
 * @param schemes   the other input's schemes that do not fix the whole key
 */
class RangeIndex(store: StoreNamespace, counts: StoreNamespace, keySchema: StructType,
    val schemes: Seq[KeyScheme]) {
  import RangeIndex._

  private val keyLength = keySchema.length

  // generated when first used (see StoreNamespace)
  private lazy val constantsProjs: Map[KeyScheme, UnsafeProjection] = schemes.map { s =>
    s -> UnsafeProjection.create(s.constants.toSeq.map(p => BoundReference(p, keySchema(p).dataType, nullable = true)))
  }.toMap
  /** How each range scheme's bounds compare with keys ([[RangeBounds]]: a value, or a region of several). */
  private val bounds: Map[KeyScheme, RangeBounds] = schemes.filter(_.hasRange).map { s =>
    s -> RangeBounds(s, keySchema)
  }.toMap
  private lazy val slotKeyProj = UnsafeProjection.create(Seq(
    BoundReference(0, IntegerType, nullable = false), BoundReference(1, BinaryType, nullable = false)))
  private lazy val valueProj = UnsafeProjection.create(ValueSchema)

  /** A slot's keys as read (or last changed) in this task, and how many it had when written last. */
  private final class Slot(val keys: mutable.HashSet[UnsafeRow], var dirty: Boolean, var written: Int)

  /** Slots used in this task, by their store key. */
  private val slots = mutable.HashMap.empty[UnsafeRow, Slot]

  private def slotKey(scheme: KeyScheme, constants: UnsafeRow): UnsafeRow =
    slotKeyProj(new GenericInternalRow(Array[Any](scheme.id, constants.getBytes))).copy()

  private def slot(scheme: KeyScheme, constants: UnsafeRow): Slot = {
    val k = slotKey(scheme, constants)
    slots.getOrElseUpdate(k, {
      val keys = mutable.HashSet.empty[UnsafeRow]
      Option(store.get(k)).foreach { v =>
        val array = v.getArray(0)
        for (i <- 0 until array.numElements()) {
          val bytes = array.getBinary(i)
          val key = new UnsafeRow(keyLength)
          key.pointTo(bytes, bytes.length)
          keys += key
        }
      }
      new Slot(keys, dirty = false, written = keys.size)
    })
  }

  private def slotOf(scheme: KeyScheme, key: UnsafeRow): Slot = slot(scheme, constantsProjs(scheme)(key))

  /** Keys known to be listed in their slots (added in this task): later rows skip the slots. */
  private val listed = mutable.HashSet.empty[UnsafeRow]

  /** A row with this join key was stored. */
  def add(key: UnsafeRow): Unit = if (!listed.contains(key)) {
    val copy = key.copy()
    listed += copy
    schemes.foreach { s =>
      val sl = slotOf(s, copy)
      if (sl.keys.add(copy)) sl.dirty = true
    }
  }

  /** The input stores no more rows with this join key. */
  def remove(key: UnsafeRow): Unit = {
    listed -= key
    schemes.foreach { s =>
      val sl = slotOf(s, key)
      if (sl.keys.remove(key)) sl.dirty = true
    }
  }

  /**
   * The stored join keys punctuation `p` (of one of [[schemes]]) covers: the keys of its slot
   * whose range value is at most its bound (every key of the slot, for a prefix scheme) and,
   * given `above` (the bound an earlier punctuation of the slot already covered), beyond it:
   * the keys the new bound covers that the earlier one did not.
   *
   * {{{
   *   slot keys with range values 3, 5, 8:  keysCoveredBy(t <= 6)                 -> 3, 5
   *                                         keysCoveredBy(t <= 9, above = Some(6)) -> 8
   * }}}
   */
  def keysCoveredBy(p: KeyPunctuation, above: Option[Any] = None): Array[UnsafeRow] = {
    require(schemes.contains(p.scheme), s"${p.scheme} is not indexed")
    val keys = slot(p.scheme, p.constants).keys
    p.bound.filter(_ => p.scheme.hasRange) match {
      case Some(bound) =>
        val b = bounds(p.scheme)
        keys.iterator.filter(k => b.coversKey(bound, k) && above.forall(a => !b.coversKey(a, k))).toArray
      case _ => keys.toArray
    }
  }

  private val countKey = StoreNamespace.intRow(0)
  private lazy val countValueProj = UnsafeProjection.create(CountValueSchema)

  /**
   * Entries of the index as of the last [[flush]] (or as committed, before any): read once per
   * task; counted by one pass over the index only if the checkpoint has no count yet.
   */
  private lazy val committedEntries: (Long, Boolean) = Option(counts.get(countKey)) match {
    case Some(v) => (v.getLong(0), true)
    case None => (store.iterator().map(_.value.getArray(0).numElements().toLong).sum, false)
  }
  private var change = 0L

  /** Entries of the index (each listed key once per scheme), including this task's changes. */
  def numEntries: Long = committedEntries._1 + change + slots.valuesIterator.filter(_.dirty)
    .map(sl => (sl.keys.size - sl.written).toLong).sum

  /** Writes the slots changed in this task, and the entry count, back to the store (before it commits). */
  def flush(): Unit = {
    val before = numEntries
    for ((k, sl) <- slots if sl.dirty) {
      if (sl.keys.isEmpty) store.remove(k)
      else {
        val bytes: Array[Any] = sl.keys.iterator.map(_.getBytes).toArray
        store.put(k, valueProj(new GenericInternalRow(Array[Any](new GenericArrayData(bytes)))))
      }
      change += sl.keys.size - sl.written
      sl.written = sl.keys.size
      sl.dirty = false
    }
    if (change != 0 || !committedEntries._2) {
      counts.put(countKey, countValueProj(new GenericInternalRow(Array[Any](before))))
    }
  }
}

object RangeIndex {
  val ValueSchema: StructType =
    new StructType().add("keys", ArrayType(BinaryType, containsNull = false), nullable = false)
  /** The entry count's key: a constant (one count per input's index). */
  val CountKeySchema: StructType = new StructType().add("count", IntegerType, nullable = false)
  val CountValueSchema: StructType = new StructType().add("entries", LongType, nullable = false)

  /** The schemes of the other input an input's stored keys must be indexed for. */
  def indexedSchemes(otherSchemes: Seq[KeyScheme], keyLength: Int): Seq[KeyScheme] =
    otherSchemes.filterNot(_.isWholeKey(keyLength)).distinct
}
