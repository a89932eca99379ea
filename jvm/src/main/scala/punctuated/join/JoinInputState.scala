package punctuated.join

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, JoinedRow, Literal, UnsafeProjection, UnsafeRow}
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

import punctuated.input.KeyScheme
import punctuated.state.{ClosedKeys, ClosedSummaries, HeldPunctuationTable, StoreNamespace}

/**
 * A punctuation of one join input restricted to the join key: "no more rows of this input
 * whose key has these constants (and a range value <= bound)".
 *
 * @param scheme    its key scheme
 * @param constants the constant key values, as an UnsafeRow over `scheme.constants`
 * @param bound     the range value (Catalyst internal value), for a scheme with a range
 */
final case class KeyPunctuation(scheme: KeyScheme, constants: UnsafeRow, bound: Option[Any])

/**
 * The state of one input of [[PunctuatedSymmetricHashJoinExec]] in one partition: its
 * stored rows in a Spark state store of its own, its held punctuations and range index in
 * namespaces of the store both inputs share ([[StoreNamespace]]): fault tolerant, versioned
 * with the micro-batch, HDFS-backed or RocksDB.
 *
 * {{{
 *   <input>-punctuated-rows  key: (join key..., seq BIGINT)   seq: 0 .. n-1 over the key's n rows
 *                            value: (input columns..., matched BOOLEAN)
 *   punctuated-meta, this input's namespaces ([[StoreNamespace]]):
 *     held whole-key punctuations   key: (scheme INT, constants BINARY)
 *                                   value: (bound BINARY, closedAtBatch BIGINT)
 *     held partition-wide ones      the same, for punctuations that do not fix the whole key
 *                                   (a prefix of it, or a range): they concern every
 *                                   partition, so every partition holds a copy (each
 *                                   copy is counted in `numPunctuationsHeld`)
 *     range index                   the stored join keys by the other input's range and
 *                                   prefix schemes ([[RangeIndex]])
 *     closed values                 per scheme, what this input closed, remembered compactly
 *                                   after its punctuations are released ([[ClosedKeys]]): a
 *                                   row it covers is late, and no row of the other input with
 *                                   a key it covers is stored
 * }}}
 *
 * The held punctuations and closed values are the [[HeldPunctuationTable]] every punctuated
 * operator keeps (over this input's namespaces); this class adds the join's own rows store,
 * range index and cover cache.
 *
 * The shared store is opened only when an input holds punctuations or is indexed: each
 * store costs files at every micro-batch's commit.
 *
 * Every access is a point look-up on one join key: finding a key's rows (its n rows under
 * slots 0 .. n-1, n found by O(log n) look-ups once per key and task), purging a closed key,
 * and asking whether a key is covered by held punctuations (one look-up per key scheme,
 * cached per task). A punctuation that does not fix the whole key (a prefix of it, or a
 * range) finds the keys it closes in the [[RangeIndex]] (one slot look-up) and purges each
 * by its rows' look-ups: no access reads the whole store.
 *
 * The rows store needs no count per key (Spark's own join keeps one in a store of its own,
 * `keyToNumValues`) and no prefix scan (the HDFS-backed provider answers a prefix scan from
 * a second in-memory map, prefix -> set of keys): per stored row it holds one entry, the
 * row's key and value, and nothing per join key. For example, a key with 3 rows:
 * {{{
 *   (k0 = 7, seq = 0) -> (row 1 ..., matched = true)
 *   (k0 = 7, seq = 1) -> (row 2 ..., matched = false)
 *   (k0 = 7, seq = 2) -> (row 3 ..., matched = false)
 * }}}
 *
 * @param number        the input's number (0: left, 1: right): where its state lives
 *                      ([[JoinInputLayout.of]])
 * @param meta          the store both inputs share ([[StoreNamespace.StoreName]]), if opened
 * @param keySchema     types of the join key
 * @param inputSchema   the input's columns
 * @param keySchemes    the input's key schemes (for `covers`)
 * @param indexSchemes  the other input's schemes that do not fix the whole key: the stored
 *                      keys are indexed for them (see [[RangeIndex.indexedSchemes]])
 * @param maxRemembered closed values remembered per scheme (`spark.punctuated.lateRows.maxRemembered`)
 */
