package punctuated.join

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{StateStore, UnsafeRowPair}
import org.apache.spark.sql.types.{BinaryType, IntegerType, StructType}

/**
 * One part of a state store shared by several small tables: the held punctuations and range
 * indexes of both inputs of a [[PunctuatedSymmetricHashJoinExec]] partition live in one store
 * ([[StoreNamespace.StoreName]]) instead of one store each.
 *
 * Why: every state store costs files at every micro-batch's commit, whether or not it
 * changed — a delta file and its checksum, created and renamed (on Hadoop's local file system
 * five forked shell commands, about 50 ms; on HDFS or an object store as many requests). A
 * join used to open up to four stores per input; with the small tables merged it opens at
 * most three in all (both inputs' rows, and this one), fewer than Spark's own join (four).
 *
 * {{{
 *   punctuated-meta  key:   (namespace INT, key BINARY)   prefix-scannable by namespace
 *                    value: (value BINARY)
 *   a namespace's key and value are UnsafeRows of its own layout, stored as their bytes;
 *   per join input (numbers: [[JoinInputLayout]]):
 *     held whole-key punctuations   key (scheme, constants), value (bound, closedAtBatch)
 *     held partition-wide ones      as whole-key ones
 *     range index                   key (scheme, constants), value (keys)
 *     closed values                 key (scheme), value (entries, summary)
 *     range-index entry count       key (0), value (entries BIGINT)
 * }}}
 *
 * Example: `ns = new StoreNamespace(store, 0, keyFields = 2, valueFields = 2)`;
 * `ns.put(k, v)` stores `(0, k.getBytes) -> (v.getBytes)`, `ns.get(k)` returns `v` as an
 * UnsafeRow of 2 fields, `ns.iterator()` lists namespace 0 only (a prefix scan).
 *
 * @param store       the shared store (opened with [[StoreNamespace.KeySchema]], prefix 1)
 * @param id          this namespace
 * @param keyFields   fields of this namespace's key rows
 * @param valueFields fields of this namespace's value rows
 */
final class StoreNamespace(store: StateStore, id: Int, keyFields: Int, valueFields: Int) {
  private val outerKey = UnsafeProjection.create(Seq(
    BoundReference(0, IntegerType, nullable = false), BoundReference(1, BinaryType, nullable = false)))
  private val outerValue = UnsafeProjection.create(Seq(BoundReference(0, BinaryType, nullable = false)))
  private val prefix = UnsafeProjection.create(Seq(BoundReference(0, IntegerType, nullable = false)))(
    new GenericInternalRow(Array[Any](id))).copy()

  private def key(k: UnsafeRow): UnsafeRow = outerKey(new GenericInternalRow(Array[Any](id, k.getBytes)))

  private def row(bytes: Array[Byte], fields: Int): UnsafeRow = {
    val r = new UnsafeRow(fields)
    r.pointTo(bytes, bytes.length)
    r
  }

  /** The value under `k` (a fresh row), or null. */
  def get(k: UnsafeRow): UnsafeRow = {
    val v = store.get(key(k))
    if (v == null) null else row(v.getBinary(0), valueFields)
  }

  def put(k: UnsafeRow, v: UnsafeRow): Unit =
    store.put(key(k), outerValue(new GenericInternalRow(Array[Any](v.getBytes))))

  def remove(k: UnsafeRow): Unit = store.remove(key(k))

  /** This namespace's entries (fresh rows, in this namespace's layouts). */
  def iterator(): Iterator[UnsafeRowPair] = store.prefixScan(prefix).map { p =>
    new UnsafeRowPair(row(p.key.getBinary(1), keyFields), row(p.value.getBinary(0), valueFields))
  }

  /** Entries of this namespace (a prefix scan: for metrics of small tables only). */
  def numKeys: Long = iterator().size.toLong
}

object StoreNamespace {
  val StoreName = "punctuated-meta"
  val KeySchema: StructType = new StructType()
    .add("namespace", IntegerType, nullable = false).add("key", BinaryType, nullable = false)
  val ValueSchema: StructType = new StructType().add("value", BinaryType, nullable = false)
}
