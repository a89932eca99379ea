package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.input.StreamColumns

/**
 * Optimizer rule, once per micro-batch after Spark's operator optimizations (its "Pre CBO
 * Rules"): each [[StreamColumns]] that [[ApplyPerBatchRewritesAtStart]] put above a stream
 * becomes the projection it stands for. Spark's later passes and its planner then see the plan
 * they always saw (the projection goes again in the next `ColumnPruning`, as before).
 *
 * {{{
 *   Filter(c, StreamColumns([price, ts], stream))  ==>  Filter(c, Project([price, ts], stream))
 * }}}
 */
case class ReplaceStreamColumnsWithProjections(session: SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = StreamColumns.toProjection(plan)
}
