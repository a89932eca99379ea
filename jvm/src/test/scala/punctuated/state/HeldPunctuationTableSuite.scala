package punctuated.state

import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.{BinaryType, IntegerType, LongType, StructType}

import punctuated.input.KeyScheme
import punctuated.spark.PunctuatedStreamTest

/**
 * [[HeldPunctuationTable]] over real state stores (HDFS-backed): the same table over a whole
 * store (an aggregation's `punctuations` store: held punctuations and summaries side by side)
 * and over namespaces of a shared store (a join input's), with the layouts both kinds of
 * checkpoint already have, surviving a commit and a reopen.
 */
class HeldPunctuationTableSuite extends PunctuatedStreamTest {

  private val keySchema = new StructType().add("k0", IntegerType).add("k1", IntegerType)
  private val wholeKey = KeyScheme(Array(0, 1))
  private val range = KeyScheme.atMost(Array(0), 1)
  private val toKey = UnsafeProjection.create(keySchema)
  private def key(a: Int, b: Int): UnsafeRow = toKey(new GenericInternalRow(Array[Any](a, b))).copy()

  private val heldKey = new StructType().add("kind", IntegerType, nullable = false)
    .add("constants", BinaryType, nullable = false)
  private val heldValue = new StructType().add("bound", BinaryType, nullable = true)
    .add("closedAt", LongType, nullable = false)

  private def provider(key: StructType, value: StructType, spec: KeyStateEncoderSpec): StateStoreProvider = {
    val dir = Files.createTempDirectory("punctuated-held").toFile.getCanonicalPath
    StateStoreProvider.createAndInit(StateStoreProviderId(StateStoreId(dir, 0, 0, "s"), UUID.randomUUID()),
      key, value, spec, false, new StateStoreConf(spark.sessionState.conf), new Configuration(), false, None)
  }

  /** An aggregation's table: one whole store, summaries beside the held punctuations. */
  private def wholeStoreTable(store: StateStore) = {
    val ns = StoreNamespace.whole(store)
    new HeldPunctuationTable(Some(ns), Some(ns), ClosedSummaries.BesideHeld(ns),
      Seq(1 -> wholeKey, 2 -> range), keySchema, maxRemembered = 100, partition = (0, 1))
  }

  test("the constants of a scheme without constants: the same row, bytes and hash as a generated projection's") {
    // held punctuations are keyed by (kind, constants bytes): checkpoints written when the
    // empty row came from generated code must find their rows under the interpreted one
    val generated = UnsafeProjection.create(Array.empty[org.apache.spark.sql.types.DataType])(new GenericInternalRow(0)).copy()
    val row = EmptyUnsafeRow.row
    assert(row.numFields == 0 && row.getSizeInBytes == 0)
    assert(row == generated && row.hashCode == generated.hashCode)
    assert(row.getBytes.sameElements(generated.getBytes))
    assert(HeldPunctuationTable.NoConstants eq row)
  }

  test("over a whole store: hold, cover, remember, expire; summaries stored as (-id, empty), not counted") {
    val p = provider(heldKey, heldValue, NoPrefixKeyStateEncoderSpec(heldKey))
    val store = p.getStore(0)
    val t = wholeStoreTable(store)
    val k = key(5, 17)
    t.holdGreatest(2, range, t.constantsOf(range, k).copy(), t.boundOf(range, k), closedAt = 0)
    t.holdGreatest(2, range, t.constantsOf(range, k).copy(), Some(3), closedAt = 0) // lower: kept 17
    t.hold(1, wholeKey, t.constantsOf(wholeKey, key(1, 1)).copy(), None, closedAt = 0)
    t.remember(1, t.constantsOf(wholeKey, key(2, 2)).copy(), None)
    assert(t.covers(2, range, key(5, 16)) && t.covers(2, range, key(5, 17)))
    assert(!t.covers(2, range, key(5, 18)) && !t.covers(2, range, key(6, 1)))
    assert(t.covers(1, wholeKey, key(1, 1)) && t.covers(1, wholeKey, key(2, 2)) && !t.covers(1, wholeKey, key(3, 3)))
    assert(t.flushClosed() == 0)
    assert(t.numRemembered == 1)
    // the summary is a row of the store under (-1, empty): the layout aggregation checkpoints have
    val summaryKey = UnsafeProjection.create(heldKey)(new GenericInternalRow(Array[Any](-1, Array.emptyByteArray)))
    assert(store.get(summaryKey) != null && store.get(summaryKey).getLong(1) == 1L)
    assert(t.count == 2)
    // the range one stays for good; the whole-key one expires after 1 batch
    assert(t.releaseExpired(batch = 1, retention = 1, forGood = _ == 2) == 1)
    store.commit()

    val again = wholeStoreTable(p.getStore(1))
    assert(again.covers(2, range, key(5, 17)))       // held, read back
    assert(!again.heldCovers(1, wholeKey, key(1, 1)))  // released
    assert(again.covers(1, wholeKey, key(2, 2)))      // remembered, read back
    assert(again.count == 1)
    p.close()
  }

