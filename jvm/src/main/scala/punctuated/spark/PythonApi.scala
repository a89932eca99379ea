package punctuated.spark

import org.apache.spark.sql.Dataset
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}
import org.json4s.JsonAST._
import org.json4s.jackson.JsonMethods.{compact, render}

import punctuated.declaration.{Declaration, Scheme, SchemeAttribute}
import punctuated.input.DeclaredStreams
import punctuated.conf.PunctuatedConf
import punctuated.spark.rules.{MultiJoinSafety, StatefulSafety}

/**
 * Entry points called from the Python package through Py4J: [[describe]] (all that
 * `punctuated.check_safety` reads) and [[declarations]] (`punctuated.declarations`). The SQL
 * table functions `punctuated_describe` and `punctuated_declarations`
 * ([[punctuated.spark.functions.TableFunctions]], what a Spark Connect client calls) return the
 * same JSON, produced here.
 */
object PythonApi {

  /**
   * The declarations of the streams a DataFrame reads, as JSON:
   * `[{"table": ..., "schemes": [[{"attr", "kind"}...]], "marker": ..., "unique": [...]}]`.
   */
  def declarations(df: Dataset[_]): String =
    compact(render(JArray(declarationsOf(df).map(toJson).toList)))

  /**
   * The distinct declarations of the streams a DataFrame reads, in plan order: what
   * [[declarations]] writes as JSON and the SQL table function `punctuated_declarations` as rows.
   */
  def declarationsOf(df: Dataset[_]): Seq[Declaration] = {
    val plan = df.queryExecution.analyzed
    val conf = df.sparkSession.sessionState.conf
    DeclaredStreams.find(plan, conf.caseSensitiveAnalysis).map(_.declaration).distinct
  }

  /** One declaration as [[declarations]] writes it: `{"table", "schemes", "marker", "unique"}`. */
  def declarationJson(d: Declaration): String = compact(render(toJson(d)))

  /** Version of the [[describe]] document; raised whenever its shape changes. */
  val DescribeVersion = 2

  /**
   * Everything the Python package needs to judge a streaming query, in one JSON document
   * (its shape is documented in `docs/python-document.md`): the streams it reads with their
   * attributes and declarations, the equi-join predicates as pairs of stream columns (never
   * as text to re-parse), the tree of stateful operators Spark runs (binary joins, groups of
   * joins that run as one multi-way join (`multiJoin`), aggregations, deduplications, each but
   * the binary joins linked to its verdict), the time bands of its joins (`bands`), and the verdicts the start-time check
   * (`spark.punctuated.safety.mode`) gives its joins, multi-way joins, aggregations and deduplications —
   * so that `check_safety` and `start()` judge by one rule. Names are spelled as in the
   * schema, whatever characters they contain.
   *
   * {{{
   *   {"version": 2, "stream_joins": 1,
   *    "streams": [{"name": "bids", "table": "spark_catalog.default.bids", "declared": true,
   *                 "marker": "is_punct", "attributes": ["auction", "is_punct"],
   *                 "schemes": [{"source": "declared",
   *                              "attributes": [{"name": "auction", "kind": "constant"}]}], ...}],
   *                 (a watermark on a join-key column adds {"source": "watermark", "attributes":
   *                  [{"name": "ts", "kind": "range"}]}: the range punctuation it is)
   *    "predicates": [{"left": {"stream": "auctions", "attribute": "id"},
   *                    "right": {"stream": "bids", "attribute": "auction"}}],
   *    "bands": [], "refusals": [],
   *    "tree": {"aggregate": {"keys": ["auction"], "punctuated": true, "verdict": 0,
   *             "input": {"join": [{"stream": "auctions"}, {"stream": "bids"}]}}},
   *    "verdicts": {"joins": [...], "multiJoins": [],
   *                 "stateful": [{"operator": "aggregation", "keys": ["auction"], ...}]}}
   * }}}
   */
  def describe(df: Dataset[_]): String = {
    val session = df.sparkSession
    val caseSensitive = session.sessionState.conf.caseSensitiveAnalysis
    val analyzed = df.queryExecution.analyzed
    val graph = JoinGraph.of(analyzed, caseSensitive)
    val streamJoins = analyzed.collect {
      case j: Join if j.left.isStreaming && j.right.isStreaming => j
    }.size
    // WHERE equalities are pushed into the joins by the optimizer; read them there too (only
    // where there are joins: without one, the optimizer may fold a constant marker column
    // away below a deduplication, and the declaration would no longer resolve there)
    val optimized =
      if (streamJoins == 0) Nil
      else JoinGraph.of(session.sessionState.optimizer.execute(analyzed), caseSensitive).predicates
    val known = graph.streams.map(s => s.name -> s.attributes.toSet).toMap
    val predicates = (graph.predicates ++ optimized.filter(e => Seq(e.left, e.right).forall(c =>
      known.get(c.stream).exists(_.contains(c.attribute)))))
      .foldLeft(Vector.empty[JoinGraph.Equality]) { (out, e) =>
        if (out.exists(o => Set(o.left, o.right) == Set(e.left, e.right))) out else out :+ e
      }
    val stateful = StatefulSafety.verdicts(analyzed)
    val declared = graph.streams.filter(_.declared).map(_.name).toSet
    val multi = MultiJoinSafety.verdicts(analyzed, PunctuatedConf(session.sessionState.conf))
    val groups = multi.map(v => v.group.inputs.map(in => streamsOf(in.plan, graph)))
    val tree = graph.operators.map(multiJoins(_, groups))
    // a watermark on a join-key column is its stream's range scheme there (KeyWatermarkSafety)
    val keyWatermarks = punctuated.spark.rules.KeyWatermarkSafety.columns(analyzed, PunctuatedConf(session.sessionState.conf))
      .flatMap(a => graph.origins.get(a.exprId)).distinct.groupMap(_._1)(_._2)
    compact(render(JObject(
      "version" -> JInt(DescribeVersion),
      "streams" -> JArray(graph.streams.map(s => streamJson(s, keyWatermarks.getOrElse(s.name, Nil))).toList),
      "predicates" -> JArray(predicates.map(e => JObject(
        "left" -> columnJson(e.left), "right" -> columnJson(e.right))).toList),
      "stream_joins" -> JInt(streamJoins),
      "bands" -> bandsJson(analyzed, graph),
      "tree" -> tree.map(treeJson(_, verdictIndex(tree, stateful, declared))).getOrElse(JNull),
      "refusals" -> refusals(analyzed, PunctuatedConf(session.sessionState.conf), declared.nonEmpty),
      "verdicts" -> JObject(
        "joins" -> joinVerdicts(analyzed, session),
        "multiJoins" -> multiJoinVerdicts(multi),
        "stateful" -> statefulVerdicts(stateful)))))
  }

