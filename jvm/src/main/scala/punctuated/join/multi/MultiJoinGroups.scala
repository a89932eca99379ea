package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{And, Attribute, Expression, ExprId, Literal}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, Project, SubqueryAlias, View}

import punctuated.input.{BandBucketColumns, PunctuatedInput, PunctuationColumns, PunctuationKind}

/**
 * One input of a [[MultiJoinGroup]]: a stream (declared or not) that the group's joins read.
 *
 * @param plan        the input's plan (below the group's joins and the projections and
 *                    filters between them)
 * @param declaration its declaration, as the mark of the join reading it carries it (None:
 *                    undeclared)
 */
final case class MultiJoinInput(plan: LogicalPlan, declaration: Option[PunctuatedInput]) {
  /** The input's name as declared, else its first column's name (for messages). */
  def name: String = declaration.map(_.name.split('.').last).getOrElse(plan.output.head.name)
}

/**
 * A maximal tree of inner stream-stream equi-joins that runs as one multi-way join (Li et
 * al. 2006, §3.2, the MJoin operator; Viglas et al.'s MJoin as cited there).
 *
 * {{{
 *   SELECT ... FROM a JOIN b ON a.k = b.k JOIN c ON b.v = c.v     (a chain over two keys)
 *
 *          Join(b.v = c.v)            top            MultiJoinGroup(top, joins = [top, lower],
 *          /            \                              inputs = [a, b, c],
 *     Join(a.k = b.k)    c            lower            equalities = [a.k = b.k, b.v = c.v],
 *      /      \                                        classes = [{a.k, b.k}, {b.v, c.v}])
 *     a        b
 * }}}
 *
 * @param top        the group's uppermost join
 * @param joins      every join of the group, top first (pre-order)
 * @param inputs     the streams it joins, in the order the query names them (left to right)
 * @param equalities every equi-join predicate, as (column, column) of two different inputs
 * @param filters    conditions between the joins and the joins' other conjuncts (the mark
 *                   left out): applied to each result
 * @param classes    the attribute classes (Li et al. 2006, §4.2): columns the predicates make
 *                   equal, each class in order of the inputs it reads; an input has at most
 *                   one column in a class
 */
final case class MultiJoinGroup(
    top: Join,
    joins: Seq[Join],
    inputs: IndexedSeq[MultiJoinInput],
    equalities: Seq[(Attribute, Attribute)],
    filters: Seq[Expression],
    classes: Seq[Seq[Attribute]]) {

  /** The input whose output has this column. */
  def inputOf(a: Attribute): Int = inputs.indexWhere(_.plan.outputSet.contains(a))

  /** Input `i`'s column in each class it has a column in: (class number, column). */
  def classColumns(i: Int): Seq[(Int, Attribute)] =
    classes.zipWithIndex.flatMap { case (cols, c) => cols.find(a => inputOf(a) == i).map(c -> _) }
}

/**
 * Finds the groups of joins that run as one multi-way join, in one place for the start-time
 * safety check (judged by Li et al. 2006, Theorems 2 and 4), the optimizer rule that marks
 * them in every micro-batch's plan, and the physical rule that plans them.
 *
 * A group is a maximal tree of joins that are each
 *  - an inner stream-stream equi-join marked as punctuated ([[PunctuationColumns]]), its keys
 *    plain columns,
 *  - connected to the join above it directly or through filters and projections that only
 *    select columns (no computed column),
 * with at least three inputs, where
 *  - every input is a stream, not itself a punctuated join (whose output punctuations a tree
 *    of binary joins needs), with at most one column in each attribute class,
 *  - range schemes on join columns — declared (`k<=`, `k>=`, with constants or not, with
 *    several ranges: `day<=, level<=` closes a region), or the `ts<=w` a `withWatermark`
 *    column among an input's join columns stands for
 *    ([[punctuated.join.WatermarkPunctuations.onKey]]) — are the multi-way join's own
 *    ([[ChainedPurge]]),
 *  - at least one input is declared,
 *  - and the group's output punctuations are needed by nothing: no punctuated aggregation,
 *    deduplication or join above it reads its inputs' markers, and (with
 *    `spark.punctuated.emitPunctuations`) no marker is among the query's result columns. A
 *    group whose output punctuations are needed keeps the tree of binary joins, which emits them.
 *
 * With `spark.punctuated.join.plan=written` there is no group: every join runs as written.
 *
 * Example: `a JOIN b ON a.k = b.k JOIN c ON b.v = c.v` (b and c declared) is one group of the
 * inputs a, b, c; `a JOIN b ON a.k = b.k` alone (two inputs) is none.
 */
