package punctuated.join.multi

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, StatefulOpClusteredDistribution, UnknownPartitioning}
import org.apache.spark.sql.execution.SparkPlan
import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric, StatefulOperatorStateInfo}
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreCustomMetric}
import org.apache.spark.sql.types.DataType

import punctuated.conf.PunctuatedConf
import punctuated.state.{PunctuatedJoinMetrics, PunctuatedStatefulOperator}

/**
 * A punctuated multi-way join: a group of three or more inner stream-stream equi-joins run as
 * one operator — by default with no intermediate state, Viglas et al.'s MJoin as Li et al. 2006 (§3.2)
 * purge it by punctuations, chained through the inputs' stored rows (Lemma 1) and
 * generalized to attribute classes and multi-attribute schemes (§4.2).
 *
 * A tree of binary joins keeps each join's result as the next join's input and only passes
 * on punctuations of that join's own key, so a chain over two keys cannot forget its middle.
 * Here every input's rows are stored once per cell, and a row goes as soon as the
 * punctuations of the other inputs — directly or through the rows joinable with it — show
 * that no future result can include it ([[ChainedPurge]]).
 *
 * {{{
 *     input 0        input 1        ...     input n-1     (rows and punctuations, routed
 *        |              |                       |           to hypercube cells by the
 *        v              v                       v           exchange below each input)
 *   +----------------------------------------------------------+
 *   | cell c:  input 0's rows, then input 1's, ... in order:    |
 *   |   late? (own held / remembered punctuations)  -> dropped  |
 *   |   probe the other inputs' stored rows, one input at a     |
 *   |   time, each sharing a class with those before (look-ups  |
 *   |   by class value), residual condition -> output rows      |
 *   |   store the row (under each of its class values), unless  |
 *   |   its chained purge is already complete (earlier inputs'  |
 *   |   punctuations of this batch count: they sent every row)  |
 *   | end of batch: this batch's punctuations -> remember, hold;|
 *   |   chained purge of the rows they and the new rows touch,  |
 *   |   to a fixpoint; release held punctuations no longer      |
 *   |   needed; commit                                          |
 *   +----------------------------------------------------------+
 * }}}
 *
 * Worked example, the chain `a(k) ⋈ b(k, v) ⋈ c(v)` (classes 0 = k, 1 = v; a punctuates k,
 * b punctuates k and v separately, c punctuates v):
 * {{{
 *   batch 0: a(k=1)           stored; no partner yet
 *            b(k=1, v=7)      joins a(1), no c yet; stored
 *            c(v=7)           joins b(1, 7) and through it a(1): one result; stored
 *   batch 1: b: "no more k=1"  at the end of the batch:
 *            c: "no more v=7"  a(1): b closed k=1 -> partials {k=1, v=7}; c closed v=7: purged
 *                              b(1, 7): a has not closed k=1: kept
 *                              c(7): b has not closed v=7 (a shares no class with c): kept
 *   batch 2: a: "no more k=1"  b(1, 7): a closed k=1 and stores no row with it: purged;
 *            b: "no more v=7"  c(7): b closed v=7 and stores no row with it: purged. Every
 *                              punctuation is released (the other inputs of its class
 *                              closed its value too and store nothing with it).
 *   state after batch 2: empty. A tree of binary joins keeps b(1, 7) ⋈ a(1) forever: its
 *   upper join sees no punctuation on v from the lower one.
 * }}}
 *
 * Tree plans (`plan`, [[MultiJoinPlan]]): every inner node but the root keeps its
 * combinations as intermediate state, a virtual input named by the inputs it covers
 * ([[MultiJoinTree]], [[MultiJoinLayout.node]]); a new row's delta climbs the tree, probing
 * at each ancestor the other children's states ([[MultiJoinTreeProbe]]). The inputs' stores
 * and punctuations are the same under every plan: the chained purge of input rows reads input
 * state only. A node's combination with key κ goes once the closure started from κ with the
 * node's inputs visited reaches every input ([[ChainedPurge.check]] with a covered set), which
 * holds for every combination containing a purged input row.
 * {{{
 *   ((a ⋈ b) ⋈ c):  stores input0-mjoin-rows, input1-mjoin-rows, input2-mjoin-rows,
 *                   inputs-0-1-mjoin-rows (a ⋈ b), punctuated-meta
 * }}}
 *
 * Partitioning (Afrati and Ullman 2010, shares): each attribute class c has a share s_c, the
 * cells are the points of the grid of shares, a class value's coordinate is Spark's hash
 * partition of it among s_c. A data row is joined and stored only in its *home* cells (all
 * its classes' coordinates agree), so each result is produced in exactly one cell; a
 * punctuation comes to every cell agreeing on the classes it binds, so every purge decision
 * is local to a cell. A non-home copy of a data row (an input whose unique key binds fewer
 * classes than it has) only applies the punctuation its unique key implies.
 *
 * Semantics as [[punctuated.join.PunctuatedSymmetricHashJoinExec]]'s: punctuations take
 * effect at the end of their batch; late rows and invalid punctuations per
 * `spark.punctuated.lateRows` and `spark.punctuated.invalidPunctuations`. Purge checks that
 * would build more than [[MultiJoinState.MaxPartials]] partial results are abandoned for the
 * batch (the row stays; counted in `numPurgeChecksAbandoned`).
 *
 * @param inputs     the inputs as planned, by number
 * @param classTypes the data type of each attribute class
 * @param condition  residual filters, over the children's outputs
 * @param projection the operator's output (columns of the children)
 * @param stateInfo  state-store location, set by Spark's incremental planner
 * @param settings   the `spark.punctuated.*` settings
 * @param shares     the hypercube shares per class (product <= the state's partitions)
 * @param children   input i's rows, already routed to cells, as children(i) (transient: kept
 *                   on the driver, so that the tasks, which get this operator with their
 *                   closure, do not carry the plans below it; they read the children's columns
 *                   from `childOutputs`, taken on the driver)
 * @param plan       the plan over the inputs (canonical; default the MJoin)
 * @param probeOrders under the MJoin, per input the order its rows probe the others, each
 *                   next sharing a class with it or one before ([[PlanCost.probeOrders]]
 *                   under the observed statistics; they do not affect the state); empty: by
 *                   input number ([[probeOrder]])
 * @param nodeStores the nodes with a rows store of their own in the checkpoint, by the inputs
 *                   they cover (null: the plan's nodes); every other node of the plan keeps
 *                   its rows in `punctuated-meta` ([[MultiJoinMigration]])
 * @param migration  the plan change this batch makes, if any ([[MultiJoinMigration]])
 * @param eventTimeWatermark the event-time watermark (ms) Spark's incremental planner gave the
 *                   group's uppermost join for eviction this batch: the range punctuation
 *                   `ts<=w` of each input whose watermark column is one of its join columns
 *                   (its spec's `watermark`: [[punctuated.join.WatermarkPunctuations.onKey]]),
 *                   in every cell, taking effect once the input has sent its rows of the batch
 */
