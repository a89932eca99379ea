package punctuated.join.multi

import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.{IntegerType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import punctuated.input.{InputSpec, KeyScheme}
import punctuated.join.{JoinInputState, KeyPunctuation}
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * [[MultiJoinState]] over real state stores: rows stored once per class value and found by
 * point look-ups from either class, purged by key, dense again after a commit and a reopen;
 * held punctuations and closed values in the input's namespaces.
 */
class MultiJoinStateSuite extends PunctuatedStreamTest {

  // input 1 of a(k) ⋈ b(k, v) ⋈ c(v): b(k, v, s), classes k = 0, v = 1, schemes "k" and "v"
  private val k = AttributeReference("k", IntegerType)()
  private val v = AttributeReference("v", IntegerType)()
  private val s = AttributeReference("s", StringType)()
  private val output = Seq(k, v, s)
  private val onK = KeyScheme(Array(0))
  private val onV = KeyScheme(Array(1))
  private val spec = InputSpec("b", -1, Array(0, 1, 2), Seq(Set(0) -> Some(onK), Set(1) -> Some(onV)),
    Seq("k", "v"), None, Seq("k", "v", "s"), Array.empty)
  private val input = MultiJoinInputSpec(1, spec, Seq(k, v), Seq(0, 1))

  private val toRow = UnsafeProjection.create(output.map(_.dataType).toArray)
  private def row(kv: Int, vv: Int, sv: String): UnsafeRow =
    toRow(new GenericInternalRow(Array[Any](kv, vv, UTF8String.fromString(sv)))).copy()
  private val toValue = UnsafeProjection.create(Array[org.apache.spark.sql.types.DataType](IntegerType))
  private def value(x: Int): UnsafeRow = toValue(new GenericInternalRow(Array[Any](x))).copy()

  private class Opened(dir: String, version: Long) {
    spark.streams.active // starts the state-store coordinator the stores report to
    val info = StatefulOperatorStateInfo(dir, UUID.randomUUID(), 0, version, 1)
    val conf = new StateStoreConf(spark.sessionState.conf)
    val meta: StateStore = JoinInputState.openShared(info, 0, conf, new Configuration())
    val state = new MultiJoinState(input, output, meta, info, 0, 100, conf, new Configuration())
    def commit(): Unit = { state.prepareCommit(); state.rowsStore.commit(); meta.commit() }
    /** Releases the stores without committing (RocksDB keeps a store locked until then). */
    def abort(): Unit = { state.abortIfNeeded(); if (!meta.hasCommitted) meta.abort() }
    def strings(c: Int, x: Int): Set[String] = state.rowsWith(c, value(x)).map(_.getUTF8String(2).toString).toSet
  }

  test("rows are found by either class value, purged by key, and stay dense across commits") {
    val dir = Files.createTempDirectory("punctuated-mjoin").toFile.getCanonicalPath
    val v0 = new Opened(dir, 0)
    Seq(row(1, 7, "a"), row(1, 8, "b"), row(1, 7, "c"), row(2, 7, "d")).foreach { r =>
      v0.state.append(r, v0.state.keyOf(r).copy())
    }
    assert(v0.strings(0, 1) == Set("a", "b", "c"))
    assert(v0.strings(1, 7) == Set("a", "c", "d"))
    assert(v0.state.keysWith(0, value(1)).size == 2)
    v0.commit()
    assert(v0.state.numRows == 4)

    val v1 = new Opened(dir, 1)
    assert(v1.strings(0, 1) == Set("a", "b", "c"))
    assert(v1.strings(1, 8) == Set("b"))
    val key17 = v1.state.keyOf(row(1, 7, "")).copy()
    assert(v1.state.isStored(key17))
    assert(v1.state.removeKey(key17) == 2)
    assert(!v1.state.isStored(key17))
    assert(v1.strings(0, 1) == Set("b"))
    assert(v1.strings(1, 7) == Set("d"))
    v1.commit()
    assert(v1.state.numRows == 2)

    val v2 = new Opened(dir, 2)
    assert(v2.strings(0, 1) == Set("b"))
    assert(v2.strings(1, 7) == Set("d"))
    assert(v2.strings(1, 8) == Set("b"))
    assert(v2.state.rowsWith(0, value(1)).size == 1)   // dense: slot 0 only
    v2.abort()
  }

  test("isStored follows appends, shed rows and removed keys of one class value") {
    val dir = Files.createTempDirectory("punctuated-mjoin").toFile.getCanonicalPath
    val v0 = new Opened(dir, 0)
    def key(kv: Int, vv: Int) = v0.state.keyOf(row(kv, vv, "")).copy()
    def add(r: UnsafeRow) = v0.state.append(r, v0.state.keyOf(r).copy())
    add(row(1, 7, "a"))
    assert(v0.state.isStored(key(1, 7)) && !v0.state.isStored(key(1, 8)))   // k = 1's keys now known
    add(row(1, 8, "b"))
    add(row(1, 7, "c"))
    assert(v0.state.isStored(key(1, 8)))
    assert(v0.state.removeRow(row(1, 7, "a"), key(1, 7)))                   // shed: "c" still has (1, 7)
    assert(v0.state.isStored(key(1, 7)))
    assert(v0.state.removeKey(key(1, 7)) == 1)
    assert(!v0.state.isStored(key(1, 7)) && v0.state.isStored(key(1, 8)))
    add(row(1, 7, "d"))                                                     // (1, 7) back after its purge
    assert(v0.state.isStored(key(1, 7)))
    v0.commit()

    val v1 = new Opened(dir, 1)
    assert(v1.state.isStored(key(1, 7)) && v1.state.isStored(key(1, 8)) && !v1.state.isStored(key(2, 7)))
    assert(v1.strings(0, 1) == Set("b", "d"))
    v1.abort()
  }

  test("held punctuations and closed values of the input's schemes, by binding") {
    val dir = Files.createTempDirectory("punctuated-mjoin").toFile.getCanonicalPath
    val v0 = new Opened(dir, 0)
    val p = v0.state.punctuationFor(onK, v0.state.keyOf(row(1, 0, "")))
    assert(v0.state.held(p).isEmpty && !v0.state.remembers(p))
    v0.state.remember(p)
    v0.state.hold(p, -1L)
    assert(v0.state.bindingOfPunctuation(onK, p.constants) == Map(0 -> value(1)))
    assert(v0.state.closedBy(onK, v0.state.keyRowOf(Map(0 -> value(1)))))
    assert(!v0.state.closedBy(onK, v0.state.keyRowOf(Map(0 -> value(2)))))
    assert(!v0.state.closedBy(onV, v0.state.keyRowOf(Map(0 -> value(1), 1 -> value(1)))))
    assert(v0.state.heldOpen.map(_._1) == Seq(onK))
    v0.commit()

    val v1 = new Opened(dir, 1)
    assert(v1.state.covers(v1.state.keyOf(row(1, 9, "")).copy()))     // late: k = 1 closed
    assert(!v1.state.covers(v1.state.keyOf(row(2, 9, "")).copy()))
    v1.state.release(onK, p.constants)
    assert(v1.state.heldOpen.isEmpty && v1.state.numPunctuations == 0)
    // still remembered: closed for the purge, and late
    assert(v1.state.closedBy(onK, v1.state.keyRowOf(Map(0 -> value(1)))))
    assert(v1.state.remembers(KeyPunctuation(onK, p.constants, None)))
    v1.abort()
  }
}

class MultiJoinStateRocksDBSuite extends MultiJoinStateSuite with OnRocksDB
