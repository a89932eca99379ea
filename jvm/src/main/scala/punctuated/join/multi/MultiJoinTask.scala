package punctuated.join.multi

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{JoinedRow, Predicate, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStoreConf

import punctuated.errors.PunctuatedErrors
import punctuated.input.KeyScheme
import punctuated.join.{CompletingIterator, JoinInputState, KeyPunctuation, WatermarkPunctuations}
import punctuated.join.shedding.SheddingMetrics
import punctuated.state.PunctuatedJoinMetrics

/**
 * One cell (partition) of one micro-batch of [[PunctuatedMultiJoinExec]]: each input in
 * turn (input 0, 1, ... n-1), each row probing the other inputs' stored rows and stored
 * unless its chained-purge closure is already complete (see [[atStartOf]]); each input's
 * punctuations of the batch applied once it has sent all its rows; then the chained purge
 * ([[ChainedPurge]]), releases, commit. Under a tree plan, each row's delta climbs the tree
 * ([[MultiJoinTreeProbe]]) and the intermediate nodes' combinations are purged after the
 * inputs' rows ([[purgeNodes]]).
 *
 * {{{
 *   bids ⋈ auctions ⋈ persons, an auction and its seller stored, both closed (unique keys):
 *   a bid of that auction joins them and is not stored (no future auction or person joins it)
 * }}}
 *
 * @param cell the partition, which is the hypercube cell
 */
private[multi] class MultiJoinTask(
    exec: PunctuatedMultiJoinExec,
    cell: Int,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration) {
  import PunctuatedJoinMetrics._
  import exec.{metric, settings}

  private val info = exec.getStateInfo
  private val batch = info.storeVersion
  private val n = exec.inputs.size

  private val meta = JoinInputState.openShared(info, cell, storeConf, hadoopConf)
  private val rangeLookups = MultiJoinInputSpec.rangeLookups(exec.inputs)
  private val states: IndexedSeq[MultiJoinState] = exec.inputs.map { in =>
    new MultiJoinState(in, exec.childOutputs(in.number), meta, info, cell, settings.maxRemembered,
      storeConf, hadoopConf, rangeIndexed = MultiJoinInputSpec.indexedFor(exec.inputs, in.number))
  }
  private val tree = exec.tree
  /** The intermediate nodes' states (unit n + k), as virtual inputs holding no punctuations. */
  private val nodeStates: IndexedSeq[MultiJoinState] = tree.nodes.indices.map(k => nodeState(tree.nodes(k).inputs, n + k))
  private def unitState(u: Int): MultiJoinState = if (u < n) states(u) else nodeStates(u - n)
  /** Rows stores of nodes the plan does not have (of the checkpoint's first plan): open, empty. */
  private val idle: Seq[(Seq[Int], MultiJoinState)] = exec.storedNodes
    .filterNot(s => tree.nodes.exists(_.inputs.sorted == s.sorted)).zipWithIndex
    .map { case (s, x) => s.sorted -> nodeState(s, 2 * n + x) }
  private val idleStates = idle.map(_._2)
  private val allStates = states ++ nodeStates ++ idleStates
  /** Nodes of no plan this task runs but a migration touches, in `punctuated-meta` (by the inputs they cover). */
  private val otherNodes = mutable.LinkedHashMap.empty[Seq[Int], MultiJoinState]
  /** Every state the task commits: its plan's, the idle stores, and those a migration opened. */
  private def committing: Seq[MultiJoinState] = allStates ++ otherNodes.values ++ (if (parallelOpened) parallel.states else Nil)

  /** The one state object of the node covering `covered` in its usual storage, whichever plan has it. */
  private def nodeStateOf(covered: Seq[Int]): MultiJoinState =
    (tree.nodes.map(_.inputs.sorted).zip(nodeStates) ++ idle).find(_._1 == covered.sorted).map(_._2)
      .getOrElse(otherNodes.getOrElseUpdate(covered.sorted, nodeState(covered.sorted, 3 * n + otherNodes.size)))

  /**
   * The state of a node covering `covered` (its rows' layout order) as unit `unit`: in its own
   * rows store if the checkpoint has one ([[PunctuatedMultiJoinExec.storedNodes]]), else in
   * its namespace of `punctuated-meta` ([[MultiJoinMigration]]).
   */
  private def nodeState(covered: Seq[Int], unit: Int): MultiJoinState = {
    val own = exec.storedNodes.exists(_.sorted == covered.sorted)
    new MultiJoinState(tree.specOf(covered, unit), tree.outputOfInputs(covered), meta, info, cell,
      settings.maxRemembered, storeConf, hadoopConf, Some(MultiJoinLayout.node(covered)),
      if (own) None else Some(MultiJoinLayout.nodeNamespace(covered)))
  }
  /** Per input, data rows arrived in their home cell ([[MultiJoinObserved]]). */
  private val arrived = new Array[Long](n)
  /** Per input j and class c, look-ups of j's state by a value of c, and the rows they found. */
  private val probes = Array.fill(n)(new Array[Long](exec.classTypes.size))
  private val matches = Array.fill(n)(new Array[Long](exec.classTypes.size))
  private val climber = if (tree.isMJoin) None
    else Some(new MultiJoinTreeProbe(tree, unitState, exec.classTypes.size, probes, matches,
      exec.cellCoordinates(cell)))
  /** Lazy completion of nodes a migration left incomplete ([[MultiJoinCompletion]]); tree plans only. */
  private val completion = climber.map { c =>
    val lazily = new MultiJoinCompletion(tree, meta, unitState, c,
      (u, key) => ChainedPurge.check(View, tree.inputsOf(u).toSet, unitState(u).bindingOf(key),
        MultiJoinState.MaxPartials) != ChainedPurge.Purgeable,
      (u, key) => nodesStoredNow += (u -> key))
    c.beforeLookup = lazily.ensure
    lazily
  }
  /** Node combinations stored this batch by a migration's other plan, by state (purge candidates). */
  private val statesStoredNow = mutable.LinkedHashSet.empty[(MultiJoinState, UnsafeRow)]
  /** The old plan running beside this one, under `parallel_track` ([[ParallelTrack]]). */
  private var parallelOpened = false // a failed task's listener does not read its status first
  private lazy val parallel: ParallelTrack = { parallelOpened = true; new ParallelTrack(new ParallelTrack.Host {
    override def tree: MultiJoinTree = MultiJoinTask.this.tree
    override def meta: org.apache.spark.sql.execution.streaming.state.StateStore = MultiJoinTask.this.meta
    override def batch: Long = MultiJoinTask.this.batch
    override def numClasses: Int = exec.classTypes.size
    override def coordinates: IndexedSeq[Int] = exec.cellCoordinates(cell)
    override def probes: Array[Array[Long]] = MultiJoinTask.this.probes
    override def matches: Array[Array[Long]] = MultiJoinTask.this.matches
    override def condition: Option[org.apache.spark.sql.catalyst.expressions.Expression] = exec.condition
    override def projection: Seq[org.apache.spark.sql.catalyst.expressions.Attribute] = exec.projection
    override def leaf(i: Int): MultiJoinState = states(i)
    override def nodeStateOf(covered: Seq[Int]): MultiJoinState = MultiJoinTask.this.nodeStateOf(covered)
    override def inMeta(covered: Seq[Int], ns: Int): MultiJoinState =
      new MultiJoinState(tree.specOf(covered, 4 * n + covered.map(1 << _).sum), tree.outputOfInputs(covered), meta,
        info, cell, settings.maxRemembered, storeConf, hadoopConf, None, Some(ns))
    override def treeOf(plan: MultiJoinPlan.Join): MultiJoinTree =
      new MultiJoinTree(plan, exec.inputs, exec.childOutputs)
    override def keep(covered: Set[Int], state: MultiJoinState, key: UnsafeRow): Boolean =
      ChainedPurge.check(View, covered, state.bindingOf(key), MultiJoinState.MaxPartials) != ChainedPurge.Purgeable
    override def storedNode(state: MultiJoinState, key: UnsafeRow): Unit = {
      statesStoredNow += (state -> key)
      stored += 1
    }
  }) }
  /** Load shedding under `spark.punctuated.shedding.maxStateRows` ([[MultiJoinShedder]]). */
  private val shedder = if (!settings.shedding.enabled) None
    else Some(new MultiJoinShedder(settings.shedding, meta, batch, cell, states.map(_.classes)))
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
    committing.foreach(_.abortIfNeeded())
    if (!meta.hasCommitted) meta.abort()
  })

  private val specs = exec.inputs.map(_.spec)
  private val outputs = exec.childOutputs
  private val toUnsafe = outputs.map(o => UnsafeProjection.create(o, o))
  /** The root's combined row: its children's columns in child order (the MJoin: input order). */
  private val allAttrs = tree.inner.last.childOutput
  private val condition: InternalRow => Boolean = exec.condition match {
    case Some(c) => Predicate.create(c, allAttrs).eval
    case None => _ => true
  }
  private val outputProj = UnsafeProjection.create(exec.projection, allAttrs)
  /** The inputs' rows as one row, in input order (nested views). */
  private val joins = Array.fill(math.max(n - 1, 1))(new JoinedRow)
  private def joined(rows: Array[InternalRow]): InternalRow = {
    var r: InternalRow = joins(0)(rows(0), rows(1))
    var i = 2
    while (i < n) { r = joins(i - 1)(r, rows(i)); i += 1 }
    r
  }

  // ---- cells ------------------------------------------------------------------------------

  private val coordinates: IndexedSeq[Int] = exec.cellCoordinates(cell)
  private val coordinateOf: IndexedSeq[UnsafeRow => Int] = exec.classTypes.indices.map(exec.coordinateOf)

  /** Is this the cell of a row with this key of input `i` (every class's coordinate agrees)? */
  private def isHome(i: Int, key: UnsafeRow): Boolean = states(i).classes.indices.forall { q =>
    val c = states(i).classes(q)
    coordinateOf(c)(states(i).classValueView(key, q)) == coordinates(c)
  }

  /** Does the copy of a punctuation binding `bound` that comes to this cell count it? */
  private def counts(bound: Set[Int]): Boolean =
    coordinates.indices.forall(c => bound(c) || coordinates(c) == 0)

  /** Does this cell count input i's rows (the one copy: coordinate 0 on the classes i lacks)? */
  private val countsRows: IndexedSeq[Boolean] = (0 until n).map(i => counts(states(i).classes.toSet))

  // ---- rows -------------------------------------------------------------------------------

  private val newPunctuations = IndexedSeq.fill(n)(mutable.ArrayBuffer.empty[KeyPunctuation])
  private val storedNow = mutable.ArrayBuffer.empty[(Int, UnsafeRow)]
  /** Combinations stored in intermediate nodes this batch, by unit and key. */
  private val nodesStoredNow = mutable.LinkedHashSet.empty[(Int, UnsafeRow)]
  private var stored = 0L
  private var purged = 0L
  private var abandoned = 0L
  private var checked = 0L

  /** The plan switch of this batch, if it makes one, before its rows ([[MultiJoinMigration]]). */
  private object migration {
    var cleared = 0L
    private var keys = 0L
    private val switching = exec.migration.filter(_.since == batch)

    def switchPlan(): Unit = switching.map(parallel.beforeSwitch).filter(_.from != tree.plan).foreach { m =>
      if (m.strategy == "parallel_track") parallel.start(m.from) else others(m)
    }

    /** The switch under `jisc` or `moving_state`. */
    private def others(m: MultiJoinMigration): Unit = {
      // nodes of the old plan only: emptied (the current plan's state object if it shares the storage)
      MultiJoinMigration.dropped(m, tree.plan).foreach { covered =>
        cleared += nodeStateOf(covered).clear()
        MultiJoinCompletion.drop(meta, covered)
      }
      val added = MultiJoinMigration.added(m, tree.plan)
      val addedUnits = tree.nodes.indices.filter(k => added.contains(tree.nodes(k).inputs)).map(n + _)
      // a node both plans have that an earlier jisc migration left incomplete (overlapping migrations)
      val pending = completion.exists(l => tree.nodes.indices.map(n + _).exists(l.isIncomplete))
      if (m.strategy == "jisc" || pending) {
        // new nodes start incomplete and are completed key by key when probed (MultiJoinCompletion);
        // moving_state completes every incomplete node now, bottom-up
        addedUnits.foreach(u => completion.get.start(u))
        if (m.strategy != "jisc") tree.nodes.indices.foreach(k => completion.get.completeAll(n + k))
      } else movingState(addedUnits.map(_ - n))
    }

    /** Nodes of the new plan only, bottom-up: joined from their (complete) children's states. */
    private def movingState(added: Seq[Int]): Unit = {
      added.foreach { k =>
        val st = nodeStates(k)
        val covered = tree.inputsOf(n + k).toSet
        val values = mutable.HashSet.empty[UnsafeRow]
        climber.get.fill(k, unitState(tree.inner(k).children(0)).storedRows, { (row, key) =>
          // a combination its purge would remove at once is not stored (as if purged)
          if (ChainedPurge.check(View, covered, st.bindingOf(key), MultiJoinState.MaxPartials) != ChainedPurge.Purgeable) {
            st.append(row, key)
            values += st.classValue(key, 0)
          }
        })
        st.flush()
        keys += values.size
      }
    }

    def report(): Unit = {
      if (switching.isDefined && cell == 0) metric(MultiJoinMigration.NumMigrations) += 1
      metric(MultiJoinMigration.NumKeysCompleted) += keys + completion.map(_.keysCompleted).getOrElse(0L) +
        parallel.keysCompleted
      metric(MultiJoinMigration.NumIncompleteStates) += completion.map(_.numIncomplete.toLong).getOrElse(0L) +
        parallel.numIncomplete
      metric(MultiJoinMigration.NumParallelPlans) += parallel.numParallelPlans
    }
  }

  /** Joins the inputs' rows of this batch (`iters(i)`: input `i`'s), in input order. */
  def run(iters: IndexedSeq[Iterator[InternalRow]]): Iterator[InternalRow] = {
    migration.switchPlan()
    // a watermark on an input's join column: its range punctuation ts<=w, in every cell (it binds no value)
    for (i <- 0 until n; (scheme, key) <- WatermarkPunctuations.keyPunctuation(specs(i), states(i).classes.size,
        exec.eventTimeWatermark)) newPunctuations(i) += states(i).punctuationFor(scheme, key)
    val start = System.nanoTime
    val out = iters.indices.map(i => atStartOf(i) ++ iters(i).flatMap(row => processRow(row, i))).reduce(_ ++ _) ++
      Iterator.single(()).flatMap { _ => applyPunctuations(n - 1); endOfBatch(); shed(); Iterator.empty }
    val numOutputRows = metric("numOutputRows")
    val counted = out.map { row => numOutputRows += 1; row }
    new CompletingIterator[InternalRow](counted, () => complete(start))
  }

  private def complete(start: Long): Unit = {
    metric("allUpdatesTimeMs") += NANOSECONDS.toMillis(System.nanoTime - start)
    val held = states.map(_.numPunctuations).sum // read before the commit
    val t = System.nanoTime
    parallel.finish()
    completion.foreach(_.finish())
    shedder.foreach(_.finish())
    val allStates = committing
    allStates.foreach(_.prepareCommit())
    val stores = (allStates.map(_.rowsStore) :+ meta).distinct // nodes in punctuated-meta share it
    stores.foreach(_.commit())
    metric("commitTimeMs") += NANOSECONDS.toMillis(System.nanoTime - t)
    // each store's metrics read once (not free: the HDFS-backed provider estimates its maps' size)
    val storeMetrics = stores.map(s => s -> s.metrics).toMap
    // (every input's state is committed here: its rows store is among `stores`)
    val rowsOf = allStates.map(s => s -> s.numRows(storeMetrics)).toMap
    metric("numTotalStateRows") += allStates.map(rowsOf).sum
    metric(PunctuationsHeld) += held
    metric(ClosedValuesRemembered) += states.map(_.numClosedValues).sum
    metric(ClosedValuesForgotten) += states.map(_.numClosedValuesForgotten).sum
    metric(RangeIndexEntries) += states.map(_.numIndexEntries).sum
    metric("stateMemory") += stores.map(storeMetrics(_).memoryUsedBytes).sum
    stores.foreach(s => exec.reportCustomStoreMetrics(storeMetrics(s).customMetrics))
    metric("numUpdatedStateRows") += stored
    val shed = shedder.map(_.shed.sum).getOrElse(0L)
    metric("numRemovedStateRows") += purged + migration.cleared + parallel.cleared + shed
    metric(SheddingMetrics.RowsShed) += shed
    shedder.foreach { s =>
      for (i <- 0 until n) metric(SheddingMetrics.inputRowsShed(i)) += s.shed(i)
      metric(SheddingMetrics.CombinationsShed) += s.shed(n)
    }
    migration.report()
    metric(RowsPurged) += purged
    metric(PunctuatedMultiJoinExec.PurgeChecksAbandoned) += abandoned
    metric(PunctuatedMultiJoinExec.PurgeChecks) += checked
    metric(StateRowsScanned) += allStates.map(_.rowsScanned).sum
    for (i <- 0 until n) {
      metric(MultiJoinObserved.arrived(i)) += arrived(i)
      if (countsRows(i)) {
        metric(MultiJoinObserved.stored(i)) += rowsOf(states(i))
        if (states(i).uncounted) metric(MultiJoinObserved.uncounted(i)) += 1
      }
      states(i).classes.foreach { c =>
        metric(MultiJoinObserved.probes(i, c)) += probes(i)(c)
        metric(MultiJoinObserved.matches(i, c)) += matches(i)(c)
        if (countsRows(i)) states(i).distinctValuesOf(c).foreach(metric(MultiJoinObserved.distinctValues(i, c)) += _)
      }
    }
    exec.reportStoreMetrics()
  }

  private def processRow(row: InternalRow, i: Int): Iterator[InternalRow] = {
    val spec = specs(i)
    val state = states(i)
    if (spec.isPunctuation(row)) {
      punctuation(row, i)
      Iterator.empty
    } else {
      val key = state.keyOf(row).copy()
      if (key.anyNull) Iterator.empty // NULL never joins (inner join)
      else if (!isHome(i, key)) {
        // only here for the punctuation its unique key implies
        spec.unique.foreach(u => newPunctuations(i) += state.punctuationFor(u, key))
        Iterator.empty
      } else if ({ if (countsRows(i)) arrived(i) += 1; state.covers(key) }) {
        late(row, i, counts(state.classes.toSet))
        Iterator.empty
      } else {
        shedder.foreach(_.arrived(i, state.bindingOf(key)))
        val value = toUnsafe(i)(row).copy()
        val complete = closedOnArrival.getOrElseUpdate(key, purgeableNow(i, key))
        val results = if (parallel.active) parallel.process(i, value, key, store = !complete) else climber match {
          case None => probe(i, value, key)
          case Some(c) =>
            // neither is a combination of a row not stored (no future row joins it)
            val out = mutable.ArrayBuffer.empty[InternalRow]
            c.climb(i, value, key, store = !complete, r => if (condition(r)) out += outputProj(r).copy(),
              (u, k) => { nodesStoredNow += (u -> k); stored += 1 })
            out.toSeq
        }
        if (complete) {
          unstored += (i -> key) // no future row can join it: not stored
        } else {
          state.append(value, key)
          if (parallel.active) parallel.stored(i, value, key)
          storedNow += (i -> key)
          stored += 1
        }
        spec.unique.foreach(u => newPunctuations(i) += state.punctuationFor(u, key))
        results.iterator
      }
    }
  }

  /**
   * Input `i`'s turn starts: the inputs before it have sent every row of the batch, so their
   * punctuations of this batch (and those their unique keys imply) are in force for the rows
   * of input `i` and after (they would be at the end of the batch anyway: nothing they cover
   * can arrive any more). A row whose chained-purge closure is complete when it arrives
   * ([[ChainedPurge.check]] over the stored rows and these punctuations) is joined and not
   * stored — as the binary join does not store a row whose partner input closed its key.
   * While input `i`'s rows arrive, only its own rows are stored, and its own rows never enter
   * its closure, so the verdict per key is cached for the input's turn.
   */
  private def atStartOf(i: Int): Iterator[InternalRow] = Iterator.single(()).flatMap { _ =>
    if (i > 0) applyPunctuations(i - 1)
    closedOnArrival.clear()
    Iterator.empty
  }

  /** Per key of the current input: is a row with this key purgeable on arrival? */
  private val closedOnArrival = mutable.HashMap.empty[UnsafeRow, Boolean]
  /** Rows joined and not stored (closure complete on arrival), by input and key. */
  private val unstored = mutable.LinkedHashSet.empty[(Int, UnsafeRow)]

  private def purgeableNow(i: Int, key: UnsafeRow): Boolean =
    ChainedPurge.check(View, i, states(i).bindingOf(key), MultiJoinState.MaxPartials) == ChainedPurge.Purgeable

  /** The order input `i`'s rows probe the others: each next one shares a class with those before. */
  private val probeOrders: IndexedSeq[IndexedSeq[Int]] = (0 until n).map(exec.probeOrder)

  /** Joins input `i`'s row with the other inputs' stored rows: its results (copies). */
  private def probe(i: Int, value: UnsafeRow, key: UnsafeRow): Seq[InternalRow] = {
    val results = mutable.ArrayBuffer.empty[InternalRow]
    val rows = new Array[InternalRow](n)
    rows(i) = value
    val binding = new Array[UnsafeRow](exec.classTypes.size)
    states(i).classes.indices.foreach(q => binding(states(i).classes(q)) = states(i).classValue(key, q))
    val order = probeOrders(i)

    def extend(d: Int): Unit =
      if (d == order.size) {
        val r = joined(rows)
        if (condition(r)) results += outputProj(r).copy()
      } else {
        val j = order(d)
        val st = states(j)
        val by = st.classes.find(c => binding(c) != null).get
        val fresh = st.classes.indices.filter(q => binding(st.classes(q)) == null)
        val candidates = st.rowsWith(by, binding(by))
        if (MultiJoinObserved.once(coordinates, binding, Nil)) probes(j)(by) += 1
        if (MultiJoinObserved.once(coordinates, binding, st.classes)) matches(j)(by) += candidates.size
        var u = 0
        while (u < candidates.size) {
          val partner = candidates(u)
          val k = st.keyOf(partner)
          val agrees = st.classes.indices.forall { q =>
            val c = st.classes(q)
            c == by || binding(c) == null || st.classValueIs(k, q, binding(c))
          }
          if (agrees) {
            fresh.foreach(q => binding(st.classes(q)) = st.classValue(k, q))
            rows(j) = partner
            extend(d + 1)
            fresh.foreach(q => binding(st.classes(q)) = null)
          }
          u += 1
        }
      }
    extend(0)
    results.toSeq
  }

  private def punctuation(row: InternalRow, i: Int): Unit = specs(i).schemeOf(row) match {
    case Some(Some(scheme)) =>
      if (counts(exec.inputs(i).boundClasses(scheme).toSet)) metric(PunctuationsReceived) += 1
      newPunctuations(i) += states(i).punctuationFor(scheme, states(i).keyOf(row))
    case Some(None) =>
      metric(PunctuationsReceived) += 1
    case None if settings.failOnInvalidPunctuations =>
      throw PunctuatedErrors.invalidPunctuation(render(row, i), specs(i).name, specs(i).schemeNames)
    case None =>
      metric(InvalidPunctuationsDropped) += 1
  }

  /** A late row; `counted` in one of the cells its copies come to. */
  private def late(row: InternalRow, i: Int, counted: Boolean): Unit = {
    if (settings.failOnLateRows) {
      val name = specs(i).name
      throw PunctuatedErrors.lateRow(s"Row ${render(row, i)} of $name arrived after $name punctuated its key")
    }
    if (counted) metric(LateRowsDropped) += 1
  }

  private def render(row: InternalRow, i: Int): String = outputs(i).indices.map { c =>
    val v = if (row.isNullAt(c)) "NULL" else row.get(c, outputs(i)(c).dataType)
    s"${outputs(i)(c).name}=$v"
  }.mkString("(", ", ", ")")

  // ---- end of the batch -------------------------------------------------------------------

  private type Binding = ChainedPurge.Binding[UnsafeRow]

  /** The state as [[ChainedPurge]] sees it. */
  private object View extends ChainedPurge.State[UnsafeRow] {
    override def size: Int = n
    override def classes(j: Int): Seq[Int] = states(j).classes
    override def storedKeys(j: Int, binding: Binding): Iterable[Binding] = {
      val st = states(j)
      val by = st.classes.find(binding.contains).get
      st.keysWith(by, binding(by)).map(st.bindingOf).filter { k =>
        k.forall { case (c, v) => binding.get(c).forall(_ == v) }
      }
    }
    override def closed(j: Int, binding: Binding): Boolean = {
      val st = states(j)
      lazy val keyRow = st.keyRowOf(binding)
      st.keySchemes.exists { s =>
        exec.inputs(j).schemeClasses(s).forall(binding.contains) && st.closedBy(s, keyRow)
      }
    }
    override def isStored(j: Int, key: Binding): Boolean = states(j).isStored(keyOf(j, key))
    override def remove(j: Int, key: Binding): Unit = {
      val k = keyOf(j, key)
      val removed = states(j).removeKey(k)
      if (removed > 0) touchedValues ++= key
      if (removed > 0 && !afterShedding) shedder.foreach(_.closed(j, key))
      purged += removed
      if (parallel.active) parallel.removed(j, k, removed)
    }
    private def keyOf(j: Int, key: Binding): UnsafeRow = states(j).keyOfBinding(key)
  }

  /**
   * After the purge: the rows over the budget of `spark.punctuated.shedding.maxStateRows` are
   * shed ([[MultiJoinShedder]]): the inputs' rows and the plan's nodes' combinations. Not while
   * a `parallel_track` migration runs an old plan beside the current one (refused with shedding
   * at `start()`; a checkpoint that was in one when shedding was turned on sheds once it ends).
   */
  private def shed(): Unit = shedder.filterNot(_ => parallel.active).foreach { s =>
    val gone = s.shedOver(states.map(st => st -> Set(st.number)) ++
      nodeStates.indices.map(k => nodeStates(k) -> tree.inputsOf(n + k).toSet))
    if (gone.nonEmpty) purgeAfterShedding(gone)
  }

  private var afterShedding = false

  /**
   * Input keys whose last row was shed are as if purged: the rows joinable with them are
   * checked again (a stored row only some future result through a shed row could have
   * included can go), and the nodes' combinations with them.
   */
  private def purgeAfterShedding(gone: Seq[(Int, UnsafeRow)]): Unit = {
    afterShedding = true // (LIFE observes lifetimes that punctuations end, not these)
    val candidates = mutable.LinkedHashSet.empty[(Int, Binding)]
    gone.foreach { case (i, key) =>
      val b = states(i).bindingOf(key)
      for (l <- 0 until n if l != i && states(l).classes.exists(b.contains)) {
        View.storedKeys(l, b).foreach(u => candidates += (l -> u))
      }
    }
    val result = ChainedPurge.purge(View, candidates, MultiJoinState.MaxPartials)
    abandoned += result.abandoned
    checked += result.checked
    if (!tree.isMJoin) purgeNodes(candidates ++ result.purged ++ gone.map { case (i, k) => i -> states(i).bindingOf(k) }, Nil)
    // a value whose rows are gone may let a held punctuation go
    gone.foreach { case (i, k) => touchedValues ++= states(i).bindingOf(k) }
    releaseHeld()
  }

  /** Applies this batch's punctuations, purges to a fixpoint, releases (see the operator's doc). */
  private def endOfBatch(): Unit = {
    val candidates = mutable.LinkedHashSet.empty[(Int, Binding)]
    storedNow.foreach { case (i, key) => candidates += (i -> states(i).bindingOf(key)) }
    // a row not stored is as if purged on arrival: the rows joinable with it are checked again
    unstored.foreach { case (i, key) =>
      val b = states(i).bindingOf(key)
      for (l <- 0 until n if l != i && states(l).classes.exists(b.contains)) {
        View.storedKeys(l, b).foreach(u => candidates += (l -> u))
      }
    }
    val found = mutable.LinkedHashMap.empty[(Int, Binding), Int]
    for ((j, p) <- applied) reachable(j, p, found)
    candidates ++= found.keys
    val touched = applied.nonEmpty
    val result = ChainedPurge.purge(View, candidates, MultiJoinState.MaxPartials)
    abandoned += result.abandoned
    checked += result.checked
    if (!tree.isMJoin || parallel.active) purgeNodes(candidates ++ result.purged ++ unstored.map { case (i, k) =>
      i -> states(i).bindingOf(k) }, applied.map { case (j, p) => bindingOf(j, p) })
    if (touched || result.purged.nonEmpty) releaseHeld()
    if (settings.punctuationRetention > 0) states.foreach(_.releaseExpired(batch, settings.punctuationRetention))
  }

  /**
   * Purges the intermediate nodes' combinations: one with key κ of a node covering inputs X
   * goes iff the closure started from κ with X visited reaches every input
   * ([[ChainedPurge.check]]; input state only, so node purges never change an input's
   * verdict and need no fixpoint). Candidates: the batch's new combinations, and those
   * sharing a class value with an input key this batch's purge checked or removed (`keys`) or
   * with a new punctuation's binding (`bindings`) — look-ups by class value, never a scan,
   * one per distinct class value and node (many keys of a batch share a hot value; looking
   * it up once per key would read its combinations once per key).
   */
  private def purgeNodes(keys: Iterable[(Int, Binding)], bindings: Iterable[Binding]): Unit = {
    // the plan's nodes, and those of an old plan running beside it (parallel_track)
    val targets = nodeStates.indices.map(k => nodeStates(k) -> tree.inputsOf(n + k).toSet) ++
      (if (parallel.active) parallel.nodesToPurge else Nil)
    val values = mutable.LinkedHashSet.empty[(Int, UnsafeRow)]
    (keys.map(_._2) ++ bindings).foreach(values ++= _)
    for ((st, covered) <- targets) {
      val candidates = mutable.LinkedHashSet.empty[UnsafeRow]
      nodesStoredNow.foreach { case (v, key) => if (unitState(v) eq st) candidates += key }
      statesStoredNow.foreach { case (s, key) => if (s eq st) candidates += key }
      values.foreach { case (c, v) => if (st.classes.contains(c)) candidates ++= st.keysWith(c, v) }
      candidates.foreach { key =>
        if (st.isStored(key)) {
          checked += 1
          ChainedPurge.check(View, covered, st.bindingOf(key), MultiJoinState.MaxPartials) match {
            case ChainedPurge.Purgeable => purged += st.removeKey(key)
            case ChainedPurge.Abandoned => abandoned += 1
            case ChainedPurge.Kept =>
          }
        }
      }
    }
    completion.foreach(_.afterPurge(values))
  }

  /** This batch's new punctuations, by input, once applied (remembered and held). */
  private val applied = mutable.ArrayBuffer.empty[(Int, KeyPunctuation)]

  /**
   * For a range punctuation applied this batch, the bound its input held before, by (input,
   * scheme id, constants): the keys that bound covered were checked when it came (and again
   * whenever something they join with changed), so the new one's candidates are the keys
   * beyond it ([[inRange]]).
   */
  private val coveredBefore = mutable.HashMap.empty[(Int, Int, UnsafeRow), Any]

  /** Remembers and holds input `j`'s new punctuations of this batch (once it sent all its rows). */
  private def applyPunctuations(j: Int): Unit = for (p <- strongest(j, newPunctuations(j).toSeq)) {
    val st = states(j)
    if (!st.alreadyClosed(p)) {
      st.remember(p)
      p.bound.foreach(_ => st.held(p).flatMap(_._1).foreach(b => coveredBefore((j, p.scheme.id, p.constants)) = b))
      st.hold(p, -1L)
      applied += (j -> p)
      touchedValues ++= bindingOf(j, p)
    }
  }

  /**
   * The (class, value) pairs whose release condition ([[releaseHeld]]) may have changed this
   * batch: the values of the input keys purged or shed (their rows gone) and of the new
   * punctuations (one closing a value, or newly held).
   */
  private val touchedValues = mutable.LinkedHashSet.empty[(Int, UnsafeRow)]

  /**
   * Does every scheme of every input bind one class (a range scheme without constants binds
   * none and is never released)? Then a held punctuation is found by its value.
   */
  private val oneClassSchemes = states.indices.forall(j => states(j).keySchemes.forall { s =>
    val bound = exec.inputs(j).boundClasses(s).size
    bound == 1 || (bound == 0 && s.hasRange)
  })

  /**
   * One punctuation per scheme and constants (the batch's take effect together): for a range
   * scheme, what their bounds close together — the greatest (in the scheme's order), or with
   * several ranges the union of their regions (the corners of one batch close their union).
   */
  private def strongest(j: Int, ps: Seq[KeyPunctuation]): Iterable[KeyPunctuation] = {
    val best = mutable.LinkedHashMap.empty[(Int, UnsafeRow), KeyPunctuation]
    ps.foreach { p =>
      best.get((p.scheme.id, p.constants)) match {
        case Some(q) if p.bound.isDefined && q.bound.isDefined =>
          best((p.scheme.id, p.constants)) = q.copy(bound = Some(states(j).mergeBounds(p.scheme, q.bound.get, p.bound.get)))
        case Some(_) =>
        case None => best((p.scheme.id, p.constants)) = p
      }
    }
    best.values
  }

  /** The classes punctuation `p` of input `j` binds, with its values. */
  private def bindingOf(j: Int, p: KeyPunctuation): Binding = states(j).bindingOfPunctuation(p.scheme, p.constants)

  /**
   * Stored keys a new punctuation of input `j` binding `x` can make purgeable: those of other
   * inputs with a bound class equal to its value, then, breadth first, the keys joinable with
   * keys found (look-ups by class value), as far as a closure reaches (n - 1 steps). Added to
   * `found` (key -> the step it was found at), shared by the batch's punctuations: a key
   * already found at the same or an earlier step is not expanded again (many punctuations
   * of a batch reach the same rows), so the union is the same as with one search each.
   */
  private def reachable(j: Int, p: KeyPunctuation, found: mutable.Map[(Int, Binding), Int]): Unit = {
    val x = bindingOf(j, p)
    // keys of other inputs with a bound class equal to its value in x
    var frontier: Seq[(Int, Binding)] = (for {
      l <- (0 until n) if l != j
      (c, v) <- x.toSeq if states(l).classes.contains(c)
      key <- View.storedKeys(l, Map(c -> v))
    } yield l -> key) ++ inRange(j, p, x)
    var depth = 0
    while (frontier.nonEmpty && depth < n) {
      val next = mutable.ArrayBuffer.empty[(Int, Binding)]
      frontier.foreach { f => if (found.get(f).forall(_ > depth)) {
        found(f) = depth
        val (l, key) = f
        (0 until n).filter(m => m != l && states(m).classes.exists(key.contains))
          .foreach(m => View.storedKeys(m, key).foreach(u => next += (m -> u)))
      } }
      frontier = next.toSeq
      depth += 1
    }
  }

  /**
   * Keys of other inputs a range punctuation `p` of input `j` (constants bound as `x`) covers
   * on its range class and the bound `j` held before did not: those with a value there up to
   * its bound (and beyond the earlier one, [[coveredBefore]]), agreeing with `x` on the
   * classes they share, found in their range indexes ([[MultiJoinInputSpec.rangeLookups]]).
   * A key the earlier bound covered was checked then; what could make it purgeable since — a
   * punctuation of another input, a row joining with it purged or refused — checks it again
   * by its own path, so a bound rising every batch (a watermark) reads only the keys it passes.
   *
   * {{{
   *   c holds t<=5, now t<=9; a stores keys t = 3 (still waiting on b), 7:  candidates: a(t=7)
   * }}}
   */
  private def inRange(j: Int, p: KeyPunctuation, x: Binding): Seq[(Int, Binding)] = p.bound.toSeq.flatMap { bound =>
    val above = coveredBefore.get((j, p.scheme.id, p.constants))
    for {
      l <- (0 until n) if l != j
      indexed <- rangeLookups.get((j, p.scheme.id, l)).toSeq
      constants = if (indexed.constants.isEmpty) MultiJoinTask.NoConstants else p.constants
      key <- states(l).keysCovered(indexed, constants, bound, above).toSeq
      b = states(l).bindingOf(key) if b.forall { case (c, v) => x.get(c).forall(_ == v) }
    } yield l -> b
  }

  /**
   * The held open punctuations [[releaseHeld]] checks: those binding a value of
   * [[touchedValues]] — only a purge emptying a value, or a punctuation closing it or newly
   * held, can make a punctuation releasable — found by point look-ups when every scheme binds
   * one class; else one pass over every input's held punctuations.
   */
  private def releaseCandidates: Seq[(Int, KeyScheme, UnsafeRow)] =
    if (!oneClassSchemes) for (j <- 0 until n; (s, c) <- states(j).heldOpen) yield (j, s, c)
    else (for {
      (c, v) <- touchedValues.toSeq
      j <- 0 until n if states(j).classes.contains(c)
      s <- states(j).keySchemes if exec.inputs(j).boundClasses(s) == Seq(c)
      p = states(j).punctuationFor(s, states(j).keyRowOf(Map(c -> v)))
      if states(j).held(p).exists(_._2 < 0)
    } yield (j, s, p.constants)).distinctBy { case (j, s, k) => (j, s.id, k) }

  /**
   * Releases (after the retention) held punctuations that can no longer matter: a
   * punctuation of input j binding classes B to x goes once, for some b in B, every other
   * input with a column in class b has closed x_b by a scheme binding b alone and stores no
   * row with b = x_b. Only the punctuations that may have become releasable this batch are
   * checked ([[releaseCandidates]]), in batches that received punctuations or purged rows.
   */
  private def releaseHeld(): Unit = for ((j, scheme, constants) <- releaseCandidates) {
    val x = bindingOf(j, KeyPunctuation(scheme, constants, None))
    val done = x.exists { case (b, v) =>
      (0 until n).filter(l => l != j && states(l).classes.contains(b)).forall { l =>
        val st = states(l)
        val single = Map(b -> v)
        st.rowsWith(b, v).isEmpty && st.keySchemes.exists { s =>
          exec.inputs(l).schemeClasses(s) == Seq(b) && st.closedBy(s, st.keyRowOf(single))
        }
      }
    }
    if (done) {
      if (settings.punctuationRetention == 0) states(j).release(scheme, constants)
      else states(j).close(scheme, constants, batch)
    }
  }
}

private[multi] object MultiJoinTask {
  /** The constants of a scheme without constants. */
  private val NoConstants: UnsafeRow = punctuated.state.EmptyUnsafeRow.row
}
