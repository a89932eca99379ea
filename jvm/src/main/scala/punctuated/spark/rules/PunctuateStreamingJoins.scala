package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, AttributeReference, EqualNullSafe, EqualTo, ExprId, Expression, IsNull}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{FullOuter, Inner, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Filter, Join, LogicalPlan, Project, SubqueryAlias, View}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.MetadataBuilder

import punctuated.declaration.{Declaration, Derived, Scheme, SchemeAttribute}
import punctuated.join.{InputDeclaration, KeySchemes, PunctuationColumns}
import punctuated.spark.DeclaredStreams

/**
 * Post-hoc resolution rule: marks each stream-stream equi-join with at least one declared
 * input as a punctuated join, by adding the [[PunctuationColumns]] conjunct (always TRUE)
 * to its condition. Joins with no declared input are left exactly as they are. An input that
 * is itself a punctuated join's output counts as declared when that join passes punctuations
 * on (a derived declaration), so trees of joins purge at every level. Joins written with
 * `WHERE` equalities (`FROM a, b WHERE a.k = b.k`) get them as their condition first.
 *
 * Outer and semi joins: Spark refuses a stream-stream outer (or semi) join unless a join key carries an
 * event-time watermark. A punctuated outer join needs none (the other input's punctuations
 * say when a row is unmatched for good), so its join-key references in the condition are
 * flagged as event-time columns for that check only; [[DropOuterJoinCheckFlag]] removes the
 * flag again before the plan is optimized, and the join runs on punctuations alone.
 */