  /**
   * What `start()` refuses whatever `spark.punctuated.safety.mode` says (the start-time check's
   * refusals before its verdicts: load shedding where results would be wrong, a band-only join
   * that cannot run on time buckets), each as `{"condition", "message"}`: so that `check_safety`
   * says why the query cannot run rather than only that its state is never purged.
   */
  private def refusals(plan: LogicalPlan, conf: PunctuatedConf, declared: Boolean): JValue = {
    val checks: Seq[() => Unit] = if (!declared) Nil else Seq(
      () => punctuated.spark.rules.SheddingSafety.refuse(plan, conf),
      () => punctuated.spark.rules.TimeBandSafety.refuseBandOnly(plan))
    JArray(checks.toList.flatMap { check =>
      try { check(); None } catch {
        case e: punctuated.errors.PunctuatedAnalysisException =>
          Some(JObject("condition" -> JString(e.getCondition), "message" -> JString(e.getMessage)))
      }
    })
  }

  /** The streams of the graph an input's columns come from. */
  private def streamsOf(input: LogicalPlan, graph: JoinGraph): Set[String] =
    input.output.flatMap(a => graph.origins.get(a.exprId)).map(_._1).toSet

  /**
   * `t` with each group's joins as one [[JoinGraph.MultiJoin]]: the join node whose streams are
   * those of a group's inputs becomes one node over the sub-trees of its inputs.
   */
  private def multiJoins(t: JoinGraph.Tree, groups: Seq[Seq[Set[String]]]): JoinGraph.Tree = {
    def streams(t: JoinGraph.Tree): Set[String] = t match {
      case JoinGraph.Leaf(s) => Set(s)
      case JoinGraph.Node(l, r) => streams(l) ++ streams(r)
      case s: JoinGraph.Stateful => streams(s.input)
      case m: JoinGraph.MultiJoin => m.inputs.flatMap(streams).toSet
    }
    def inputsOf(t: JoinGraph.Tree, inputs: Seq[Set[String]]): Seq[JoinGraph.Tree] = t match {
      case n: JoinGraph.Node if !inputs.contains(streams(n)) => inputsOf(n.left, inputs) ++ inputsOf(n.right, inputs)
      case other => Seq(multiJoins(other, groups))
    }
    t match {
      case n: JoinGraph.Node =>
        groups.indexWhere(g => g.flatten.toSet == streams(n) && g.forall(_.nonEmpty)) match {
          case -1 => JoinGraph.Node(multiJoins(n.left, groups), multiJoins(n.right, groups))
          case k => JoinGraph.MultiJoin(inputsOf(n, groups(k)), k)
        }
      case s: JoinGraph.Stateful => s.copy(input = multiJoins(s.input, groups))
      case other => other
    }
  }

