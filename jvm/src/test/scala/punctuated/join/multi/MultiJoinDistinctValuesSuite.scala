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
import punctuated.join.JoinInputState
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}
import punctuated.state.StoreNamespace

/**
 * The distinct values per class of an input's stored rows ([[MultiJoinDistinctValues]]) over
 * real state stores: +1 when a value gets its first row, -1 when its last goes, across a
 * flush, commits and reopens; a checkpoint without the counters (rows, no marker) does not
 * count until its rows are gone; and how [[MultiJoinObserved.statistics]] turns the metrics
 * into fan-outs (rows stored / distinct values), falling back to look-ups for such a cell.
 */
class MultiJoinDistinctValuesSuite extends PunctuatedStreamTest {

  // input 1 of a(k) ⋈ b(k, v) ⋈ c(v): b(k, v, s), classes k = 0, v = 1
  private val k = AttributeReference("k", IntegerType)()
  private val v = AttributeReference("v", IntegerType)()
  private val s = AttributeReference("s", StringType)()
  private val output = Seq(k, v, s)
  private val spec = InputSpec("b", -1, Array(0, 1, 2), Seq(Set(0) -> Some(KeyScheme(Array(0))),
    Set(1) -> Some(KeyScheme(Array(1)))), Seq("k", "v"), None, Seq("k", "v", "s"), Array.empty)
  private val input = MultiJoinInputSpec(1, spec, Seq(k, v), Seq(0, 1))

  private val toRow = UnsafeProjection.create(output.map(_.dataType).toArray)
  private def row(kv: Int, vv: Int, sv: String): UnsafeRow =
    toRow(new GenericInternalRow(Array[Any](kv, vv, UTF8String.fromString(sv)))).copy()

  private class Opened(dir: String, version: Long) {
    spark.streams.active // starts the state-store coordinator the stores report to
    val info = StatefulOperatorStateInfo(dir, UUID.randomUUID(), 0, version, 1)
    val conf = new StateStoreConf(spark.sessionState.conf)
    val meta: StateStore = JoinInputState.openShared(info, 0, conf, new Configuration())
    val state = new MultiJoinState(input, output, meta, info, 0, 100, conf, new Configuration())
    def add(r: UnsafeRow): Unit = state.append(r, state.keyOf(r).copy())
    def remove(kv: Int, vv: Int): Int = state.removeKey(state.keyOf(row(kv, vv, "")).copy())
    def commit(): Unit = { state.prepareCommit(); state.rowsStore.commit(); meta.commit() }
    def abort(): Unit = { state.abortIfNeeded(); if (!meta.hasCommitted) meta.abort() }
    def counts: (Option[Long], Option[Long]) = (state.distinctValuesOf(0), state.distinctValuesOf(1))
  }

  test("a value counts from its first row to its last, across a flush, commits and reopens") {
    val dir = Files.createTempDirectory("punctuated-distinct").toFile.getCanonicalPath
    val v0 = new Opened(dir, 0)
    assert(v0.counts == (Some(0L), Some(0L)) && !v0.state.uncounted) // a fresh state counts
    Seq(row(1, 7, "a"), row(1, 8, "b"), row(1, 7, "c"), row(2, 7, "d")).foreach(v0.add)
    v0.commit()
    assert(v0.counts == (Some(2L), Some(2L))) // k: 1, 2; v: 7, 8

    val v1 = new Opened(dir, 1)
    assert(v1.counts == (Some(2L), Some(2L)))
    v1.add(row(3, 7, "e")) // k = 3 new, v = 7 had rows
    v1.state.flush()       // a mid-task flush: written once, counted once
    assert(v1.remove(1, 8) == 1) // v = 8's last row; k = 1 keeps rows (1, 7)
    v1.commit()
    assert(v1.counts == (Some(3L), Some(1L)))

    val v2 = new Opened(dir, 2)
    assert(v2.counts == (Some(3L), Some(1L)))
    assert(v2.remove(1, 7) == 2 && v2.remove(2, 7) == 1 && v2.remove(3, 7) == 1)
    v2.commit()
    assert(v2.counts == (Some(0L), Some(0L)) && v2.state.numRows == 0)
    val v3 = new Opened(dir, 3)
    assert(v3.counts == (Some(0L), Some(0L)))
    v3.abort()
  }

