package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, EventTimeWatermark, LogicalPlan}

import punctuated.aggregate.PunctuatedAggregates
import punctuated.spark.{DeclaredStreams, PunctuatedConf}

/**
 * Safety of streaming aggregations over declared streams (Tucker et al. 2003, §5.2: a
 * group's state can go only when punctuations match all its future rows, so some scheme's
 * attributes must all be grouping columns). An aggregation over a declared stream that the
 * analyzer did not make punctuated (no scheme closes its groups) and that has no event-time
 * grouping column keeps every group forever.
 */
object AggregateSafety {

  def problems(plan: LogicalPlan): Seq[JoinSafety.Problem] = plan.collect {
    case a: Aggregate if a.isStreaming && !punctuated(a) && !eventTime(a) &&
        DeclaredStreams.find(a.child, caseSensitive = false).nonEmpty =>
      val streams = DeclaredStreams.find(a.child, caseSensitive = false).map(_.declaration.table).distinct
      val columns = a.groupingExpressions.map {
        case at: Attribute => at.name
        case e => e.sql
      }
      val stream = streams.head
      JoinSafety.Problem(streams.mkString(", "),
        s"The state of the aggregation GROUP BY ${columns.mkString(", ")} over ${streams.mkString(", ")} " +
          "can never be purged: no punctuation scheme reaching it has all its attributes among the " +
          "grouping columns, so no group is ever known to be complete. Fix: declare one, e.g. " +
          s"ALTER TABLE $stream SET TBLPROPERTIES ('punctuated.schemes' = '${columns.mkString(", ")}', " +
          "'punctuated.marker' = '<BOOLEAN column>') (or 'punctuated.unique' if those columns are a " +
          s"key of $stream); group by plain columns; or set ${PunctuatedConf.SafetyMode}=warn to run anyway.")
  }

  private def punctuated(a: Aggregate): Boolean = PunctuatedAggregates.isRewritten(a.child)

  private def eventTime(a: Aggregate): Boolean = a.groupingExpressions.exists(_.exists {
    case at: Attribute => at.metadata.contains(EventTimeWatermark.delayKey) &&
      !at.metadata.contains(PunctuatedAggregates.CheckFlag)
    case _ => false
  })
}