  private def columnJson(c: JoinGraph.Column): JValue =
    JObject("stream" -> JString(c.stream), "attribute" -> JString(c.attribute))

  /** A stream; `watermarked`: its join-key columns whose watermark is a range scheme (source `watermark`). */
  private def streamJson(s: JoinGraph.Stream, watermarked: Seq[String]): JValue = {
    val declared = s.declaration.toList.flatMap(_.schemes)
    val unique = s.declaration.flatMap(_.unique).filterNot(declared.contains).toList
    val range = watermarked.map(c => Scheme(Seq(SchemeAttribute(c, isRange = true))))
      .filterNot(declared.contains).map(schemeJson(_, "watermark"))
    val schemes = (
      if (s.declaration.isDefined) declared.map(schemeJson(_, "declared")) ++ unique.map(schemeJson(_, "unique"))
      else s.schemes.map(names => schemeJson(Scheme(names.map(SchemeAttribute(_, isRange = false))), "declared"))) ++ range
    JObject(
      "name" -> JString(s.name),
      "table" -> s.table.map(JString(_)).getOrElse(JNull),
      "declared" -> JBool(s.declared),
      "attributes" -> JArray(s.attributes.map(JString(_)).toList),
      "schemes" -> JArray(schemes.toList),
      "marker" -> s.declaration.flatMap(_.marker).map(JString(_)).getOrElse(JNull),
      "declaration" -> s.declaration.map(d => JObject(d.toProperties.toList.sortBy(_._1).map {
        case (k, v) => k -> (JString(v): JValue) })).getOrElse(JNull),
      "booleans" -> JArray(s.booleans.map(JString(_)).toList),
      "used_names" -> JObject(s.usedNames.toList.sortBy(_._1).map { case (k, v) => k -> (JString(v): JValue) }))
  }

  private def schemeJson(scheme: Scheme, source: String): JValue = JObject(
    "source" -> JString(source),
    "attributes" -> JArray(scheme.attributes.map(a => JObject(
      "name" -> JString(a.name), "kind" -> JString(kindName(a)))).toList))

  /** `constant`, `range` (`attr<=`) or `range_at_least` (`attr>=`): the kinds the Python side reads. */
  private def kindName(a: SchemeAttribute): String =
    if (!a.isRange) "constant" else if (a.atLeast) "range_at_least" else "range"

  /**
   * The tree as JSON: `{"stream": name}`, `{"join": [left, right]}`, and
   * `{"aggregate" | "deduplicate": {"keys", "input", "punctuated", "verdict"}}`, where
   * `verdict` is the operator's index in `verdicts.stateful` (or null: not judged there).
   */
  private def treeJson(t: JoinGraph.Tree, verdicts: JoinGraph.Stateful => Option[Int]): JValue = t match {
    case JoinGraph.Leaf(s) => JObject("stream" -> JString(s))
    case JoinGraph.Node(l, r) => JObject("join" -> JArray(List(treeJson(l, verdicts), treeJson(r, verdicts))))
    case JoinGraph.MultiJoin(inputs, k) =>
      JObject("multiJoin" -> JObject(
        "inputs" -> JArray(inputs.map(treeJson(_, verdicts)).toList),
        "verdict" -> JInt(k)))
    case s: JoinGraph.Stateful =>
      JObject((if (s.operator == "aggregation") "aggregate" else "deduplicate") -> JObject(
        "keys" -> JArray(s.keys.map(JString(_)).toList),
        "input" -> treeJson(s.input, verdicts),
        "punctuated" -> JBool(s.punctuated),
        "verdict" -> verdicts(s).map(JInt(_)).getOrElse(JNull)))
  }

  /**
   * Each aggregation and deduplication of the tree that has a verdict, with its index in
   * `verdicts`. Both list the operators in the plan's order (parents first, left before right),
   * and the verdicts only those over declared streams, so an operator takes the next verdict
   * if it reads a declared stream and the verdict names its operator and keys.
   * Operators are matched by identity (two equal sub-trees are two operators).
   */
  private def verdictIndex(tree: Option[JoinGraph.Tree], verdicts: Seq[StatefulSafety.Verdict],
      declared: Set[String]): JoinGraph.Stateful => Option[Int] = {
    val index = new java.util.IdentityHashMap[JoinGraph.Stateful, Integer]()
    var next = 0
    def leaves(t: JoinGraph.Tree): Seq[String] = t match {
      case JoinGraph.Leaf(s) => Seq(s)
      case JoinGraph.Node(l, r) => leaves(l) ++ leaves(r)
      case JoinGraph.MultiJoin(inputs, _) => inputs.flatMap(leaves)
      case s: JoinGraph.Stateful => leaves(s.input)
    }
    def walk(t: JoinGraph.Tree): Unit = t match {
      case JoinGraph.Leaf(_) =>
      case JoinGraph.Node(l, r) => walk(l); walk(r)
      case JoinGraph.MultiJoin(inputs, _) => inputs.foreach(walk)
      case s: JoinGraph.Stateful =>
        if (next < verdicts.size && verdicts(next).operator == s.operator && verdicts(next).keys == s.keys &&
            leaves(s.input).exists(declared)) {
          index.put(s, next)
          next += 1
        }
        walk(s.input)
    }
    tree.foreach(walk)
    s => Option(index.get(s)).map(_.intValue)
  }

