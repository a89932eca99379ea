package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{BinaryType, IntegerType, LongType}

import punctuated.state.StoreNamespace

/**
 * Lazy completion of the intermediate nodes a plan migration left incomplete, in one cell
 * (the `jisc` strategy, [[MultiJoinMigration]]): JISC's state completion (Aly et al., EDBT
 * 2014, Def. 1, Procedures 1–3, §4.1–4.5) for the multi-way join's nodes, per attribute
 * class value instead of per join-attribute value.
 *
 * A node N is *incomplete* in a cell while its status entry is there. A look-up of N by
 * class `c` with value `v` (a delta probing N, [[MultiJoinTreeProbe.beforeLookup]]) first
 * *completes* `(c, v)` unless it is marked: N's combinations with `c = v` are joined from N's
 * children (the child holding `c` looked up by `v`, completing it first if it is incomplete
 * itself, then the other children by class value — Procedure 2, recursive over a bushy
 * tree), those the chained purge would remove at once left out, and the multiset difference
 * full − present is added (a combination is its row's bytes; rows the batches since the
 * switch stored are already there, so nothing is added twice). Then `(c, v)` is marked:
 * later look-ups by it (JISC's *attempted* keys, §4.4) find the mark and compute nothing.
 * Completion is idempotent (a complete key's difference is empty), so a mark can go at any
 * time; it goes when the value is gone from one of N's inputs having class `c` after a purge
 * (N has no combination with it left to complete, and any future one comes with a new row's
 * delta: §4.2), and every mark goes when N is complete.
 *
 * When is N complete (§4.3, adapted)? At the switch, N's *counting class* c* is the smallest
 * class N shares with its siblings (the class its probes mostly come by), and its *pending*
 * values are the distinct values of c* in the first input (by number) it covers having c* —
 * one pass over that input's rows store, counted (a store's row count cannot be read while
 * it is being updated, so the smaller input is not chosen): every combination of N contains
 * one of that input's rows, so once each pending value is completed (or gone from an input
 * with c*), N holds every combination. The count of pending values is kept in N's status;
 * at zero the status and every mark go, and no look-up of N asks for marks any more.
 *
 * {{{
 *   mjoin of a(k), b(k, v), c(v) -> ((a ⋈ b) ⋈ c), jisc; stored a(1), a(2), b(1, 7), b(2, 8)
 *   switch: {a, b} incomplete, counting class v (shared with c), pending v = 7, 8 (b's values)
 *   c(7) arrives: probes {a, b} by v = 7 -> completes (v, 7): b(1, 7) ⋈ a -> (a(1), b(1, 7))
 *                 added, (v, 7) marked, pending 8 left; c(7) joins it: one result
 *   c(7) again:   (v, 7) marked: no completion
 *   b: "no more v = 8", purged b(2, 8): v = 8 gone from b -> no longer pending -> {a, b}
 *                 complete: its status and marks go
 * }}}
 *
 * Where it is kept: namespace [[MultiJoinLayout.marksNamespace]] of the node in
 * `punctuated-meta` (committed with the batch: a restart in the middle of a migration
 * continues it; a second switch before the first completes keeps the marks of the nodes both
 * plans have, §4.5), keys laid out as the rows stores' (class, value, slot): slot 0 a mark,
 * slot 1 a pending value of c*, class -1 the status (pending count, c*).
 *
 * @param keep   may a completed combination of unit u with this key be stored (its purge
 *               would not remove it at once)?
 * @param stored a completed combination was stored (unit, key): a candidate of the batch's purge
 */
