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

  /** The multi-way join's per input: `input1RowsShed` (the binary join's left and right). */
  def inputRowsShed(i: Int): String = s"input${i}RowsShed"
  /** The multi-way join's intermediate results (a tree plan's nodes' combinations) shed. */
  val CombinationsShed = "numCombinationsShed"

  /** The multi-way join's over `n` inputs: in all, per input, and of its nodes. */
  def multiWay(n: Int): Seq[StatefulOperatorCustomMetric] = rowsShed +:
    ((0 until n).map(i => StatefulOperatorCustomSumMetric(inputRowsShed(i), s"number of input $i's rows shed")) :+
      StatefulOperatorCustomSumMetric(CombinationsShed, "number of intermediate results shed (tree plans)"))

  val all: Seq[StatefulOperatorCustomMetric] = Seq(
    rowsShed,
    StatefulOperatorCustomSumMetric(RowsShedLeft, "number of the left input's rows shed"),
    StatefulOperatorCustomSumMetric(RowsShedRight, "number of the right input's rows shed"))
}
