package punctuated.aggregate

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.{AllTuples, Distribution, Partitioning}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec

import punctuated.compat.{StateStoreRDDs, StatefulOperatorPartitioning, StatefulOperatorStateInfo, StreamingAggregationStateManager}
import punctuated.state.{HadoopConfPerRun, StoreLocations}

/**
 * The restore step below a [[PunctuatedAggregateExec]]: Spark's `StateStoreRestoreExec` (each
 * input group followed by the group's stored row, which the merge aggregation above folds in),
 * with the state store opened with the run's Hadoop conf ([[HadoopConfPerRun]]) that the
 * operator's own step already uses. Spark's restore step builds a `ReadStateStoreRDD`, which
 * broadcasts the session's Hadoop conf for every micro-batch: 10–30 ms of the driver's time
 * before any task starts, a planned part of every batch of every aggregation.
 *
 * {{{
 *   PunctuatedAggregateExec                  opens the store for writing: the same task
 *     HashAggregate(merge)                   continues from the read store opened here
 *       PunctuatedRestoreExec  <- this step   (Spark 4.2; 4.0 and 4.1: Spark's own RDD)
 *         HashAggregate(merge) <- Exchange ...
 *
 *   input (group 7: count 2), stored (group 7: count 5)  ->  (7: 2), (7: 5)  ->  merged (7: 7)
 * }}}
 *
 * Unlike Spark's step it reads the merge below to its end first, when its groups are few
 * ([[MergedGroupsReadAhead]]): one hash map's memory page per task at a time, not two.
 *
 * The stores, their files and the checkpoint are Spark's restore step's, unchanged: a
 * checkpoint written before this step replaced Spark's reads the same.
 *
 * @param keyExpressions     the grouping columns (the store's key)
 * @param stateInfo          the aggregation's state location (its operator id)
 * @param stateFormatVersion Spark's aggregation state format (the stored row's layout)
 * @param child              the partial aggregates, partitioned by the grouping columns (transient,
 *                           as [[PunctuatedAggregateExec]]'s: not shipped with the tasks)
 */
case class PunctuatedRestoreExec(
    keyExpressions: Seq[Attribute],
    stateInfo: Option[StatefulOperatorStateInfo],
    stateFormatVersion: Int,
    @transient child: SparkPlan)
  extends UnaryExecNode {

  private val stateManager = StreamingAggregationStateManager.createStateManager(
    keyExpressions, child.output, stateFormatVersion)

  override lazy val metrics: Map[String, SQLMetric] = Map(
    "numOutputRows" -> SQLMetrics.createMetric(sparkContext, "number of output rows"))

  // kept on the driver: operators above may ask for it in their tasks, which get no child
  private val childOutput = child.output
  override def output: Seq[Attribute] = childOutput
  override def outputPartitioning: Partitioning = child.outputPartitioning
  override def requiredChildDistribution: Seq[Distribution] =
    if (keyExpressions.isEmpty) AllTuples :: Nil
    else StatefulOperatorPartitioning.getCompatibleDistribution(keyExpressions, stateInfo.get, conf) :: Nil

  override protected def doExecute(): RDD[InternalRow] = {
    val numOutputRows = longMetric("numOutputRows")
    val info = stateInfo.getOrElse(throw new IllegalStateException(s"$nodeName has no state location"))
    StateStoreRDDs.withReadStateStore(
      child.execute(),
      info,
      keyExpressions.toStructType,
      stateManager.getStateValueSchema,
      NoPrefixKeyStateEncoderSpec(keyExpressions.toStructType),
      session,
      Some(StoreLocations.coordinator(session)),
      HadoopConfPerRun.of(this)) { (store, iter) =>
      if (!iter.hasNext && keyExpressions.isEmpty) {
        // a global aggregation's empty merge: the stored row, so that the state is not reset
        store.iterator().map(_.value)
      } else {
        // the merge below freed before the merge above takes a page (MergedGroupsReadAhead)
        MergedGroupsReadAhead(iter).flatMap { row =>
          val restored = stateManager.get(store, stateManager.getKey(row.asInstanceOf[UnsafeRow]))
          val rows = if (restored == null) Iterator.single(row) else Iterator(restored, row)
          numOutputRows += (if (restored == null) 1 else 2)
          rows
        }
      }
    }
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}
