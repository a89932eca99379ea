package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, And, AttributeReference, Coalesce, EqualTo, Explode, Expression, Literal, Or}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, Generate, Join, LogicalPlan, Project}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.types.{BooleanType, LongType}

import punctuated.compat.DatasetJoinCompat
import punctuated.input.{BandBucketColumns, DeclaredStreams, PunctuationColumns}
import punctuated.join.{BandBuckets, TimeBand}

/**
 * Post-hoc resolution rule, before [[PunctuateStreamingJoins]]: a stream-stream join with a
 * time band and no equality predicate (a band-only join) that reads a declared stream becomes
 * an equi-join on time buckets ([[BandBuckets]]), which the next rule marks as a punctuated
 * join with a band, so that it purges on range punctuations on time like any band join. The
 * single side gets its bucket column, the replicated side is copied into the buckets its band
 * covers (a Generate), and a projection above restores the join's output. Same result, each
 * row once.
 *
 * {{{
 *   Join(a, b, Inner, b.ts BETWEEN a.ts - 2 AND a.ts + 3)
 *   -> Project(a.* , b.*,
 *        Join(Generate(explode(band_buckets(a.ts, a.p, -2, 3, 6)), a) AS __band_bucket_6,
 *             Project(b.*, band_bucket(b.ts, b.p, 6) AS __band_bucket_6),
 *             Inner, a.__band_bucket_6 = b.__band_bucket_6 AND b.ts BETWEEN a.ts - 2 AND a.ts + 3))
 * }}}
 *
 * A band open on one side, a full outer join, or a join that reads no declared stream is left
 * as it is ([[TimeBandSafety.refuseBandOnly]] then names why). On Spark 4.0 a band-only join at
 * the root of the plan being analyzed stays a `Join` until a query is built on it
 * ([[punctuated.compat.DatasetJoinCompat]]: 4.0's `Dataset.join` casts its analyzed plan to one).
 */
case class BucketBandOnlyJoins(session: SparkSession) extends Rule[LogicalPlan] {

  private def caseSensitive = session.sessionState.conf.caseSensitiveAnalysis

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!PunctuatedPlans.involved(plan)) plan
    else if (DatasetJoinCompat.keepRootJoins) belowRoot(plan)
    else plan.resolveOperatorsUp(bucketed)

  private val bucketed: PartialFunction[LogicalPlan, LogicalPlan] = {
    case j @ Join(left, right, joinType, Some(condition), hint)
        if left.isStreaming && right.isStreaming && ExtractEquiJoinKeys.unapply(j).isEmpty &&
          PunctuationColumns.find(j.condition).isEmpty && DeclaredStreams.find(j, caseSensitive).nonEmpty =>
      TimeBand.terms(j.condition, left.output, right.output).flatMap(BandBuckets.of(_, joinType)) match {
        case Some(buckets) =>
          val (l, lb) = side(left, 0, buckets)
          val (r, rb) = side(right, 1, buckets)
          Project(j.output, Join(l, r, joinType, Some(And(EqualTo(lb, rb), condition)), hint))
        case None => j
      }
  }

  /**
   * Spark 4.0 only (`DatasetJoinCompat`): the band-only joins below the root, also in subtrees
   * analyzed before (as `Dataset.join`'s result is); the one at the root is left a `Join`.
   */
  private def belowRoot(plan: LogicalPlan): LogicalPlan =
    AnalysisHelper.allowInvokingTransformsInAnalyzer(plan.mapChildren(_.transformUp(bucketed)))

  /** Input `i` with its bucket column, and that column. */
  private def side(input: LogicalPlan, i: Int, b: BandBuckets): (LogicalPlan, AttributeReference) = {
    val meta = BandBucketColumns.metadata(b.width)
    if (i == b.replicated) {
      val bucket = AttributeReference(BandBucketColumns.name(b.width), LongType, nullable = true, meta)()
      (Generate(Explode(b.covered(isPunctuation(input))), Nil, outer = true, None, Seq(bucket), input), bucket)
    } else {
      val alias = Alias(b.single(isPunctuation(input)), BandBucketColumns.name(b.width))(explicitMetadata = Some(meta))
      (Project(input.output :+ alias, input), alias.toAttribute.asInstanceOf[AttributeReference])
    }
  }

  /** Is a row of `input` a punctuation row: one of its declared streams' markers set (else FALSE). */
  private def isPunctuation(input: LogicalPlan): Expression = {
    val visible = input.output.map(_.exprId).toSet
    val markers = DeclaredStreams.find(input, caseSensitive).map(_.input(visible)).flatMap(_.markerIds)
      .flatMap(id => input.output.find(a => a.exprId == id && a.dataType == BooleanType))
    markers.map(m => Coalesce(Seq(m, Literal(false))): Expression).reduceOption(Or).getOrElse(Literal(false))
  }
}
