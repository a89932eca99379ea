package punctuated.spark

import org.apache.spark.sql.Dataset
import org.json4s.JsonAST._
import org.json4s.jackson.JsonMethods.{compact, render}

import punctuated.declaration.{Declaration, Scheme}
import punctuated.input.DeclaredStreams

/** Entry points called from the Python package through Py4J. */
object PythonApi {

  /**
   * The declarations of the streams a DataFrame reads, as JSON:
   * `[{"table": ..., "schemes": [[{"attr", "kind"}...]], "marker": ..., "unique": [...]}]`.
   */
  def declarations(df: Dataset[_]): String = {
    val plan = df.queryExecution.analyzed
    val conf = df.sparkSession.sessionState.conf
    val streams = DeclaredStreams.find(plan, conf.caseSensitiveAnalysis)
    compact(render(JArray(streams.map(_.declaration).distinct.map(toJson).toList)))
  }

  /**
   * The join graph of a (streaming) query, for the safety analysis:
   * `{"streams": [{"name", "attributes", "schemes", "declared", "table", "declaration", "booleans", "used_names"}],
   * "predicates": ["S1.a = S2.b"], "tree": ...}`: `table` is the catalog table a stream reads
   * (null for a DataFrame stream), `declaration` its properties as written (null if none),
   * `booleans` its BOOLEAN columns, `used_names` the names its columns are joined under —
   * what an applicable fix needs.
   */
  def joinGraph(df: Dataset[_]): String = {
    val conf = df.sparkSession.sessionState.conf
    val graph = JoinGraph.of(df.queryExecution.analyzed, conf.caseSensitiveAnalysis)
    compact(render(JObject(
      "streams" -> JArray(graph.streams.map { s =>
        JObject(
          "name" -> JString(s.name),
          "attributes" -> JArray(s.attributes.map(JString(_)).toList),
          "schemes" -> JArray(s.schemes.map(sc => JArray(sc.map(JString(_)).toList)).toList),
          "declared" -> JBool(s.declared),
          "table" -> s.table.map(JString(_)).getOrElse(JNull),
          "declaration" -> s.declaration.map(d => JObject(d.toProperties.toList.sortBy(_._1).map {
            case (k, v) => k -> (JString(v): JValue) })).getOrElse(JNull),
          "booleans" -> JArray(s.booleans.map(JString(_)).toList),
          "used_names" -> JObject(s.usedNames.toList.sortBy(_._1).map { case (k, v) => k -> (JString(v): JValue) }))
      }.toList),
      "predicates" -> JArray(graph.predicates.map(JString(_)).toList),
      "tree" -> graph.tree.map(treeJson).getOrElse(JNull))))
  }

  private def treeJson(t: JoinGraph.Tree): JValue = t match {
    case JoinGraph.Leaf(s) => JString(s)
    case JoinGraph.Node(l, r) => JArray(List(treeJson(l), treeJson(r)))
  }

  /**
   * What the start-time check (`spark.punctuated.safety.mode`) decides for this query, per
   * stream-stream join, children before parents:
   * `[{"left": name, "right": name, "purgeable": [bool, bool], "problems": [text]}]`. The join
   * marks are those the query gets when it starts (a punctuated join's output is a punctuated
   * input of the join above it).
   */
  def joinSafety(df: Dataset[_]): String = {
    val verdicts = punctuated.spark.rules.JoinSafety.verdicts(df.queryExecution.analyzed)
    compact(render(JArray(verdicts.map { v =>
      JObject(
        "left" -> JString(v.left),
        "right" -> JString(v.right),
        "purgeable" -> JArray(List(JBool(v.purgeable._1), JBool(v.purgeable._2))),
        "problems" -> JArray(v.problems.map(p => JString(p.message)).toList))
    }.toList)))
  }

  /**
   * What the start-time check decides for each streaming aggregation and deduplication over
   * declared streams ([[punctuated.spark.rules.StatefulSafety]]):
   * `[{"operator", "keys": [...], "streams": [...], "closed": bool, "problem": text or null}]`.
   */
  def statefulSafety(df: Dataset[_]): String = {
    val verdicts = punctuated.spark.rules.StatefulSafety.verdicts(df.queryExecution.analyzed)
    compact(render(JArray(verdicts.map { v =>
      JObject(
        "operator" -> JString(v.operator),
        "keys" -> JArray(v.keys.map(JString(_)).toList),
        "streams" -> JArray(v.streams.map(JString(_)).toList),
        "closed" -> JBool(v.problem.isEmpty),
        "problem" -> v.problem.map(p => JString(p.message)).getOrElse(JNull))
    }.toList)))
  }

  private def toJson(scheme: Scheme): JValue = JArray(scheme.attributes.map { a =>
    val kind = if (a.isRange) "range" else "constant"
    JObject("attr" -> JString(a.name), "kind" -> JString(kind))
  }.toList)

  private def toJson(d: Declaration): JValue = JObject(
    "table" -> JString(d.table),
    "schemes" -> JArray(d.schemes.map(toJson).toList),
    "marker" -> d.marker.map(JString(_)).getOrElse(JNull),
    "unique" -> JArray(d.unique.toList.flatMap(_.names).map(JString(_))))
}