object MultiJoinGroups {

  /**
   * The groups of `plan` (its root: the query), uppermost first.
   *
   * @param plan             the query's plan (analyzed or optimized)
   * @param joinPlan         `spark.punctuated.join.plan` (`auto`, `mjoin`, `written`)
   * @param emitPunctuations `spark.punctuated.emitPunctuations`
   */
  def of(plan: LogicalPlan, joinPlan: String, emitPunctuations: Boolean): Seq[MultiJoinGroup] =
    if (joinPlan == "written") Nil
    else {
      val resultIds = queryOutput(plan).map(_.exprId).toSet
      val found = mutable.ArrayBuffer.empty[MultiJoinGroup]
      val inGroup = mutable.Set.empty[Join]
      // pre-order: an upper join is met before the joins below it
      def visit(node: LogicalPlan, above: List[LogicalPlan]): Unit = {
        node match {
          case j: Join if member(j) && !inGroup.exists(_ eq j) =>
            group(j).filter(g => usable(g, above, resultIds, emitPunctuations)).foreach { g =>
              found += g
              inGroup ++= g.joins
            }
          case _ =>
        }
        node.children.foreach(visit(_, node :: above))
      }
      visit(plan, Nil)
      found.toSeq
    }

  /**
   * Is `j` a join a group can contain (inner, stream-stream, marked, keys plain columns)? A
   * band-only join's time buckets are no key a group can join by, and an equi-join with a time
   * band is purged by its band ([[punctuated.join.TimeBand]]), which the multi-way purge does not
   * know (it would be a residual filter there): both run as the binary band joins they are.
   */
  def member(j: Join): Boolean = j.joinType == Inner && j.left.isStreaming && j.right.isStreaming &&
    PunctuationColumns.find(j.condition).isDefined && (j match {
      case ExtractEquiJoinKeys(_, lk, rk, other, _, l, r, _) =>
        lk.nonEmpty && (lk ++ rk).forall(_.isInstanceOf[Attribute]) && !lk.exists(BandBucketColumns.isBucket) &&
          // a time band purges the binary band join; the multi-way join would apply it as a filter only
          punctuated.join.TimeBand.terms(other, l.output, r.output).isEmpty
      case _ => false
    })

  /** Filters and column-selecting projections between two joins of a group. */
  private def passes(node: LogicalPlan): Option[(LogicalPlan, Seq[Expression])] = node match {
    case Filter(cond, child) => Some(child -> Seq(cond))
    case Project(list, child) if list.forall(_.isInstanceOf[Attribute]) => Some(child -> Nil)
    case s: SubqueryAlias => Some(s.child -> Nil)
    case v: View => Some(v.child -> Nil)
    case _ => None
  }

  /** The group with `top` as its uppermost join, if it is one. */
  private def group(top: Join): Option[MultiJoinGroup] = {
    val joins = mutable.ArrayBuffer.empty[Join]
    val inputs = mutable.ArrayBuffer.empty[MultiJoinInput]
    val equalities = mutable.ArrayBuffer.empty[(Attribute, Attribute)]
    val filters = mutable.ArrayBuffer.empty[Expression]

    /** The join below `node` through filters and projections, with the filters passed. */
    def below(node: LogicalPlan, passed: Seq[Expression]): Option[(Join, Seq[Expression])] = node match {
      case j: Join if member(j) => Some(j -> passed)
      case other => passes(other).flatMap { case (child, f) => below(child, passed ++ f) }
    }

    def walk(j: Join): Unit = {
      joins += j
      val mark = PunctuationColumns.find(j.condition).get
      j match {
        case ExtractEquiJoinKeys(_, lk, rk, other, _, _, _, _) =>
          equalities ++= lk.zip(rk).map { case (l, r) => (l.asInstanceOf[Attribute], r.asInstanceOf[Attribute]) }
          filters ++= other.toSeq.flatMap(conjuncts).filterNot(_.isInstanceOf[PunctuationColumns])
            .filterNot(_ == Literal.TrueLiteral)
        case _ =>
      }
      Seq((j.left, mark.left), (j.right, mark.right)).foreach { case (child, declaration) =>
        below(child, Nil) match {
          case Some((lower, passed)) => filters ++= passed; walk(lower)
          case None => inputs += MultiJoinInput(child, declaration)
        }
      }
    }
    walk(top)
    val classes = inInputOrder(attributeClasses(equalities.toSeq), inputs.map(_.plan.output).toSeq)
    val group = MultiJoinGroup(top, joins.toSeq, inputs.toIndexedSeq, equalities.toSeq, filters.toSeq, classes)
    val oneColumnPerClass = classes.forall { cols =>
      val owners = cols.map(group.inputOf)
      !owners.contains(-1) && owners.distinct.size == owners.size
    }
    val streams = inputs.forall(in => in.plan.isStreaming && in.declaration.forall(_.declaration.derived.isEmpty))
    val declared = inputs.exists(_.declaration.exists(_.markerIds.nonEmpty)) ||
      inputs.exists(_.declaration.exists(_.declaration.unique.isDefined))
    if (inputs.size >= 3 && oneColumnPerClass && streams && declared) Some(group) else None
  }