  /**
   * The time band of each stream-stream equi-join that has one ([[punctuated.join.TimeBand]]:
   * `right.ts - left.ts` in `[lo, hi]`, in the time column's internal unit, a bound `null` when
   * the condition sets none), on the streams' columns, with whether each side's watermark acts as
   * its range punctuation — what the start-time check counts as an edge of the punctuation graph
   * ([[punctuated.spark.rules.TimeBandSafety]]). Bands whose columns do not come from two streams
   * of the graph are left out.
   */
  private def bandsJson(plan: LogicalPlan, graph: JoinGraph): JValue = JArray(plan.collect {
    case j @ ExtractEquiJoinKeys(_, _, _, other, _, left, right, _) if left.isStreaming && right.isStreaming =>
      for {
        t <- punctuated.join.TimeBand.terms(other, left.output, right.output)
        (ls, la) <- graph.origins.get(t.left.exprId)
        (rs, ra) <- graph.origins.get(t.right.exprId) if ls != rs
      } yield {
        val marks = punctuated.spark.rules.TimeBandSafety.watermarked(t, left, right)
        JObject(
          "left" -> JObject("stream" -> JString(ls), "attribute" -> JString(la)),
          "right" -> JObject("stream" -> JString(rs), "attribute" -> JString(ra)),
          "lo" -> t.lo.map(JLong(_)).getOrElse(JNull),
          "hi" -> t.hi.map(JLong(_)).getOrElse(JNull),
          "text" -> JString(t.text),
          "watermarked" -> JArray(marks.map(JBool(_)).toList))
      }
  }.flatten.toList)

  /**
   * The start-time check's verdict per stream-stream join that runs as a binary join, children
   * before parents (the joins of a multi-way join are judged in `multiJoins`).
   */
  private def joinVerdicts(plan: LogicalPlan, session: org.apache.spark.sql.SparkSession): JValue =
    JArray(punctuated.spark.rules.JoinSafety.verdicts(plan, PunctuatedConf(session.sessionState.conf)).map { v =>
      JObject(
        "left" -> JString(v.left),
        "right" -> JString(v.right),
        "purgeable" -> JArray(List(JBool(v.purgeable._1), JBool(v.purgeable._2))),
        "problems" -> JArray(v.problems.map(p => JString(p.message)).toList))
    }.toList)

  /**
   * The start-time check's verdict per group of joins that runs as one multi-way join (Li et
   * al. 2006, Theorems 2/4), uppermost first: its inputs' names, each input's purgeability,
   * the message of each unpurgeable input.
   */
  private def multiJoinVerdicts(verdicts: Seq[MultiJoinSafety.Verdict]): JValue =
    JArray(verdicts.map { v =>
      JObject(
        "inputs" -> JArray(v.inputs.map(JString(_)).toList),
        "purgeable" -> JArray(v.purgeable.map(JBool(_)).toList),
        "problems" -> JArray(v.problems.map(p => JString(p.message)).toList))
    }.toList)

  /** The start-time check's verdict per aggregation and deduplication over declared streams. */
  private def statefulVerdicts(verdicts: Seq[StatefulSafety.Verdict]): JValue =
    JArray(verdicts.map { v =>
      JObject(
        "operator" -> JString(v.operator),
        "keys" -> JArray(v.keys.map(JString(_)).toList),
        "streams" -> JArray(v.streams.map(JString(_)).toList),
        "closed" -> JBool(v.problem.isEmpty),
        "problem" -> v.problem.map(p => JString(p.message)).getOrElse(JNull))
    }.toList)

  private def toJson(scheme: Scheme): JValue = JArray(scheme.attributes.map { a =>
    JObject("attr" -> JString(a.name), "kind" -> JString(kindName(a)))
  }.toList)

  private def toJson(d: Declaration): JValue = JObject(
    "table" -> JString(d.table),
    "schemes" -> JArray(d.schemes.map(toJson).toList),
    "marker" -> d.marker.map(JString(_)).getOrElse(JNull),
    "unique" -> JArray(d.unique.toList.flatMap(_.names).map(JString(_))))
}
