package punctuated.aggregate

import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.expressions.aggregate.{BitOrAgg, Count, DeclarativeAggregate}
import org.apache.spark.sql.types.{DataType, LongType, StructField, StructType}

import punctuated.input.{PunctuationKind, PunctuationTag}

/**
 * The hidden counts of a punctuated aggregation ([[PunctuatedAggregates]]), one aggregate over
 * its kind column (Tucker et al. 2003, §5.2: what the group-by's pass/keep/propagate step
 * needs to know of a group's rows): how many data rows it has, which closing kinds of
 * punctuation reached it (bits), how many punctuations were invalid and how many arrived.
 *
 * {{{
 *   buffer      update, per input row of kind k (tag = punctuation_tag(kind))
 *   rows        + 1 if k = 0                  count(tag)  FILTER (kind = 0)   as before
 *   kinds       | 1 << k if k > 0 (else NULL) bit_or(1 << tag) FILTER (kind > 0)
 *   invalid     + 1 if k = -1                 count(tag)  FILTER (kind = -1)
 *   received    + 1 if k <> 0                 count(tag)  FILTER (kind <> 0)
 *
 *   rows of kinds 0, 0, 2, -1   ->   (rows 2, kinds 0b100, invalid 1, received 2)
 * }}}
 *
 * One aggregate instead of four filtered ones: each aggregation stage (the partial one, the
 * merges around the state store, the final one) generates one update without filters rather
 * than four. The buffer is
 * the four aggregates' buffers in the same order, with their names, types and nullability
 * ([[PunctuationCounts.bufferOf]]): the state a punctuated aggregation stores (its groups'
 * buffers) is laid out as by the four, so checkpoints written with them are read as they are.
 * The physical operator reads and sets the buffer by position ([[AggregateOrdinals]]).
 *
 * @param tag the aggregation's kind column, as `punctuation_tag(kind)`
 */
case class PunctuationCounts(tag: PunctuationTag) extends DeclarativeAggregate {

  override def children: Seq[Expression] = Seq(tag)
  override def nullable: Boolean = false
  override def dataType: DataType = PunctuationCounts.ResultType
  override def prettyName: String = "punctuation_counts"

  private lazy val buffer = PunctuationCounts.bufferOf(tag)
  private def rows = buffer(0)
  private def kinds = buffer(1)
  private def invalid = buffer(2)
  private def received = buffer(3)

  override lazy val aggBufferAttributes: Seq[AttributeReference] = buffer
  override lazy val initialValues: Seq[Expression] =
    Seq(Literal(0L), Literal(null, LongType), Literal(0L), Literal(0L))

  override lazy val updateExpressions: Seq[Expression] = {
    def plusOneIf(count: Expression, condition: Expression) = If(condition, Add(count, Literal(1L)), count)
    Seq(
      plusOneIf(rows, EqualTo(tag, Literal(PunctuationKind.Data))),
      If(GreaterThan(tag, Literal(PunctuationKind.Data)),
        BitwiseOr(Coalesce(Seq(kinds, Literal(0L))), ShiftLeft(Literal(1L), tag)), kinds),
      plusOneIf(invalid, EqualTo(tag, Literal(PunctuationKind.Invalid))),
      plusOneIf(received, Not(EqualTo(tag, Literal(PunctuationKind.Data)))))
  }

  override lazy val mergeExpressions: Seq[Expression] = Seq(
    Add(rows.left, rows.right),
    Coalesce(Seq(BitwiseOr(kinds.left, kinds.right), kinds.left, kinds.right)),
    Add(invalid.left, invalid.right),
    Add(received.left, received.right))

  override lazy val evaluateExpression: Expression = CreateNamedStruct(
    PunctuationCounts.ResultType.fieldNames.toSeq.zip(buffer).flatMap { case (n, b) => Seq(Literal(n), b) })

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(tag = newChildren.head.asInstanceOf[PunctuationTag])
}

object PunctuationCounts {

  /** The result: the four counts of a group, `kinds` NULL when no closing punctuation reached it. */
  val ResultType: StructType = StructType(Seq(
    StructField("rows", LongType, nullable = false),
    StructField("kinds", LongType, nullable = true),
    StructField("invalid", LongType, nullable = false),
    StructField("received", LongType, nullable = false)))

  /**
   * The buffer as the four separate aggregates had it (Spark's `count` and `bit_or` buffers, in
   * that order): the same names, types and nullability, so the state schema is unchanged.
   *
   * {{{
   *   bufferOf(tag).map(a => (a.name, a.dataType, a.nullable))
   *     == Seq(("count", LongType, false), ("bit_or", LongType, true), ("count", ...), ("count", ...))
   * }}}
   */
  def bufferOf(tag: Expression): Seq[AttributeReference] = {
    def fresh(a: AttributeReference) = AttributeReference(a.name, a.dataType, a.nullable, a.metadata)()
    val count = Count(Seq(tag)).aggBufferAttributes.head
    val bits = BitOrAgg(ShiftLeft(Literal(1L), tag)).aggBufferAttributes.head
    Seq(fresh(count), fresh(bits), fresh(count), fresh(count))
  }
}