case class PunctuateStreamingJoins(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = mark(whereIntoJoins(plan))

  /**
   * `FROM a, b WHERE a.k = b.k`: the analyzer keeps the equality in a Filter above a join
   * without condition (the optimizer pushes it into the join later, too late for the mark).
   * Equalities between two streams of inner stream-stream joins move into the join whose
   * inputs they compare; the rest of the WHERE clause stays where it is. Same result.
   */
  private def whereIntoJoins(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsDown {
    case f @ Filter(condition, j: Join) if innerStreamJoin(j) =>
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

  private def mark(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case j @ Join(left, right, joinType, Some(condition), hint)
        if left.isStreaming && right.isStreaming && PunctuationColumns.find(j.condition).isEmpty &&
          ExtractEquiJoinKeys.unapply(j).isDefined =>
      val caseSensitive = session.sessionState.conf.caseSensitiveAnalysis
      val l = inputDeclaration(left, caseSensitive)
      val r = inputDeclaration(right, caseSensitive)
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
          case LeftAnti => antiAsOuter(j, Some(And(flagged, marked)))
          case _ => Join(left, right, joinType, Some(And(flagged, marked)), hint)
        }
      }
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
  private def inputDeclaration(input: LogicalPlan, caseSensitive: Boolean): Option[InputDeclaration] = {
    val visible = input.output.map(_.exprId).toSet
    DeclaredStreams.find(input, caseSensitive).filter(s => passesThrough(input, s.output.map(_.exprId).toSet)).map { s =>
      InputDeclaration(s.declaration,
        s.output.filter(a => visible.contains(a.exprId)).map(a => a.name -> a.exprId).toMap)
    }.filter(d => d.columns.nonEmpty) match {
      case Seq(single) => Some(single)
      case _ => lowerJoin(input).flatMap(derived(_, visible))   // none, or several streams
    }
  }

  /** The punctuated join whose output this input is, through pass-through nodes only. */
  private def lowerJoin(node: LogicalPlan): Option[Join] = node match {
    case j: Join if PunctuationColumns.find(j.condition).isDefined => Some(j)
    case _: Project | _: Filter | _: SubqueryAlias | _: View | _: EventTimeWatermark => lowerJoin(node.children.head)
    case _ => None
  }

  /**
   * The declaration a punctuated join's output carries for the join above it (Li et al. 2006,
   * §4: an intermediate input carries the schemes its operator propagates). The join emits
   * an output punctuation for a join-key value once both its inputs have closed it (Tucker
   * et al. 2003, Table 3), one per input: that input's key columns set, and the marker of the
   * stream those columns come from true. So the output carries each key scheme both inputs
   * have, as a scheme on each input's key columns; both inputs' states are then purgeable by
   * it (Theorem 1), as Lemma 1 requires of a propagated scheme.
   */
  private def derived(j: Join, visible: Set[ExprId]): Option[InputDeclaration] = j match {
    case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) =>
      val mark = PunctuationColumns.find(j.condition).get
      val sides = Seq((mark.left, lk), (mark.right, rk)).collect { case (Some(d), keys) => (d, keys) }
      def usable(d: InputDeclaration, keys: Seq[Expression]) =
        KeySchemes.usable(d, keys).filter { case (s, _) => d.hasPunctuations(s) }.map(_._2)
      val byBoth = if (sides.size < 2) Nil
        else usable(sides(0)._1, sides(0)._2).filter(usable(sides(1)._1, sides(1)._2).contains).distinct
      val columns = scala.collection.mutable.LinkedHashMap.empty[String, ExprId]
      val owners = scala.collection.mutable.LinkedHashMap.empty[String, String]
      /** A column's name in the derived declaration, and the marker of the stream it comes from. */
      def column(d: InputDeclaration, e: Expression): Option[(String, String)] = e match {
        case a: Attribute if visible.contains(a.exprId) =>
          val own = d.columns.collectFirst { case (n, id) if id == a.exprId => n }
          val named = d.declaration.derived match {
            case None => for (n <- own; m <- d.declaration.marker if d.markerId.exists(visible.contains))
              yield (s"${shortName(d)}.$n", s"${shortName(d)}.$m")
            case Some(x) => for (n <- own; m <- x.owners.collectFirst { case (`n`, m) => m }) yield (n, m)
          }
          named.foreach { case (n, m) => columns(n) = a.exprId; owners(n) = m }
          named
        case _ => None
      }
      val schemes = for {
        (d, keys) <- sides
        k <- byBoth
        attrs = (k.constants.toSeq.map(_ -> false) ++ k.range.map(_ -> true)).map { case (pos, range) =>
          column(d, keys(pos)).map { case (n, m) => (SchemeAttribute(n, range), m) } }
        if attrs.forall(_.isDefined) && attrs.flatten.map(_._2).distinct.size == 1
      } yield Scheme(attrs.flatten.map(_._1))
      if (schemes.isEmpty) None
      else {
        val markers = sides.flatMap { case (d, _) => d.markerIds.filter(visible.contains).map { id =>
          val n = d.columns.collectFirst { case (c, `id`) => c }.get
          val full = if (d.declaration.derived.isDefined) n else s"${shortName(d)}.$n"
          columns(full) = id; full } }
        val table = s"(${sides.map(s => shortName(s._1)).mkString(" ⋈ ")})"
        Some(InputDeclaration(Declaration(table, schemes.distinct, None, None,
          Some(Derived(markers, owners.toSeq))), columns.toMap))
      }
    case _ => None
  }

  private def shortName(d: InputDeclaration): String =
    if (d.declaration.derived.isDefined) d.declaration.table else d.declaration.table.split('.').last

  /** Is the node that introduces these columns reached through pass-through nodes only? */
  private def passesThrough(node: LogicalPlan, ids: Set[ExprId]): Boolean = {
    def has(p: LogicalPlan) = p.output.exists(a => ids.contains(a.exprId))
    if (has(node) && !node.children.exists(has)) true
    else node match {
      case _: Project | _: Filter | _: SubqueryAlias | _: View | _: EventTimeWatermark => passesThrough(node.children.head, ids)
      case _ => false
    }
  }

  /** The declared columns of an input, in name order (one stand-in column if undeclared). */
  private def referenced(decl: Option[InputDeclaration], input: LogicalPlan): Seq[Attribute] =
    decl match {
      case Some(d) => d.columns.keys.toSeq.sorted.map(n => input.output.find(_.exprId == d.columns(n)).get)
      case None => input.output.take(1)
    }
}

object PunctuateStreamingJoins {
  private[rules] val Flag = "punctuated.outerJoinCheck"

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
