package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, EqualNullSafe, EqualTo, Expression}
import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule

import punctuated.input.PunctuationColumns

/**
 * Post-hoc resolution rule, before [[PunctuateStreamingJoins]]: a join written with `WHERE`
 * equalities gets them as its condition, so that it can be marked as a punctuated join.
 */
case class MoveWhereEqualitiesIntoJoins(session: SparkSession) extends Rule[LogicalPlan] {

  /**
   * `FROM a, b WHERE a.k = b.k`: the analyzer keeps the equality in a Filter above a join
   * without condition (the optimizer pushes it into the join later, too late for the mark).
   * Equalities between two streams of inner stream-stream joins move into the join whose
   * inputs they compare; the rest of the WHERE clause stays where it is. Same result.
   * Only joins with a declared input below them (see [[PunctuatedPlans]]): the WHERE clause of
   * a join that reads no declared stream stays where the analyzer put it.
   */
  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.involved(plan)) plan
    else plan.resolveOperatorsDown {
    case f @ Filter(condition, j: Join) if innerStreamJoin(j) && PunctuatedPlans.involved(j) =>
      val all = conjuncts(condition)
      val (joined, rest) = pushEqualities(j, all)
      if (rest.size == all.size) f else rest.reduceOption(And).map(Filter(_, joined)).getOrElse(joined)
  }

  private def innerStreamJoin(p: LogicalPlan): Boolean = p match {
    case j: Join => j.joinType == Inner && j.left.isStreaming && j.right.isStreaming &&
      PunctuationColumns.find(j.condition).isEmpty
    case _ => false
  }

  /** Moves the equalities among `cs` into the joins of `j`'s tree; returns the others. */
  private def pushEqualities(j: Join, cs: Seq[Expression]): (Join, Seq[Expression]) = {
    val (equalities, others) = cs.partition {
      case EqualTo(_: Attribute, _: Attribute) | EqualNullSafe(_: Attribute, _: Attribute) => true
      case _ => false
    }
    def into(side: LogicalPlan, e: Seq[Expression]): (LogicalPlan, Seq[Expression]) = side match {
      case inner: Join if innerStreamJoin(inner) && e.nonEmpty => pushEqualities(inner, e)
      case other => (other, e)
    }
    val (toLeft, r1) = equalities.partition(_.references.subsetOf(j.left.outputSet))
    val (toRight, r2) = r1.partition(_.references.subsetOf(j.right.outputSet))
    val (here, rest) = r2.partition(_.references.subsetOf(j.left.outputSet ++ j.right.outputSet))
    val (newLeft, leftRest) = into(j.left, toLeft)
    val (newRight, rightRest) = into(j.right, toRight)
    val condition = (j.condition.toSeq ++ here).reduceOption(And)
    (j.copy(left = newLeft, right = newRight, condition = condition), others ++ rest ++ leftRest ++ rightRest)
  }

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => conjuncts(a) ++ conjuncts(b)
    case other => Seq(other)
  }
}
