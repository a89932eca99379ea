package punctuated.join.multi

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.physical.{Distribution, Partitioning, StatefulOpClusteredDistribution}
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import punctuated.compat.StatefulOperatorStateInfo

import punctuated.state.PunctuatedStatefulOperator

/**
 * Stands, in the executed plan, for one of a multi-way group's lower joins, which the one
 * [[PunctuatedMultiJoinExec]] replaced: it passes its child's rows on untouched and holds no
 * state. It exists for Spark's watermark propagation under per-operator watermarks
 * (`spark.sql.streaming.statefulOperator.allowMultiple`, Spark's default): Spark computes each
 * stateful operator's watermark over the previous micro-batch's executed plan and looks it up
 * by operator id when it plans the next one, where the group's lower joins are still Spark's
 * joins with their own ids; without an operator of that id in the executed plan the batch after
 * the watermark was first set fails ("Watermark for batch ID .. and stateOpId .. is not yet
 * set"). Placed above the multi-way join only in queries with a `withWatermark`
 * ([[punctuated.spark.rules.PlanPunctuatedMultiJoins]]); each appears in
 * `lastProgress.stateOperators` as `punctuatedMultiJoinMember`, with no rows.
 *
 * {{{
 *   punctuatedMultiJoinMember (operator 1)         the lower join a ⋈ b of ((a ⋈ b) ⋈ c)
 *     punctuatedMultiJoin (operator 0)             the group, with the top join's state
 * }}}
 *
 * @param stateInfo the lower join's state location, as Spark's incremental planner set it
 * @param child     the multi-way join (or another member above it)
 */
case class MultiJoinMemberExec(stateInfo: Option[StatefulOperatorStateInfo], child: SparkPlan)
  extends UnaryExecNode with PunctuatedStatefulOperator {

  override def shortName: String = "punctuatedMultiJoinMember"
  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = child.outputPartitioning
  /** No store is opened: the member holds nothing. */
  override val stateStoreNames: Seq[String] = Nil

  /**
   * As Spark expects of a stateful operator, a distribution over the state's partitions (the
   * rows are the multi-way join's, already in its cells: exchanges are planned before the group
   * is, so this adds none).
   */
  override def requiredChildDistribution: Seq[Distribution] =
    Seq(StatefulOpClusteredDistribution(output.take(1), getStateInfo.numPartitions))

  protected override def doExecute(): RDD[InternalRow] = child.execute()

  /** The watermark passes through unchanged (the multi-way join below decides what it passes on). */
  override def produceOutputWatermark(inputWatermarkMs: Long): Option[Long] = Some(inputWatermarkMs)

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}
