package punctuated.join

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.TaskContext
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import org.apache.spark.sql.execution.streaming.operators.stateful._
import org.apache.spark.sql.execution.streaming.operators.stateful.join.StreamingSymmetricHashJoinHelper._
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.BooleanType

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.{InputSpec, KeyScheme}
import punctuated.state.{PunctuatedJoinMetrics, PunctuatedStatefulOperator}

/**
 * Punctuation-purging symmetric hash join of two streams (Tucker, Maier, Sheard, Fegaras
 * 2003, §5 and Table 3; Tucker 2005, purge invariants; Li et al. 2006, §3 and §5.1).
 *
 * Like Spark's `StreamingSymmetricHashJoinExec`, each input's rows are stored by join key
 * and every new row is joined with the other input's stored rows. Unlike it, nothing waits
 * for a watermark: the inputs' punctuations say when a key is finished, and the operator
 * forgets exactly the state that can no longer produce a result.
 *
 * {{{
 *        left input (rows + punctuations)        right input (rows + punctuations)
 *                    |                                      |
 *          +---------v---------+                  +---------v---------+
 *          | late? (own held / |                  | late? (own held / |
 *          | remembered puncts)|                  | remembered puncts)|
 *          +---------+---------+                  +---------+---------+
 *                    |  join with right rows        join with left rows |
 *                    +------------------+   +---------------------------+
 *                                       v   v
 *                                    output rows
 *          store the row unless the other input already punctuated its key
 *
 *   at the end of the batch, for each new punctuation p of one input (explicit marker rows,
 *   and implied ones of a `punctuated.unique` key):
 *     purge:   the other input's stored rows whose key p covers can meet no future partner
 *              (found by a look-up of p's key, or, for a range or key-prefix p, of the keys
 *              the other input's [[RangeIndex]] lists under p's constants: never a scan;
 *              outer joins emit them null-padded if they never matched);
 *     hold:    p, to keep later rows of the other input with such keys out of the state;
 *     release: p and the other input's matching punctuation once both inputs have closed
 *              the key (Li et al. §5.1), after `spark.punctuated.punctuationRetention` batches;
 *     remember: what p closed, for good, in its input's closed-values summary ([[ClosedKeys]]):
 *              a later row it covers is late, a later row of the other input is not stored,
 *              a later punctuation it covers is ignored.
 * }}}
 *
 * Worked example (auctions `unique id`, bids `schemes auction`, inner join on id = auction):
 * {{{
 *   batch 0: auction 1 arrives      -> stored; implies "no more auctions with id 1"
 *            bid (1, 5.0)           -> joined with auction 1; not stored (auctions closed 1)
 *   batch 1: bid (1, 7.5)           -> joined with auction 1; not stored
 *            punctuation bids: 1    -> purge auction 1; both inputs closed key 1: release both
 *   state after batch 1: empty.  Spark's own join would hold auction 1 and both bids forever.
 * }}}
 *
 * Semantics (user contract, "Semantics of punctuations" and "Joins"): a punctuation takes
 * effect at the end of the batch it arrives in; a data row that matches a punctuation its
 * own input sent in an earlier batch (held, or remembered within
 * `spark.punctuated.lateRows.maxRemembered`) is late and dropped or fails the query
 * (`spark.punctuated.lateRows`); a marker row that instantiates no declared scheme is an
 * invalid punctuation (`spark.punctuated.invalidPunctuations`). Punctuation rows never
 * appear in the output.
 *
 * @param leftKeys   left join-key expressions
 * @param rightKeys  right join-key expressions
 * @param joinType   Inner, LeftOuter, RightOuter, FullOuter, LeftSemi or LeftAnti
 * @param condition  the rest of the join condition (evaluated on joined rows), if any
 * @param stateInfo  state-store location, set by Spark's incremental planner
 * @param leftSpec   the left input's declaration, in ordinals of its rows
 * @param rightSpec  the right input's declaration
 * @param settings   the `spark.punctuated.*` settings
 * @param leftReplicated  whether the left input comes through a
 *                   [[PunctuationReplicatingExchangeExec]] (its partition-wide punctuations
 *                   reach every partition); otherwise they are gathered by a job first
 * @param rightReplicated the same, for the right input
 * @param left       left input plan
 * @param right      right input plan
 */