  /** Columns the equalities make equal, as classes (union-find), in order of first mention. */
  def attributeClasses(equalities: Seq[(Attribute, Attribute)]): Seq[Seq[Attribute]] = {
    val parent = mutable.LinkedHashMap.empty[ExprId, ExprId]
    val attrs = mutable.LinkedHashMap.empty[ExprId, Attribute]
    def find(x: ExprId): ExprId = {
      val p = parent.getOrElseUpdate(x, x)
      if (p == x) x else { val r = find(p); parent(x) = r; r }
    }
    equalities.foreach { case (l, r) =>
      attrs.getOrElseUpdate(l.exprId, l); attrs.getOrElseUpdate(r.exprId, r)
      val (a, b) = (find(l.exprId), find(r.exprId))
      if (a != b) parent(b) = a
    }
    attrs.keys.toSeq.groupBy(find).values.toSeq
      .map(ids => ids.sortBy(id => attrs.keys.toSeq.indexOf(id)).map(attrs))
      .sortBy(cls => attrs.keys.toSeq.indexOf(cls.head.exprId))
  }

  /**
   * The classes numbered by where they first occur in the inputs' columns (input 0's columns
   * first, in their order): `a(k) ⋈ b(k, v) ⋈ c(v)` has class 0 = {a.k, b.k}, 1 = {b.v, c.v},
   * however the joins are nested.
   */
  def inInputOrder(classes: Seq[Seq[Attribute]], outputs: Seq[Seq[Attribute]]): Seq[Seq[Attribute]] = {
    val position = outputs.zipWithIndex.flatMap { case (out, i) =>
      out.zipWithIndex.map { case (a, o) => a.exprId -> (i, o) } }.toMap
    classes.sortBy(cls => cls.flatMap(a => position.get(a.exprId)).minOption.getOrElse((Int.MaxValue, 0)))
  }

  /**
   * Are the group's output punctuations needed by nothing above it? Markers of its inputs
   * read by a punctuated aggregation, deduplication or join above (their
   * [[PunctuationKind]] or [[PunctuationColumns]]), or shown in the results when output
   * punctuations are on, need the tree of binary joins.
   */
  private def usable(g: MultiJoinGroup, above: List[LogicalPlan], resultIds: Set[ExprId],
      emitPunctuations: Boolean): Boolean = {
    val markers = g.inputs.flatMap(_.declaration.toSeq.flatMap(_.markerIds)).toSet
    val readAbove = above.exists(_.expressions.exists(_.exists {
      case k: PunctuationKind => k.references.exists(a => markers.contains(a.exprId))
      case m: PunctuationColumns => m.references.exists(a => markers.contains(a.exprId))
      case _ => false
    }))
    !readAbove && !(emitPunctuations && markers.exists(resultIds.contains))
  }

  /** The query's result columns (below a sink's write node, which outputs nothing). */
  private def queryOutput(plan: LogicalPlan): Seq[Attribute] =
    if (plan.output.isEmpty && plan.children.size == 1) queryOutput(plan.children.head) else plan.output

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => conjuncts(a) ++ conjuncts(b)
    case other => Seq(other)
  }
}