private[multi] final class MultiJoinCompletion(
    tree: MultiJoinTree,
    meta: StateStore,
    unitState: Int => MultiJoinState,
    probe: MultiJoinTreeProbe,
    keep: (Int, UnsafeRow) => Boolean,
    stored: (Int, UnsafeRow) => Unit) {
  import MultiJoinCompletion._

  private val n = tree.n
  private val units = n until n + tree.nodes.size
  private val keyProj = UnsafeProjection.create(Seq(BoundReference(0, IntegerType, nullable = false),
    BoundReference(1, BinaryType, nullable = false), BoundReference(2, LongType, nullable = false)))
  private def entry(c: Int, v: UnsafeRow, slot: Long): UnsafeRow =
    keyProj(new GenericInternalRow(Array[Any](c, v.getBytes, slot))).copy()
  private val statusKey = entry(-1, EmptyValue, 0L)

  /** An incomplete node's status in this task. */
  private final class Status(val ns: StoreNamespace, var pending: Long, val counting: Int) {
    var changed = false
  }
  private val status = mutable.HashMap.empty[Int, Option[Status]]
  private val marks = mutable.HashMap.empty[(Int, Int, UnsafeRow), Boolean]
  private var keys = 0L

  private def statusOf(u: Int): Option[Status] = status.getOrElseUpdate(u, {
    val ns = namespace(meta, tree.inputsOf(u))
    Option(ns.get(statusKey)).map(v => new Status(ns, v.getLong(0), v.getLong(1).toInt))
  })

  /** Is unit `u` a node still incomplete in this cell? */
  def isIncomplete(u: Int): Boolean = u >= n && statusOf(u).exists(_.pending > 0)

  private def marked(u: Int, s: Status, c: Int, v: UnsafeRow): Boolean =
    marks.getOrElseUpdate((u, c, v.copy()), s.ns.get(entry(c, v, 0L)) != null)

  /** Before a look-up of node `u` by class `c` with value `v`: completes `(c, v)` if needed. */
  def ensure(u: Int, c: Int, v: UnsafeRow): Unit = statusOf(u) match {
    case Some(s) if s.pending > 0 && !marked(u, s, c, v) => complete(u, s, c, v)
    case _ =>
  }

  private def complete(u: Int, s: Status, c: Int, v: UnsafeRow): Unit = {
    val x = u - n
    val node = unitState(u)
    val p = tree.inner(x).children.indexWhere(ch => tree.classesOf(ch).contains(c))
    val child = tree.inner(x).children(p)
    if (child >= n) ensure(child, c, v)
    val rows = unitState(child).rowsWith(c, v).toVector
    val full = mutable.ArrayBuffer.empty[(UnsafeRow, UnsafeRow)]
    probe.combinations(x, p, rows.iterator, (row, key) => if (keep(u, key)) full += (row -> key))
    val present = mutable.HashMap.empty[UnsafeRow, Int]
    node.rowsWith(c, v).foreach(r => present(r) = present.getOrElse(r, 0) + 1)
    full.foreach { case (row, key) =>
      present.get(row) match {
        case Some(k) if k > 0 => present(row) = k - 1
        case _ => node.append(row, key); stored(u, key)
      }
    }
    marks((u, c, v.copy())) = true
    s.ns.put(entry(c, v, 0L), Mark)
    keys += 1
    if (c == s.counting) settle(s, v)
  }

  /** Value `v` of the counting class is complete: no longer pending. */
  private def settle(s: Status, v: UnsafeRow): Unit = {
    val k = entry(s.counting, v, 1L)
    if (s.ns.get(k) != null) {
      s.ns.remove(k)
      s.pending -= 1
      s.changed = true
    }
  }

  /**
   * At the switch (nodes the new plan has and the old one does not): node `u` starts
   * incomplete, its pending values counted (one pass over an input's rows; see the class doc).
   */
  def start(u: Int): Unit = {
    val ns = namespace(meta, tree.inputsOf(u))
    clear(ns)
    val c = countingClass(u)
    val j = tree.inputsOf(u).find(unitState(_).classes.contains(c)).get
    var count = 0L
    unitState(j).distinctValues(c).foreach { v => ns.put(entry(c, v, 1L), Mark); count += 1 }
    val s = new Status(ns, count, c)
    s.changed = true
    status(u) = Some(s)
  }

  /** The smallest class node `u` shares with its siblings (its parent's other children). */
  private def countingClass(u: Int): Int = {
    val parent = tree.inner.find(_.children.contains(u)).get
    val others = parent.children.filter(_ != u).flatMap(tree.classesOf).toSet
    tree.classesOf(u).find(others).getOrElse(tree.classesOf(u).head)
  }

  /** Completes every pending value of node `u` now (the `moving_state` strategy over an incomplete node). */
  def completeAll(u: Int): Unit = statusOf(u).foreach { s =>
    val values = s.ns.iterator().filter(p => p.key.getInt(0) == s.counting && p.key.getLong(2) == 1L)
      .map(p => valueRow(p.key.getBinary(1))).toList
    values.foreach { v => ensure(u, s.counting, v); settle(s, v) }
  }

  /**
   * After the batch's purge, for the class values it touched (keys checked or removed,
   * punctuations' bindings): a value gone from one of an incomplete node's inputs having
   * its class needs no completion there — its mark goes, and it is no longer pending.
   */
  def afterPurge(touched: Iterable[(Int, UnsafeRow)]): Unit = {
    val distinct = touched.toSet
    for (u <- units; s <- statusOf(u) if s.pending > 0; (c, v) <- distinct if tree.classesOf(u).contains(c)) {
      if (tree.inputsOf(u).exists(j => unitState(j).classes.contains(c) && unitState(j).rowsWith(c, v).isEmpty)) {
        if (marked(u, s, c, v)) {
          s.ns.remove(entry(c, v, 0L))
          marks((u, c, v.copy())) = false
        }
        if (c == s.counting) settle(s, v)
      }
    }
  }

  /** Before the commit: a node with nothing pending is complete (status and marks go); else its count is written. */
  def finish(): Unit = for (u <- units; s <- statusOf(u)) {
    if (s.pending <= 0) {
      clear(s.ns)
      status(u) = None
    } else if (s.changed) s.ns.put(statusKey, counted(s.pending, s.counting))
  }

  /** Keys completed in this task (`numKeysCompleted`). */
  def keysCompleted: Long = keys

  /** The plan's nodes incomplete in this cell (`numIncompleteStates`, after [[finish]]). */
  def numIncomplete: Int = units.count(isIncomplete)
}

object MultiJoinCompletion {
  private val EmptyValue: UnsafeRow = punctuated.state.EmptyUnsafeRow.row

  private def counted(a: Long, b: Long): UnsafeRow = {
    val r = new UnsafeRow(2)
    r.pointTo(new Array[Byte](24), 24)
    r.setLong(0, a)
    r.setLong(1, b)
    r
  }
  private val Mark: UnsafeRow = counted(0L, 0L)

  private def valueRow(bytes: Array[Byte]): UnsafeRow = {
    val v = new UnsafeRow(1)
    v.pointTo(bytes, bytes.length)
    v
  }

  /** The completion namespace of the node covering `inputs`. */
  private def namespace(meta: StateStore, inputs: Seq[Int]): StoreNamespace =
    StoreNamespace(meta, MultiJoinLayout.marksNamespace(inputs), 3, 2)

  private def clear(ns: StoreNamespace): Unit = ns.iterator().map(_.key.copy()).toList.foreach(ns.remove)

  /** A node the plan no longer has: its completion state goes with its rows (one prefix scan). */
  def drop(meta: StateStore, inputs: Seq[Int]): Unit = clear(namespace(meta, inputs))
}
