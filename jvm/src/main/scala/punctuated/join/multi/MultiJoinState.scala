package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, GenericInternalRow, SpecializedGetters, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types._

import punctuated.input.KeyScheme
import punctuated.join.{JoinInputState, KeyPunctuation, RangeIndex}
import punctuated.state.{ClosedSummaries, EmptyUnsafeRow, HeldPunctuationTable, StoreNamespace}

/**
 * The state of one input of [[PunctuatedMultiJoinExec]] in one cell (partition): its stored
 * rows, looked up by class value, and its held punctuations and closed values
 * ([[HeldPunctuationTable]]) in its namespaces of `punctuated-meta` ([[MultiJoinLayout]]).
 *
 * An input with columns in m attribute classes stores each row m times, once under each of
 * its class values, so that every probe — "the rows of b with v = 7" — is a point look-up,
 * whichever class the probe comes by:
 * {{{
 *   input<i>-mjoin-rows   key: (class INT, value BINARY, slot BIGINT)   value: the input's row
 *   b(k, v), classes k = 0, v = 1; rows b(1, 7, "x"), b(1, 8, "y"):
 *     (0, [1], 0) -> (1, 7, "x")     (1, [7], 0) -> (1, 7, "x")
 *     (0, [1], 1) -> (1, 8, "y")     (1, [8], 0) -> (1, 8, "y")
 * }}}
 * A class value's n rows are under slots 0 .. n-1 (dense): n is found by point look-ups (a
 * doubling probe, then a binary search, as [[JoinInputState]] finds a join key's rows), with
 * no count entry and no prefix scan. A task reads a class value's rows once and keeps them
 * (its look-ups are cached); purges remove rows in memory, moving the last row into the
 * hole; at commit ([[prepareCommit]]) only the changed slots are written, so every committed
 * version is dense again.
 *
 * Purges work by key (the input's class values): every row of the input with a key goes at
 * once, since only its key decides whether a row can still join ([[ChainedPurge]]).
 *
 * @param input         the input as planned (its number, schemes, key columns, classes)
 * @param output        the input's columns (its rows as the child produces them)
 * @param meta          the `punctuated-meta` store of the cell
 * @param maxRemembered closed values remembered per scheme (`spark.punctuated.lateRows.maxRemembered`)
 * @param storeName     its rows store: an input's (None: [[MultiJoinLayout.of]]), or an
 *                      intermediate node's ([[MultiJoinLayout.node]]). A node is a *virtual
 *                      input*: its classes are its inputs' classes, its key one column per
 *                      class, its rows its inputs' rows concatenated in input order, and its
 *                      spec declares no scheme (nodes hold no punctuations)
 * @param inMeta        instead of a rows store of its own, namespace `inMeta` of `meta`
 *                      ([[MultiJoinLayout.nodeNamespace]]): an intermediate node of a plan
 *                      the query migrated to, whose store did not exist from the query's first
 *                      batch (a store cannot first appear at a later version). Same keys and
 *                      rows; its row count is kept under class -1 (no pass to count)
 * @param rangeIndexed  the schemes over this input's key by which its distinct stored keys are
 *                      indexed for the other inputs' range punctuations
 *                      ([[MultiJoinState.rangeIndexed]]; an input's only)
 */
