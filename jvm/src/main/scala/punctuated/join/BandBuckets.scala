package punctuated.join

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftAnti, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.{ArrayType, DataType, LongType}

/**
 * A band-only join (a time band and no equality predicate, `b.ts BETWEEN a.ts + lo AND a.ts +
 * hi`) run as an equi-join on time *buckets*: the rows of one input (the *single* side) are keyed
 * by the bucket of their time, `floorDiv(ts, width)`; the rows of the other (the *replicated*
 * side) are copied once into every bucket their band covers in the single side's time. A pair
 * within the band then meets in exactly one bucket (the single side's row has one), so the
 * equi-join on the bucket plus the band gives each result once, and the join's purge by range
 * punctuations on time ([[TimeBand]], Tucker et al. 2003, §5) works per bucket as per key: the
 * [[TimeIndex]] finds a bound's buckets, and a probe reads one bucket's rows, never the whole
 * state. The width is the band's width (`hi - lo + 1` units: the band's values), so a replicated
 * row has one copy or two.
 *
 * {{{
 *   a JOIN b ON b.ts BETWEEN a.ts - 2 AND a.ts + 3         width 6, a replicated (an inner join)
 *   a's row at 10 covers b-times [8, 13]: buckets 1 and 2;  b's row at 12: bucket 2
 *   -> runs as  a' JOIN b' ON a'.bucket = b'.bucket AND b.ts BETWEEN a.ts - 2 AND a.ts + 3
 * }}}
 *
 * The side whose rows the join type keeps on their own (the left of a left outer, semi or anti
 * join; the right of a right outer join) is the single side, so that each of its rows meets all
 * its partners in one place and an unmatched row is emitted once. A full outer join has no such
 * side and is not rewritten (refused, [[punctuated.spark.rules.TimeBandSafety]]).
 *
 * @param terms      the band
 * @param width      the bucket width, in the time column's unit
 * @param replicated the input (0 left, 1 right) whose rows are copied into the buckets they cover
 */
final case class BandBuckets(terms: TimeBand.Terms, width: Long, replicated: Int) {

  /** The time column of input `i`. */
  def time(i: Int): Attribute = if (i == 0) terms.left else terms.right

  /**
   * The range of the *other* input's times a row of the replicated input at `t` can meet, as
   * offsets: `[t + from, t + to]` (`right - left` is in `[lo, hi]`).
   */
  def offsets: (Long, Long) =
    if (replicated == 0) (terms.lo.get, terms.hi.get) else (-terms.hi.get, -terms.lo.get)

  /** The single side's bucket of a row (NULL for a punctuation row: `punctuation` true). */
  def single(punctuation: Expression): Expression = BandBucket(time(1 - replicated), punctuation, width)

  /** The replicated side's buckets of a row (NULL for a punctuation row: one copy, bucket NULL). */
  def covered(punctuation: Expression): Expression =
    BandBucketsCovered(time(replicated), punctuation, offsets._1, offsets._2, width)
}

object BandBuckets {

  /**
   * How a band-only join of this type runs on buckets, if it can: the band bounded on both sides
   * (a one-sided band covers unboundedly many buckets) and a join type with a single side.
   */
  def of(terms: TimeBand.Terms, joinType: JoinType): Option[BandBuckets] =
    for {
      lo <- terms.lo
      hi <- terms.hi
      if lo <= hi
      replicated <- joinType match {
        case Inner | RightOuter => Some(0)
        case LeftOuter | LeftSemi | LeftAnti => Some(1)
        case _ => None
      }
    } yield BandBuckets(terms, hi - lo + 1, replicated)
}

/**
 * `floorDiv(t, width)` of a band's time value (timestamp, date or integer: its internal value
 * as [[TimeBand.fromAny]]): the single side's bucket ([[BandBuckets]]). NULL for a NULL time and
 * for a punctuation row (`punctuation` true), which sets its scheme's columns only and reaches
 * every partition anyway.
 */
case class BandBucket(time: Expression, punctuation: Expression, width: Long)
  extends Expression with CodegenFallback {
  override def children: Seq[Expression] = Seq(time, punctuation)
  override def dataType: DataType = LongType
  override def nullable: Boolean = true
  override def prettyName: String = "band_bucket"
  override def eval(input: InternalRow): Any = {
    val v = time.eval(input)
    if (v == null || punctuation.eval(input) == true) null else Math.floorDiv(TimeBand.fromAny(v), width)
  }
  override protected def withNewChildrenInternal(c: IndexedSeq[Expression]): Expression =
    copy(time = c(0), punctuation = c(1))
}

/**
 * The buckets `floorDiv(t + from, width) .. floorDiv(t + to, width)` a replicated row at `t`
 * covers ([[BandBuckets]]). NULL for a NULL time and for a punctuation row (`punctuation`
 * true): the outer Generate then emits the row once, bucket NULL (a punctuation sets its
 * scheme's columns only, reaches every partition anyway, and one copy is one punctuation).
 */
case class BandBucketsCovered(time: Expression, punctuation: Expression, from: Long, to: Long, width: Long)
  extends Expression with CodegenFallback {
  override def children: Seq[Expression] = Seq(time, punctuation)
  override def dataType: DataType = ArrayType(LongType, containsNull = false)
  override def nullable: Boolean = true
  override def prettyName: String = "band_buckets"
  override def eval(input: InternalRow): Any = {
    val v = time.eval(input)
    if (v == null || punctuation.eval(input) == true) null
    else {
      val t = TimeBand.fromAny(v)
      val first = Math.floorDiv(t + from, width)
      val last = Math.floorDiv(t + to, width)
      new GenericArrayData((first to last).map(b => b: Any).toArray)
    }
  }
  override protected def withNewChildrenInternal(c: IndexedSeq[Expression]): Expression =
    copy(time = c(0), punctuation = c(1))
}
