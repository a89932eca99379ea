package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.internal.SQLConf

import punctuated.join.WatermarkPunctuations

/**
 * Safety of a binary join without a time band whose join key holds an input's event-time
 * watermark column, for [[CheckJoinSafety]]: the watermark is that input's range punctuation
 * `ts<=w` on a join attribute ([[WatermarkPunctuations.onKey]], Tucker et al. 2003, §3), so by
 * Li et al. 2006, Theorem 1, the *other* input's state is purgeable, as it is when the input
 * declares the scheme `ts<=`. The operator ([[punctuated.spark.rules.PlanPunctuatedJoins]])
 * uses the watermark under the same conditions: a real `withWatermark` column, a sound
 * multiple-watermark policy, and an input that is no stateful operator's output.
 *
 * {{{
 *   a JOIN b.withWatermark("ts", "1 minute") ON a.k = b.k AND a.ts = b.ts
 *   -> KeyWatermarkSafety.column(Seq(b.k, b.ts), b, 1) = Some(b.ts): a's state is purgeable
 * }}}
 */
object KeyWatermarkSafety {

  /**
   * The key column whose watermark is `input`'s range punctuation, if one is.
   * `watermarks`: the number of `withWatermark` operators in the query ([[count]]).
   */
  def column(keys: Seq[Expression], input: LogicalPlan, watermarks: Int): Option[Attribute] = {
    val fromState = input.exists {
      case j: Join => j.left.isStreaming && j.right.isStreaming
      case a: Aggregate => a.isStreaming
      case d: Deduplicate => d.isStreaming
      case _ => false
    }
    if (fromState || !WatermarkPunctuations.soundPolicy(SQLConf.get, watermarks)) None
    else keys.collectFirst {
      case a: Attribute if input.output.find(_.exprId == a.exprId).exists(WatermarkPunctuations.isWatermarked) => a
    }
  }

  /**
   * Per binary join of the plan without a time band that the start-time check judges on its own
   * ([[JoinSafety.verdicts]]), each input's key column whose watermark is its range punctuation:
   * what `punctuated_describe` lists as that stream's `watermark` scheme.
   */
  def columns(plan: LogicalPlan, conf: punctuated.conf.PunctuatedConf): Seq[Attribute] = {
    val watermarks = count(plan)
    JoinSafety.verdicts(plan, conf).map(_.join).flatMap {
      case j @ org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys(_, lk, rk, other, _, l, r, _)
          if punctuated.join.TimeBand.terms(other, l.output, r.output).isEmpty =>
        column(lk, l, watermarks).toSeq ++ column(rk, r, watermarks)
      case _ => Nil
    }
  }

  /** The number of `withWatermark` operators in a query (the policy decides with several). */
  def count(query: LogicalPlan): Int = query.collect { case w: EventTimeWatermark => w }.size
}
