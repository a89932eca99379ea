package punctuated.join.shedding

import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}

/**
 * The binary punctuated join's load-shedding metrics (user contract, "Load shedding"): rows
 * not kept because the partition's stored rows would exceed
 * `spark.punctuated.shedding.maxStateRows`, in all and per input. Zero with shedding off.
 */
object SheddingMetrics {
  val RowsShed = "numRowsShed"
  val RowsShedLeft = "numRowsShedLeft"
  val RowsShedRight = "numRowsShedRight"

  val all: Seq[StatefulOperatorCustomMetric] = Seq(
    StatefulOperatorCustomSumMetric(RowsShed, "number of rows shed (state over its budget)"),
    StatefulOperatorCustomSumMetric(RowsShedLeft, "number of the left input's rows shed"),
    StatefulOperatorCustomSumMetric(RowsShedRight, "number of the right input's rows shed"))
}