class JoinInputState(
    number: Int,
    meta: Option[StateStore],
    stateInfo: StatefulOperatorStateInfo,
    partitionId: Int,
    keySchema: StructType,
    inputSchema: StructType,
    keySchemes: Seq[KeyScheme],
    indexSchemes: Seq[KeyScheme],
    maxRemembered: Int,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration) {

  import JoinInputState._

  private val keyLength = keySchema.length
  private val rowKeySchema = keySchema.add(SeqColumn, LongType, nullable = false)
  val valueSchema: StructType = inputSchema.add(MatchedColumn, BooleanType, nullable = false)

  private val layout = JoinInputLayout.of(number)
  private val rows = open(layout.rowsStore, rowKeySchema, valueSchema, NoPrefixKeyStateEncoderSpec(rowKeySchema))
  private def namespace(id: Int, valueFields: Int) = Some(StoreNamespace(
    meta.getOrElse(throw new IllegalStateException(s"input $number: the shared store is not open")),
    id, PunctKeySchema.length, valueFields))
  private val index =
    if (indexSchemes.isEmpty) None
    else namespace(layout.rangeIndex, RangeIndex.ValueSchema.length).map(new RangeIndex(_,
      StoreNamespace(meta.get, layout.indexEntries, RangeIndex.CountKeySchema.length,
        RangeIndex.CountValueSchema.length), keySchema, indexSchemes))

  private def open(name: String, key: StructType, value: StructType, spec: KeyStateEncoderSpec) =
    JoinInputState.open(stateInfo, partitionId, name, key, value, spec, storeConf, hadoopConf)

  // ---- stored rows -------------------------------------------------------------------
  //
  // A join key's n rows are stored under (key, 0) ... (key, n - 1): dense, so that n is found
  // by point look-ups (a doubling probe, then a binary search: O(log n) look-ups, once per key
  // and task) and needs no entry of its own, and the store needs no prefix scan (the
  // HDFS-backed provider's prefix-scannable map keeps a second map, join key -> set of store
  // keys, which costs more memory per row than a count per key). Within a task `slots` knows
  // each key it touched; rows a left semi join removes leave holes that `prepareCommit` fills
  // with the key's last rows, so every committed version is dense again.

  private val rowKeyProj = UnsafeProjection.create(
    (0 until keyLength).map(i => BoundReference(i, keySchema(i).dataType, nullable = true)) :+
      BoundReference(keyLength, LongType, nullable = false))
  private val slotRow = new GenericInternalRow(1)
  private val joinedKey = new JoinedRow

  /** The store key of slot `slot` of join key `key` (a reused row: copy to keep). */
  private def storeKeyOf(key: UnsafeRow, slot: Long): UnsafeRow = {
    slotRow.setLong(0, slot)
    rowKeyProj(joinedKey(key, slotRow))
  }

  /** Slots in use per join key touched in this task (holes included, see `holes`). */
  private val slots = mutable.HashMap.empty[UnsafeRow, Long]
  /** Slots emptied in this task by [[removeRow]], per join key: filled at commit. */
  private val holes = mutable.HashMap.empty[UnsafeRow, mutable.TreeSet[Long]]

  private def stored(key: UnsafeRow, slot: Long): Boolean = rows.get(storeKeyOf(key, slot)) != null

  /** The number of slots of `key`: from this task's count, else probed in the dense committed rows. */
  private def slotsOf(key: UnsafeRow): Long = slots.get(key) match {
    case Some(n) => n
    case None =>
      val n = if (!stored(key, 0)) 0L else {
        var lo = 0L // stored
        var hi = 1L
        while (stored(key, hi)) { lo = hi; hi *= 2 }
        while (hi - lo > 1) { val mid = lo + (hi - lo) / 2; if (stored(key, mid)) lo = mid else hi = mid }
        hi
      }
      slots(key.copy()) = n
      n
  }

  /** Converts an input row to the stored layout (`matched` appended). */
  private val toValue = UnsafeProjection.create(
    inputSchema.fields.indices.map(i => BoundReference(i, inputSchema(i).dataType, nullable = true)) :+
      BoundReference(inputSchema.length, BooleanType, nullable = false))
  private val matchedRow = new GenericInternalRow(1)
  private val joinedValue = new JoinedRow

  def valueOf(row: InternalRow, matched: Boolean): UnsafeRow = {
    matchedRow.setBoolean(0, matched)
    toValue(joinedValue(row, matchedRow))
  }

  /**
   * Rows stored under this join key, as (store key, value) pairs: the pair and its rows are
   * reused by the next element (copy to keep).
   */
  def rowsWithKey(key: UnsafeRow): Iterator[UnsafeRowPair] = {
    val pair = new UnsafeRowPair()
    (0L until slotsOf(key)).iterator.flatMap { slot =>
      val storeKey = storeKeyOf(key, slot)
      val value = rows.get(storeKey)
      if (value == null) None else Some(pair.withRows(storeKey, value))
    }
  }

  /**
   * Stores `value` as the next row of `key` (`seq`, the row's arrival number, is not stored:
   * a row's slot is its place among its key's rows); returns the slot.
   */
  def append(key: UnsafeRow, seq: Long, value: UnsafeRow): Long = {
    val n = slotsOf(key)
    rows.put(storeKeyOf(key, n), value)
    slots(key) = n + 1
    index.foreach(_.add(key))
    delta += 1
    n
  }

  private var delta = 0L

  /** Stored rows added minus rows removed in this task (for load shedding's row count). */
  def rowDelta: Long = delta

  private lazy val joinKeyOfStoreKey = UnsafeProjection.create(
    (0 until keyLength).map(i => BoundReference(i, keySchema(i).dataType, nullable = true)))

  /**
   * Every stored row, as (join key, slot, store key, value): rows reused by the next element
   * (copy to keep). A scan of the whole rows store: only for load shedding, in a batch where
   * the join holds more rows than its budget ([[punctuated.join.shedding.JoinShedder]]).
   */
  def storedRows(): Iterator[(UnsafeRow, Long, UnsafeRow, UnsafeRow)] = rows.iterator().map { p =>
    (joinKeyOfStoreKey(p.key), p.key.getLong(keyLength), p.key, p.value)
  }

  def update(storeKey: UnsafeRow, value: UnsafeRow): Unit = rows.put(storeKey, value)

  /** Removes one stored row (`storeKey`) with join key `key` (a semi join's first match, a row shed). */
  def removeRow(storeKey: UnsafeRow, key: UnsafeRow): Unit = {
    // the key's row count first: probed in the committed rows, it needs them dense (a row shed
    // from a key no row of the batch touched would otherwise hide the rows after it)
    slotsOf(key)
    rows.remove(storeKey)
    delta -= 1
    holes.getOrElseUpdate(key.copy(), mutable.TreeSet.empty[Long]) += storeKey.getLong(keyLength)
  }

  private var scanned = 0L

  /**
   * Stored rows read by purges in this task: the rows of the keys they closed, and one per
   * key a semi join's match removed a row from but left others (moved into the holes at
   * commit). Never the whole store.
   */
  def rowsScanned: Long = scanned

  /** Removes every stored row with this join key; returns their values. */
  def purgeKey(key: UnsafeRow): Array[UnsafeRow] = {
    val removed = rowsWithKey(key).map(e => (e.key.copy(), e.value.copy())).toArray
    scanned += removed.length
    removed.foreach { case (k, _) => rows.remove(k) }
    delta -= removed.length
    slots(key.copy()) = 0L
    val holed = holes.remove(key).isDefined
    // the index lists exactly the keys with rows (or with holes, until commit)
    if (removed.nonEmpty || holed) index.foreach(_.remove(key))
    removed.map(_._2)
  }

  /**
   * Fills the holes left by [[removeRow]] with each key's last rows, so that the rows of a
   * key are dense again; drops a key left without rows from the index.
   */
  private def fillHoles(): Unit = {
    holes.foreach { case (key, emptied) =>
      var n = slots(key)
      emptied.foreach { hole =>
        while (n > hole && emptied.contains(n - 1)) n -= 1   // trailing holes: nothing to move
        if (n - 1 > hole) {
          val last = storeKeyOf(key, n - 1).copy()
          val value = rows.get(last).copy()
          rows.remove(last)
          rows.put(storeKeyOf(key, hole), value)
          n -= 1
        } else if (n - 1 == hole) n -= 1
      }
      slots(key) = n
      if (n > 0) scanned += 1 else index.foreach(_.remove(key))
    }
    holes.clear()
  }

  /**
   * The stored join keys that `p`, a punctuation of the other input that does not fix a whole
   * key, covers (from the [[RangeIndex]], without reading rows).
   */
  def keysCoveredBy(p: KeyPunctuation): Array[UnsafeRow] = index match {
    case Some(i) => i.keysCoveredBy(p)
    case None => throw new IllegalStateException(s"no index for ${p.scheme} of the other input of input $number")
  }

  // ---- held punctuations and closed values ------------------------------------------

  /**
   * The input's held punctuations and closed values ([[HeldPunctuationTable]]) in its
   * namespaces of the shared store: whole-key ones, partition-wide ones, closed-values
   * summaries (none if the input has no scheme).
   */
  private val table = new HeldPunctuationTable(
    if (!holdsWholeKey(keySchemes, keyLength)) None else namespace(layout.wholeKey, PunctValueSchema.length),
    if (!holdsPartitionWide(keySchemes, keyLength)) None
    else namespace(layout.partitionWide, PunctValueSchema.length),
    if (keySchemes.isEmpty) ClosedSummaries.None
    else ClosedSummaries.OwnNamespace(namespace(layout.closedValues, ClosedSummaries.ValueSchema.length).get),
    keySchemes.map(s => s.id -> s), keySchema, maxRemembered, (partitionId, stateInfo.numPartitions))
  private var remembered = 0L
  private var forgotten = 0L

  /** The punctuation of `scheme` this key would need to be covered. */
  def punctuationFor(scheme: KeyScheme, key: InternalRow): KeyPunctuation =
    KeyPunctuation(scheme, table.constantsOf(scheme, key).copy(), table.boundOf(scheme, key))

  /** The held punctuation with this scheme and these constants, if any: (bound, closedAt). */
  def held(scheme: KeyScheme, constants: UnsafeRow): Option[(Option[Any], Long)] =
    table.held(scheme.id, scheme, constants)

  /** Does `p` (of this input's schemes) hold at least as much as the held one? */
  def boundCovers(scheme: KeyScheme, bound: Option[Any], value: Option[Any]): Boolean =
    (bound, value) match {
      case (Some(b), Some(v)) => table.bounds(scheme).includes(b, v)
      case _ => true
    }

  /**
   * Does `bound` (of `scheme`) close a key whose range values are `values` (in the order of
   * `scheme.ranges`)?
   */
  def boundCoversValues(scheme: KeyScheme, bound: Option[Any], values: IndexedSeq[Any]): Boolean =
    !values.contains(null) && bound.exists(b =>
      table.bounds(scheme).covers(b, if (values.size == 1) values.head else values))

  /** What two bounds of `scheme` close together (one range: the greater; several: the regions' union). */
  def mergeBounds(scheme: KeyScheme, a: Option[Any], b: Option[Any]): Option[Any] = (a, b) match {
    case (Some(x), Some(y)) => Some(table.bounds(scheme).merge(x, y))
    case _ => b.orElse(a)
  }

  /** What two bounds of `scheme` both close, if anything (one range: the lower; several: the regions' intersection). */
  def intersectBounds(scheme: KeyScheme, a: Any, b: Any): Option[Any] = table.bounds(scheme).intersect(a, b)

  def hold(p: KeyPunctuation, closedAtBatch: Long): Unit =
    table.hold(p.scheme.id, p.scheme, p.constants, p.bound, closedAtBatch)

  def release(scheme: KeyScheme, constants: UnsafeRow): Unit = table.release(scheme.id, scheme, constants)

  /**
   * This input's held whole-key punctuations, as (scheme, constants): for releasing those a
   * range punctuation of the other input has closed too.
   */
  def heldWholeKey: Iterator[(KeyScheme, UnsafeRow)] =
    table.heldWholeKey(keySchemes.map(s => s.id -> s).toMap).map { case (_, s, c) => (s, c) }

  /** Releases the held punctuation (from [[heldWholeKey]]). */
  def releaseHeld(scheme: KeyScheme, constants: UnsafeRow): Unit = release(scheme, constants)

  /** Marks the held punctuation closed at `batch` (for retention). */
  def closeHeld(scheme: KeyScheme, constants: UnsafeRow, batch: Long): Unit =
    table.close(scheme.id, scheme, constants, batch)

  /** Releases held punctuations closed at least `retention` batches before `batchId`. */
  def releaseExpired(batchId: Long, retention: Int): Unit = table.releaseExpired(batchId, retention, _ => false)

  private val coverCache = mutable.HashMap.empty[UnsafeRow, Boolean]

  /**
   * Is every row of this input with `key` excluded by a held punctuation, or by the values it
   * closed ([[ClosedKeys]])? Answers from the state as of the previous batch for keys asked
   * before this batch's punctuations apply.
   */
  def covers(key: UnsafeRow): Boolean = keySchemes.nonEmpty && (coverCache.get(key) match {
    case Some(answer) => answer
    case None =>
      val answer = keySchemes.exists(s => table.covers(s.id, s, key))
      coverCache(key.copy()) = answer
      answer
  })

  /** Forget cached cover answers (once this batch's punctuations have been applied). */
  def clearCache(): Unit = coverCache.clear()

  /** Remembers the values punctuation `p` (of this input) closes, for good. */
  def remember(p: KeyPunctuation): Unit = table.remember(p.scheme.id, p.constants, p.bound)

  /** Has this input closed everything `p` (of its schemes) covers, by an earlier punctuation? */
  def remembers(p: KeyPunctuation): Boolean = table.remembers(p.scheme.id, p.constants, p.bound)

  /**
   * Closed values remembered in this partition, as of its last [[prepareCommit]]. Every
   * partition keeps its own summaries, also of partition-wide schemes (each partition saw
   * their punctuations): all are counted.
   */
  def numClosedValues: Long = remembered

  /** Closed values forgotten in this task to stay within `maxRemembered`. */
  def numClosedValuesForgotten: Long = forgotten

  // ---- commit ------------------------------------------------------------------------

  /**
   * Writes the range index and the closed values back (into the shared store), before the task
   * commits the stores.
   */
  def prepareCommit(): Unit = {
    fillHoles()
    index.foreach(_.flush())
    flushClosed()
  }

  private def flushClosed(): Unit = {
    forgotten += table.flushClosed()
    remembered = table.numRemembered
  }

  /** This input's rows store (committed by the task, see [[prepareCommit]]). */
  def rowsStore: StateStore = rows

  def abortIfNeeded(): Unit = if (!rows.hasCommitted) rows.abort()

  /**
   * Held punctuations of this partition: whole-key ones, and this partition's copies of the
   * partition-wide ones (every partition holds a copy of each, and each copy is counted).
   */
  def numPunctuations: Long = table.count
  /**
   * Entries of this partition's range index (each stored join key once per indexed scheme;
   * 0 if not indexed), including this task's changes: read from a count the index keeps,
   * without reading the index.
   */
  def numIndexEntries: Long = index.map(_.numEntries).getOrElse(0L)
}

