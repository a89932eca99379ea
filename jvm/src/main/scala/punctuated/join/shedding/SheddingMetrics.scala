package punctuated.join.shedding

import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}

/**
 * The punctuated joins' load-shedding metrics (user contract, "Load shedding"): rows
 * not kept because the partition's stored rows would exceed
 * `spark.punctuated.shedding.maxStateRows`, in all and (binary join) per input. Zero with shedding off.
 */
object SheddingMetrics {
  val RowsShed = "numRowsShed"
  val RowsShedLeft = "numRowsShedLeft"
  val RowsShedRight = "numRowsShedRight"

  /** The multi-way join's (it has no left and right). */
  val rowsShed: StatefulOperatorCustomMetric =
    StatefulOperatorCustomSumMetric(RowsShed, "number of rows shed (state over its budget)")

  val all: Seq[StatefulOperatorCustomMetric] = Seq(
    rowsShed,
    StatefulOperatorCustomSumMetric(RowsShedLeft, "number of the left input's rows shed"),
    StatefulOperatorCustomSumMetric(RowsShedRight, "number of the right input's rows shed"))
}
