package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, ExprId, Expression, IsNull}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{FullOuter, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Filter, Generate, Join, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.catalyst.plans.logical.AnalysisHelper
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.MetadataBuilder

import punctuated.input.{BandBucketColumns, DeclaredStreams, PunctuatedInput, PunctuationColumns}
import punctuated.join.DerivedDeclarations
import punctuated.compat.DatasetJoinCompat

/**
 * Post-hoc resolution rule: marks each stream-stream equi-join with at least one declared
 * input as a punctuated join, by adding the [[PunctuationColumns]] conjunct (always TRUE)
 * to its condition. Joins with no declared input are left exactly as they are. An input that
 * is itself a punctuated join's output counts as declared when that join passes punctuations
 * on (a derived declaration, [[DerivedDeclarations]]), so trees of joins purge at every level.
 *
 * Outer and semi joins: Spark refuses a stream-stream outer (or semi) join unless a join key carries an
 * event-time watermark. A punctuated outer join needs none (the other input's punctuations
 * say when a row is unmatched for good), so its join-key references in the condition are
 * flagged as event-time columns for that check only; [[DropOuterJoinCheckFlag]] removes the
 * flag again before the plan is optimized, and the join runs on punctuations alone.
 */
case class PunctuateStreamingJoins(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.involved(plan)) plan
    else if (DatasetJoinCompat.keepRootJoins) antiJoinsBelowRoot(punctuate(plan))
    else punctuate(plan)

  private def punctuate(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case j @ Join(left, right, joinType, Some(condition), hint)
        if left.isStreaming && right.isStreaming && PunctuationColumns.find(j.condition).isEmpty &&
          ExtractEquiJoinKeys.unapply(j).isDefined =>
      val caseSensitive = session.sessionState.conf.caseSensitiveAnalysis
      val l = inputDeclaration(left, caseSensitive).map(PunctuateStreamingJoins.read)
      val r = inputDeclaration(right, caseSensitive).map(PunctuateStreamingJoins.read)
      if (l.isEmpty && r.isEmpty) j
      else {
        val refs = referenced(l, left) ++ referenced(r, right)
        val marked = PunctuationColumns(refs,
          l.map(d => d.declaration -> d.columns.keys.toSeq.sorted),
          r.map(d => d.declaration -> d.columns.keys.toSeq.sorted))
        val flagged = joinType match {
          case LeftOuter | RightOuter | FullOuter | LeftSemi | LeftAnti =>
            PunctuateStreamingJoins.flagKeys(condition)
          case _ => condition
        }
        joinType match {
          case LeftAnti if !DatasetJoinCompat.keepRootJoins => antiAsOuter(j, Some(And(flagged, marked)))
          case _ => Join(left, right, joinType, Some(And(flagged, marked)), hint)
        }
      }
  }

  /**
   * Spark 4.0 only (`DatasetJoinCompat`): the punctuated anti joins below the root, rewritten
   * as [[antiAsOuter]] (also in subtrees analyzed before, as `Dataset.join`'s result is), the one at
   * the root left as it is.
   */
  private def antiJoinsBelowRoot(plan: LogicalPlan): LogicalPlan =
    AnalysisHelper.allowInvokingTransformsInAnalyzer {
      plan.mapChildren(_.transformUp {
        case j @ Join(_, _, LeftAnti, condition, _) if PunctuationColumns.find(condition).isDefined =>
          antiAsOuter(j, condition)
      })
    }

  /**
   * Spark refuses stream-stream left anti joins outright; a punctuated one runs as the left
   * outer join it is equivalent to, keeping the rows padded with NULLs (the left rows the
   * right input's punctuations proved unmatched): `L ANTI R = project_L(filter_{r.k IS NULL}(L LEFT OUTER R))`,
   * `r.k` a right join-key column (never NULL on a matched row of an equi-join).
   */
  private def antiAsOuter(j: Join, condition: Option[Expression]): LogicalPlan = {
    val witness = j match {
      case ExtractEquiJoinKeys(_, _, rightKeys, _, _, _, right, _) =>
        rightKeys.collectFirst { case a: Attribute if right.outputSet.contains(a) => a }
      case _ => None
    }
    witness match {
      case Some(w) =>
        Project(j.left.output, Filter(IsNull(w), Join(j.left, j.right, LeftOuter, condition, j.hint)))
      case None => j   // no plain right key column: left as it is (Spark then refuses it)
    }
  }

  /**
   * The declaration of the one declared stream whose punctuations reach the join input:
   * through projections, filters, aliases and views only (Tucker et al. 2003, Table 3: select and
   * project pass punctuations). Behind any other operator the stream counts as undeclared
   * here, and its punctuation rows are removed at the source (DropUnconsumedPunctuations).
   */
  private def inputDeclaration(input: LogicalPlan, caseSensitive: Boolean): Option[PunctuatedInput] = {
    val visible = input.output.map(_.exprId).toSet
    DeclaredStreams.find(input, caseSensitive).filter(s => passesThrough(input, s.output.map(_.exprId).toSet))
      .map(_.input(visible)).filter(d => d.columns.nonEmpty) match {
      case Seq(single) => Some(single)
      case _ => DerivedDeclarations.of(input, visible)   // none, or several streams: a join's output?
    }
  }

  /** Is the node that introduces these columns reached through pass-through nodes only? */
  private def passesThrough(node: LogicalPlan, ids: Set[ExprId]): Boolean = {
    def has(p: LogicalPlan) = p.output.exists(a => ids.contains(a.exprId))
    if (has(node) && !node.children.exists(has)) true
    else node match {
      case _: Project | _: Filter | _: SubqueryAlias | _: View | _: EventTimeWatermark => passesThrough(node.children.head, ids)
      case g: Generate if BandBucketColumns.isBucketGenerate(g) => passesThrough(g.child, ids)
      case _ => false
    }
  }

  /** The declared columns of an input, in name order (one stand-in column if undeclared). */
  private def referenced(decl: Option[PunctuatedInput], input: LogicalPlan): Seq[Attribute] =
    decl match {
      case Some(d) => d.columns.keys.toSeq.sorted.map(n => input.output.find(_.exprId == d.columns(n)).get)
      case None => input.output.take(1)
    }
}

