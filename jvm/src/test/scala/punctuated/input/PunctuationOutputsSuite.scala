package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.scalatest.funsuite.AnyFunSuite

import punctuated.aggregate.PunctuationCounts

/**
 * [[PunctuationOutputs]]: the kinds one output group of a punctuated aggregation stands for,
 * the same interpreted and generated (the generated form keeps the `Generate` above an
 * aggregation inside its whole-stage loop).
 */
class PunctuationOutputsSuite extends AnyFunSuite {

  // over a group's hidden counts (punctuation_counts: rows, kinds, invalid, received)
  private val outputs = PunctuationOutputs(BoundReference(0, PunctuationCounts.ResultType, nullable = false))

  private def counts(dataRows: Long, bits: java.lang.Long) = InternalRow(InternalRow(dataRows, bits, 0L, 1L))

  private def interpreted(dataRows: Long, bits: java.lang.Long): Seq[Int] =
    outputs.eval(counts(dataRows, bits)).asInstanceOf[org.apache.spark.sql.catalyst.util.ArrayData]
      .toIntArray().toSeq

  private def generated(dataRows: Long, bits: java.lang.Long): Seq[Int] = {
    val projection = UnsafeProjection.create(Seq[Expression](outputs))
    projection(counts(dataRows, bits)).getArray(0).toIntArray().toSeq
  }

  private val cases: Seq[(Long, java.lang.Long, Seq[Int])] = Seq(
    (3L, 0L, Seq(0)),                       // a final row only
    (3L, 0x2L, Seq(0, 1)),                  // the final row, then a punctuation of kind 1
    (0L, 0x2L, Seq(1)),                     // a punctuation only
    (0L, 0L, Nil),                          // nothing
    (0L, null, Nil),                        // no kinds (NULL) and no data rows
    (2L, null, Seq(0)),                     // data rows, no kinds
    (1L, 0x1L, Seq(0)),                     // bit 0 is no kind
    (2L, (1L << 62) | 0x14L, Seq(0, 2, 4, 62)),
    (0L, 1L << 63, Nil))                    // above the last kind

  test("the kinds of a group: its final row (kind 0) if it has data rows, then its punctuations") {
    cases.foreach { case (rows, bits, expected) =>
      assert(interpreted(rows, bits) == expected, s"interpreted, rows=$rows bits=$bits")
    }
  }

  test("generated code agrees with the interpreted expression") {
    cases.foreach { case (rows, bits, expected) =>
      assert(generated(rows, bits) == expected, s"generated, rows=$rows bits=$bits")
    }
    val rnd = new scala.util.Random(7)
    (1 to 200).foreach { _ =>
      val rows = rnd.nextInt(3).toLong
      val bits: java.lang.Long = rnd.nextLong()
      assert(generated(rows, bits) == interpreted(rows, bits), s"rows=$rows bits=$bits")
    }
  }
}