case class PunctuatedSymmetricHashJoinExec(
    leftKeys: Seq[Expression],
    rightKeys: Seq[Expression],
    joinType: JoinType,
    condition: Option[Expression],
    stateInfo: Option[StatefulOperatorStateInfo],
    leftSpec: InputSpec,
    rightSpec: InputSpec,
    settings: PunctuatedConf,
    leftReplicated: Boolean,
    rightReplicated: Boolean,
    left: SparkPlan,
    right: SparkPlan)
  extends BinaryExecNode with PunctuatedStatefulOperator {

  require(Seq(Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti).contains(joinType),
    s"unsupported join type $joinType")

  override def shortName: String = "punctuatedSymmetricHashJoin"

  /**
   * The other input's schemes that do not fix the whole key: an input's stored keys are
   * indexed for them ([[RangeIndex]]), so that their punctuations purge without a scan.
   */
  private[join] def indexSchemes(isLeft: Boolean): Seq[KeyScheme] =
    RangeIndex.indexedSchemes((if (isLeft) rightSpec else leftSpec).keySchemes, leftKeys.length)

  /** Does either input hold punctuations or keep a range index (in the shared store)? */
  private[join] def usesSharedStore: Boolean =
    JoinInputState.usesShared(leftSpec.keySchemes, indexSchemes(isLeft = true).nonEmpty) ||
      JoinInputState.usesShared(rightSpec.keySchemes, indexSchemes(isLeft = false).nonEmpty)

  override val stateStoreNames: Seq[String] = JoinInputState.storeNames(usesSharedStore)


  override def requiredChildDistribution: Seq[Distribution] =
    StatefulOpClusteredDistribution(leftKeys, getStateInfo.numPartitions) ::
      StatefulOpClusteredDistribution(rightKeys, getStateInfo.numPartitions) :: Nil

  override lazy val output: Seq[Attribute] = joinType match {
    case Inner => left.output ++ right.output
    case LeftOuter => left.output ++ right.output.map(_.withNullability(true))
    case RightOuter => left.output.map(_.withNullability(true)) ++ right.output
    case FullOuter => (left.output ++ right.output).map(_.withNullability(true))
    case LeftSemi | LeftAnti => left.output
    case other => throw new IllegalArgumentException(s"unsupported join type $other")
  }

  override def outputPartitioning: Partitioning = joinType match {
    case Inner => PartitioningCollection(Seq(left.outputPartitioning, right.outputPartitioning))
    case LeftOuter | LeftSemi | LeftAnti => left.outputPartitioning
    case RightOuter => right.outputPartitioning
    case _ => UnknownPartitioning(left.outputPartitioning.numPartitions)
  }




  protected override def doExecute(): RDD[InternalRow] = {
    val coordinator = stateStoreCoordinator
    val storeConf = new StateStoreConf(conf)
    val hadoopConf = broadcastHadoopConf()
    metrics // initialise on the driver
    val (leftRdd, rightRdd) = (left.execute(), right.execute())
    // Punctuations that do not fix a whole join key (a prefix, a range) concern every
    // partition. An input whose shuffle is a PunctuationReplicatingExchangeExec brings them to
    // every partition itself; from any other (an input already partitioned by the key, e.g.
    // the output of a join below) they are gathered first (one extra pass over this batch's
    // rows, only for inputs declaring such schemes) and given to all (in the tasks' closure:
    // they are few, and the closure is shipped anyway).
    val global =
      (if (leftReplicated) Array.empty[(KeyScheme, UnsafeRow)]
       else PunctuatedSymmetricHashJoinExec.partitionWide(leftRdd, leftSpec, leftKeys, left.output)) ->
        (if (rightReplicated) Array.empty[(KeyScheme, UnsafeRow)]
         else PunctuatedSymmetricHashJoinExec.partitionWide(rightRdd, rightSpec, rightKeys, right.output))
    leftRdd.stateStoreAwareZipPartitions(
      rightRdd, getStateInfo, stateStoreNames, coordinator) { (partitionId, l, r) =>
      new PunctuatedJoinTask(this, partitionId, storeConf, hadoopConf.value.value, global).run(l, r)
    }
  }

  override protected def withNewChildrenInternal(newLeft: SparkPlan, newRight: SparkPlan): SparkPlan =
    copy(left = newLeft, right = newRight)

  // Accessors for the task (metrics are protected in SparkPlan).
  private[join] def metric(name: String) = longMetric(name)
  private[join] def reportStoreMetrics(): Unit = setOperatorMetrics(stateStoreNames.size)
  private[join] def reportCustomStoreMetrics(m: Map[StateStoreCustomMetric, Long]): Unit =
    setStoreCustomMetrics(m)
}

