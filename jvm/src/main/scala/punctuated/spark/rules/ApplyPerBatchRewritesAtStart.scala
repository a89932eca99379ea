package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStream

import punctuated.input.StreamColumns

/**
 * Post-hoc resolution rule, applied to the whole query once when it starts (its plan is then
 * rooted at `WriteToStream`: the plan every micro-batch re-analyzes and re-optimizes), after
 * Spark's start-time checks: two of the extension's optimizer rules, which found the same work
 * in every micro-batch's plan, do it here once, so that each micro-batch's optimizer finds
 * nothing left for them (they still run, for what Spark's optimizer itself adds to a plan):
 *
 *  - [[DropOuterJoinCheckFlag]]: the event-time flags on a punctuated aggregation's first key
 *    and a punctuated outer join's keys exist for Spark's output-mode check, which runs on the
 *    `WriteToStreamStatement` before this batch of rules (`ResolveWriteToStream`) and never
 *    again: no micro-batch needs them;
 *  - [[PassPunctuationsThroughFilters]]: the filters between a declared stream and its
 *    punctuated operator that the analyzed plan already holds (e.g. a window's
 *    `ts IS NOT NULL`) let the punctuation rows through from the start.
 *
 * and one that Spark's own optimizer would otherwise undo and redo in every pass: a filter
 * right above a stream reads it through [[StreamColumns]], the stream's columns the query reads
 * (Spark's `ColumnPruning` puts that projection in and takes it out again each pass, which
 * makes every later rule walk the whole plan again; [[ReplaceStreamColumnsWithProjections]]
 * turns it into the projection itself before physical planning).
 *
 * {{{
 *   WriteToStream(Aggregate([window#1 (flagged)], ..., Project(..., Filter(isnotnull(ts), s))))
 *   // becomes, for every micro-batch:
 *   WriteToStream(Aggregate([window#1], ..., Project(..., Filter(is_punct OR isnotnull(ts),
 *     StreamColumns([price, ts, is_punct], s)))))
 * }}}
 *
 * Same rows, same state: the optimizer produced exactly these plans from the flagged ones
 * (and, after [[ReplaceStreamColumnsWithProjections]], the same optimized plan).
 */
case class ApplyPerBatchRewritesAtStart(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case w: WriteToStream if w.inputQuery.isStreaming && PunctuatedPlans.ours(w.inputQuery) =>
      val query = AnalysisHelper.allowInvokingTransformsInAnalyzer {
        StreamColumns.pruned(PassPunctuationsThroughFilters(session)(DropOuterJoinCheckFlag(session)(w.inputQuery)))
      }
      if (query eq w.inputQuery) w else w.copy(inputQuery = query)
    case other => other
  }
}