object PunctuateStreamingJoins {
  private[rules] val Flag = "punctuated.outerJoinCheck"

  /**
   * The columns of a declared stream the join itself reads: its markers and the attributes of
   * its instantiable schemes (the declared ones and the unique key). The mark references these
   * only, so column pruning keeps every other column of the stream only where the query uses
   * it, as for Spark's own join: the shuffle, the state stores and the output rows carry the
   * columns the query needs. A punctuation row's scheme is then decided over the columns the
   * join's input carries (`RowDecoder`: the scheme whose attributes are exactly its non-NULL
   * columns), as a punctuated aggregation does: a column the query does not read is pruned at
   * the scan and is a wildcard; a value in a column it reads still makes the row invalid.
   *
   * A join's output read by another join (a derived declaration) keeps every column: which
   * stream owns each column is what lets the join above skip the other streams' columns.
   *
   * {{{
   *   person (id, name, emailAddress, creditCard, city, state, dateTime, extra, p), schemes
   *   "id; dateTime<=", marker p
   *   read(person) = columns p, id, dateTime
   * }}}
   */
  def read(input: PunctuatedInput): PunctuatedInput =
    if (input.declaration.derived.isDefined) input
    else {
      val names = (input.declaration.markers ++ input.declaration.instantiableSchemes.flatMap(_.names)).toSet
      input.copy(columns = input.columns.filter { case (n, _) => names.contains(n) })
    }

  /** Flags join-key references as event-time columns, for Spark's outer-join check only. */
  def flagKeys(condition: Expression): Expression = condition.transform {
    case a: AttributeReference if !a.metadata.contains(EventTimeWatermark.delayKey) =>
      a.withMetadata(new MetadataBuilder().withMetadata(a.metadata)
        .putLong(EventTimeWatermark.delayKey, 0L).putBoolean(Flag, true).build())
  }

  def unflagKeys(condition: Expression): Expression = condition.transform {
    case a: AttributeReference if a.metadata.contains(Flag) =>
      a.withMetadata(new MetadataBuilder().withMetadata(a.metadata)
        .remove(EventTimeWatermark.delayKey).remove(Flag).build())
  }
}