  test("over namespaces of a shared store: whole-key and partition-wide apart, summaries in their own") {
    val p = provider(StoreNamespace.KeySchema, StoreNamespace.ValueSchema,
      PrefixKeyScanStateEncoderSpec(StoreNamespace.KeySchema, 1))
    val store = p.getStore(0)
    def table(s: StateStore) = new HeldPunctuationTable(Some(StoreNamespace(s, 0, 2, 2)),
      Some(StoreNamespace(s, 1, 2, 2)), ClosedSummaries.OwnNamespace(StoreNamespace(s, 6, 1, 2)),
      Seq(wholeKey.id -> wholeKey, range.id -> range), keySchema, maxRemembered = 100, partition = (0, 1))
    val t = table(store)
    val whole = t.constantsOf(wholeKey, key(1, 1)).copy()
    t.hold(wholeKey.id, wholeKey, whole, None, closedAt = -1)
    t.hold(range.id, range, t.constantsOf(range, key(2, 9)).copy(), Some(9), closedAt = -1)
    t.remember(range.id, t.constantsOf(range, key(2, 9)).copy(), Some(9))
    assert(StoreNamespace(store, 0, 2, 2).numKeys == 1 && StoreNamespace(store, 1, 2, 2).numKeys == 1)
    assert(t.heldWholeKey(Map(wholeKey.id -> wholeKey)).map(_._3.getBytes.toSeq).toSeq == Seq(whole.getBytes.toSeq))
    // closing marks an open punctuation only; an open one never expires
    t.close(wholeKey.id, wholeKey, whole, batch = 4)
    t.close(wholeKey.id, wholeKey, whole, batch = 6)
    assert(t.held(wholeKey.id, wholeKey, whole).contains((None, 4L)))
    assert(t.releaseExpired(batch = 5, retention = 1, forGood = _ => false) == 1)
    t.flushClosed()
    assert(t.numRemembered == 1)
    // the summary: key (id), value (entries, summary), as join checkpoints have it
    val summary = StoreNamespace(store, 6, 1, 2).iterator().toSeq
    assert(summary.map(_.key.getInt(0)) == Seq(range.id) && summary.head.value.getLong(0) == 1L)
    store.commit()

    val again = table(p.getStore(1))
    assert(again.heldCovers(range.id, range, key(2, 9)) && !again.heldCovers(range.id, range, key(2, 10)))
    assert(again.remembers(range.id, again.constantsOf(range, key(2, 8)).copy(), Some(8)))
    assert(again.held(wholeKey.id, wholeKey, whole).isEmpty && again.count == 1)
    p.close()
  }

  test("coverer: the same answers as covers, a snapshot of what is held and remembered") {
    val p = provider(heldKey, heldValue, NoPrefixKeyStateEncoderSpec(heldKey))
    val store = p.getStore(0)
    val below = KeyScheme(Array.empty[Int], Vector(1 -> false))   // k1<=
    val above = KeyScheme(Array.empty[Int], Vector(0 -> true))    // k0>=
    val ns = StoreNamespace.whole(store)
    val t = new HeldPunctuationTable(Some(ns), Some(ns), ClosedSummaries.BesideHeld(ns),
      Seq(1 -> wholeKey, 2 -> range, 3 -> below, 4 -> above), keySchema, maxRemembered = 100, partition = (0, 1))
    val schemes = Seq(1 -> wholeKey, 2 -> range, 3 -> below, 4 -> above)
    val keys = for (a <- -1 to 6; b <- -1 to 6) yield key(a, b)
    def agree(): Int = schemes.map { case (id, s) =>
      val c = t.coverer(id, s)
      keys.count { k => assert(c(k) == t.covers(id, s, k), s"scheme $s, key (${k.getInt(0)}, ${k.getInt(1)})"); c(k) }
    }.sum
    assert(agree() == 0)                        // nothing held: nothing covered
    t.hold(1, wholeKey, t.constantsOf(wholeKey, key(1, 1)).copy(), None, closedAt = 0)
    t.remember(1, t.constantsOf(wholeKey, key(2, 2)).copy(), None)
    t.holdGreatest(2, range, t.constantsOf(range, key(5, 3)).copy(), Some(3), closedAt = 0)
    t.holdGreatest(3, below, HeldPunctuationTable.NoConstants, Some(2), closedAt = 0)
    t.holdGreatest(4, above, HeldPunctuationTable.NoConstants, Some(4), closedAt = 0)
    val before = agree()
    // 2 whole keys, 5 of key 5's range, 4 rows of k1 at most 2 (of 8 each), 3 rows of k0 at least 4
    assert(before == 2 + 5 + 4 * 8 + 3 * 8)
    val snapshot = t.coverer(3, below)
    t.holdGreatest(3, below, HeldPunctuationTable.NoConstants, Some(4), closedAt = 1)
    assert(!snapshot(key(0, 4)) && t.covers(3, below, key(0, 4)) && t.coverer(3, below)(key(0, 4)))
    assert(agree() > before)
    p.close()
  }
}
