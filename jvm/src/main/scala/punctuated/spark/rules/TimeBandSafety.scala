package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.internal.SQLConf

import punctuated.errors.PunctuatedAnalysisException

import punctuated.input.PunctuatedInput
import punctuated.join.{TimeBand, WatermarkPunctuations}

/**
 * Safety of a binary join with a time band ([[TimeBand]]), for [[CheckJoinSafety]]. Li et al.
 * 2006 (§4.1, Theorem 1) call an input purgeable when the other input punctuates its join
 * attributes; a band extends the punctuation graph with an edge from the band's time attribute:
 * input `i`'s stored rows are purgeable when the band bounds how far the other input's time can
 * run ahead of them (`reach(i)` is defined) and the other input declares a range scheme on its
 * band column (`ts<=`), whose punctuations then cover every partner a stored row could still
 * meet. A real event-time watermark on the other input's band column (`withWatermark`) counts as
 * such a range scheme: it is the range punctuation `ts<=w` ([[WatermarkPunctuations]]). The Python analysis (`punctuated.safety`, `band` predicates) applies the same rule;
 * shared vectors `testdata/band_safety_vectors.json`.
 *
 * {{{
 *   a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 10 MINUTES, b declares ts<=
 *   -> a purgeable (b's ts<= closes a's band); b purgeable only if a declares ts<= (or k)
 * }}}
 *
 * @param terms the band's terms, if the condition has one
 * @param rangeOn per input, whether it declares a range scheme on its band column
 */
final case class TimeBandSafety(terms: Option[TimeBand.Terms], rangeOn: IndexedSeq[Boolean]) {

  /** Is input `i`'s state purged by the band? */
  def purgeable(i: Int): Boolean = terms.exists { t =>
    (if (i == 0) t.hi else t.lo).isDefined && rangeOn(1 - i)
  }

  /** The problem of input `i` with the band's fix added (when the band bounds it). */
  def withFix(i: Int, other: String, problem: JoinSafety.Problem): JoinSafety.Problem = terms match {
    case Some(t) if (if (i == 0) t.hi else t.lo).isDefined =>
      val column = (if (i == 0) t.right else t.left).name
      problem.copy(message = problem.message + s" Or, since the join's time band (${t.text}) bounds " +
        s"it: declare a range scheme on $other's time column ('punctuated.schemes' = '$column<=') and " +
        s"punctuate it: $other's punctuations $column<=c then purge ${problem.input}'s rows whose band ends at or before c.")
    case _ => problem
  }
}

object TimeBandSafety {

  /**
   * Refuses a stream-stream join with a time band and no equality predicate (a band-only
   * join), whatever the safety mode, with `PUNCTUATED_BAND_ONLY_JOIN` naming the join and the
   * fix: such a join would be a nested loop over the band, which this build does not run.
   */
  def refuseBandOnly(plan: LogicalPlan): Unit = plan.foreach {
    case j: Join if j.left.isStreaming && j.right.isStreaming && !ExtractEquiJoinKeys.unapply(j).isDefined =>
      TimeBand.terms(j.condition, j.left.output, j.right.output).foreach { t =>
        val text = s"[PUNCTUATED_BAND_ONLY_JOIN] The stream-stream join ON ${j.condition.map(_.sql).getOrElse("")} " +
          s"has a time band (${t.text}) but no equality predicate between its inputs: band-only joins " +
          "are not supported (they would join every stored row within the band, a nested loop). Fix: add " +
          "an equality predicate between the inputs (a.k = b.k on a key both share); a constant column " +
          "on both inputs (lit(0).alias(\"one\"), " +
          "joined ON a.one = b.one) puts every row under one key, held in one partition."
        throw new PunctuatedAnalysisException(text, "PUNCTUATED_BAND_ONLY_JOIN",
          Map("band" -> t.text), "0A000")
      }
    case _ =>
  }

  def of(condition: Option[Expression], left: LogicalPlan, right: LogicalPlan,
      leftInput: Option[PunctuatedInput], rightInput: Option[PunctuatedInput]): TimeBandSafety = {
    val terms = TimeBand.terms(condition, left.output, right.output)
    val marks = terms.map(watermarked(_, left, right)).getOrElse(IndexedSeq(false, false))
    TimeBandSafety(terms, IndexedSeq(
      terms.exists(t => TimeBand.rangeSchemeOn(leftInput, t.left).isDefined || marks(0)),
      terms.exists(t => TimeBand.rangeSchemeOn(rightInput, t.right).isDefined || marks(1))))
  }

  /**
   * Per side of the band (left, right), whether a real event-time watermark on its time column
   * acts as the range punctuation `ts<=w` ([[WatermarkPunctuations]]: the column is the
   * `withWatermark` column and the session's multiple-watermark policy is sound).
   */
  def watermarked(terms: TimeBand.Terms, left: LogicalPlan, right: LogicalPlan): IndexedSeq[Boolean] = {
    val watermarks = Seq(left, right).map(_.collect { case w: EventTimeWatermark => w }.size).sum
    IndexedSeq(terms.left, terms.right).map(a =>
      WatermarkPunctuations.isWatermarked(a) && WatermarkPunctuations.soundPolicy(SQLConf.get, watermarks))
  }

}
