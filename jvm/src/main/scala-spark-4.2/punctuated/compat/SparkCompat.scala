package punctuated.compat

import org.apache.spark.sql.execution.ColumnarRule

/**
 * What differs between the Spark minors the extension builds for; this file is the 4.2 side
 * (`jvm/src/main/scala-spark-4.2`, compiled only into the 4.2 build; docs/spark-versions.md).
 * Spark 4.2 describes a micro-batch with the batch's own plan, so the physical rules apply
 * as they are:
 *
 * {{{
 *   extensions.injectColumnar(s => SparkCompat.columnar(PlanPunctuatedJoins(s)))
 * }}}
 * See the 4.0 and 4.1 side (`jvm/src/main/scala-spark-4.0-4.1`) for what it changes there.
 */
object SparkCompat {
  /** `rule` unchanged. */
  def columnar(rule: ColumnarRule): ColumnarRule = rule
}
