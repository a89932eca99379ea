package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.FullOuter
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

  /**
   * The problem of input `i` of a band-only join (run on time buckets, so no key punctuation
   * purges it), if the band does not purge it: the other input has no range punctuations (or
   * watermark) on its time column.
   */
  def bandOnlyProblem(i: Int, stored: String, other: String): Option[JoinSafety.Problem] =
    terms.filterNot(_ => purgeable(i)).map { t =>
      val column = (if (i == 0) t.right else t.left).name
      JoinSafety.Problem(stored, s"The state of input $stored of the band-only join ON ${t.text} can never " +
        s"be purged: with no equality predicate only the band closes its rows, and input $other has no " +
        s"range punctuations on its time column $column that reach the join. Fix: declare a range scheme " +
        s"on it ('punctuated.schemes' = '$column<=') and punctuate it, or give $other a watermark on " +
        s"$column; or set ${punctuated.conf.PunctuatedConf.SafetyMode}=warn to run anyway.")
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
   * join) that [[BucketBandOnlyJoins]] could not run on time buckets, whatever the safety mode,
   * with `PUNCTUATED_BAND_ONLY_JOIN` naming the join, why and the fix: a band open on one side
   * (its rows could meet unboundedly many times), an empty band, a full outer join (no input
   * whose rows can be kept in one bucket), or inputs that read no declared stream.
   */
  def refuseBandOnly(plan: LogicalPlan): Unit = plan.foreach {
    case j: Join if j.left.isStreaming && j.right.isStreaming && !ExtractEquiJoinKeys.unapply(j).isDefined =>
      TimeBand.terms(j.condition, j.left.output, j.right.output).foreach { t =>
        val why = (t.lo, t.hi) match {
          case (Some(lo), Some(hi)) if lo > hi =>
            "its band is empty (no pair of rows can meet). Fix: check the band's bounds"
          case (Some(_), Some(_)) if j.joinType == FullOuter =>
            "a band-only full outer join is not supported (each input's unmatched rows would have to be " +
              "found in one place). Fix: a left or right outer join, or an equality predicate (a.k = b.k)"
          case (Some(_), Some(_)) =>
            "neither input reads a declared stream. Fix: declare a range scheme on a time column " +
              "('punctuated.schemes' = 'ts<=') of the inputs and punctuate it"
          case _ =>
            "the band is open on one side, so a row could meet unboundedly many partners. Fix: bound the " +
              "band on both sides (b.ts BETWEEN a.ts - X AND a.ts + Y), or add an equality predicate " +
              "between the inputs (a.k = b.k)"
        }
        val text = s"[PUNCTUATED_BAND_ONLY_JOIN] The stream-stream join ON ${j.condition.map(_.sql).getOrElse("")} " +
          s"has a time band (${t.text}) but no equality predicate between its inputs, and cannot run on " +
          s"time buckets: $why."
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
