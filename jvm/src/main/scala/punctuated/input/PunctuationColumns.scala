package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{BooleanType, DataType}

import punctuated.declaration.Declaration

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
 * The columns the join reads are referenced as children (left input's first, then the right's;
 * one column of an undeclared input stands in for it): a declared stream's markers and scheme
 * columns (`PunctuateStreamingJoins.read`), a join output's every declared column. Column
 * pruning leaves every other column only where the query uses it; the optimizer rewrites
 * them like any other reference: their ids in any later plan are read from the children.
 *
 * @param children    the referenced columns
 * @param leftInput   the left input's declaration and the declared column names referenced
 * @param rightInput  the same for the right input
 * @param multiJoin   the multi-way join this join is part of, if any: the same number on every
 *                    join of the group (set per micro-batch by the optimizer rule that finds
 *                    the groups, `punctuated.join.multi.MultiJoinGroups`)
 */
case class PunctuationColumns(
    children: Seq[Expression],
    leftInput: Option[(Declaration, Seq[String])],
    rightInput: Option[(Declaration, Seq[String])],
    multiJoin: Option[Int] = None)
  extends Expression with CodegenFallback {

  private def leftCount = leftInput.map(_._2.size).getOrElse(1)

  private def resolve(input: Option[(Declaration, Seq[String])], refs: Seq[Expression]) =
    input.map { case (d, names) =>
      PunctuatedInput(d, names.zip(refs).collect { case (n, a: Attribute) => n -> a.exprId }.toMap)
    }

  /** The left input's declaration, with its columns' ids in this plan (read by every optimizer pass). */
  @transient lazy val left: Option[PunctuatedInput] = resolve(leftInput, children.take(leftCount))
  @transient lazy val right: Option[PunctuatedInput] = resolve(rightInput, children.drop(leftCount))

  /** Do the referenced columns of each declared input carry the declared columns' names? */
  private def namesDeclared: Boolean = {
    def same(input: Option[(Declaration, Seq[String])], refs: Seq[Expression]) = input.forall { case (_, names) =>
      names.size == refs.size && names.zip(refs).forall {
        case (n, a: Attribute) => a.name.equalsIgnoreCase(n)
        case _ => false
      }
    }
    same(leftInput, children.take(leftCount)) && same(rightInput, children.drop(leftCount))
  }

  override def dataType: DataType = BooleanType
  override def nullable: Boolean = false
  override def foldable: Boolean = false
  override def eval(input: InternalRow): Any = true
  override def prettyName: String = "punctuation_columns"
  override def toString: String = s"$prettyName(${children.mkString(", ")})"

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(children = newChildren)

  /**
   * The mark's canonical form leaves its columns out: the mark and its copies with columns
   * replaced through the query's equalities are all always TRUE, so they are one constraint.
   * Spark's constraint propagation (`inferAdditionalConstraints`, which keeps only what is new
   * to an `ExpressionSet`, compared by canonical form) then infers no copy at all. Otherwise
   * every join of a deep group adds the copies of the marks below it with every substitution
   * of equal columns: a 5-input join over a column all inputs share reached thousands of
   * conjuncts and overflowed the stack while planning (`MultiJoinPropertySuite`, seed 36).
   */
  override lazy val canonicalized: Expression = copy(children = Nil)
}

object PunctuationColumns {
  /**
   * The conjunct in a join condition, if the join is a punctuated one.
   *
   * Spark's constraint propagation (`InferFiltersFromConstraints`) can add copies of the
   * conjunct with columns replaced by columns the join's equalities make equal to them
   * (`punctuation_columns(b.c, ...)` beside `punctuation_columns(a.c, ...)` when `a.c =
   * b.c`). The copies always evaluate to TRUE, but their columns are not the declared ones:
   * the mark is the conjunct whose referenced columns carry the declared names (compared as
   * Spark's default resolution does, ignoring case), else the first.
   */
  def find(condition: Option[Expression]): Option[PunctuationColumns] = {
    val all = condition.toSeq.flatMap(_.collect { case p: PunctuationColumns => p })
    all.find(_.namesDeclared).orElse(all.headOption)
  }
}
