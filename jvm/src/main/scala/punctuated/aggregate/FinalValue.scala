package punctuated.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode}
import org.apache.spark.sql.types.DataType

/**
 * A result column of a punctuated aggregation whose output punctuations nothing uses
 * ([[FinalRowsOnly.logical]]): the value of `child`, as nullable as the `IF(out > 0, NULL, x)`
 * it replaces. Its other children, the aggregation's hidden counts, are not evaluated: they are
 * referenced here only so that the optimizer's column pruning keeps them in the aggregation
 * (its physical operator reads them), with no `Generate` above the aggregation to reference them.
 *
 * {{{
 *   final_value(bids, __punctuation_counts)  ==  bids
 * }}}
 */
case class FinalValue(child: Expression, hidden: Seq[Expression]) extends Expression {

  override def children: Seq[Expression] = child +: hidden
  override def dataType: DataType = child.dataType
  override def nullable: Boolean = true
  override def prettyName: String = "final_value"

  override def eval(input: InternalRow): Any = child.eval(input)

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val value = child.genCode(ctx)
    ev.copy(code = value.code, isNull = value.isNull, value = value.value)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(child = newChildren.head, hidden = newChildren.tail)
}
