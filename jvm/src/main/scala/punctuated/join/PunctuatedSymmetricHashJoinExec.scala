package punctuated.join

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.catalyst.plans.physical._
import org.apache.spark.sql.execution.{BinaryExecNode, SparkPlan}
import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorStateInfo, StreamingSymmetricHashJoinExec, StreamingSymmetricHashJoinHelper}
import punctuated.compat.StreamingSymmetricHashJoinHelper._
import org.apache.spark.sql.execution.streaming.state._

import punctuated.conf.PunctuatedConf
import punctuated.state.PunctuatedStatefulOperator
import punctuated.input.KeyScheme
import punctuated.input.{InputSpec, PunctuationReplicatingExchangeExec}

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
 * Inputs by number: the operator works over [[inputs]] (0 the left input, 1 the right one;
 * `other(i)` the input `i` joins with), each with its declaration, keys, state
 * ([[JoinInputState]], per task in a [[JoinInput]]) and this batch's punctuations; where its
 * state lives on disk is derived from the number alone ([[JoinInputLayout]]). Only the join
 * type's asymmetry (which input an outer, semi or anti join preserves) names a side. The task
 * is [[PunctuatedJoinTask]].
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
 * @param left       left input plan (transient, as `right`: kept on the driver, so that the
 *                   tasks, which get this operator with their closure, do not carry the plan
 *                   below it down to the scans; they read the inputs' columns and
 *                   partitioning from [[inputs]], whose values are taken on the driver)
 * @param right      right input plan
 * @param band       the condition's time band whose inputs' range punctuations on time purge
 *                   state ([[TimeBand]], [[TimeBandJoin]]), if any
 * @param eventTimeWatermark the event-time watermark (ms) Spark's incremental planner gave the
 *                   join for eviction this batch (the global watermark as it reaches the join):
 *                   a range punctuation `ts<=w` of the band's watermark-fed inputs, and of an
 *                   input whose watermark column is a join-key column (its spec's `watermark`)
 *                   ([[WatermarkPunctuations]]); it also gives the watermark the join passes on
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
    @transient left: SparkPlan,
    @transient right: SparkPlan,
    band: Option[TimeBand] = None,
    eventTimeWatermark: Option[Long] = None)
  extends BinaryExecNode with PunctuatedStatefulOperator {

  require(Seq(Inner, LeftOuter, RightOuter, FullOuter, LeftSemi, LeftAnti).contains(joinType),
    s"unsupported join type $joinType")

  override def shortName: String = "punctuatedSymmetricHashJoin"

  if (settings.shedding.enabled && joinType != Inner) {
    throw punctuated.errors.PunctuatedErrors.sheddingUnsupported(
      s"the ${joinType.sql} join ON ${(leftKeys.zip(rightKeys).map { case (l, r) => s"${l.sql} = ${r.sql}" }).mkString(" AND ")}",
      "an outer, semi or anti join would emit rows (null-padded, or unmatched) that are false once a partner was shed")
  }

  override protected def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    super.customStatefulOperatorMetrics ++ punctuated.join.shedding.SheddingMetrics.all

  /**
   * The join's inputs by number: 0 the left one, 1 the right one. Everything the operator
   * does per input (its state, keys, punctuations, metrics) is done over these, so that an
   * operator of more inputs reuses it; only Spark's join types name a side.
   */
  val inputs: IndexedSeq[JoinInputPlan] = IndexedSeq(
    JoinInputPlan(0, leftSpec, leftKeys, left.output, left.outputPartitioning, leftReplicated),
    JoinInputPlan(1, rightSpec, rightKeys, right.output, right.outputPartitioning, rightReplicated))
  private def leftOutput = inputs(0).output
  private def rightOutput = inputs(1).output

  /** The input a binary join's input `i` is joined with. */
  def other(i: Int): Int = 1 - i

  /**
   * The other input's schemes that do not fix the whole key: input `i`'s stored keys are
   * indexed for them ([[RangeIndex]]), so that their punctuations purge without a scan.
   */
  private[join] def indexSchemes(i: Int): Seq[KeyScheme] =
    RangeIndex.indexedSchemes(inputs(other(i)).spec.keySchemes, inputs(i).keys.length)

  /** Does any input hold punctuations or keep a range index (in the shared store)? */
  private[join] def usesSharedStore: Boolean = settings.shedding.enabled || band.isDefined || inputs.exists { in =>
    JoinInputState.usesShared(in.spec.keySchemes, indexSchemes(in.number).nonEmpty)
  }

  override val stateStoreNames: Seq[String] = JoinInputState.storeNames(inputs.size, usesSharedStore)

  /** Does input `i` keep its unmatched rows (outer joins, and the left of semi/anti joins)? */
  private[join] def preserved(i: Int): Boolean = joinType match {
    case FullOuter => true
    case LeftOuter | LeftAnti | LeftSemi => i == 0
    case RightOuter => i == 1
    case _ => false
  }

  override def requiredChildDistribution: Seq[Distribution] =
    StatefulOpClusteredDistribution(leftKeys, getStateInfo.numPartitions) ::
      StatefulOpClusteredDistribution(rightKeys, getStateInfo.numPartitions) :: Nil

  override lazy val output: Seq[Attribute] = joinType match {
    case Inner => leftOutput ++ rightOutput
    case LeftOuter => leftOutput ++ rightOutput.map(_.withNullability(true))
    case RightOuter => leftOutput.map(_.withNullability(true)) ++ rightOutput
    case FullOuter => (leftOutput ++ rightOutput).map(_.withNullability(true))
    case LeftSemi | LeftAnti => leftOutput
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
    val rdds = children.map(_.execute()).toIndexedSeq
    // Punctuations that do not fix a whole join key (a prefix, a range) concern every
    // partition. An input whose shuffle is a PunctuationReplicatingExchangeExec brings them to
    // every partition itself; from any other (an input already partitioned by the key, e.g.
    // the output of a join below) they are gathered first (one extra pass over this batch's
    // rows, only for inputs declaring such schemes) and given to all (in the tasks' closure:
    // they are few, and the closure is shipped anyway).
    val global = inputs.map { in =>
      (if (in.replicated) Array.empty[(KeyScheme, UnsafeRow)]
      else PunctuatedSymmetricHashJoinExec.partitionWide(rdds(in.number), in.spec, in.keys, in.output)) ++
        // the watermark on a join-key column: the same range punctuation in every partition
        WatermarkPunctuations.keyPunctuation(in.spec, in.keys.length, eventTimeWatermark)
    }
    // the same for range punctuations on a band's time column: their highest bound
    val gathered = inputs.map { in =>
      if (in.replicated) None
      else band.flatMap(b => TimeBandJoin.gather(rdds(in.number), in.spec, b, in.number))
    }
    // and a watermark-fed input's watermark, as its range punctuation ts<=w (every partition)
    val bandBounds = band.fold(gathered)(WatermarkPunctuations.bounds(gathered, _, eventTimeWatermark))
    rdds(0).stateStoreAwareZipPartitions(
      rdds(1), getStateInfo, stateStoreNames, coordinator) { (partitionId, l, r) =>
      new PunctuatedJoinTask(this, partitionId, storeConf, hadoopConf.value.value, global, bandBounds)
        .run(IndexedSeq(l, r))
    }
  }

  /**
   * Does a watermark purge this join's state (a band with a watermark-fed input, or an input
   * whose watermark is on its join key)?
   */
  private def watermarkPurges: Boolean =
    band.exists(b => b.purges && b.watermarked.contains(true)) || inputs.exists(_.spec.watermark.isDefined)

  /**
   * A batch without new data when the watermark has passed what this join applied: its
   * watermark-fed inputs' new bound then purges state (as Spark's own join evicts).
   */
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    watermarkPurges && newInputWatermark > 0 && newInputWatermark > eventTimeWatermark.getOrElse(0L)

  /**
   * The watermark the join passes on to Spark's operators downstream, as Spark's join computes
   * it: an output row pairs a stored row with a new one, so its time can lag the input
   * watermark by the band; the lowest time either input's state can still hold is passed on.
   * A join whose condition relates no watermarked columns passes the input watermark on.
   */
  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] = {
    val (l, r) = punctuated.compat.StreamingSymmetricHashJoinHelper.getStateWatermark(leftOutput, rightOutput,
      leftKeys, rightKeys, condition, Some(inputWatermarkMs), !conf.getConf(org.apache.spark.sql.internal.SQLConf.STATEFUL_OPERATOR_ALLOW_MULTIPLE))
    (l.toSeq ++ r).minOption.orElse(Some(inputWatermarkMs))
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

/**
 * One input of a [[PunctuatedSymmetricHashJoinExec]] as planned, by number: what the tasks
 * need of its plan (its columns and partitioning), not the plan itself.
 *
 * @param number       0 for the left input, 1 for the right one
 * @param spec         its declaration, in ordinals of its rows
 * @param keys         its join-key expressions
 * @param output       its plan's columns
 * @param partitioning its plan's output partitioning (a replicated input's home partition
 *                     is Spark's hash partitioning of the row)
 * @param replicated   whether it comes through a [[PunctuationReplicatingExchangeExec]]
 */
final case class JoinInputPlan(number: Int, spec: InputSpec, keys: Seq[Expression], output: Seq[Attribute],
    partitioning: Partitioning, replicated: Boolean)