object PunctuatedSymmetricHashJoinExec {

  /** Does this input declare schemes whose punctuations concern every partition? */
  def hasPartitionWide(spec: InputSpec, keys: Seq[Expression]): Boolean =
    spec.hasMarker && spec.schemes.flatMap(_._2).exists(!_.isWholeKey(keys.length))

  /**
   * This batch's punctuation rows of partition-wide schemes (as their join keys and scheme),
   * collected from the input's RDD (empty, without a job, if the input declares none).
   */
  def partitionWide(rdd: RDD[InternalRow], spec: InputSpec, keys: Seq[Expression],
      output: Seq[Attribute]): Array[(KeyScheme, UnsafeRow)] =
    if (!hasPartitionWide(spec, keys)) Array.empty
    else rdd.mapPartitions { iter =>
      val keyProj = UnsafeProjection.create(keys, output)
      iter.flatMap { row =>
        if (!spec.isPunctuation(row)) None
        else spec.schemeOf(row).flatten.filterNot(_.isWholeKey(keys.length)).map(_ -> keyProj(row).copy())
      }
    }.collect()
}

/** Runs once after the wrapped iterator is exhausted. */
private[join] class CompletingIterator[T](it: Iterator[T], onComplete: () => Unit) extends Iterator[T] {
  private var done = false
  override def hasNext: Boolean = {
    val more = it.hasNext
    if (!more && !done) { done = true; onComplete() }
    more
  }
  override def next(): T = it.next()
}

/**
 * One partition of one micro-batch of [[PunctuatedSymmetricHashJoinExec]]: the left input,
 * then the right one, then this batch's punctuations, then commit.
 */
