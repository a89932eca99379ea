package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, ExprId, If}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan, Project, Union}

import punctuated.declaration.AttributeKind
import punctuated.input.{DeclaredStreams, PassThrough, PunctuationColumns}
import punctuated.join.{DerivedDeclarations, KeySchemes}

/**
 * The punctuations that actually reach an operator, for the safety check of aggregations
 * and deduplications, walking down the nodes [[punctuated.input.PassThrough]] lets
 * punctuations through (Tucker et al. 2003, Table 3, how each operator propagates
 * punctuations):
 *
 *  - a declared stream's schemes, through projections (renamed as they rename), filters,
 *    aliases, views and watermarks (select and project pass punctuations); a scheme other
 *    than the unique key needs the stream's marker column;
 *  - a punctuated join's output: only the join-key schemes *both* its inputs close, on each
 *    input's key columns — the output punctuations the join emits (Table 3, join; the derived
 *    declaration, [[DerivedDeclarations]], Li et al. 2006, §4). A scheme one input alone
 *    declares, or on columns that are not join keys, never leaves the join;
 *  - a punctuated aggregation's output: its closing schemes on its grouping columns (Table 2);
 *  - a punctuated deduplication: its input's (Table 2);
 *  - a union: the schemes every input carries on the same columns (setCombine, Table 3).
 *
 * Behind any other operator no punctuation reaches.
 *
 * @param schemes the schemes reaching, each as its columns with "is a range" flags
 * @param equal   columns equal on every row by an equi-join on the way
 * @param lost    sentences saying where declared schemes stopped (for the messages)
 */
final case class ReachingPunctuations(
    schemes: Seq[Seq[(Attribute, AttributeKind)]],
    equal: Seq[(Attribute, Attribute)],
    lost: Seq[String]) {

  /**
   * Does some reaching scheme close keys `keys` — every attribute a key column (or, with
   * `useEqualities`, equal to one by a join)? (Ranges close by their bounds, several ones by a
   * region: `punctuated.state.RangeBounds`.)
   */
  def closes(keys: Seq[Attribute], useEqualities: Boolean): Boolean = schemes.exists { s =>
    val positions = s.map { case (a, _) =>
      equalTo(a, if (useEqualities) equal else Nil).map(e => keys.indexWhere(_.exprId == e)).find(_ >= 0)
    }
    positions.forall(_.isDefined) && positions.flatten.distinct.size == s.size
  }

  private def equalTo(a: Attribute, pairs: Seq[(Attribute, Attribute)]): Seq[ExprId] = {
    var found = Set(a.exprId)
    var changed = true
    while (changed) {
      val next = found ++ pairs.collect {
        case (x, y) if found(x.exprId) => y.exprId
        case (x, y) if found(y.exprId) => x.exprId
      }
      changed = next.size != found.size
      found = next
    }
    a.exprId +: (found - a.exprId).toSeq
  }
}

object ReachingPunctuations {

  private val none = ReachingPunctuations(Nil, Nil, Nil)

  def of(node: LogicalPlan, caseSensitive: Boolean): ReachingPunctuations =
    declaredAt(node, caseSensitive).getOrElse(PassThrough.step(node) match {
      case PassThrough.Projection(Project(list, child)) =>
        val below = of(child, caseSensitive)
        val kept = list.map(_.exprId).toSet
        // a column renamed (or filled from equal columns by a punctuated aggregation's rewrite)
        val aliases: Seq[(Attribute, Attribute)] = list.collect {
          case al @ Alias(c: Attribute, _) => c -> al.toAttribute
          case al @ Alias(If(_, _, c: Attribute), _) => c -> al.toAttribute
        }
        val renamed = aliases.filterNot(x => kept.contains(x._1.exprId)).map { case (c, al) => c.exprId -> al }.toMap
        def r(a: Attribute) = renamed.getOrElse(a.exprId, a)
        // a column kept as it is and also aliased: the alias equals it on every row
        val copies = aliases.filter(x => kept.contains(x._1.exprId))
        ReachingPunctuations(below.schemes.map(_.map { case (a, range) => (r(a), range) }),
          below.equal.map { case (a, b) => (r(a), r(b)) } ++ below.equal ++ copies, below.lost)
      case PassThrough.Transparent(child) => of(child, caseSensitive)
      case PassThrough.DeduplicateOf(d) => of(d.child, caseSensitive)
      case PassThrough.PunctuatedJoin(j, _) => join(j, caseSensitive)
      case PassThrough.UnionOf(u) => union(u, caseSensitive)
      case PassThrough.AggregateOutput(_, s) => ReachingPunctuations(s.schemes.map(_._1), Nil, Nil)
      case PassThrough.Stop => none
    })