class MultiJoinState(
    input: MultiJoinInputSpec,
    output: Seq[Attribute],
    meta: StateStore,
    stateInfo: StatefulOperatorStateInfo,
    partitionId: Int,
    maxRemembered: Int,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    storeName: Option[String] = None,
    inMeta: Option[Int] = None,
    rangeIndexed: Seq[KeyScheme] = Nil) {

  import MultiJoinState._

  val number: Int = input.number
  val classes: Seq[Int] = input.classes
  private val classArray: Array[Int] = classes.toArray
  /** Class id -> its position in [[classes]] (-1: not one of this input's). */
  private val positionByClass: Array[Int] = {
    val a = Array.fill(if (classArray.isEmpty) 0 else classArray.max + 1)(-1)
    classArray.indices.foreach(q => a(classArray(q)) = q)
    a
  }
  private val layout = {
    val own = MultiJoinLayout.of(number)
    storeName.fold(own)(name => own.copy(rowsStore = name))
  }
  val keySchema: StructType = JoinInputState.keySchema(input.keys)
  private val keyLength = keySchema.length
  val inputSchema: StructType = DataTypeUtils.fromAttributes(output)
  val keySchemes: Seq[KeyScheme] = input.spec.keySchemes

  private val rows: MultiJoinState.RowsTable = inMeta match {
    case None => new MultiJoinState.OwnStore(JoinInputState.open(stateInfo, partitionId, layout.rowsStore,
      MultiJoinLayout.RowKeySchema, inputSchema, NoPrefixKeyStateEncoderSpec(MultiJoinLayout.RowKeySchema),
      storeConf, hadoopConf), classes.size)
    case Some(id) => new MultiJoinState.InMeta(meta, StoreNamespace(meta, id, MultiJoinLayout.RowKeySchema.length,
      inputSchema.length), StoreNamespace(meta, id, MultiJoinLayout.RowKeySchema.length, 1))
  }

  // ---- range index (an input's own rows only) -----------------------------------------

  private val index: Option[RangeIndex] =
    if (rangeIndexed.isEmpty || storeName.isDefined || inMeta.isDefined) None
    else {
      val ns = MultiJoinLayout.rangeIndexNamespace(number)
      Some(new RangeIndex(StoreNamespace(meta, ns, JoinInputState.PunctKeySchema.length, RangeIndex.ValueSchema.length),
        StoreNamespace(meta, ns + 1, RangeIndex.CountKeySchema.length, RangeIndex.CountValueSchema.length),
        keySchema, rangeIndexed))
    }

  /**
   * The distinct stored keys whose values at `scheme`'s constant positions are `constants`
   * and whose range value is covered by `bound` and not by `above` (`scheme` one of
   * `rangeIndexed`): look-ups in the range index, no row read. Rows changed in this task are seen.
   */
  def keysCovered(scheme: KeyScheme, constants: UnsafeRow, bound: Any, above: Option[Any]): Array[UnsafeRow] =
    index.map(_.keysCoveredBy(KeyPunctuation(scheme, constants, Some(bound)), above)).getOrElse(Array.empty)

  /** Entries of the range index (each distinct key once per indexed scheme). */
  def numIndexEntries: Long = index.map(_.numEntries).getOrElse(0L)

  // ---- distinct values per class (an input's own rows only) ---------------------------

  /** Input i's distinct values per class in this cell ([[MultiJoinDistinctValues]]); nodes have none. */
  private val distinct: Option[MultiJoinDistinctValues] =
    if (storeName.isEmpty && inMeta.isEmpty) Some(new MultiJoinDistinctValues(meta, number, classes, !rows.entries.hasNext))
    else None

  /**
   * The distinct values of class `c` among this input's stored rows in this cell, as of the
   * last [[prepareCommit]] (None: a node, or a cell not counting: [[MultiJoinDistinctValues]]).
   */
  def distinctValuesOf(c: Int): Option[Long] = distinct.flatMap(_.of(c))

  /** Is this an input whose cell does not count its distinct values (yet)? */
  def uncounted: Boolean = distinct.exists(!_.counting)

  /** The input's key (its class values in class order) of one of its rows (reused: copy to keep). */
  val keyOf: UnsafeProjection = UnsafeProjection.create(input.keys, output)
  private val valueProjs: IndexedSeq[UnsafeProjection] = keySchema.fields.indices.map { q =>
    UnsafeProjection.create(Seq(BoundReference(q, keySchema(q).dataType, nullable = true)))
  }.toIndexedSeq

  /** The value of the key's `q`-th class (position in [[classes]]) as a one-field row (a copy). */
  def classValue(key: InternalRow, q: Int): UnsafeRow = valueProjs(q)(key).copy()

  /** The value of the key's `q`-th class as a one-field row, reused by the next call (use at once). */
  def classValueView(key: InternalRow, q: Int): UnsafeRow = valueProjs(q)(key)

  /** Is the key's `q`-th class value `value` (no copy)? */
  def classValueIs(key: InternalRow, q: Int, value: UnsafeRow): Boolean = valueProjs(q)(key) == value

  /** The position of class `c` in this input's key (-1: none). */
  def positionOf(c: Int): Int = if (c >= 0 && c < positionByClass.length) positionByClass(c) else -1

  /** Typed readers of the key's fields (a generic `get(i, type)` looks the type up per call). */
  private val keyGetters: Array[(SpecializedGetters, Int) => Any] =
    keySchema.fields.map(f => InternalRow.getAccessor(f.dataType, nullable = true))

  /** A key row of this input with `binding`'s values at its classes (NULL where unbound). */
  def keyRowOf(binding: collection.Map[Int, UnsafeRow]): InternalRow = {
    val r = new GenericInternalRow(keyLength)
    var q = 0
    while (q < classArray.length) {
      binding.get(classArray(q)) match {
        case Some(v) => r.update(q, keyGetters(q)(v, 0))
        case None =>
      }
      q += 1
    }
    r
  }

  private val keyToUnsafe = UnsafeProjection.create(keySchema.fields.map(_.dataType))

  /** The key (as stored rows have it) of a binding of every class of this input (a copy). */
  def keyOfBinding(binding: collection.Map[Int, UnsafeRow]): UnsafeRow = keyToUnsafe(keyRowOf(binding)).copy()

  /** The classes a punctuation of `scheme` with these constants binds, with their values. */
  def bindingOfPunctuation(scheme: KeyScheme, constants: UnsafeRow): Map[Int, UnsafeRow] =
    scheme.constants.toSeq.zipWithIndex.map { case (pos, f) =>
      val r = new GenericInternalRow(keyLength)
      r.update(pos, keyGetters(pos)(constants, f))
      classes(pos) -> classValue(r, pos)
    }.toMap

  /** The binding (class -> value) of one of this input's keys. */
  def bindingOf(key: InternalRow): Map[Int, UnsafeRow] = {
    val b = Map.newBuilder[Int, UnsafeRow]
    var q = 0
    while (q < classArray.length) { b += classArray(q) -> classValue(key, q); q += 1 }
    b.result()
  }

  // ---- stored rows ---------------------------------------------------------------------

  // per instance: a projection reuses its output row, and tasks of other cells run concurrently
  private val storeKeyProj = MultiJoinState.storeKeyProjection()
  private def storeKey(c: Int, value: UnsafeRow, slot: Long): UnsafeRow =
    storeKeyProj(new GenericInternalRow(Array[Any](c, value.getBytes, slot)))

  /** A class value's rows in this task: as committed, then changed (`dirty` slots). */
  private final class Slots(val rows: mutable.ArrayBuffer[UnsafeRow], val committed: Long) {
    val dirty: mutable.Set[Int] = mutable.Set.empty[Int]
    /** The distinct keys of `rows` ([[keysWith]]), until the rows change (null: not known). */
    var keys: Seq[UnsafeRow] = null
    /**
     * The distinct keys of `rows` as a set ([[isStored]]; null: not known), kept up to date by
     * [[append]] and [[removeKey]], so that a purge asking about many keys of one hot value
     * does not read its rows again per key.
     */
    var keySet: mutable.HashSet[UnsafeRow] = null
  }

  /** The class values' rows read or changed in this task, one map per class (position in [[classes]]). */
  private val cache: Array[mutable.HashMap[UnsafeRow, Slots]] = Array.fill(classArray.length)(mutable.HashMap.empty)
  private var scanned = 0L

  private def stored(c: Int, value: UnsafeRow, slot: Long): Boolean = rows.get(storeKey(c, value, slot)) != null

  /** A class value's rows (the value is copied only when first cached: look-ups are per row). */
  private def slotsOf(c: Int, value: UnsafeRow): Slots = {
    val byValue = cache(positionByClass(c))
    byValue.get(value) match {
      case Some(slots) => slots
      case None =>
        val slots = load(c, value)
        byValue(value.copy()) = slots
        slots
    }
  }

  /** A class value's committed rows: the count by point look-ups, then each row. */
  private def load(c: Int, value: UnsafeRow): Slots = {
    val n = if (!stored(c, value, 0)) 0L else {
      var lo = 0L
      var hi = 1L
      while (stored(c, value, hi)) { lo = hi; hi *= 2 }
      while (hi - lo > 1) { val mid = lo + (hi - lo) / 2; if (stored(c, value, mid)) lo = mid else hi = mid }
      hi
    }
    val buf = mutable.ArrayBuffer.empty[UnsafeRow]
    var s = 0L
    while (s < n) { buf += rows.get(storeKey(c, value, s)).copy(); s += 1 }
    new Slots(buf, n)
  }

  /** The stored rows whose class `c` has this value (do not modify; valid until the next change). */
  def rowsWith(c: Int, value: UnsafeRow): collection.IndexedSeq[UnsafeRow] = slotsOf(c, value).rows

  /** The distinct keys of the stored rows whose class `c` has this value. */
  def keysWith(c: Int, value: UnsafeRow): Seq[UnsafeRow] = {
    val slots = slotsOf(c, value)
    if (slots.keys == null) {
      val seen = mutable.LinkedHashSet.empty[UnsafeRow]
      slots.rows.foreach(r => seen += keyOf(r).copy())
      slots.keys = seen.toSeq
    }
    slots.keys
  }

  /** Is a row with this key stored? */
  def isStored(key: UnsafeRow): Boolean = {
    val slots = slotsOf(classes.head, classValue(key, 0))
    if (slots.keySet == null) {
      slots.keySet = mutable.HashSet.empty[UnsafeRow]
      slots.rows.foreach(r => slots.keySet += keyOf(r).copy())
    }
    slots.keySet.contains(key)
  }

  /** Stores a row (a copy the caller will not change) with its key, under each class value. */
  def append(row: UnsafeRow, key: UnsafeRow): Unit = {
    classes.indices.foreach { q =>
      val slots = slotsOf(classes(q), classValue(key, q))
      slots.dirty += slots.rows.size
      slots.rows += row
      slots.keys = null
      if (slots.keySet != null) slots.keySet += key.copy()
    }
    index.foreach(_.add(key))
    appended += row
  }

  /** The rows stored by this task (load shedding's tie-break: a row of this batch goes last). */
  val appended: mutable.ArrayBuffer[UnsafeRow] = mutable.ArrayBuffer.empty[UnsafeRow]

  /**
   * Removes one stored row equal to `row` (its bytes) with key `key`, under each class value
   * (a row shed, [[MultiJoinShedder]]); whether one was stored.
   */
  def removeRow(row: UnsafeRow, key: UnsafeRow): Boolean = {
    var found = false
    classes.indices.foreach { q =>
      val slots = slotsOf(classes(q), classValue(key, q))
      val s = slots.rows.indexOf(row)
      if (s >= 0) {
        slots.keys = null
        slots.keySet = null    // (other rows may have the same key)
        val last = slots.rows.size - 1
        slots.rows(s) = slots.rows(last)
        slots.rows.remove(last)
        slots.dirty += s
        if (q == 0) found = true
      }
    }
    if (found && index.isDefined && !isStored(key)) index.get.remove(key)
    found
  }

  /** Rows added minus rows removed by this task so far (each row counted once). */
  def rowDelta: Long = flushedDelta + cache(0).valuesIterator.map(slots => slots.rows.size - slots.committed).sum
  /** The part of [[rowDelta]] already written to the store (a pass over the store sees it). */
  def flushedDelta: Long = delta
  private var delta = 0L

  /**
   * Every stored row once, with its key (copies), this task's changes included: the changes
   * are written to the store first ([[flush]]), then one pass over the rows (load shedding
   * in a batch over the budget, [[MultiJoinShedder]]).
   */
  def currentRows: Iterator[(UnsafeRow, UnsafeRow)] = {
    flush()
    storedRows.map(r => r -> keyOf(r).copy())
  }

  /** Removes every stored row with this key; returns how many (each counted once). */
  def removeKey(key: UnsafeRow): Int = {
    var removed = 0
    classes.indices.foreach { q =>
      val slots = slotsOf(classes(q), classValue(key, q))
      var s = 0
      while (s < slots.rows.size) {
        if (keyOf(slots.rows(s)) == key) {
          slots.keys = null
          val last = slots.rows.size - 1
          slots.rows(s) = slots.rows(last)     // the last row fills the hole
          slots.rows.remove(last)
          slots.dirty += s
          if (q == 0) removed += 1
        } else s += 1
      }
      if (slots.keySet != null) slots.keySet -= key
    }
    if (removed > 0) index.foreach(_.remove(key))
    scanned += removed
    removed
  }

  /** Stored rows read by purges in this task. */
  def rowsScanned: Long = scanned

  /** Writes the changed slots: each class value's rows dense under 0 .. n-1 again. */
  private def writeSlots(): Unit = for (q <- cache.indices; c = classArray(q); (value, slots) <- cache(q)) {
    val n = slots.rows.size
    if (q == 0) { rows.counted(n - slots.committed); delta += n - slots.committed }
    if (slots.committed == 0 && n > 0) distinct.foreach(_.add(c, 1))
    else if (slots.committed > 0 && n == 0) distinct.foreach(_.add(c, -1))
    slots.dirty.foreach(s => if (s < n) rows.put(storeKey(c, value, s), slots.rows(s)))
    var s = n.toLong
    while (s < slots.committed) { rows.remove(storeKey(c, value, s)); s += 1 }
  }

  // ---- held punctuations and closed values -------------------------------------------

  private def namespace(id: Int, valueFields: Int) =
    StoreNamespace(meta, id, JoinInputState.PunctKeySchema.length, valueFields)
  private val wholeNs =
    if (keySchemes.exists(_.isWholeKey(keyLength))) Some(namespace(layout.wholeKey, 2)) else None
  private val partialNs =
    if (keySchemes.exists(!_.isWholeKey(keyLength))) Some(namespace(layout.partialKey, 2)) else None
  private val byId = keySchemes.map(s => s.id -> s).toMap

  /**
   * Held punctuations and closed values. The partition given to the closed-values summaries
   * is (0, 1): a cell holds values of every hash of its classes' coordinates, so the summaries
   * never assume Spark's hash partitioning of the key.
   */
  private val table = new HeldPunctuationTable(wholeNs, partialNs,
    if (keySchemes.isEmpty) ClosedSummaries.None
    else ClosedSummaries.OwnNamespace(namespace(layout.closedValues, ClosedSummaries.ValueSchema.length)),
    keySchemes.map(s => s.id -> s), keySchema, maxRemembered, (0, 1))

  /** The punctuation of `scheme` with `key`'s values (its range bound: `key`'s value there, if not NULL). */
  def punctuationFor(scheme: KeyScheme, key: InternalRow): KeyPunctuation =
    KeyPunctuation(scheme, table.constantsOf(scheme, key).copy(), table.boundOf(scheme, key).filter(_ != null))

  def held(p: KeyPunctuation): Option[(Option[Any], Long)] = table.held(p.scheme.id, p.scheme, p.constants)
  /** Holds `p` (a range punctuation: the greater of its bound and a held one's, one per constants). */
  def hold(p: KeyPunctuation, closedAt: Long): Unit =
    table.holdGreatest(p.scheme.id, p.scheme, p.constants, p.bound, closedAt)

  /**
   * What two bounds of `scheme` close together: the greater (one range, in its order), the
   * union of their regions (several).
   */
  def mergeBounds(scheme: KeyScheme, a: Any, b: Any): Any = table.bounds(scheme).merge(a, b)

  /**
   * Does `p` say nothing new: a held punctuation with its constants has a bound covering
   * its own (a constant one: is held at all), or the closed values remember it?
   */
  def alreadyClosed(p: KeyPunctuation): Boolean = {
    val byHeld = held(p).exists { case (bound, _) =>
      (bound, p.bound) match {
        case (Some(b), Some(q)) => table.bounds(p.scheme).includes(b, q)
        case (None, None) => true
        case _ => false
      }
    }
    byHeld || remembers(p)
  }
  def release(scheme: KeyScheme, constants: UnsafeRow): Unit = table.release(scheme.id, scheme, constants)
  /** Marks a held punctuation closed at `batch` (released after the retention). */
  def close(scheme: KeyScheme, constants: UnsafeRow, batch: Long): Unit = table.close(scheme.id, scheme, constants, batch)
  def remember(p: KeyPunctuation): Unit = table.remember(p.scheme.id, p.constants, p.bound)
  def remembers(p: KeyPunctuation): Boolean = table.remembers(p.scheme.id, p.constants, p.bound)
  def releaseExpired(batch: Long, retention: Int): Unit = table.releaseExpired(batch, retention, _ => false)

  /** Has this input closed (held or remembered) `scheme`'s values in this key row? */
  def closedBy(scheme: KeyScheme, key: InternalRow): Boolean = table.covers(scheme.id, scheme, key)

  private val lateCache = mutable.HashMap.empty[UnsafeRow, Boolean]

  /**
   * Is a row with this key late: covered by a punctuation of this input from an earlier
   * batch (asked before this batch's punctuations apply; cached per task)?
   */
  def covers(key: UnsafeRow): Boolean = keySchemes.nonEmpty && lateCache.getOrElseUpdate(key.copy(),
    keySchemes.exists(s => table.covers(s.id, s, key)))

  /**
   * This input's held punctuations still open (not yet closed for release), as (scheme,
   * constants): one pass over its held-punctuation namespaces.
   */
  def heldOpen: Seq[(KeyScheme, UnsafeRow)] = (wholeNs.toSeq ++ partialNs.toSeq).flatMap { ns =>
    ns.iterator().flatMap { pair =>
      byId.get(pair.key.getInt(0)).filter(_ => pair.value.getLong(1) < 0).map { scheme =>
        val bytes = pair.key.getBinary(1)
        val constants = new UnsafeRow(scheme.constants.length)
        constants.pointTo(bytes, bytes.length)
        (scheme, constants)
      }
    }.toSeq
  }

  // ---- commit and metrics ---------------------------------------------------------------

  private var remembered = 0L
  private var forgotten = 0L

  /** Writes the changed rows and closed values back, before the stores commit. */
  def prepareCommit(): Unit = {
    writeSlots()
    // whether rows are left: one step of an iterator (a RocksDB store cannot report its row
    // count while it is being updated)
    distinct.foreach(_.write(!rows.entries.hasNext))
    index.foreach(_.flush())
    forgotten += table.flushClosed()
    remembered = table.numRemembered
  }

  /** The store its rows are in (for a node in `punctuated-meta`: that store). */
  def rowsStore: StateStore = rows.store
  def abortIfNeeded(): Unit = if (!rows.store.hasCommitted) rows.store.abort()

  /**
   * Stored rows, each counted once (the store holds one entry per row and class); `metrics`:
   * a store's metrics, read once per micro-batch by the caller (they are not free).
   */
  def numRows(metrics: StateStore => StateStoreMetrics): Long = rows.numRows(metrics)
  /** `numRows(metrics)` reading the store's metrics itself. */
  def numRows: Long = numRows(_.metrics)

  /**
   * Each stored row once, with its key (copies): one pass over the rows (a plan migration's
   * completion at the switch, [[MultiJoinMigration]]). Rows changed in this task are not seen.
   */
  def storedRows: Iterator[UnsafeRow] = rows.entries.filter(_._1.getInt(0) == classes.head).map(_._2)

  /**
   * The distinct values of class `c` among the stored rows (one-field rows): one pass over
   * the rows, reading the entries of slot 0 (one per value). A plan migration's count of the
   * values a node must complete ([[MultiJoinCompletion.start]]). Rows changed in this task
   * are not seen.
   */
  def distinctValues(c: Int): Iterator[UnsafeRow] = rows.entries.filter { case (k, _) =>
    k.getInt(0) == c && k.getLong(2) == 0L
  }.map { case (k, _) =>
    val bytes = k.getBinary(1)
    val v = new UnsafeRow(1)
    v.pointTo(bytes, bytes.length)
    v
  }

  /** Writes this task's changes to the store now (rows read afterwards come from it). */
  def flush(): Unit = {
    writeSlots()
    cache.foreach(_.clear())
  }

  /** Removes every stored row (one pass: a node the plan no longer has, [[MultiJoinMigration]]); how many. */
  def clear(): Long = {
    cache.foreach(_.clear())
    val keys = rows.entries.map(_._1).toList
    keys.foreach(rows.remove)
    rows.emptied()
    distinct.foreach(_.emptied())
    val removed = keys.count(_.getInt(0) == classes.head).toLong
    delta -= removed
    removed
  }
  def numPunctuations: Long = table.count
  def numClosedValues: Long = remembered
  def numClosedValuesForgotten: Long = forgotten
}