private[join] class PunctuatedJoinTask(
    exec: PunctuatedSymmetricHashJoinExec,
    partitionId: Int,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    partitionWide: (Array[(KeyScheme, UnsafeRow)], Array[(KeyScheme, UnsafeRow)])) {
  import exec._
  import PunctuatedJoinMetrics._

  private val info = getStateInfo
  private val batch = info.storeVersion
  private def keySchema(keys: Seq[Expression]) = JoinInputState.keySchema(keys)
  private val leftInputSchema = org.apache.spark.sql.catalyst.types.DataTypeUtils.fromAttributes(left.output)
  private val rightInputSchema = org.apache.spark.sql.catalyst.types.DataTypeUtils.fromAttributes(right.output)

  /** Both inputs' held punctuations and range indexes ([[StoreNamespace]]). */
  private val shared =
    if (usesSharedStore) Some(JoinInputState.openShared(info, partitionId, storeConf, hadoopConf)) else None
  private val leftState = new JoinInputState("left", shared, info, partitionId, keySchema(leftKeys),
    leftInputSchema, leftSpec.keySchemes, indexSchemes(isLeft = true), settings.maxRemembered,
    storeConf, hadoopConf)
  private val rightState = new JoinInputState("right", shared, info, partitionId, keySchema(rightKeys),
    rightInputSchema, rightSpec.keySchemes, indexSchemes(isLeft = false), settings.maxRemembered,
    storeConf, hadoopConf)
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
    leftState.abortIfNeeded(); rightState.abortIfNeeded()
    shared.foreach(s => if (!s.hasCommitted) s.abort())
  })

  // Rows are handled in the stored layout: input columns then `matched`.
  private val leftValueAttrs = left.output :+ AttributeReference("_lm", BooleanType)()
  private val rightValueAttrs = right.output :+ AttributeReference("_rm", BooleanType)()
  private val leftKeyProj = UnsafeProjection.create(leftKeys, left.output)
  private val rightKeyProj = UnsafeProjection.create(rightKeys, right.output)
  private val pairCondition: InternalRow => Boolean = condition match {
    case Some(c) => Predicate.create(c, leftValueAttrs ++ rightValueAttrs).eval
    case None => _ => true
  }
  private val semi = joinType == LeftSemi || joinType == LeftAnti
  private val outputProj =
    if (semi) UnsafeProjection.create(left.output, leftValueAttrs)
    else UnsafeProjection.create(output, leftValueAttrs ++ rightValueAttrs)
  private val nullLeft = new GenericInternalRow(leftValueAttrs.size)
  private val nullRight = new GenericInternalRow(rightValueAttrs.size)
  private val joined = new JoinedRow
  private val leftView = new JoinedRow
  private val rightView = new JoinedRow
  private val unmatched = new GenericInternalRow(Array[Any](false))

  /** Does this input keep unmatched rows (outer joins, and the left of semi/anti joins)? */
  private def preserved(isLeft: Boolean) = joinType match {
    case FullOuter => true
    case LeftOuter | LeftAnti | LeftSemi => isLeft
    case RightOuter => !isLeft
    case _ => false
  }

  private val newPunctuations = Map(
    true -> ArrayBuffer.from(partitionWide._1.map { case (s, k) => leftState.punctuationFor(s, k) }),
    false -> ArrayBuffer.from(partitionWide._2.map { case (s, k) => rightState.punctuationFor(s, k) }))
  /**
   * Whole join keys an input closed in this batch (its punctuations and unique keys). The left
   * input is processed first: a right row with a key the left one closed has met every left
   * row it ever will, so it is not stored (as if it had come in the next batch, when the
   * punctuation is held), instead of being stored and purged at the end of this batch.
   */
  private val closedNow = Map(
    true -> scala.collection.mutable.HashSet.empty[UnsafeRow],
    false -> scala.collection.mutable.HashSet.empty[UnsafeRow])
  private var seq = 0L
  private var stored = 0L
  private var purged = 0L

  def run(leftIter: Iterator[InternalRow], rightIter: Iterator[InternalRow]): Iterator[InternalRow] = {
    val start = System.nanoTime
    val out = processInput(leftIter, isLeft = true) ++ processInput(rightIter, isLeft = false) ++
      Iterator.single(()).flatMap(_ => endOfBatch())
    val numOutputRows = metric("numOutputRows")
    val counted = out.map { row => numOutputRows += 1; row }
    new CompletingIterator[InternalRow](counted, () => {
      metric("allUpdatesTimeMs") += NANOSECONDS.toMillis(System.nanoTime - start)
      val held = leftState.numPunctuations + rightState.numPunctuations // read before the commit
      metric("commitTimeMs") += timed {
        leftState.prepareCommit(); rightState.prepareCommit()
        (Seq(leftState.rowsStore, rightState.rowsStore) ++ shared).foreach(_.commit())
      }
      metric("numTotalStateRows") += leftState.numRows + rightState.numRows
      metric(PunctuationsHeld) += held
      metric(RangeIndexEntries) += leftState.numIndexEntries + rightState.numIndexEntries
      metric(ClosedValuesRemembered) += leftState.numClosedValues + rightState.numClosedValues
      metric(ClosedValuesForgotten) += leftState.numClosedValuesForgotten + rightState.numClosedValuesForgotten
      // every store's own metrics (as Spark's setStoreMetrics reports one store's): memory and
      // the provider's custom metrics (RocksDB's), summed over the join's two or three stores
      val stores = Seq(leftState.rowsStore, rightState.rowsStore) ++ shared
      metric("stateMemory") += stores.map(_.metrics.memoryUsedBytes).sum
      stores.foreach(s => reportCustomStoreMetrics(s.metrics.customMetrics))
      metric("numUpdatedStateRows") += stored
      metric("numRemovedStateRows") += purged
      metric(RowsPurged) += purged
      metric(StateRowsScanned) += leftState.rowsScanned + rightState.rowsScanned
      reportStoreMetrics()
    })
  }

  private def timed(body: => Unit): Long = {
    val t = System.nanoTime; body; NANOSECONDS.toMillis(System.nanoTime - t)
  }

  /** An output row (a copy: results are buffered per input row). */
  private def emit(l: InternalRow, r: InternalRow): InternalRow =
    (if (semi) outputProj(l) else outputProj(joined(l, r))).copy()

  private def processInput(iter: Iterator[InternalRow], isLeft: Boolean): Iterator[InternalRow] = {
    val spec = if (isLeft) leftSpec else rightSpec
    val own = if (isLeft) leftState else rightState
    val other = if (isLeft) rightState else leftState
    val keyProj = if (isLeft) leftKeyProj else rightKeyProj
    iter.flatMap { row =>
      if (spec.isPunctuation(row)) {
        punctuation(row, spec, keyProj, own, isLeft)
        Iterator.empty
      } else {
        val key = keyProj(row)
        if (key.anyNull) {
          // NULL keys never match: emitted at once where unmatched rows are kept
          val value = own.valueOf(row, matched = false)
          if (preserved(isLeft) && joinType != LeftSemi) Iterator.single(padded(value, isLeft))
          else Iterator.empty
        } else if (own.covers(key)) {
          late(row, spec)
          Iterator.empty
        } else {
          joinRow(row, key.copy(), spec, own, other, isLeft)
        }
      }
    }
  }

  private def padded(value: InternalRow, isLeft: Boolean): InternalRow =
    if (isLeft) emit(value, nullRight) else emit(nullLeft, value)

  private def joinRow(row: InternalRow, key: UnsafeRow, spec: InputSpec, own: JoinInputState,
      other: JoinInputState, isLeft: Boolean): Iterator[InternalRow] = {
    // the row in the stored layout (`matched` false), as a view: copied only if stored
    val value = (if (isLeft) leftView else rightView)(row, unmatched)
    val results = ArrayBuffer.empty[InternalRow]
    var matched = false
    // partners are read as the scan goes, unless the loop changes the other input's rows
    val partners =
      if (preserved(!isLeft) || semi) other.rowsWithKey(key).map(p => (p.key.copy(), p.value.copy())).toArray.iterator
      else other.rowsWithKey(key).map(p => (p.key, p.value))
    partners.foreach { case (otherKey, otherValue) =>
      val pair = if (isLeft) joined(value, otherValue) else joined(otherValue, value)
      if (pairCondition(pair)) {
        matched = true
        joinType match {
          case LeftSemi | LeftAnti if !isLeft =>
            // a stored left row met its first partner: semi emits it, anti never will
            if (joinType == LeftSemi) results += outputProj(otherValue).copy()
            other.removeRow(otherKey, key); purged += 1
          case LeftSemi | LeftAnti =>
          case _ =>
            results += emit(if (isLeft) value else otherValue, if (isLeft) otherValue else value)
            if (preserved(!isLeft) && !otherValue.getBoolean(otherValue.numFields - 1)) {
              otherValue.setBoolean(otherValue.numFields - 1, true)
              other.update(otherKey, otherValue)
            }
        }
      }
    }
    if (isLeft && joinType == LeftSemi && matched) {
      results += outputProj(value).copy()     // emitted once; nothing more to wait for
    } else if (isLeft && joinType == LeftAnti && matched) {
      // never emitted
    } else if (other.covers(key) || closedNow(!isLeft).contains(key)) {
      // The other input closed this key: no future partner, so the row is not stored.
      if (preserved(isLeft) && !matched && joinType != LeftSemi) results += padded(value, isLeft)
    } else {
      own.append(key, (batch << 32) | seq, own.valueOf(row, matched))
      seq += 1; stored += 1
    }
    spec.unique.foreach { u =>
      newPunctuations(isLeft) += own.punctuationFor(u, key)
      if (u.isWholeKey(key.numFields)) closedNow(isLeft) += key
    }
    results.iterator
  }

  private def punctuation(row: InternalRow, spec: InputSpec, keyProj: UnsafeProjection,
      own: JoinInputState, isLeft: Boolean): Unit = {
    val keyLength = (if (isLeft) leftKeys else rightKeys).length
    spec.schemeOf(row) match {
      case Some(keyScheme) =>
        // a partition-wide punctuation of a replicated input comes to every partition: the
        // copy in the partition the hash names (its home) counts it and applies the rest
        val replicated = if (isLeft) leftReplicated else rightReplicated
        val home = !replicated || !keyScheme.exists(!_.isWholeKey(keyLength)) ||
          homePartition(isLeft)(row) == partitionId
        if (home) metric(PunctuationsReceived) += 1
        // partition-wide ones of other inputs come to every partition from `partitionWide`
        if (replicated) keyScheme.filterNot(_.isWholeKey(keyLength)).foreach { s =>
          newPunctuations(isLeft) += own.punctuationFor(s, keyProj(row))
        }
        if (home) keyScheme.filter(_.isWholeKey(keyLength)).foreach { s =>
          newPunctuations(isLeft) += own.punctuationFor(s, keyProj(row))
          closedNow(isLeft) += keyProj(row).copy()
        }
      case None if settings.failOnInvalidPunctuations =>
        throw PunctuatedErrors.invalidPunctuation(render(row, spec), spec.name, spec.schemeNames)
      case None =>
        metric(InvalidPunctuationsDropped) += 1
    }
  }

  /** Per replicated input: the partition Spark's hash partitioning gives a row. */
  private lazy val homePartition: Map[Boolean, InternalRow => Int] = Seq(
    true -> (left, leftReplicated), false -> (right, rightReplicated)).collect {
    case (isLeft, (child, true)) => isLeft -> PunctuationReplicatingExchangeExec.partitionOf(
      child.outputPartitioning.asInstanceOf[HashPartitioning], child.output)()
  }.toMap

  private def late(row: InternalRow, spec: InputSpec): Unit = {
    if (settings.failOnLateRows) {
      throw PunctuatedErrors.lateRow(
        s"Row ${render(row, spec)} of ${spec.name} arrived after ${spec.name} punctuated its key")
    }
    metric(LateRowsDropped) += 1
  }

  private def render(row: InternalRow, spec: InputSpec): String = {
    val schema = if (spec eq leftSpec) leftInputSchema else rightInputSchema
    schema.fields.indices.map { i =>
      val v = if (row.isNullAt(i)) "NULL" else row.get(i, schema(i).dataType)
      s"${schema(i).name}=$v"
    }.mkString("(", ", ", ")")
  }

  /** Applies this batch's punctuations: purge, hold, release (see the class doc). */
  private def endOfBatch(): Iterator[InternalRow] = {
    val results = ArrayBuffer.empty[InternalRow]
    val ranges = ArrayBuffer.empty[(KeyPunctuation, Boolean)]
    for (isLeft <- Seq(true, false);
         p <- strongest(newPunctuations(isLeft).toSeq, if (isLeft) leftState else rightState)) {
      val own = if (isLeft) leftState else rightState
      val other = if (isLeft) rightState else leftState
      val keyLength = (if (isLeft) leftKeys else rightKeys).length
      val already = own.held(p.scheme, p.constants)
      // a punctuation repeating what its input closed before (held, or remembered) says nothing new
      if (!already.exists { case (b, _) => own.boundCovers(p.scheme, b, p.bound) } && !own.remembers(p)) {
        own.remember(p)
        // the keys p closes: its own (whole key), or those the range index lists
        val keys = if (p.scheme.isWholeKey(keyLength)) Array(p.constants) else other.keysCoveredBy(p)
        keys.foreach(k => other.purgeKey(k).foreach(purge(_, !isLeft, results)))
        if (p.scheme.range.isDefined) ranges += (p -> isLeft)
        val otherHeld = other.held(p.scheme, p.constants)
        val closed = otherHeld.exists { case (b, _) => other.boundCovers(p.scheme, b, p.bound) } ||
          other.remembers(p)
        val closesOther = otherHeld.exists { case (b, _) => own.boundCovers(p.scheme, p.bound, b) }
        val retention = settings.punctuationRetention
        // (a partition-wide punctuation is seen by every partition: output once, by partition 0)
        if (settings.emitPunctuations && (p.scheme.isWholeKey(keyLength) || partitionId == 0)) {
          // what both inputs have now closed: no output row can match it any more
          val finished = if (closed) Some(p) else otherHeld.filter(_ => closesOther)
            .map { case (b, _) => KeyPunctuation(p.scheme, p.constants, b) }
          finished.foreach(f => outputPunctuations ++= outputPunctuationRows(f))
        }
        if (!closed) own.hold(p, -1L)
        else if (retention > 0) own.hold(p, batch)
        if (closesOther) {
          if (retention == 0) other.release(p.scheme, p.constants)
          else otherHeld.foreach { case (b, _) => other.hold(KeyPunctuation(p.scheme, p.constants, b), batch) }
        }
      }
    }
    if (ranges.nonEmpty) releaseClosedByRanges(ranges.toSeq)
    results ++= outputPunctuations    // after the rows they cover
    if (settings.punctuationRetention > 0) {
      Seq(leftState, rightState).foreach(_.releaseExpired(batch, settings.punctuationRetention))
    }
    results.iterator
  }

  /**
   * One punctuation per scheme and constants: the one with the greatest bound. The batch's
   * punctuations of an input take effect together, so the others say nothing more; keeping
   * only it makes holding, releasing and output punctuations independent of the order in
   * which the batch's punctuations reach the partition.
   */
  private def strongest(ps: Seq[KeyPunctuation], state: JoinInputState): Iterable[KeyPunctuation] = {
    val best = scala.collection.mutable.LinkedHashMap.empty[(Int, UnsafeRow), KeyPunctuation]
    ps.foreach { p =>
      val slot = (p.scheme.id, p.constants)
      if (!best.get(slot).exists(q => state.boundCovers(p.scheme, q.bound, p.bound))) best(slot) = p
    }
    best.values
  }

  private val outputPunctuations = ArrayBuffer.empty[InternalRow]
  private lazy val outputRowProj = UnsafeProjection.create(output.map(_.dataType).toArray)

  /**
   * Output punctuations for values both inputs have closed (Tucker et al. 2003, Table 3,
   * join propagation: an input's punctuation extended with wildcards for the other input's
   * columns): for each input whose columns are in the output and whose marker is visible, a
   * row with that marker true (for an input that is itself a join's output: the marker of
   * the stream its key columns come from), that input's join-key columns set as the
   * punctuation says (the bound for a range), the other markers false, every other column NULL.
   */
  private def outputPunctuationRows(p: KeyPunctuation): Seq[InternalRow] = {
    val sides = if (semi) Seq(true) else Seq(true, false)
    sides.flatMap { isLeft =>
      val spec = if (isLeft) leftSpec else rightSpec
      val keys = if (isLeft) leftKeys else rightKeys
      val input = if (isLeft) leftValueAttrs.init else rightValueAttrs.init
      val offset = if (isLeft) 0 else leftValueAttrs.size - 1
      val ordinals = keys.map {
        case a: Attribute => input.indexWhere(_.exprId == a.exprId)
        case _ => -1
      }
      val positions = p.scheme.constants.toSeq ++ p.scheme.range.toSeq
      val marker = if (positions.exists(ordinals(_) < 0)) -1 else spec.markerFor(positions.map(ordinals))
      if (marker < 0) None
      else {
        val row = new GenericInternalRow(output.size)
        // the input's other markers (a join's output has several) say "not mine"
        spec.punctuationOrdinals.foreach(m => row.setBoolean(offset + m, m == marker))
        row.setBoolean(offset + marker, true)
        // the other input's marker, if in the output, says "not my punctuation"
        if (!semi) {
          val (otherSpec, otherOffset) = if (isLeft) (rightSpec, leftValueAttrs.size - 1) else (leftSpec, 0)
          otherSpec.punctuationOrdinals.foreach(m => row.setBoolean(otherOffset + m, false))
        }
        p.scheme.constants.zipWithIndex.foreach { case (pos, i) =>
          row.update(offset + ordinals(pos), p.constants.get(i, keys(pos).dataType))
        }
        p.scheme.range.foreach(pos => row.update(offset + ordinals(pos), p.bound.orNull))
        Some(outputRowProj(row).copy())
      }
    }
  }

  /**
   * Li et al. 2006, §5.1 for ranges: a held whole-key punctuation of one input ("no more rows
   * with key k") is released once the other input's range punctuation covers k too ("no more
   * rows with key <= b", b >= k): both inputs have then closed k.
   */
  private def releaseClosedByRanges(scans: Seq[(KeyPunctuation, Boolean)]): Unit = {
    for (isLeftPunct <- Seq(true, false)) {
      val ps = scans.collect { case (p, l) if l == isLeftPunct && p.scheme.range.isDefined => p }
      if (ps.nonEmpty) {
        val other = if (isLeftPunct) rightState else leftState
        val keys = if (isLeftPunct) rightKeys else leftKeys
        val closed = other.heldWholeKey.filter { case (scheme, constants, _) =>
          ps.exists(p => closesHeld(p, scheme, constants, keys))
        }.map(_._3).toArray
        closed.foreach { k =>
          if (settings.punctuationRetention == 0) other.releaseHeld(k) else other.closeHeld(k, batch)
        }
      }
    }
  }

  /** Does range punctuation `p` cover every key of the held whole-key punctuation? */
  private def closesHeld(p: KeyPunctuation, scheme: KeyScheme, constants: UnsafeRow,
      keys: Seq[Expression]): Boolean = {
    val r = p.scheme.range.get
    def valueAt(pos: Int): Any = {
      val i = scheme.constants.indexOf(pos)
      if (i < 0 || constants.isNullAt(i)) null else constants.get(i, keys(pos).dataType)
    }
    val rangeValue = valueAt(r)
    rangeValue != null && p.bound.isDefined &&
      p.scheme.constants.zipWithIndex.forall { case (pos, i) =>
        val v = valueAt(pos)
        v != null && !p.constants.isNullAt(i) && v == p.constants.get(i, keys(pos).dataType)
      } &&
      leftState.boundCovers(p.scheme, p.bound, Some(rangeValue))
  }

  /** Counts a purged row (already removed) and emits it null-padded if it must be. */
  private def purge(value: UnsafeRow, isLeftRow: Boolean, results: ArrayBuffer[InternalRow]): Unit = {
    purged += 1
    val matched = value.getBoolean(value.numFields - 1)
    if (preserved(isLeftRow) && !matched && joinType != LeftSemi) results += padded(value, isLeftRow)
  }
}
