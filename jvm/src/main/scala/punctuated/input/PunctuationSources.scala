package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, Coalesce, EqualTo, Expression, ExprId, GreaterThan, Literal}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.{LeftAnti, LeftSemi}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project, Union}

/**
 * A stream whose punctuation rows reach an operator, in attributes of the plan.
 *
 * @param name        the stream's name, for messages
 * @param marker      BOOLEAN expression: true on its punctuation rows
 * @param columns     its columns (other than the marker) the operator sees
 * @param schemes     its schemes (the declared ones, then the unique key), each as
 *                    (attribute, pattern kind) pairs, with their text
 * @param unique      its unique key, when every data row implies a punctuation on it here
 *                    (the stream is read directly: no join in between)
 * @param branch      which input of a UNION it comes through (0 without one): a union's
 *                    output is punctuated only where every branch punctuated (setCombine)
 */
final case class FoundSource(
    name: String,
    marker: Expression,
    columns: Seq[Attribute],
    schemes: Seq[(Seq[(Attribute, punctuated.declaration.AttributeKind)], String)],
    unique: Option[Seq[Attribute]],
    branch: Int = 0) {

  /** Columns the operator must see to read this stream's punctuations. */
  def needed: Seq[Attribute] =
    (marker.references.toSeq ++ schemes.flatMap(_._1.map(_._1))).distinct
}

object FoundSource {
  /**
   * A declared stream where it is declared: its marker (NULL read as false; none: never a
   * punctuation row), its other columns, the schemes that reach ([[DeclaredStream.reachingSchemes]])
   * and its unique key, every data row implying that key's punctuation here.
   */
  def of(s: DeclaredStream): FoundSource = {
    val marker = s.markerAttribute
    FoundSource(
      name = s.declaration.table,
      // a marker that is never NULL is read as it is: the optimizer would take two passes over
      // every micro-batch's plan to fold `coalesce(m, false)` down to `m`
      marker = marker.map(m => if (m.nullable) Coalesce(Seq(m, Literal(false))) else m).getOrElse(Literal(false)),
      columns = s.output.filterNot(a => marker.exists(_.exprId == a.exprId)),
      schemes = s.reachingSchemes.map { case (sc, attrs) => attrs -> sc.toString },
      unique = s.uniqueAttributes)
  }
}

/**
 * The punctuated streams under an operator, and its input rewritten so that every
 * projection on the way passes the columns their punctuations need.
 *
 * @param plan    the operator's input, with those columns kept
 * @param sources the streams
 * @param equal   pairs of columns equal on every row by an equi-join on the way: a
 *                punctuation on one is a punctuation on the other (the punctuated join
 *                emits it only once both inputs closed the value)
 */
final case class FoundSources(plan: LogicalPlan, sources: Seq[FoundSource], equal: Seq[(Attribute, Attribute)])

/**
 * Finds the streams whose punctuations reach an operator, walking down the nodes
 * [[PassThrough]] lets punctuations through: projections, filters,
 * aliases and watermarks (Tucker et al. 2003, Table 3: select and project pass
 * punctuations), punctuated joins (which emit output punctuations, Table 3 join
 * propagation) and punctuated aggregations (Table 2, group-by propagation). Behind any
 * other operator a stream's punctuations are lost.
 */
object PunctuationSources {

  def find(plan: LogicalPlan, caseSensitive: Boolean): Option[FoundSources] =
    walk(plan, caseSensitive).map { f =>
      val visible = f.plan.outputSet
      val shown = f.sources.filter(_.needed.forall(visible.contains)).map { s =>
        s.copy(columns = s.columns.filter(visible.contains))
      }
      f.copy(sources = shown)
    }.filter(_.sources.nonEmpty)

