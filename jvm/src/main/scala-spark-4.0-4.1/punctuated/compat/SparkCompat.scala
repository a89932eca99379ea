package punctuated.compat

import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/**
 * What differs in Spark 4.0 and 4.1 from the Spark the shared sources are written for (4.2);
 * this file is compiled only into the 4.0 and 4.1 builds (`jvm/src/main/scala-spark-4.0-4.1`,
 * docs/spark-versions.md).
 *
 * Spark 4.0 and 4.1 describe each micro-batch for the SQL UI (`SQLExecution.withNewExecutionId` →
 * `QueryExecution.explainString`) by planning the query once more in a new
 * `IncrementalExecution` whose checkpoint location is the placeholder `"<unknown>"`; 4.2
 * reuses the batch's own plan (`IncrementalExecution.queryExecutionForExplain`). The
 * extension's physical rules check and write a punctuated operator's checkpoint files (its
 * declarations record, state schema and operator metadata, plan log) while planning it, so
 * on 4.0 and 4.1 that second planning would write them to a relative `<unknown>/` directory shared by
 * every query of the process, and fail on the next query's different schemas
 * (`STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE`). On 4.0 and 4.1 the rules therefore leave such a
 * describe-only plan as Spark planned it: the UI's plan description shows Spark's operators,
 * while every batch runs the punctuated ones.
 *
 * {{{
 *   extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedJoins(s)))
 * }}}
 */
object SparkCompat {
  /** The checkpoint location Spark gives a plan made only to be described. */
  val DescribeOnlyCheckpoint = "<unknown>"

  /** Whether `plan` was planned only to be described (no batch runs it). */
  def describeOnly(plan: SparkPlan): Boolean = plan.exists {
    case w: StateStoreWriter => w.stateInfo.exists(_.checkpointLocation == DescribeOnlyCheckpoint)
    case _ => false
  }

  /** `rule`, except that it leaves describe-only plans as they are. */
  def columnar(rule: ColumnarRule): ColumnarRule = new ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = skipDescribeOnly(rule.preColumnarTransitions)
    override def postColumnarTransitions: Rule[SparkPlan] = skipDescribeOnly(rule.postColumnarTransitions)
  }

  private def skipDescribeOnly(r: Rule[SparkPlan]): Rule[SparkPlan] = new Rule[SparkPlan] {
    override val ruleName: String = r.ruleName
    override def apply(plan: SparkPlan): SparkPlan = if (describeOnly(plan)) plan else r(plan)
  }
}
