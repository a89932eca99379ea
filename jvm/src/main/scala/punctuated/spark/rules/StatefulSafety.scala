package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, Distinct, EventTimeWatermark, LogicalPlan}

import punctuated.aggregate.PunctuatedAggregates
import punctuated.input.TimeKeys
import punctuated.conf.PunctuatedConf
import punctuated.input.DeclaredStreams
import punctuated.spark.JoinGraph

/**
 * Safety of the streaming aggregations and deduplications of a query that reads declared
 * streams (Tucker et al. 2003, §5.2 and Table 2: a group's state — or a deduplication's
 * seen key — can go only once punctuations match all its future rows, so some scheme whose
 * punctuations *reach the operator* must have all its attributes among the grouping
 * columns / keys). What reaches is [[ReachingPunctuations]]: after a join, only the join-key
 * schemes both its inputs close. An operator with an event-time key (a watermark evicts its
 * state) is Spark's and not judged here. A key closed through a time expression by a range
 * scheme (`GROUP BY window(ts, ...)` with `ts<=`, flagged by the rewrite: [[TimeKeys]]) is
 * closed; a key that is a non-monotone expression of a range column (`hour(ts)`) is named
 * with the reason ([[TimeKeys.notClosable]]).
 *
 * One place for the start-time check ([[CheckJoinSafety]]) and for `punctuated.check_safety`
 * (through `PythonApi.describe`).
 */
object StatefulSafety {

  /**
   * The verdict on one stateful operator.
   *
   * @param operator "aggregation" or "deduplication"
   * @param keys     its grouping columns / keys, as written
   * @param streams  the declared streams it reads
   * @param problem  the sentence naming what never closes and the fix, if its state is never purged
   */
  final case class Verdict(operator: String, keys: Seq[String], streams: Seq[String],
      problem: Option[JoinSafety.Problem])

  def problems(plan: LogicalPlan): Seq[JoinSafety.Problem] = verdicts(plan).flatMap(_.problem)

  /** The verdict on every streaming aggregation and deduplication over declared streams. */
  def verdicts(plan: LogicalPlan): Seq[Verdict] = {
    lazy val graph = JoinGraph.of(plan, caseSensitive = false)
    plan.collect {
      case a: Aggregate if a.isStreaming && !eventTime(a.groupingExpressions) && declared(a.child) =>
        verdict("aggregation", "GROUP BY", a.groupingExpressions, a.child, useEqualities = true, graph)
      case d: Deduplicate if d.isStreaming && !eventTime(d.keys) && declared(d.child) =>
        verdict("deduplication", "dropDuplicates", d.keys, d.child, useEqualities = false, graph)
      case d: Distinct if d.isStreaming && !eventTime(d.child.output) && declared(d.child) =>
        verdict("deduplication", "DISTINCT", d.child.output, d.child, useEqualities = false, graph)
    }
  }

  private def verdict(operator: String, by: String, keys: Seq[Expression], input: LogicalPlan,
      useEqualities: Boolean, graph: => JoinGraph): Verdict = {
    val streams = DeclaredStreams.find(input, caseSensitive = false).map(_.declaration.table.split('.').last).distinct
    val columns = keys.map(written)
    val attrs = keys.collect { case a: Attribute => a }
    val reach = ReachingPunctuations.of(input, caseSensitive = false)
    val closed = (attrs.size == keys.size && attrs.nonEmpty && reach.closes(attrs, useEqualities)) ||
      keys.exists(TimeKeys.closedOnTime)
    val problem = if (closed) None else Some(JoinSafety.Problem(streams.mkString(", "), {
      val what = if (operator == "aggregation") "group" else "key"
      val where = if (reach.lost.isEmpty) "" else s" (${reach.lost.distinct.mkString("; ")})"
      s"The state of the $operator $by ${columns.mkString(", ")} over ${streams.mkString(", ")} can " +
        s"never be purged: no punctuation that reaches it has all its attributes among its " +
        s"${if (operator == "aggregation") "grouping columns" else "keys"}, so no $what is ever known " +
        s"to be complete (Tucker et al. 2003, §5.2)$where. Fix: ${fix(operator, keys, input, reach, graph)}; " +
        s"or set ${PunctuatedConf.SafetyMode}=warn to run anyway."
    }))
    Verdict(operator, columns, streams, problem)
  }

  /** What would close the keys: a declaration on the stream they come from, or what else can. */
  private def fix(operator: String, keys: Seq[Expression], input: LogicalPlan, reach: ReachingPunctuations,
      graph: JoinGraph): String = {
    val by = if (operator == "aggregation") "group by" else "deduplicate on"
    val expression = keys.find(!_.isInstanceOf[Attribute])
    val traced = keys.flatMap(SafetyFixes.column(graph, _))
    val viaJoin = reach.lost.nonEmpty
    val ranges = reach.schemes.flatMap(_.collect { case (a, punctuated.declaration.AttributeKind.AtMost) => a })
    val atLeast = reach.schemes.flatMap(_.collect { case (a, punctuated.declaration.AttributeKind.AtLeast) => a })
    def timeKey(e: Expression) =
      TimeKeys.notClosable(e, ranges, input, operator).orElse(TimeKeys.closedOnlyFromBelow(e, atLeast, operator))
    // a key column computed from a range attribute by an expression that wraps (hour(ts)), or
    // from an `attr>=` one
    lazy val computed = {
      val defs = TimeKeys.definitions(input)
      keys.iterator.collect { case a: Attribute => defs(a.exprId) }.flatten
        .collect { case punctuated.input.MonotoneExpressions.Computed(e) => e }
        .flatMap(TimeKeys.notClosable(_, ranges, input, operator)).nextOption()
        .orElse(keys.iterator.collect { case a: Attribute => a }
          .flatMap(TimeKeys.closedOnlyFromBelow(_, defs, atLeast, operator)).nextOption())
    }
    expression match {
      case Some(e) =>
        timeKey(e).getOrElse(SafetyFixes.expressionKey(e))
      case None if computed.isDefined => computed.get
      case None if viaJoin =>
        val joinKeys = reach.schemes.flatMap(_.map(_._1.name)).distinct
        (if (joinKeys.nonEmpty) s"$by join-key columns whose values both inputs close " +
          s"(${joinKeys.mkString(", ")}), " else "declare the same scheme on the join key on both " +
          "inputs of the join (both constant, or both a range), ") +
          s"or make the columns you $by part of the join condition, with the same punctuation " +
          "scheme on them on both inputs"
      case None if traced.size == keys.size && traced.map(_.stream.name).distinct.size == 1 =>
        val stream = traced.head.stream
        SafetyFixes.declare(stream, traced.map(_.name), input) +
          s" (or declare them as the unique key of ${stream.name} if they are one)"
      case None =>
        s"$by columns of one declared stream, and declare a punctuation scheme on them there"
    }
  }

  private def declared(input: LogicalPlan): Boolean = DeclaredStreams.find(input, caseSensitive = false).nonEmpty

  private def written(e: Expression): String = e match {
    case a: Attribute => a.name
    case other => other.sql
  }

  /** Keys with an event-time column: a watermark evicts the state (not a flag of our rewrite). */
  private def eventTime(keys: Seq[Expression]): Boolean = keys.exists(_.exists {
    case at: Attribute => at.metadata.contains(EventTimeWatermark.delayKey) &&
      !at.metadata.contains(PunctuatedAggregates.CheckFlag)
    case _ => false
  })
}
