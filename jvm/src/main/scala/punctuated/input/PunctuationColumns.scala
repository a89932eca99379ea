package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, ExprId}
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
  /** The input's own marker column: its output punctuations set it (None for a derived input). */
  def markerId: Option[ExprId] = declaration.marker.flatMap(columns.get)

  /** Every column whose true value marks a punctuation row of this input. */
  def markerIds: Seq[ExprId] = declaration.markers.flatMap(columns.get)

  /** Do punctuations of this input reach the join (marker rows, or a unique key's)? */
  def hasPunctuations(scheme: punctuated.declaration.Scheme): Boolean =
    markerIds.nonEmpty || declaration.unique.contains(scheme)
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
 *    [[punctuated.join.PunctuatedSymmetricHashJoinExec]], which drops this conjunct.
 *
 * The declared columns are referenced as children (left input's first, then the right's; one
 * column of an undeclared input stands in for it), so the optimizer keeps them and rewrites
 * them like any other reference: their ids in any later plan are read from the children.
 *
 * @param children    the referenced columns
 * @param leftInput   the left input's declaration and the declared column names referenced
 * @param rightInput  the same for the right input
 */
case class PunctuationColumns(
    children: Seq[Expression],
    leftInput: Option[(Declaration, Seq[String])],
    rightInput: Option[(Declaration, Seq[String])])
  extends Expression with CodegenFallback {

  private def leftCount = leftInput.map(_._2.size).getOrElse(1)

  private def resolve(input: Option[(Declaration, Seq[String])], refs: Seq[Expression]) =
    input.map { case (d, names) =>
      InputDeclaration(d, names.zip(refs).collect { case (n, a: Attribute) => n -> a.exprId }.toMap)
    }

  /** The left input's declaration, with its columns' ids in this plan. */
  def left: Option[InputDeclaration] = resolve(leftInput, children.take(leftCount))
  def right: Option[InputDeclaration] = resolve(rightInput, children.drop(leftCount))

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