  test("a checkpoint without the counters: uncounted while the input holds rows, exact once they are gone") {
    val dir = Files.createTempDirectory("punctuated-distinct").toFile.getCanonicalPath
    val v0 = new Opened(dir, 0)
    Seq(row(1, 7, "a"), row(2, 7, "b")).foreach(v0.add)
    v0.commit()
    // as an older checkpoint: rows, and no counters in punctuated-meta
    val v1 = new Opened(dir, 1)
    val ns = StoreNamespace(v1.meta, MultiJoinLayout.distinctNamespace(1), 1, 1)
    val keys = ns.iterator().map(_.key.copy()).toList
    assert(keys.size == 3, keys) // k, v and the marker
    keys.foreach(ns.remove)
    v1.commit()

    val v2 = new Opened(dir, 2)
    assert(v2.state.uncounted && v2.counts == (None, None))
    v2.add(row(3, 8, "c"))
    assert(v2.remove(1, 7) == 1)
    v2.commit()
    assert(v2.state.uncounted && v2.counts == (None, None)) // rows left: still uncounted
    val v3 = new Opened(dir, 3)
    assert(v3.state.uncounted)
    assert(v3.remove(2, 7) == 1 && v3.remove(3, 8) == 1)
    v3.commit()
    assert(!v3.state.uncounted && v3.counts == (Some(0L), Some(0L))) // no rows: exact from here
    val v4 = new Opened(dir, 4)
    assert(!v4.state.uncounted && v4.counts == (Some(0L), Some(0L)))
    v4.add(row(4, 9, "d"))
    v4.add(row(5, 9, "e"))
    v4.commit()
    assert(v4.counts == (Some(2L), Some(1L)))
  }

  test("statistics: fan-out = rows stored / distinct values; from look-ups while a cell is uncounted") {
    val classes = Seq(Seq(0), Seq(0, 1), Seq(1))
    val base = Map("input0RowsArrived" -> 10L, "input1RowsArrived" -> 10L, "input2RowsArrived" -> 12L,
      "input0RowsStored" -> 20L, "input1RowsStored" -> 20L, "input2RowsStored" -> 24L,
      "input0Probes.c0" -> 10L, "input0ProbeMatches.c0" -> 10L,
      "input1Probes.c0" -> 10L, "input1ProbeMatches.c0" -> 0L, // arrival order: a probed b before b came
      "input1Probes.c1" -> 0L, "input1ProbeMatches.c1" -> 0L,   // a plan that never looks b up by v
      "input2Probes.c1" -> 10L, "input2ProbeMatches.c1" -> 0L)
    val counted = base ++ Map("input0DistinctValues.c0" -> 20L, "input1DistinctValues.c0" -> 20L,
      "input1DistinctValues.c1" -> 2L, "input2DistinctValues.c1" -> 2L,
      "input0UncountedCells" -> 0L, "input1UncountedCells" -> 0L, "input2UncountedCells" -> 0L)
    val stats = MultiJoinObserved.statistics(counted.get, classes).get
    assert(stats.rate == Seq(10.0, 10.0, 12.0) && stats.stored == Seq(20.0, 20.0, 24.0))
    assert(stats.fanout == Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> 10.0), Map(1 -> 12.0)), stats.toJson)
    // input 1 uncounted in some cell: its fan-outs from look-ups (0 found by k; 1 without look-ups by v)
    val legacy = MultiJoinObserved.statistics((counted + ("input1UncountedCells" -> 1L)).get, classes).get
    assert(legacy.fanout == Seq(Map(0 -> 1.0), Map(0 -> 0.0, 1 -> 1.0), Map(1 -> 12.0)), legacy.toJson)
    // a progress without the counters' metrics: every fan-out from look-ups
    val old = MultiJoinObserved.statistics(base.get, classes).get
    assert(old.fanout == Seq(Map(0 -> 1.0), Map(0 -> 0.0, 1 -> 1.0), Map(1 -> 0.0)), old.toJson)
    // an input storing nothing: 1
    val empty = MultiJoinObserved.statistics((counted + ("input2RowsStored" -> 0L) + ("input2DistinctValues.c1" -> 0L)).get,
      classes).get
    assert(empty.fan(2, 1) == 1.0)
    // another operator's progress (a required metric missing): none
    assert(MultiJoinObserved.statistics((base - "input0RowsStored").get, classes).isEmpty)
  }
}

/** [[MultiJoinDistinctValuesSuite]] on RocksDB state stores. */
class MultiJoinDistinctValuesRocksDBSuite extends MultiJoinDistinctValuesSuite with OnRocksDB