  /** A punctuated join's output punctuations: the key schemes both inputs close. */
  private def join(j: Join, caseSensitive: Boolean): ReachingPunctuations = {
    val below = j.children.map(of(_, caseSensitive))
    val byId = j.output.map(a => a.exprId -> a).toMap
    val derived = DerivedDeclarations.of(j, byId.keySet).toSeq.flatMap { d =>
      d.declaration.schemes.map(_.attributes.map(a => d.columns.get(a.name).flatMap(byId.get).map(_ -> a.kind)))
        .collect { case s if s.forall(_.isDefined) => s.flatten }
    }
    val (equal, lost) = j match {
      case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) =>
        val on = lk.zip(rk).map { case (l, r) => s"${l.sql} = ${r.sql}" }.mkString(" AND ")
        val mark = PunctuationColumns.find(j.condition).get
        def closes(d: Option[punctuated.input.PunctuatedInput], keys: Seq[org.apache.spark.sql.catalyst.expressions.Expression]) =
          d.toSeq.flatMap(x => KeySchemes.usable(x, keys).filter { case (s, _) => x.hasPunctuations(s) }.map(_._1.toString))
        def side(d: Option[punctuated.input.PunctuatedInput], keys: Seq[org.apache.spark.sql.catalyst.expressions.Expression]) = {
          val name = d.map(_.declaration.table.split('.').last).getOrElse("the other input")
          closes(d, keys) match {
            case Nil => s"$name closes none of its key columns"
            case cs => s"$name closes (${cs.mkString("), (")})"
          }
        }
        val note = s"the join ON $on passes on punctuations only for join-key values both its inputs " +
          s"close with the same scheme (${side(mark.left, lk)}; ${side(mark.right, rk)})"
        (lk.zip(rk).collect { case (a: Attribute, b: Attribute) => a -> b }, Seq(note))
      case _ => (Nil, Nil)
    }
    ReachingPunctuations(derived, equal ++ below.flatMap(_.equal), below.flatMap(_.lost) ++ lost)
  }

  /** A union's punctuations: those every input carries on the same output columns. */
  private def union(u: Union, caseSensitive: Boolean): ReachingPunctuations = {
    val branches = u.children.map { c =>
      val position = c.output.map(_.exprId).zipWithIndex.toMap
      of(c, caseSensitive).schemes.flatMap { s =>
        val ps = s.map { case (a, range) => position.get(a.exprId).map(_ -> range) }
        if (ps.forall(_.isDefined)) Some(ps.flatten.toSet) else None
      }.toSet
    }
    val common = if (branches.isEmpty) Set.empty[Set[(Int, AttributeKind)]] else branches.reduce(_ intersect _)
    ReachingPunctuations(common.toSeq.map(_.toSeq.sortBy(_._1).map { case (p, range) => (u.output(p), range) }),
      Nil, Seq("a union passes on a punctuation only once every input closed the same columns"))
  }

  /** The stream declared at this node (a catalog relation or a `with_schemes` projection). */
  private def declaredAt(node: LogicalPlan, caseSensitive: Boolean): Option[ReachingPunctuations] =
    DeclaredStreams.declaredAt(node, caseSensitive).map(s => ReachingPunctuations(s.reachingSchemes.map(_._2), Nil, Nil))
}
