package punctuated.join

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, ExprId}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BooleanType, DataType}

import punctuated.declaration.Declaration

/**
 * The declaration of one join input, with each declared column tied to the attribute id
 * it has in the plan.
 *
 * @param declaration the input stream's declaration
 * @param columns     declared column name → expression id of that column in the plan
 */
final case class InputDeclaration(declaration: Declaration, columns: Map[String, ExprId]) {
  def markerId: Option[ExprId] = declaration.marker.flatMap(columns.get)
}

/**
 * A conjunct, always TRUE, that [[punctuated.spark.rules.PunctuateStreamingJoins]] adds to
 * the condition of a stream-stream join whose inputs carry punctuation declarations. It
 *
 *  - makes the join reference each input's marker column, so that column pruning keeps the
 *    punctuation rows' marker on their way from the sources to the join; and it references
 *    both inputs, so that it is never pushed below the join;
 *  - carries the declarations to the physical plan, where
 *    [[punctuated.spark.rules.PlanPunctuatedJoins]] finds it and runs the join with
 *    [[PunctuatedSymmetricHashJoinExec]], which drops this conjunct.
 *
 * @param children the attributes referenced (markers; an attribute of an undeclared input)
 * @param left     the left input's declaration, if any
 * @param right    the right input's declaration, if any
 */
case class PunctuationColumns(
    children: Seq[Expression],
    left: Option[InputDeclaration],
    right: Option[InputDeclaration])
  extends Expression with CodegenFallback {

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  override def foldable: Boolean = false
  override def eval(input: InternalRow): Any = true
  override def prettyName: String = "punctuation_columns"
  override def toString: String = s"$prettyName(${children.mkString(", ")})"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(children = newChildren)
}

object PunctuationColumns {
  /** The conjunct in a join condition, if the join is a punctuated one. */
  def find(condition: Option[Expression]): Option[PunctuationColumns] =
    condition.flatMap(_.collectFirst { case p: PunctuationColumns => p })
}