object MultiJoinState {

  /** The projection of (class, value bytes, slot) to a store key (one per user: it reuses its row). */
  private def storeKeyProjection(): UnsafeProjection = UnsafeProjection.create(Seq(
    BoundReference(0, IntegerType, nullable = false), BoundReference(1, BinaryType, nullable = false),
    BoundReference(2, LongType, nullable = false)))

  /** Where a state's rows are: a store of its own, or a namespace of `punctuated-meta`. */
  private[multi] sealed trait RowsTable {
    def get(k: UnsafeRow): UnsafeRow
    def put(k: UnsafeRow, v: UnsafeRow): Unit
    def remove(k: UnsafeRow): Unit
    /** Every entry, (store key, row), copies, the row count entry left out. */
    def entries: Iterator[(UnsafeRow, UnsafeRow)]
    /** Rows stored; `metrics`: the store's metrics, read once by the caller. */
    def numRows(metrics: StateStore => StateStoreMetrics): Long
    /** `delta` rows were added (removed when negative) by this task's commit. */
    def counted(delta: Long): Unit
    /** Every row was removed. */
    def emptied(): Unit
    def store: StateStore
  }

  private final class OwnStore(val store: StateStore, numClasses: Int) extends RowsTable {
    override def get(k: UnsafeRow): UnsafeRow = store.get(k)
    override def put(k: UnsafeRow, v: UnsafeRow): Unit = store.put(k, v)
    override def remove(k: UnsafeRow): Unit = store.remove(k)
    override def entries: Iterator[(UnsafeRow, UnsafeRow)] = store.iterator().map(p => (p.key.copy(), p.value.copy()))
    override def numRows(metrics: StateStore => StateStoreMetrics): Long = metrics(store).numKeys / numClasses
    override def counted(delta: Long): Unit = ()
    override def emptied(): Unit = ()
  }

