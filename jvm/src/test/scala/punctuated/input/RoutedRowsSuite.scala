package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.execution.metric.SQLMetric
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[PunctuationReplicatingExchangeExec.Routed]], the records a replicating shuffle writes: a
 * data row once to its hash partition, a partition-wide punctuation once to every partition,
 * in input order, through the one row object a generated iterator reuses (no copy unless asked).
 */
class RoutedRowsSuite extends AnyFunSuite {

  /** Rows (id, wide) through one reused row object, as a whole-stage plan outputs them. */
  private def rows(spec: (Long, Boolean)*): Iterator[InternalRow] = {
    val w = new UnsafeRowWriter(2)
    spec.iterator.map { case (id, wide) =>
      w.reset(); w.zeroOutNullBytes(); w.write(0, id); w.write(1, if (wide) 1L else 0L); w.getRow
    }
  }

  private object Wide extends PartitionWideRows {
    override def isPartitionWide(row: InternalRow): Boolean = row.getLong(1) == 1L
  }

  private val byId = (row: InternalRow) => (row.getLong(0) % 2).toInt

  /** (partition, id) of each record, read as the shuffle writer reads it: one at a time. */
  private def written(routed: Iterator[Product2[Int, InternalRow]]): List[(Int, Long)] =
    routed.map(r => (r._1, r._2.getLong(0))).toList

  test("data rows go once to their partition, a partition-wide row to every one, in input order") {
    val copies = new SQLMetric("sum")
    val routed = new PunctuationReplicatingExchangeExec.Routed(
      rows((1L, false), (7L, true), (4L, false), (9L, true)), n = 3, byId, Wide, copies, copy = false)
    assert(written(routed) == List((1, 1L), (0, 7L), (1, 7L), (2, 7L), (0, 4L), (0, 9L), (1, 9L), (2, 9L)))
    assert(copies.value == 6)
  }

  test("one partition: a partition-wide row is sent once") {
    val copies = new SQLMetric("sum")
    val routed = new PunctuationReplicatingExchangeExec.Routed(
      rows((3L, true), (5L, false)), n = 1, _ => 0, Wide, copies, copy = false)
    assert(written(routed) == List((0, 3L), (0, 5L)))
  }

  test("with copy, every record keeps its row after the next is read") {
    val copies = new SQLMetric("sum")
    val routed = new PunctuationReplicatingExchangeExec.Routed(
      rows((2L, true), (3L, false)), n = 2, byId, Wide, copies, copy = true).toList
    assert(routed.map(r => (r._1, r._2.getLong(0))) == List((0, 2L), (1, 2L), (1, 3L)))
    val objects = routed.map(_._2)
    assert(objects.combinations(2).forall { case Seq(a, b) => a ne b }, "three row objects, not one reused")
  }

  test("no input: no record") {
    val routed = new PunctuationReplicatingExchangeExec.Routed(
      Iterator.empty, n = 2, byId, Wide, new SQLMetric("sum"), copy = false)
    assert(!routed.hasNext)
  }
}
