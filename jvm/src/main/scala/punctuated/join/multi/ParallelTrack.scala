package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GenericInternalRow, Predicate, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{IntegerType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String
import org.json4s.jackson.JsonMethods

import punctuated.state.StoreNamespace

/**
 * The `parallel_track` strategy of a plan migration in one cell ([[MultiJoinMigration]]):
 * Parallel Track (Zhu, Rundensteiner and Heineman, SIGMOD 2004), the baseline JISC (Aly et
 * al., EDBT 2014, §2 and §6) compares with. At the switch the old plan goes on running beside
 * the new one on the same input; the old plan's intermediate nodes hold every combination,
 * the new plan's only combinations of *new* rows (arrived at or after the switch); each
 * result is produced once: those of new rows only by the new plan, those with an old row by
 * the old plan (PT's duplicate elimination); the old plan is dropped once no old row is left.
 *
 * How it is kept here, per cell:
 *  - leaf state stays shared (it does not depend on the plan): the old plan probes the
 *    inputs' rows stores; the new plan probes a *shadow* of each input holding its new rows
 *    only (namespace [[MultiJoinLayout.parallelNamespace]] of `punctuated-meta`, laid out as a
 *    rows store): a new row is stored in both, a purge removes its key from both. So a
 *    leaf row's arrival batch is never stored, the inputs' rows stores keep their layout (a
 *    checkpoint of an earlier version reads the same), and new rows cost one more write each
 *    while the old plan runs;
 *  - a node only the new plan has starts empty in its usual storage; a node both plans have
 *    stays the old plan's (every combination) and the new plan keeps its own copy (new rows
 *    only) in its parallel namespace; a node only the old plan has stays where it is;
 *  - each new row climbs both plans ([[MultiJoinTreeProbe]]); its new plan's results are its
 *    results of new rows only, a sub-multiset of the old plan's for the same row: emitted
 *    are the new plan's, then the old plan's minus those (a multiset difference on the
 *    output rows, per arriving row — the results of new rows only the old plan also makes
 *    are dropped, as PT drops them by timestamps);
 *  - the old rows per input are counted (`punctuated-meta`, [[MultiJoinLayout.parallelStatus]]):
 *    the rows the input stores at the switch (one pass over its rows store, counting: a
 *    store's row count cannot be read while it is being updated), less each purge's rows not
 *    in the shadow — exact, and no scan after the switch. At zero in every input the old plan is dropped at the end of the
 *    batch, one pass: its nodes only it has emptied, each shared node's copy moved into the
 *    node's storage (the node emptied first), the shadows and the counts removed. The new
 *    plan then holds every combination and runs alone.
 *
 * {{{
 *   batch 5: switch (((a ⋈ b) ⋈ c) -> (a ⋈ (b ⋈ c)), parallel_track): stored a(1), b(1, 7), c(7),
 *            {a, b} = (a(1), b(1, 7)); old rows a: 1, b: 1, c: 1; {b, c} starts empty
 *   batch 6: b(1, 8) arrives: old plan: {a, b} += (a(1), b(1, 8)), no result (no c(8));
 *            new plan: shadow of b += b(1, 8), {b, c} gets nothing (no new c)
 *            c(8) arrives: old plan: joins (a(1), b(1, 8)): one result (a(1) is old);
 *            new plan: joins new b(1, 8) -> {b, c} += (b(1, 8), c(8)), probes a's shadow: none
 *   batch 9: punctuations purge a(1), b(1, 7), c(7): old rows 0, 0, 0 -> the old plan is dropped
 * }}}
 *
 * A restart in the middle continues it: the old plan, the switch batch and the counts are in
 * the state. A second switch while the old plan still runs (overlapping migrations) first
 * gives the new plan up — its nodes only it has emptied (they hold new rows only), the
 * copies and shadows removed — and migrates from the old plan (complete) to the newest by the
 * strategy asked for; under `parallel_track` every row stored then is old again. A switch to
 * `parallel_track` over an old plan an earlier `jisc` switch left incomplete completes it first
 * (as `moving_state` does).
 *
 * Metrics: `numParallelPlans` counts the cells still running an old plan, `numIncompleteStates`
 * the new plan's (node, cell) pairs there (each holds new rows only).
 *
 * @param task the task's state and purge check ([[ParallelTrack.Host]])
 */
private[multi] final class ParallelTrack(task: ParallelTrack.Host) {
  // per instance: a projection reuses its output row, and tasks of other cells run concurrently
  private val intProj = UnsafeProjection.create(Seq(BoundReference(0, IntegerType, nullable = false)))
  private def intKey(i: Int): UnsafeRow = intProj(new GenericInternalRow(Array[Any](i))).copy()
  private val longProj = UnsafeProjection.create(Seq(BoundReference(0, LongType, nullable = false)))
  private def long(v: Long): UnsafeRow = longProj(new GenericInternalRow(Array[Any](v))).copy()
  private val statusProj = UnsafeProjection.create(Seq(BoundReference(0, LongType, nullable = false),
    BoundReference(1, StringType, nullable = false)))
  private def status(from: MultiJoinPlan.Join, since: Long): UnsafeRow = statusProj(new GenericInternalRow(
    Array[Any](since, UTF8String.fromString(JsonMethods.compact(JsonMethods.render(from.toJValue)))))).copy()

  private val tree = task.tree
  private val n = tree.n
  private val header = StoreNamespace(task.meta, MultiJoinLayout.parallelStatus, 1, 2)
  private val countsNs = StoreNamespace(task.meta, MultiJoinLayout.parallelStatus + 1, 1, 1)

  /** The old plan still running in this cell, if any (from the state). */
  private var old: Option[MultiJoinPlan.Join] = Option(header.get(intKey(0))).map { v =>
    MultiJoinPlan.fromJValue(JsonMethods.parse(v.getUTF8String(1).toString)).asInstanceOf[MultiJoinPlan.Join]
  }
  private var counts: Array[Long] = old.map(_ => (0 until n).map { i =>
    Option(countsNs.get(intKey(i))).map(_.getLong(0)).getOrElse(0L)
  }.toArray).orNull
  private var changed = false
  private var keys = 0L
  /** Rows removed by giving a plan up or dropping one (`numRemovedStateRows`). */
  var cleared = 0L

  /** Is an old plan running beside the current one in this cell? */
  def active: Boolean = old.isDefined

  private val shadows = mutable.HashMap.empty[Int, MultiJoinState]
  private val copies = mutable.HashMap.empty[Seq[Int], MultiJoinState]
  private def shadow(i: Int): MultiJoinState = shadows.getOrElseUpdate(i,
    task.inMeta(Seq(i), MultiJoinLayout.parallelNamespace(Seq(i))))
  private def copyOf(covered: Seq[Int]): MultiJoinState = copies.getOrElseUpdate(covered,
    task.inMeta(covered, MultiJoinLayout.parallelNamespace(covered)))

  /** The states this strategy keeps beside the task's (committed with them). */
  def states: Iterable[MultiJoinState] = shadows.values ++ copies.values

  private def nodesOf(p: MultiJoinPlan.Join): Seq[Seq[Int]] = MultiJoinMigration.nodeSets(p)

  /**
   * At a switch: an old plan still running here is given up first (overlapping migrations),
   * and the migration is then from it. Returns the migration to make.
   */
  def beforeSwitch(m: MultiJoinMigration): MultiJoinMigration = old match {
    case None => m
    case Some(p) =>
      // the plan the batch before ran holds new rows only in its nodes the old plan lacks
      nodesOf(m.from).filterNot(nodesOf(p).contains).foreach(c => cleared += task.nodeStateOf(c).clear())
      removeParallelState(p, m.from)
      m.copy(from = p)
  }

  /** The switch to the current plan from `from` under `parallel_track` (after [[beforeSwitch]]). */
  def start(from: MultiJoinPlan.Join): Unit = {
    val oldTree = task.treeOf(from)
    if (oldTree.nodes.nonEmpty) {
      // an old plan an earlier jisc switch left incomplete: completed now (it must hold everything)
      val unit = unitOf(oldTree, parallel = false)
      val probe = probeOf(oldTree, parallel = false)
      val completion = new MultiJoinCompletion(oldTree, task.meta, unit, probe,
        (u, key) => task.keep(oldTree.inputsOf(u).toSet, unit(u), key), (u, key) => task.storedNode(unit(u), key))
      probe.beforeLookup = completion.ensure // a node's completion completes the incomplete nodes it probes
      oldTree.nodes.indices.foreach(k => completion.completeAll(n + k))
      completion.finish()
      keys += completion.keysCompleted
    }
    nodesOf(tree.plan).foreach { c =>
      if (nodesOf(from).contains(c)) cleared += copyOf(c).clear()
      else { cleared += task.nodeStateOf(c).clear(); MultiJoinCompletion.drop(task.meta, c) }
    }
    (0 until n).foreach(i => cleared += shadow(i).clear())
    old = Some(from)
    counts = (0 until n).map(i => task.leaf(i).storedRows.size.toLong).toArray
    header.put(intKey(0), status(from, task.batch))
    changed = true
  }

  // ---- the two plans as the rows climb them ------------------------------------------

  /** A unit's state under `plan`'s tree: the old plan's are the task's; the new plan's new rows only. */
  private def unitOf(t: MultiJoinTree, parallel: Boolean): Int => MultiJoinState = { u =>
    if (u < n) { if (parallel) shadow(u) else task.leaf(u) }
    else {
      val c = t.inputsOf(u)
      if (parallel && old.exists(p => nodesOf(p).contains(c))) copyOf(c) else task.nodeStateOf(c)
    }
  }
  private def probeOf(t: MultiJoinTree, parallel: Boolean): MultiJoinTreeProbe = {
    val classes = task.numClasses
    // the new plan's look-ups are not the workload's (the old plan's observe it)
    val (p, m) = if (parallel) (Array.fill(n)(new Array[Long](classes)), Array.fill(n)(new Array[Long](classes)))
      else (task.probes, task.matches)
    new MultiJoinTreeProbe(t, unitOf(t, parallel), classes, p, m, task.coordinates)
  }

  private final class Track(t: MultiJoinTree, parallel: Boolean) {
    val probe: MultiJoinTreeProbe = probeOf(t, parallel)
    val unit: Int => MultiJoinState = unitOf(t, parallel)
    private val attrs: Seq[Attribute] = t.inner.last.childOutput
    val condition: InternalRow => Boolean = task.condition match {
      case Some(c) => Predicate.create(c, attrs).eval
      case None => _ => true
    }
    val output: UnsafeProjection = UnsafeProjection.create(task.projection, attrs)
  }
  private lazy val oldTrack = new Track(task.treeOf(old.get), parallel = false)
  private lazy val newTrack = new Track(tree, parallel = true)

  /**
   * A new row of input `i` (not yet stored) climbs both plans: its results (copies), each once.
   * `store`: its combinations are stored (the row will be).
   */
  def process(i: Int, value: UnsafeRow, key: UnsafeRow, store: Boolean): Seq[InternalRow] = {
    val out = mutable.ArrayBuffer.empty[InternalRow]
    val fresh = mutable.HashMap.empty[UnsafeRow, Int]
    newTrack.probe.climb(i, value, key, store, { r =>
      if (newTrack.condition(r)) {
        val o = newTrack.output(r).copy()
        out += o
        fresh(o) = fresh.getOrElse(o, 0) + 1
      }
    }, (u, k) => task.storedNode(newTrack.unit(u), k))
    oldTrack.probe.climb(i, value, key, store, { r =>
      if (oldTrack.condition(r)) {
        val o = oldTrack.output(r)
        fresh.get(o) match {
          case Some(c) if c > 0 => fresh(o) = c - 1 // of new rows only: the new plan's
          case _ => out += o.copy()
        }
      }
    }, (u, k) => task.storedNode(oldTrack.unit(u), k))
    out.toSeq
  }

  /** Input `i` stored a new row: the new plan's leaf has it too. */
  def stored(i: Int, value: UnsafeRow, key: UnsafeRow): Unit = shadow(i).append(value, key)

  /** Input `j`'s purge removed `removed` rows with `key`: as many left its shadow, the rest were old. */
  def removed(j: Int, key: UnsafeRow, removed: Int): Unit = {
    val fromNew = shadow(j).removeKey(key)
    counts(j) -= removed - fromNew
    changed = true
  }

  /** The node states the purge checks beside the current plan's: the old plan's only, the copies. */
  def nodesToPurge: Seq[(MultiJoinState, Set[Int])] = old.toSeq.flatMap { p =>
    nodesOf(p).filterNot(nodesOf(tree.plan).contains).map(c => task.nodeStateOf(c) -> c.toSet) ++
      nodesOf(tree.plan).filter(nodesOf(p).contains).map(c => copyOf(c) -> c.toSet)
  }

  /** Before the commit: the old plan is dropped when no old row is left in any input; else the counts are written. */
  def finish(): Unit = old.foreach { p =>
    if (counts.forall(_ <= 0)) {
      nodesOf(p).filterNot(nodesOf(tree.plan).contains).foreach(c => cleared += task.nodeStateOf(c).clear())
      nodesOf(tree.plan).filter(nodesOf(p).contains).foreach { c =>
        val node = task.nodeStateOf(c)
        val copy = copyOf(c)
        copy.flush()
        val rows = copy.storedRows.toList
        cleared += node.clear()
        rows.foreach(r => node.append(r, node.keyOf(r).copy()))
      }
      removeParallelState(p, tree.plan)
    } else if (changed) (0 until n).foreach(i => countsNs.put(intKey(i), long(counts(i))))
  }

  /** The copies of the nodes `p` and `now` share, the shadows and the status: removed. */
  private def removeParallelState(p: MultiJoinPlan.Join, now: MultiJoinPlan.Join): Unit = {
    nodesOf(now).filter(nodesOf(p).contains).foreach(c => cleared += copyOf(c).clear())
    (0 until n).foreach { i => cleared += shadow(i).clear(); countsNs.remove(intKey(i)) }
    header.remove(intKey(0))
    old = None
    counts = null
  }

  /** Cells still running an old plan (`numParallelPlans`: 0 or 1, after [[finish]]). */
  def numParallelPlans: Long = if (active) 1L else 0L
  /** The current plan's nodes holding new rows only here (`numIncompleteStates`, after [[finish]]). */
  def numIncomplete: Long = if (active) tree.nodes.size.toLong else 0L
  /** Keys completed by this strategy (an incomplete old plan completed at the switch). */
  def keysCompleted: Long = keys
}

object ParallelTrack {
  /** What the strategy needs of the task ([[MultiJoinTask]]). */
  private[multi] trait Host {
    def tree: MultiJoinTree
    def meta: StateStore
    def batch: Long
    def numClasses: Int
    def coordinates: IndexedSeq[Int]
    def probes: Array[Array[Long]]
    def matches: Array[Array[Long]]
    def condition: Option[Expression]
    def projection: Seq[Attribute]
    /** Input `i`'s state. */
    def leaf(i: Int): MultiJoinState
    /** The state of the node covering `covered` in its usual storage (one object per node and task). */
    def nodeStateOf(covered: Seq[Int]): MultiJoinState
    /** A state laid out as the unit covering `covered`, in namespace `ns` of `punctuated-meta`. */
    def inMeta(covered: Seq[Int], ns: Int): MultiJoinState
    /** The tree of a plan over the task's inputs. */
    def treeOf(plan: MultiJoinPlan.Join): MultiJoinTree
    /** May a combination with this key of a node covering `covered` be stored (not purgeable at once)? */
    def keep(covered: Set[Int], state: MultiJoinState, key: UnsafeRow): Boolean
    /** A combination was stored in a node's state this batch (a candidate of the batch's purge). */
    def storedNode(state: MultiJoinState, key: UnsafeRow): Unit
  }
}
