package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, UnsafeProjection}
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[PunctuationOutputs]]: the kinds one output group of a punctuated aggregation stands for,
 * the same interpreted and generated (the generated form keeps the `Generate` above an
 * aggregation inside its whole-stage loop).
 */
class PunctuationOutputsSuite extends AnyFunSuite {

  private val outputs = PunctuationOutputs(
    BoundReference(0, LongType, nullable = true), BoundReference(1, LongType, nullable = true),
    Seq(BoundReference(2, LongType, nullable = true)))

  private def interpreted(dataRows: java.lang.Long, bits: java.lang.Long): Seq[Int] =
    outputs.eval(InternalRow(dataRows, bits, 0L)).asInstanceOf[org.apache.spark.sql.catalyst.util.ArrayData]
      .toIntArray().toSeq

  private def generated(dataRows: java.lang.Long, bits: java.lang.Long): Seq[Int] = {
    val projection = UnsafeProjection.create(Seq[Expression](outputs))
    projection(InternalRow(dataRows, bits, 0L)).getArray(0).toIntArray().toSeq
  }

  private val cases: Seq[(java.lang.Long, java.lang.Long, Seq[Int])] = Seq(
    (3L, 0L, Seq(0)),                       // a final row only
    (3L, 0x2L, Seq(0, 1)),                  // the final row, then a punctuation of kind 1
    (0L, 0x2L, Seq(1)),                     // a punctuation only
    (0L, 0L, Nil),                          // nothing
    (null, null, Nil),                      // no counts at all (an empty group)
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
      val rows: java.lang.Long = rnd.nextInt(3).toLong
      val bits: java.lang.Long = rnd.nextLong()
      assert(generated(rows, bits) == interpreted(rows, bits), s"rows=$rows bits=$bits")
    }
  }
}
