package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Literal}
import org.apache.spark.sql.catalyst.plans.logical.Expand
import org.apache.spark.sql.types.IntegerType

/**
 * The copies a sliding window's `Expand` makes of each row (one per window it may fall in,
 * Spark's `TimeWindowing`), numbered, so that a punctuation row passes once: its copies are
 * one punctuation (Tucker et al. 2003, Table 2: group-by reads a punctuation once; the
 * aggregation fills the window key from the punctuation's bound, the same in every copy, or
 * leaves it NULL for a punctuation of another scheme), and every further copy would be
 * grouped, shuffled to each partition and counted again for nothing.
 *
 * {{{
 *   Expand([[w0, a, ts, m], [w1, a, ts, m], ...], [window, a, ts, m], child)
 *     -> Expand([[w0, a, ts, m, 0], [w1, a, ts, m, 1], ...], [window, a, ts, m, copy], child)
 *   and the window's filter above:  IF(m, copy = 0, start <= ts AND ts < end)
 *   (or, where the window has none, its size a multiple of its slide:  IF(m, copy = 0, true))
 * }}}
 */
object SlidingWindowCopies {

  /** The number column's name (pruned again above the window's filter). */
  val Column = "punctuated_window_copy"

  /** Are the copies numbered already (the rule that numbers them runs in every optimizer pass)? */
  def isNumbered(e: Expand): Boolean = e.output.exists(_.name == Column)

  /** The `Expand` with each copy numbered from 0 (as it is, if it is already), and the number. */
  def numbered(e: Expand): (Expand, Attribute) = e.output.find(_.name == Column) match {
    case Some(copy) => (e, copy)
    case None =>
      val copy = AttributeReference(Column, IntegerType, nullable = false)()
      val projections = e.projections.zipWithIndex.map { case (p, i) => p :+ Literal(i) }
      (e.copy(projections = projections, output = e.output :+ copy), copy)
  }
}