  private def walk(node: LogicalPlan, caseSensitive: Boolean): Option[FoundSources] =
    declaredAt(node, caseSensitive).orElse(PassThrough.step(node) match {
      case PassThrough.Projection(Project(list, child)) =>
        walk(child, caseSensitive).map { f =>
          // columns this projection renames (and does not pass as they are) get their new names
          val have = list.map(_.exprId).toSet
          val renamed: Map[ExprId, Attribute] = list.collect {
            case al @ Alias(c: Attribute, _) if !have.contains(c.exprId) => c.exprId -> al.toAttribute
          }.toMap
          val sources = f.sources.map(renameIn(_, renamed))
          val extra = sources.flatMap(_.needed).filter(a => !have.contains(a.exprId) &&
            f.plan.outputSet.contains(a)).distinct
          FoundSources(Project(list ++ extra, f.plan), sources,
            f.equal.map { case (a, b) => (renamed.getOrElse(a.exprId, a), renamed.getOrElse(b.exprId, b)) } ++ f.equal)
        }
      case PassThrough.Transparent(child) =>
        walk(child, caseSensitive).map(x => x.copy(plan = node.withNewChildren(Seq(x.plan))))
      case PassThrough.PunctuatedJoin(j, _) =>
        val l = walk(j.left, caseSensitive)
        val r = if (j.joinType == LeftSemi || j.joinType == LeftAnti) None else walk(j.right, caseSensitive)
        if (l.isEmpty && r.isEmpty) None
        else {
          val equal = j match {
            case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) =>
              lk.zip(rk).collect { case (a: Attribute, b: Attribute) => a -> b }
            case _ => Nil
          }
          val sources = (l.toSeq ++ r).flatMap(_.sources).map(_.copy(unique = None))
          Some(FoundSources(
            j.copy(left = l.map(_.plan).getOrElse(j.left), right = r.map(_.plan).getOrElse(j.right)),
            sources, equal ++ (l.toSeq ++ r).flatMap(_.equal)))
        }
      case PassThrough.UnionOf(u) if u.children.size <= 9 => union(u, caseSensitive)
      case PassThrough.AggregateOutput(g, s) => Some(FoundSources(g, Seq(s), Nil))
      // a punctuated deduplication passes its input's punctuations (Table 2)
      case PassThrough.DeduplicateOf(d) =>
        walk(d.child, caseSensitive).map(x => x.copy(plan = d.copy(child = x.plan)))
      case _ => None
    })

  /**
   * A union's inputs' streams (Tucker et al. 2003, Table 3, union: an output punctuation is the
   * setCombine of the inputs' ones): each input gets a branch tag column, and its streams'
   * columns are read through the union's output (by position), their marker only on rows
   * of their branch. Every input must carry punctuations, else the union's never close.
   */
  private def union(u: Union, caseSensitive: Boolean): Option[FoundSources] = {
    val found = u.children.map(c => walk(c, caseSensitive))
    if (found.exists(_.isEmpty)) return None
    val tagged = found.flatten.zipWithIndex.map { case (f, i) =>
      Project(f.plan.output :+ Alias(Literal(i), BranchColumn)(), f.plan)
    }
    val newUnion = u.withNewChildren(tagged).asInstanceOf[Union]
    val tag = newUnion.output.last
    val sources = found.flatten.zip(tagged).zipWithIndex.flatMap { case ((f, t), i) =>
      val byPosition: Map[ExprId, Attribute] = t.output.map(_.exprId).zip(newUnion.output).toMap
      def r(a: Attribute) = byPosition.getOrElse(a.exprId, a)
      f.sources.filter(_.needed.forall(a => byPosition.contains(a.exprId))).map { s =>
        FoundSource(s.name,
          And(s.marker.transform { case a: Attribute => r(a) }, EqualTo(tag, Literal(i))),
          s.columns.filter(a => byPosition.contains(a.exprId)).map(r),
          s.schemes.map { case (attrs, text) => attrs.map { case (a, kind) => (r(a), kind) } -> text },
          unique = None,
          branch = i * 10 + s.branch)
      }
    }
    Some(FoundSources(newUnion, sources, Nil))
  }

  val BranchColumn = "__punctuation_branch"

  private def renameIn(s: FoundSource, renamed: Map[ExprId, Attribute]): FoundSource =
    if (renamed.isEmpty) s
    else {
      def r(a: Attribute) = renamed.getOrElse(a.exprId, a)
      s.copy(
        marker = s.marker.transform { case a: Attribute => r(a) },
        columns = s.columns.map(r),
        schemes = s.schemes.map { case (attrs, text) => attrs.map { case (a, kind) => (r(a), kind) } -> text },
        unique = s.unique.map(_.map(r)))
    }

  /** The stream declared at this node (a catalog relation or a `with_schemes` projection). */
  private def declaredAt(node: LogicalPlan, caseSensitive: Boolean): Option[FoundSources] =
    DeclaredStreams.declaredAt(node, caseSensitive).map(s => FoundSources(node, Seq(FoundSource.of(s)), Nil))

  /** Columns equal to `a` by the joins on the way (including `a`). */
  def equalTo(a: Attribute, equal: Seq[(Attribute, Attribute)]): Seq[Attribute] = {
    var found = Seq(a)
    var changed = true
    while (changed) {
      val next = (found ++ equal.collect {
        case (x, y) if found.exists(_.exprId == x.exprId) => y
        case (x, y) if found.exists(_.exprId == y.exprId) => x
      }).distinctBy(_.exprId)
      changed = next.size != found.size
      found = next
    }
    found
  }

  /** `kind > 0`: the marker of a punctuated aggregation's output. */
  def kindMarker(kind: Attribute): Expression = GreaterThan(kind, Literal(0))
  def isData(kind: Attribute): Expression = EqualTo(kind, Literal(PunctuationKind.Data))
}