  private final class InMeta(val store: StateStore, ns: StoreNamespace, counts: StoreNamespace) extends RowsTable {
    private val count = {
      storeKeyProjection()(new GenericInternalRow(Array[Any](-1, EmptyUnsafeRow.row.getBytes, 0L))).copy()
    }
    private var n: Long = Option(counts.get(count)).map(_.getLong(0)).getOrElse(0L)
    override def get(k: UnsafeRow): UnsafeRow = ns.get(k)
    override def put(k: UnsafeRow, v: UnsafeRow): Unit = ns.put(k, v)
    override def remove(k: UnsafeRow): Unit = ns.remove(k)
    override def entries: Iterator[(UnsafeRow, UnsafeRow)] =
      ns.iterator().filter(_.key.getInt(0) >= 0).map(p => (p.key.copy(), p.value.copy()))
    override def numRows(metrics: StateStore => StateStoreMetrics): Long = n
    override def emptied(): Unit = counted(-n)
    override def counted(delta: Long): Unit = if (delta != 0) {
      n += delta
      val r = new UnsafeRow(1)
      r.pointTo(new Array[Byte](16), 16)
      r.setLong(0, n)
      if (n == 0) counts.remove(count) else counts.put(count, r)
    }
  }
  /** Partial results above this are not built by a purge check ([[ChainedPurge]]'s cap). */
  val MaxPartials = 10000
}
