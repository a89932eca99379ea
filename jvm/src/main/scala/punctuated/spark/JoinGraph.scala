package punctuated.spark

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.{Alias, And, Attribute, EqualNullSafe, EqualTo, Expression, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, DeduplicateWithinWatermark, Distinct, Filter, Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.execution.datasources.LogicalRelation
import punctuated.compat.StreamingRelation
import org.apache.spark.sql.types.BooleanType

import punctuated.input.{DeclaredStreams, RewrittenOperators}

/**
 * The join graph of a streaming query, as the safety analysis needs it (Li, Chen,
 * Tatemura, Agrawal, Candan, Hsiung 2006, §2): the streams it reads with their attributes
 * and punctuation schemes, and the equi-join predicates between them, each attribute
 * traced back to the stream it comes from.
 *
 * @param streams    the streams, by short name (table name, or `with_schemes` name)
 * @param predicates equi-join predicates between two streams, in join conditions or in `WHERE`
 * @param tree       the tree of stream-stream joins Spark runs (leaves: stream names), if the
 *                   query's joins form one tree (none for a single stream, or joins under a union)
 * @param operators  the tree of every stateful operator Spark runs: the joins of `tree` and the
 *                   streaming aggregations and deduplications ([[JoinGraph.Stateful]]) where
 *                   the plan has them; none when the query has no stateful operator or its
 *                   operators form no single tree. `tree` is this tree without the aggregations
 *                   and deduplications (both come from one walk of the plan).
 */
final case class JoinGraph(streams: Seq[JoinGraph.Stream], predicates: Seq[JoinGraph.Equality],
    tree: Option[JoinGraph.Tree] = None, origins: Map[ExprId, (String, String)] = Map.empty,
    operators: Option[JoinGraph.Tree] = None) {

  /** The stream and source column an attribute of the plan comes from, if traced. */
  def origin(a: Attribute): Option[(JoinGraph.Stream, String)] =
    origins.get(a.exprId).flatMap { case (s, c) => streams.find(_.name == s).map(_ -> c) }
}

object JoinGraph {

  /** A stream's column: the stream's name and the column's name as spelled in its schema. */
  final case class Column(stream: String, attribute: String)

  /**
   * An equi-join predicate between two streams' columns (Li et al. 2006, §2.2), kept as a
   * pair of columns so that no name is ever re-parsed: `Equality(Column("a", "bid id"),
   * Column("b", "x"))` prints as `a.bid id = b.x`, for people only.
   */
  final case class Equality(left: Column, right: Column) {
    override def toString: String = s"${left.stream}.${left.attribute} = ${right.stream}.${right.attribute}"
  }

  /** A join tree: a stream, or a join of two sub-trees (Li et al. 2006, §2.2, plans). */
  sealed trait Tree
  final case class Leaf(stream: String) extends Tree
  final case class Node(left: Tree, right: Tree) extends Tree

  /**
   * A group of joins that runs as one multi-way join (`punctuated.join.multi.MultiJoinGroups`),
   * over the sub-trees of its inputs; [[JoinGraph.of]] builds binary [[Node]]s only, the
   * Python document's tree puts this node in their place. For `a ⋈ b ⋈ c` as one group:
   * {{{
   *   MultiJoin(Seq(Leaf("a"), Leaf("b"), Leaf("c")), verdict = 0)
   * }}}
   *
   * @param verdict the index of its verdict among the document's `verdicts.multiJoins`
   */
  final case class MultiJoin(inputs: Seq[Tree], verdict: Int) extends Tree

  /**
   * A streaming aggregation or deduplication over a sub-tree (Tucker et al. 2003, Table 2: a
   * stateful operator keeps a group / a seen key until punctuations close it). For
   * `SELECT k, count(*) FROM (a JOIN b ON ...) GROUP BY k`:
   * {{{
   *   Stateful("aggregation", Seq("k"), Node(Leaf("a"), Leaf("b")), punctuated = true)
   * }}}
   *
   * @param operator   "aggregation" or "deduplication" (as the start-time check's verdicts name them)
   * @param keys       its grouping columns / keys, as written (a column's name, or an expression's SQL)
   * @param input      what it reads
   * @param punctuated whether the extension runs it as a punctuated operator (its state goes
   *                   when punctuations close it); false: Spark's own operator
   */
  final case class Stateful(operator: String, keys: Seq[String], input: Tree, punctuated: Boolean) extends Tree

  /** `t` without its aggregations and deduplications: the tree of joins alone. */
  def joinsOf(t: Tree): Tree = t match {
    case Stateful(_, _, input, _) => joinsOf(input)
    case Node(l, r) => Node(joinsOf(l), joinsOf(r))
    case MultiJoin(inputs, v) => MultiJoin(inputs.map(joinsOf), v)
    case leaf: Leaf => leaf
  }

  /**
   * @param schemes     the schemes (attribute names) punctuations of this stream may instantiate:
   *                    the declared ones and the unique key
   * @param table       the catalog table it reads (an identifier `ALTER TABLE` accepts), if any
   * @param declaration its declaration as written (table properties or `with_schemes`), if any
   * @param booleans    its BOOLEAN columns (candidates for a marker): a table's; a DataFrame
   *                    stream's where it enters a join
   * @param usedNames   attributes joined under another name: attribute -> name where joined
   */
  final case class Stream(name: String, attributes: Seq[String], schemes: Seq[Seq[String]],
      declared: Boolean, table: Option[String] = None,
      declaration: Option[punctuated.declaration.Declaration] = None, booleans: Seq[String] = Nil,
      usedNames: Map[String, String] = Map.empty)

  def of(plan: LogicalPlan, caseSensitive: Boolean): JoinGraph = {
    val origin = mutable.Map.empty[ExprId, (String, String)]   // exprId -> (stream, attribute)
    val streams = mutable.LinkedHashMap.empty[String, Stream]
    val renamed = mutable.Set.empty[ExprId]   // columns of a source a declaration renames
    val declaredAt = DeclaredStreams.find(plan, caseSensitive).map(d => d.output.map(_.exprId).toSet -> d)

    def register(name: String, output: Seq[Attribute], schemes: Seq[Seq[String]], declared: Boolean,
        table: Option[String], declaration: Option[punctuated.declaration.Declaration]): Unit = {
      val unique = Iterator.from(1).map(i => if (i == 1) name else s"${name}_$i")
        .find(n => !streams.contains(n) || streams(n).attributes == output.map(_.name) &&
          output.forall(a => origin.get(a.exprId).exists(_._1 == n))).get
      val booleans = output.filter(_.dataType == BooleanType).map(_.name)
      streams(unique) = Stream(unique, output.map(_.name), schemes, declared, table, declaration, booleans)
      output.foreach(a => origin(a.exprId) = unique -> a.name)
    }

    plan.foreachUp { node =>
      node match {
        case leaf if leaf.children.isEmpty && leaf.isStreaming =>
          register(shortName(leaf), leaf.output, Nil, declared = false, tableOf(leaf), None)
        case Project(list, _) =>
          list.foreach {
            case a @ Alias(child: Attribute, _) => origin.get(child.exprId).foreach(origin(a.exprId) = _)
            case _ =>
          }
        case _ =>
      }
      // A declaration (table property or with_schemes metadata) names the stream at this node.
      declaredAt.find { case (ids, _) => node.output.nonEmpty && node.output.map(_.exprId).toSet == ids }
        .foreach { case (_, d) =>
          val decl = d.declaration
          val previous = node.output.flatMap(a => origin.get(a.exprId)).map(_._1).distinct
          val table = previous.flatMap(p => streams.get(p).flatMap(_.table)).headOption
          previous.foreach(streams.remove)
          // their sources' columns name a stream no more (its name may go to the next source)
          renamed ++= origin.collect { case (id, (s, _)) if previous.contains(s) => id }
          val name = decl.table.split('.').last
          // a with_schemes declaration over a table's stream is the DataFrame's, not the table's
          val ids = d.output.map(_.exprId)
          val onTable = table.filter(_ => node.collectLeaves().exists(_.output.map(_.exprId) == ids))
          register(name, d.output, decl.instantiableSchemes.map(_.names), declared = true, onTable, Some(decl))
          renamed --= ids
        }
    }

    // join conditions, and WHERE conditions (a Filter above the joins) equating two streams
    val predicates = plan.collect {
      case j: Join => j.condition.toSeq.flatMap(conjuncts)
      case f: Filter => conjuncts(f.condition)
    }.flatten
    val pairs = predicates.collect {
      case EqualTo(l: Attribute, r: Attribute) => (l, r)
      case EqualNullSafe(l: Attribute, r: Attribute) => (l, r)
    }
    // the name each stream column has where it is joined (a DataFrame is declared there)
    val used = pairs.flatMap { case (l, r) => Seq(l, r) }.flatMap(a => origin.get(a.exprId).map(_ -> a.name)).toMap
    val edges = pairs.flatMap { case (l, r) => edge(origin, l, r) }.distinct
    // a DataFrame stream's BOOLEAN columns where it enters a join (computed ones included)
    val joinedBooleans: Map[String, Seq[String]] = plan.collect {
      case j: Join if streamJoin(j) => j.children
    }.flatten.flatMap { input =>
      input.output.flatMap(a => origin.get(a.exprId)).map(_._1).distinct match {
        case Seq(single) => Some(single -> input.output.filter(_.dataType == BooleanType).map(_.name))
        case _ => None
      }
    }.toMap
    val operators = treeOf(plan, origin.toMap -- renamed, streams.keySet).filterNot(_.isInstanceOf[Leaf])
    JoinGraph(streams.values.toSeq.map(st => st.copy(
        usedNames = st.attributes.flatMap(a => used.get(st.name -> a).filter(_ != a).map(a -> _)).toMap,
        booleans = if (st.table.isDefined) st.booleans else joinedBooleans.getOrElse(st.name, st.booleans))),
      edges, operators.map(joinsOf).collect { case n: Node => n }, origin.toMap, operators)
  }

  private def streamJoin(p: LogicalPlan) = p match {
    case j: Join => j.left.isStreaming && j.right.isStreaming
    case _ => false
  }

  /**
   * A streaming aggregation or deduplication: its operator, keys as written, input, and whether
   * the extension's rewrite made it a punctuated one.
   */
  private def stateful(p: LogicalPlan): Option[(String, Seq[String], LogicalPlan, Boolean)] = p match {
    case a: Aggregate if a.isStreaming => Some(("aggregation", a.groupingExpressions.map(written), a.child,
      RewrittenOperators.isAggregateInput(a.child)))
    case d: Deduplicate if d.isStreaming => Some(("deduplication", d.keys.map(_.name), d.child,
      RewrittenOperators.isDeduplicateInput(d.child)))
    case d: DeduplicateWithinWatermark if d.isStreaming => Some(("deduplication", d.keys.map(_.name), d.child, false))
    case d: Distinct if d.isStreaming => Some(("deduplication", d.child.output.map(_.name), d.child, false))
    case _ => None
  }

  private def written(e: Expression): String = e match {
    case a: Attribute => a.name
    case other => other.sql
  }

  /**
   * The tree of stateful operators under `node`: stream-stream joins and streaming
   * aggregations and deduplications as nodes, single streams as leaves; the operators in
   * between (projections, filters, a join with a static table) are not nodes. A leaf is the
   * one stream of `streams` its columns come from: a source renamed by a declaration above it
   * (`with_schemes` over `readStream`) is no stream of its own. None where stateful operators
   * meet under an operator with several streaming inputs (a union).
   */
  private def treeOf(node: LogicalPlan, origin: collection.Map[ExprId, (String, String)],
      streams: collection.Set[String]): Option[Tree] =
    node match {
      case j: Join if streamJoin(j) =>
        for (l <- treeOf(j.left, origin, streams); r <- treeOf(j.right, origin, streams)) yield Node(l, r)
      case s if stateful(s).isDefined =>
        val (operator, keys, input, punctuated) = stateful(s).get
        treeOf(input, origin, streams).map(Stateful(operator, keys, _, punctuated))
      case other if other.exists(streamJoin) =>
        if (other.children.size == 1) treeOf(other.children.head, origin, streams) else None
      case other if other.exists(stateful(_).isDefined) =>
        other.children.filter(_.isStreaming) match {
          case Seq(one) => treeOf(one, origin, streams)
          case _ => None
        }
      case other =>
        other.flatMap(_.output).flatMap(a => origin.get(a.exprId)).map(_._1).filter(streams.contains).distinct match {
          case Seq(single) => Some(Leaf(single))
          case _ => None
        }
    }

  private def edge(origin: collection.Map[ExprId, (String, String)], l: Attribute, r: Attribute) =
    for ((ls, la) <- origin.get(l.exprId); (rs, ra) <- origin.get(r.exprId) if ls != rs)
      yield Equality(Column(ls, la), Column(rs, ra))

  private def conjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => conjuncts(a) ++ conjuncts(b)
    case other => Seq(other)
  }

  /** The catalog table a stream's leaf reads, as `ALTER TABLE` accepts it. */
  private[spark] def tableOf(leaf: LogicalPlan): Option[String] = leaf match {
    case r: StreamingRelation => r.dataSource.catalogTable.map(t => quoted(t.identifier.nameParts))
    case r: LogicalRelation => r.catalogTable.map(t => quoted(t.identifier.nameParts))
    case r: StreamingRelationV2 => for (c <- r.catalog; i <- r.identifier)
      yield quoted(c.name +: (i.namespace.toSeq :+ i.name))
    case _ => None
  }

  /** A multi-part name, each part backquoted only where SQL needs it. */
  def quoted(parts: Seq[String]): String = parts.map { p =>
    if (p.matches("[A-Za-z_][A-Za-z0-9_]*")) p else "`" + p.replace("`", "``") + "`"
  }.mkString(".")

  /** A stream's short name: its table's name, or its source's. */
  private[spark] def shortName(leaf: LogicalPlan): String = leaf match {
    case r: StreamingRelation => r.dataSource.catalogTable.map(_.identifier.table).getOrElse(r.sourceName)
    case r: LogicalRelation => r.catalogTable.map(_.identifier.table).getOrElse("stream")
    case r: StreamingRelationV2 => r.identifier.map(_.name).getOrElse(r.sourceName)
    case other => other.nodeName
  }
}