object JoinInputState {
  val SeqColumn = "_punctuated_seq"
  val MatchedColumn = "_punctuated_matched"
  /** Held punctuations ([[HeldPunctuationTable]]) and range-index slots: key (scheme, constants). */
  val PunctKeySchema: StructType = new StructType()
    .add("scheme", IntegerType, nullable = false).add("constants", BinaryType, nullable = false)
  val PunctValueSchema: StructType = new StructType()
    .add("bound", BinaryType, nullable = true).add("closedAtBatch", LongType, nullable = false)

  /** The store of input `number`'s rows ([[JoinInputLayout]]). */
  def rowsStoreName(number: Int): String = JoinInputLayout.of(number).rowsStore

  /** The join key's columns as stored (`k0`, `k1` ...). */
  def keySchema(keys: Seq[org.apache.spark.sql.catalyst.expressions.Expression]): StructType =
    StructType(keys.zipWithIndex.map { case (k, i) => StructField(s"k$i", k.dataType, nullable = true) })


  def open(stateInfo: StatefulOperatorStateInfo, partitionId: Int, name: String, key: StructType,
      value: StructType, spec: KeyStateEncoderSpec, storeConf: StateStoreConf,
      hadoopConf: org.apache.hadoop.conf.Configuration): StateStore = {
    val id = StateStoreProviderId(
      StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, partitionId, name),
      stateInfo.queryRunId)
    punctuated.state.DamagedCheckpoint.opening(id, stateInfo.storeVersion, hadoopConf) {
      StateStore.get(id, key, value, spec, stateInfo.storeVersion, None, None,
        useColumnFamilies = false, storeConf, hadoopConf)
    }
  }

  /** The store both inputs share ([[StoreNamespace]]). */
  def openShared(stateInfo: StatefulOperatorStateInfo, partitionId: Int, storeConf: StateStoreConf,
      hadoopConf: org.apache.hadoop.conf.Configuration): StateStore =
    open(stateInfo, partitionId, StoreNamespace.StoreName, StoreNamespace.KeySchema,
      StoreNamespace.ValueSchema, PrefixKeyScanStateEncoderSpec(StoreNamespace.KeySchema, 1),
      storeConf, hadoopConf)

  /** Does an input with these schemes hold punctuations that fix the whole key? */
  def holdsWholeKey(keySchemes: Seq[KeyScheme], keyLength: Int): Boolean =
    keySchemes.exists(_.isWholeKey(keyLength))
  /** ... and ones that do not (a prefix of the key, or a range)? */
  def holdsPartitionWide(keySchemes: Seq[KeyScheme], keyLength: Int): Boolean =
    keySchemes.exists(!_.isWholeKey(keyLength))

  /** Does an input with these schemes, indexed or not, use the shared store? */
  def usesShared(keySchemes: Seq[KeyScheme], indexed: Boolean): Boolean =
    keySchemes.nonEmpty || indexed

  /**
   * The stores of a join: each input's rows, and the shared store ([[StoreNamespace]]) when
   * either input holds punctuations or is indexed.
   */
  def storeNames(inputs: Int, shared: Boolean): Seq[String] =
    (0 until inputs).map(rowsStoreName) ++ (if (shared) Seq(StoreNamespace.StoreName) else Nil)
}
