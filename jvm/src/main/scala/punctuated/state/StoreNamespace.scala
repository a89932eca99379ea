package punctuated.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.streaming.state.{StateStore, UnsafeRowPair}
import org.apache.spark.sql.types.{BinaryType, IntegerType, StructType}

/**
 * A small key-value table of a punctuated operator in a Spark state store: either one part
 * of a store shared by several small tables ([[StoreNamespace.apply]]), or a whole store of
 * its own ([[StoreNamespace.whole]]). The operators' small tables (held punctuations,
 * closed-values summaries, range indexes) are written once over this interface, whichever
 * store they live in.
 *
 * Why share a store: every state store costs files at every micro-batch's commit, whether or
 * not it changed — a delta file and its checksum, created and renamed (on Hadoop's local file
 * system five forked shell commands, about 50 ms; on HDFS or an object store as many
 * requests). A join used to open up to four stores per input; with the small tables merged
 * it opens at most three in all (both inputs' rows, and the shared one), fewer than Spark's
 * own join (four).
 *
 * {{{
 *   shared store  punctuated-meta  key:   (namespace INT, key BINARY)   prefix-scannable by namespace
 *                                  value: (value BINARY)
 *     a namespace's key and value are UnsafeRows of its own layout, stored as their bytes;
 *     a join's namespaces per input (numbers: the join's JoinInputLayout):
 *       held whole-key punctuations   key (scheme, constants), value (bound, closedAtBatch)
 *       held partition-wide ones      as whole-key ones
 *       range index                   key (scheme, constants), value (keys)
 *       closed values                 key (scheme), value (entries, summary)
 *       range-index entry count       key (0), value (entries BIGINT)
 *   whole store   punctuations     the store's own key and value rows (an aggregation's
 *                                  or deduplication's held punctuations and summaries)
 * }}}
 *
 * Example: `ns = StoreNamespace(store, 0, keyFields = 2, valueFields = 2)`;
 * `ns.put(k, v)` stores `(0, k.getBytes) -> (v.getBytes)`, `ns.get(k)` returns `v` as an
 * UnsafeRow of 2 fields, `ns.iterator()` lists namespace 0 only (a prefix scan).
 */
sealed trait StoreNamespace {
  /** The value under `k` (a fresh row), or null. */
  def get(k: UnsafeRow): UnsafeRow

  def put(k: UnsafeRow, v: UnsafeRow): Unit

  def remove(k: UnsafeRow): Unit

  /** This namespace's entries (fresh rows, in this namespace's layouts). */
  def iterator(): Iterator[UnsafeRowPair]

  /** Entries of this namespace (a pass over it: for metrics of small tables only). */
  def numKeys: Long = iterator().size.toLong
}

object StoreNamespace {
  val StoreName = "punctuated-meta"
  val KeySchema: StructType = new StructType()
    .add("namespace", IntegerType, nullable = false).add("key", BinaryType, nullable = false)
  val ValueSchema: StructType = new StructType().add("value", BinaryType, nullable = false)

  /**
   * Namespace `id` of a shared store.
   *
   * @param store       the shared store (opened with [[KeySchema]], prefix 1)
   * @param id          this namespace
   * @param keyFields   fields of this namespace's key rows
   * @param valueFields fields of this namespace's value rows
   */
  def apply(store: StateStore, id: Int, keyFields: Int, valueFields: Int): StoreNamespace =
    new Shared(store, id, keyFields, valueFields)

  /** A shared store's key row `(namespace, key bytes)`, written by `w` (its row is reused). */
  private[state] def keyRow(w: UnsafeRowWriter, id: Int, bytes: Array[Byte]): UnsafeRow = {
    w.reset(); w.zeroOutNullBytes(); w.write(0, id); w.write(1, bytes); w.getRow
  }

  /** A shared store's value row `(value bytes)`, written by `w` (its row is reused). */
  private[state] def valueRow(w: UnsafeRowWriter, bytes: Array[Byte]): UnsafeRow = {
    w.reset(); w.zeroOutNullBytes(); w.write(0, bytes); w.getRow
  }

  /**
   * A value row `(bytes BINARY, n BIGINT)` (`bytes` NULL if null), written by `w` (its row is
   * reused: a store copies what it is given). `bytesAndLong(new UnsafeRowWriter(2, 16), b, 3L)`
   * is the row a generated projection of `(b, 3L)` makes.
   */
  private[state] def bytesAndLong(w: UnsafeRowWriter, bytes: Array[Byte], n: Long): UnsafeRow = {
    w.reset(); w.zeroOutNullBytes()
    if (bytes == null) w.setNullAt(0) else w.write(0, bytes)
    w.write(1, n); w.getRow
  }

  /** A value row `(n BIGINT, bytes BINARY)` (non-NULL), written by `w` (its row is reused). */
  private[state] def longAndBytes(w: UnsafeRowWriter, n: Long, bytes: Array[Byte]): UnsafeRow = {
    w.reset(); w.zeroOutNullBytes(); w.write(0, n); w.write(1, bytes); w.getRow
  }

  /**
   * A fresh row of one non-NULL INT: the prefix `(namespace)` a prefix scan of one namespace
   * starts from, or a table's constant key (`(0)`).
   */
  def intRow(id: Int): UnsafeRow = {
    val w = new UnsafeRowWriter(1, 0); w.reset(); w.zeroOutNullBytes(); w.write(0, id); w.getRow.copy()
  }

  /** A whole store as one namespace: its key and value rows are the table's. */
  def whole(store: StateStore): StoreNamespace = new Whole(store)

  private final class Shared(store: StateStore, id: Int, keyFields: Int, valueFields: Int)
      extends StoreNamespace {
    // rows of fixed layouts written directly (as a generated projection would): a task opens
    // several namespaces per operator, and generating three projections for each costs more
    // than most micro-batches' use of them
    private val outerKey = new UnsafeRowWriter(2, 64)
    private val outerValue = new UnsafeRowWriter(1, 64)
    private val prefix = StoreNamespace.intRow(id)

    private def key(k: UnsafeRow): UnsafeRow = StoreNamespace.keyRow(outerKey, id, k.getBytes)

    private def row(bytes: Array[Byte], fields: Int): UnsafeRow = {
      val r = new UnsafeRow(fields)
      r.pointTo(bytes, bytes.length)
      r
    }

    override def get(k: UnsafeRow): UnsafeRow = {
      val v = store.get(key(k))
      if (v == null) null else row(v.getBinary(0), valueFields)
    }

    override def put(k: UnsafeRow, v: UnsafeRow): Unit =
      store.put(key(k), StoreNamespace.valueRow(outerValue, v.getBytes))

    override def remove(k: UnsafeRow): Unit = store.remove(key(k))

    override def iterator(): Iterator[UnsafeRowPair] = store.prefixScan(prefix).map { p =>
      new UnsafeRowPair(row(p.key.getBinary(1), keyFields), row(p.value.getBinary(0), valueFields))
    }
  }

  private final class Whole(store: StateStore) extends StoreNamespace {
    override def get(k: UnsafeRow): UnsafeRow = {
      val v = store.get(k)
      if (v == null) null else v.copy()
    }
    override def put(k: UnsafeRow, v: UnsafeRow): Unit = store.put(k, v)
    override def remove(k: UnsafeRow): Unit = store.remove(k)
    override def iterator(): Iterator[UnsafeRowPair] =
      store.iterator().map(p => new UnsafeRowPair(p.key.copy(), p.value.copy()))
  }
}
