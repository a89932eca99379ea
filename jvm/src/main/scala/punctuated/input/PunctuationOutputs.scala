package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, ExprId, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, IntegerType}

/**
 * The rows one output group of a punctuated aggregation stands for, as kinds: 0 for its
 * final data row (when it has data rows), then one kind per punctuation it carries (bits of
 * `kinds`) — exploded above the aggregation, so that a group's final row and the
 * punctuations closing it (Tucker et al. 2003, Table 2: group-by propagates punctuations on
 * its grouping attributes) leave as separate rows.
 *
 * {{{
 *   counts (rows 3, kinds 0b10, ...)   ->  [0, 1]    the final row, then a punctuation of kind 1
 *   counts (rows 0, kinds 0b10, ...)   ->  [1]       a punctuation only
 * }}}
 *
 * @param counts the aggregation's hidden counts (`punctuation_counts`, a struct whose first
 *               field counts the data rows and whose second holds the kinds, NULL for none);
 *               its other fields are read by the physical operator only
 */
case class PunctuationOutputs(counts: Expression) extends UnaryExpression {

  override def child: Expression = counts
  override def dataType: DataType = ArrayType(IntegerType, containsNull = false)
  override def nullable: Boolean = false
  override def prettyName: String = "punctuation_outputs"

  override def eval(input: InternalRow): Any = {
    val c = counts.eval(input).asInstanceOf[InternalRow]
    PunctuationOutputs.outputs(c.getLong(0), if (c.isNullAt(1)) 0L else c.getLong(1))
  }

  /**
   * Generated code, so that the `Generate` exploding these kinds joins the whole-stage loop of
   * the aggregation below it and the projection above it (an interpreted expression here
   * would split them, with a row conversion per group).
   */
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val c = counts.genCode(ctx)
    val outputs = classOf[PunctuationOutputs].getName.stripSuffix("$")
    ev.copy(code = code"""
      |${c.code}
      |${CodeGenerator.javaType(dataType)} ${ev.value} = $outputs.outputs(
      |  ${c.value}.getLong(0), ${c.value}.isNullAt(1) ? 0L : ${c.value}.getLong(1));
      |""".stripMargin, isNull = FalseLiteral)
  }

  override protected def withNewChildInternal(newChild: Expression): Expression = copy(counts = newChild)
}

object PunctuationOutputs {
  /** Bits 1 to [[PunctuationKind.MaxKinds]]: the kinds a group can carry. */
  private val KindBits = ((1L << (PunctuationKind.MaxKinds + 1)) - 1) & ~1L
  /** The outputs of a group with data rows and no punctuation (most groups): one array. */
  private val FinalRowOnly = UnsafeArrayData.fromPrimitiveArray(Array(0))

  /**
   * The kinds one group stands for: 0 if it has data rows, then the kinds set in `bits`.
   *
   * {{{
   *   outputs(3, 0b10)  ==  [0, 1]
   *   outputs(0, 0b10)  ==  [1]
   * }}}
   */
  def outputs(dataRows: Long, bits: Long): ArrayData = {
    val kinds = bits & KindBits
    if (kinds == 0 && dataRows > 0) return FinalRowOnly
    val out = new Array[Int]((if (dataRows > 0) 1 else 0) + java.lang.Long.bitCount(kinds))
    var i = if (dataRows > 0) 1 else 0
    var rest = kinds
    while (rest != 0) {
      out(i) = java.lang.Long.numberOfTrailingZeros(rest)
      rest &= rest - 1
      i += 1
    }
    UnsafeArrayData.fromPrimitiveArray(out)
  }
}

/**
 * The value of its child (a punctuated operator's kind column), opaque to the optimizer: the
 * hidden counts of a punctuated aggregation read `punctuation_tag(kind)`; a punctuated
 * deduplication filters on `punctuation_tag(kind) IS NOT NULL`.
 *
 * It also carries, as a field that is not a child, the [[PunctuationKind]] that computes the
 * column: what the physical rules need (the operator's [[AggregateLayout]], its streams)
 * travels in the operator's own expressions, also in micro-batches where the optimizer has
 * replaced the projection computing the column (an input without new data becomes an empty
 * relation whose output includes `kind`).
 *
 * {{{
 *   Aggregate(g, ..., punctuation_counts(punctuation_tag(kind)) AS __punctuation_counts)
 *     LocalRelation [..., kind]          -- this micro-batch: no new data
 *   PunctuationTag.kinds(aggregate.aggregateExpressions)   // kind's id -> its PunctuationKind
 * }}}
 *
 * @param child   the kind column
 * @param carried the expression computing it (as built by the analyzer's rewrite)
 */
case class PunctuationTag(child: Expression, carried: PunctuationKind)
  extends UnaryExpression {
  override def dataType: DataType = child.dataType
  override def nullable: Boolean = true
  override def prettyName: String = "punctuation_tag"
  override def toString: String = s"$prettyName($child)"
  override def eval(input: InternalRow): Any = child.eval(input)
  /** The child's value as it is (generated code: no call out per row). */
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val c = child.genCode(ctx)
    ev.copy(code = c.code, isNull = c.isNull, value = c.value)
  }
  override protected def withNewChildInternal(newChild: Expression): Expression = copy(child = newChild)
}

object PunctuationTag {
  /** The tag of a kind column: its value, carrying the kind's expression. */
  def apply(kind: Alias): PunctuationTag = kind.child match {
    case k: PunctuationKind => PunctuationTag(kind.toAttribute, k)
    case other => throw new IllegalArgumentException(s"not a punctuation_kind column: $other")
  }

  /** The kinds carried by the tags in these expressions, by the id of their kind column. */
  def kinds(expressions: Seq[Expression]): Map[ExprId, PunctuationKind] =
    expressions.flatMap(_.collect { case PunctuationTag(a: Attribute, k) => a.exprId -> k }).toMap
}