case class PunctuatedMultiJoinExec(
    inputs: IndexedSeq[MultiJoinInputSpec],
    classTypes: Seq[DataType],
    condition: Option[Expression],
    projection: Seq[Attribute],
    stateInfo: Option[StatefulOperatorStateInfo],
    settings: PunctuatedConf,
    shares: Seq[Int],
    @transient children: Seq[SparkPlan],
    plan: MultiJoinPlan.Join = null,
    probeOrders: Seq[Seq[Int]] = Nil,
    nodeStores: Seq[Seq[Int]] = null,
    migration: Option[MultiJoinMigration] = None,
    eventTimeWatermark: Option[Long] = None)
  extends SparkPlan with PunctuatedStatefulOperator {

  /** The plan in force: `plan`, or the MJoin of the inputs. */
  val joinPlan: MultiJoinPlan.Join = Option(plan).getOrElse(MultiJoinPlan.mjoin(inputs.size))
  require(joinPlan.inputs == inputs.indices, s"the plan covers the inputs ${inputs.indices}: $joinPlan")

  require(inputs.size == children.size && inputs.indices.forall(i => inputs(i).number == i),
    "one child per input, inputs numbered 0 .. n-1")
  require(shares.size == classTypes.size, s"one share per class: $shares")

  /** Each child's columns (what the tasks need of the children). */
  private[punctuated] val childOutputs: IndexedSeq[Seq[Attribute]] = children.map(_.output).toIndexedSeq

  override def shortName: String = "punctuatedMultiJoin"
  override def output: Seq[Attribute] = projection
  /** The nodes with a rows store of their own (`nodeStores`, else the plan's nodes). */
  val storedNodes: Seq[Seq[Int]] = Option(nodeStores).getOrElse(MultiJoinMigration.nodeSets(joinPlan))
  override val stateStoreNames: Seq[String] = MultiJoinLayout.storeNames(inputs.size, storedNodes)

  /** The plan in the operator's description: `punctuatedMultiJoin plan=((0 ⋈ 1) ⋈ 2)`. */
  override def simpleString(maxFields: Int): String =
    s"$nodeName plan=${joinPlan.text(_.toString)}" + migration.map(m =>
      s" migrating from ${m.from.text(_.toString)} (${m.strategy})").getOrElse("")

  /** The plan as the task runs it (units, children, probe orders). */
  private[multi] def tree: MultiJoinTree = new MultiJoinTree(joinPlan, inputs, childOutputs)

  /**
   * Each input in the operator's cells, one partition per cell, as the
   * [[MultiJoinExchangeExec]] below it routes it (placed by the planner after Spark's
   * exchanges are planned, so this is not enforced by Spark; with one class it is exactly
   * this hash distribution). Spark's distributions are sealed: the stateful one on the
   * input's class columns names the number of partitions, as Spark's checks of stateful
   * operators expect.
   */
  override def requiredChildDistribution: Seq[Distribution] =
    inputs.map(in => StatefulOpClusteredDistribution(in.keys, getStateInfo.numPartitions))
  override def outputPartitioning: Partitioning = UnknownPartitioning(getStateInfo.numPartitions)

  override protected def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    (PunctuatedJoinMetrics.all ++ Seq(StatefulOperatorCustomSumMetric(PunctuatedMultiJoinExec.PurgeChecksAbandoned,
      "number of purge checks abandoned (too many partial results)"),
      StatefulOperatorCustomSumMetric(PunctuatedMultiJoinExec.PurgeChecks,
        "number of stored keys the chained purge checked"),
      StatefulOperatorCustomSumMetric(MultiJoinMigration.NumMigrations, "number of plan migrations started"),
      StatefulOperatorCustomSumMetric(MultiJoinMigration.NumIncompleteStates,
        "number of intermediate states of the plan not yet complete"),
      StatefulOperatorCustomSumMetric(MultiJoinMigration.NumKeysCompleted,
        "number of keys of intermediate states completed by a plan migration"),
      StatefulOperatorCustomSumMetric(MultiJoinMigration.NumParallelPlans,
        "number of cells still running an old plan beside the current one (parallel_track)"))) ++
      MultiJoinObserved.metrics(inputs.map(_.classes)) ++ punctuated.join.shedding.SheddingMetrics.multiWay(inputs.size)

  require(probeOrders.isEmpty || joinPlan.isMJoin && probeOrders.size == inputs.size &&
    probeOrders.indices.forall(i => connected(i, probeOrders(i))), s"probe orders $probeOrders do not fit the plan $joinPlan")

  /** Is `order` the inputs other than `i`, each sharing a class with `i` or one before it? */
  private def connected(i: Int, order: Seq[Int]): Boolean =
    order.sorted == inputs.indices.filter(_ != i) && order.indices.forall { d =>
      (i +: order.take(d)).exists(j => inputs(j).classes.exists(inputs(order(d)).classes.contains))
    }

  /**
   * The order in which a row of input `i` probes the other inputs under the MJoin: as
   * `probeOrders` gives it, else each next input shares a class with `i` or an input before
   * it (the smallest such number first).
   */
  def probeOrder(i: Int): IndexedSeq[Int] =
    if (probeOrders.nonEmpty) probeOrders(i).toIndexedSeq else probeOrderByNumber(i)

  private def probeOrderByNumber(i: Int): IndexedSeq[Int] = {
    val bound = scala.collection.mutable.Set(inputs(i).classes: _*)
    val order = scala.collection.mutable.ArrayBuffer.empty[Int]
    while (order.size < inputs.size - 1) {
      val next = inputs.indices.find(j => j != i && !order.contains(j) && inputs(j).classes.exists(bound))
        .getOrElse(throw new IllegalStateException(s"inputs not connected by their classes: ${inputs.map(_.classes)}"))
      order += next
      bound ++= inputs(next).classes
    }
    order.toIndexedSeq
  }

  /** The coordinates of `cell`, one per class. */
  def cellCoordinates(cell: Int): IndexedSeq[Int] = Hypercube(shares.toIndexedSeq).coordinates(cell)

  /** The coordinate of a value (a one-field row) of class `c`, as the exchange computes it. */
  def coordinateOf(c: Int): UnsafeRow => Int = {
    val f = Hypercube.coordinate(shares(c), classTypes(c))
    val get = InternalRow.getAccessor(classTypes(c), nullable = true)   // typed: no type look-up per row
    row => f(get(row, 0))
  }

  protected override def doExecute(): RDD[InternalRow] = {
    val coordinator = stateStoreCoordinator
    val storeConf = new StateStoreConf(conf)
    val hadoopConf = broadcastHadoopConf()
    metrics // initialise on the driver
    new StateStoreAwareZipRDD(sparkContext, children.map(_.execute()), getStateInfo, stateStoreNames,
      Some(coordinator))({ (cell, iters) =>
      new MultiJoinTask(this, cell, storeConf, hadoopConf.value.value).run(iters)
    })
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[SparkPlan]): SparkPlan =
    copy(children = newChildren)

  /**
   * A batch without new data when the watermark has passed what this join applied, if a
   * watermark is an input's range punctuation: its new bound then purges state (as Spark's
   * own join evicts).
   */
  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean =
    inputs.exists(_.spec.watermark.isDefined) && newInputWatermark > 0 &&
      newInputWatermark > eventTimeWatermark.getOrElse(0L)

  // Accessors for the task (metrics are protected in SparkPlan).
  private[multi] def metric(name: String) = longMetric(name)
  private[multi] def reportStoreMetrics(): Unit = setOperatorMetrics(stateStoreNames.size)
  private[multi] def reportCustomStoreMetrics(m: Map[StateStoreCustomMetric, Long]): Unit = setStoreCustomMetrics(m)
}

object PunctuatedMultiJoinExec {
  /** Purge checks abandoned over [[MultiJoinState.MaxPartials]] partial results. */
  val PurgeChecksAbandoned = "numPurgeChecksAbandoned"

  /**
   * Stored keys (of inputs and of a tree plan's nodes) the chained purge checked: what a
   * batch's purge costs, found by look-ups from its new rows and punctuations, never a pass.
   */
  val PurgeChecks = "numPurgeChecks"
}
