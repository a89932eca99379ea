package punctuated.join

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import punctuated.compat.TimestampAddInterval
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.CalendarInterval

import punctuated.input.PunctuatedInput

/**
 * The time band of a stream-stream join: conjuncts of its condition that bound the difference
 * of the inputs' time columns, `D = right.ts - left.ts`, to `[lo, hi]` (either bound may be
 * missing), e.g. `b.ts BETWEEN a.ts - INTERVAL 5 MINUTES AND a.ts + INTERVAL 10 MINUTES` gives
 * `lo = -5 min`, `hi = +10 min` (in the column's unit: microseconds for a timestamp, days for
 * a date, the value itself for an integer column).
 *
 * The purge rule follows from when a tuple can no longer join (Tucker et al. 2003, §5: a
 * stored tuple goes once the other input's punctuations cover every tuple it could still
 * join; the band arithmetic as Spark's `StreamingSymmetricHashJoinHelper.getStateWatermarkPredicates`):
 * a stored left row at time `t` joins only right rows with `ts <= t + hi`, so once the right
 * input's range punctuation `ts<=c` has `c >= t + hi` it can go; a stored right row at `s`
 * joins only left rows with `ts <= s - lo`, and goes once the left input's `ts<=c` has
 * `c >= s - lo`. [[reach]] holds these offsets by input number: input `i`'s row at `t` is
 * purged by a bound `c >= t + reach(i)`.
 *
 * {{{
 *   a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - INTERVAL 5 MINUTES AND a.ts + INTERVAL 10 MINUTES
 *   reach = (10 min, 5 min): a's row at 12:00 goes once b says ts<=12:10, b's at 12:00 once a says ts<=12:05
 * }}}
 *
 * Strict comparisons tighten the bound by one unit (all supported types are integral).
 *
 * @param times     per input, the ordinal of its time column in its rows
 * @param reach     per input, the offset after which its stored rows can meet no new partner (None: never)
 * @param schemes   per input, the index (in its declaration's instantiable schemes, as in
 *                  [[punctuated.input.InputSpec.schemes]]) of its range scheme on the time column (`ts<=`)
 * @param dataType  the time columns' type
 * @param text      the band as written, for messages
 * @param watermarked per input, whether Spark's event-time watermark is a range punctuation
 *                  `ts<=w` of it (its `withWatermark` column is the band's time column, under a
 *                  sound policy: [[WatermarkPunctuations]])
 */
final case class TimeBand(times: IndexedSeq[Int], reach: IndexedSeq[Option[Long]],
    schemes: IndexedSeq[Option[Int]], dataType: DataType, text: String,
    watermarked: IndexedSeq[Boolean] = IndexedSeq(false, false)) {

  /** The time of a row of an input as a Long (NULL: None). */
  def timeOf(i: Int, row: InternalRow): Option[Long] =
    if (row.isNullAt(times(i))) None else Some(TimeBand.asLong(row, times(i), dataType))

  /** Does input `i`'s punctuation of scheme index `scheme` advance its time bound? */
  def isBandScheme(i: Int, scheme: Int): Boolean = schemes(i).contains(scheme)

  /** Does input `i` bound its time: by range punctuations on its time column, or by its watermark? */
  def bounded(i: Int): Boolean = schemes(i).isDefined || watermarked(i)

  /** Is any input's state purged by time (a bounded side whose partner bounds its time)? */
  def purges: Boolean = reach.indices.exists(i => reach(i).isDefined && bounded(1 - i))
}

object TimeBand {

  /**
   * The band's terms on the plan's attributes: `right - left ∈ [lo, hi]`, from `conjuncts`.
   * Their SQL text is written only when a message or a plan description asks for it (an
   * interval's text is slow to write, and the optimizer looks for bands in every micro-batch).
   */
  final case class Terms(left: Attribute, right: Attribute, lo: Option[Long], hi: Option[Long],
      conjuncts: Seq[Expression]) {
    lazy val text: String = conjuncts.map(_.sql).mkString(" AND ")
  }

  /** Types a band can be on: all have integral internal values. */
  def supported(t: DataType): Boolean = t match {
    case TimestampType | TimestampNTZType | DateType | LongType | IntegerType | ShortType | ByteType => true
    case _ => false
  }

  def asLong(row: InternalRow, ordinal: Int, t: DataType): Long = t match {
    case TimestampType | TimestampNTZType | LongType => row.getLong(ordinal)
    case DateType | IntegerType => row.getInt(ordinal).toLong
    case ShortType => row.getShort(ordinal).toLong
    case ByteType => row.getByte(ordinal).toLong
  }

  /** A Long as the internal value of band type `t` (for a bound written into a row). */
  def toInternal(v: Long, t: DataType): Any = t match {
    case TimestampType | TimestampNTZType | LongType => v
    case DateType | IntegerType => v.toInt
    case ShortType => v.toShort
    case ByteType => v.toByte
  }

  /** The internal value of a Long of a band type (for a range bound read back). */
  def fromAny(v: Any): Long = v match {
    case l: Long => l
    case i: Int => i.toLong
    case s: Short => s.toLong
    case b: Byte => b.toLong
  }

  /**
   * The band conjuncts of a join condition between `left` and `right` outputs, if any: the
   * first pair of time columns compared is the band; other conjuncts are ignored (they can
   * only narrow what joins, so purging by the band alone is safe).
   */
  def terms(condition: Option[Expression], left: Seq[Attribute], right: Seq[Attribute]): Option[Terms] = {
    val leftIds = left.map(_.exprId).toSet
    val rightIds = right.map(_.exprId).toSet
    // (left attr, right attr, bound on right - left: lower?, value)
    val found = condition.toSeq.flatMap(splitConjuncts).flatMap { c =>
      comparison(c).flatMap { case (x, op, y) =>
        (linear(x), linear(y)) match {
          case (Some((a, da)), Some((b, db))) if supported(a.dataType) && a.dataType == b.dataType =>
            if (leftIds(a.exprId) && rightIds(b.exprId)) bound(a, da, op, b, db, c)
            else if (rightIds(a.exprId) && leftIds(b.exprId)) bound(b, db, flip(op), a, da, c)
            else None
          case _ => None
        }
      }
    }
    found.headOption.map { case (l, r, _, _, _) =>
      val same = found.filter(f => f._1.exprId == l.exprId && f._2.exprId == r.exprId)
      val lo = same.filter(_._3).map(_._4).maxOption
      val hi = same.filterNot(_._3).map(_._4).minOption
      Terms(l, r, lo, hi, same.map(_._5))
    }
  }

  /**
   * The band of a planned join (None if its condition has none, or if no input's state is
   * purged by it): time ordinals, reach, each input's range scheme on its time column, and
   * (`watermarked`, given the band's left and right time columns) which inputs' watermarks
   * act as range punctuations ([[WatermarkPunctuations.inputs]]).
   */
  def of(condition: Option[Expression], left: Seq[Attribute], right: Seq[Attribute],
      leftInput: Option[PunctuatedInput], rightInput: Option[PunctuatedInput],
      watermarked: IndexedSeq[Attribute] => IndexedSeq[Boolean] = _ => IndexedSeq(false, false)): Option[TimeBand] =
    terms(condition, left, right).map { t =>
      TimeBand(
        IndexedSeq(left.indexWhere(_.exprId == t.left.exprId), right.indexWhere(_.exprId == t.right.exprId)),
        IndexedSeq(t.hi, t.lo.map(-_)),
        IndexedSeq(rangeSchemeOn(leftInput, t.left), rangeSchemeOn(rightInput, t.right)),
        t.left.dataType, t.text, watermarked(IndexedSeq(t.left, t.right)))
    }.filter(_.purges)

  /**
   * The index of the input's scheme that is exactly a range on `attr` (`ts<=`), among its
   * instantiable schemes, if the input's punctuation rows reach the join.
   */
  def rangeSchemeOn(input: Option[PunctuatedInput], attr: Attribute): Option[Int] = input.flatMap { in =>
    val i = in.declaration.instantiableSchemes.indexWhere { s =>
      s.attributes.size == 1 && s.attributes.head.kind == punctuated.declaration.AttributeKind.AtMost &&
        in.columns.get(s.attributes.head.name).contains(attr.exprId)
    }
    if (i >= 0 && in.markerIds.nonEmpty) Some(i) else None
  }

  private def splitConjuncts(e: Expression): Seq[Expression] = e match {
    case And(a, b) => splitConjuncts(a) ++ splitConjuncts(b)
    // SQL's `x BETWEEN lo AND hi` stays a Between until the optimizer replaces it (the
    // start-time check and check_safety read the analyzed plan): its two comparisons
    case b: Between => Seq(GreaterThanOrEqual(b.input, b.lower), LessThanOrEqual(b.input, b.upper))
    case other => Seq(other)
  }

  private def comparison(e: Expression): Option[(Expression, String, Expression)] = e match {
    case LessThanOrEqual(x, y) => Some((x, "<=", y))
    case LessThan(x, y) => Some((x, "<", y))
    case GreaterThanOrEqual(x, y) => Some((x, ">=", y))
    case GreaterThan(x, y) => Some((x, ">", y))
    case _ => None
  }

  private def flip(op: String): String = op match {
    case "<=" => ">="
    case "<" => ">"
    case ">=" => "<="
    case ">" => "<"
  }

  /** `l + dl op r + dr` as a bound on `D = r - l`: (l, r, isLower, value, conjunct). */
  private def bound(l: Attribute, dl: Long, op: String, r: Attribute, dr: Long, c: Expression) = {
    val d = dl - dr
    Some(op match {
      case "<=" => (l, r, true, d, c)
      case "<" => (l, r, true, d + 1, c)
      case ">=" => (l, r, false, d, c)
      case ">" => (l, r, false, d - 1, c)
    })
  }

  /** `attr + offset` (offset in the attribute's unit), for the forms a band is written in. */
  def linear(e: Expression): Option[(Attribute, Long)] = e match {
    case a: Attribute => Some((a, 0L))
    case Add(x, c, _) if integral(c).isDefined => shift(x, integral(c).get)
    case Add(c, x, _) if integral(c).isDefined => shift(x, integral(c).get)
    case Subtract(x, c, _) if integral(c).isDefined => shift(x, -integral(c).get)
    case DateAdd(x, c) if integral(c).isDefined => shift(x, integral(c).get)
    case DateSub(x, c) if integral(c).isDefined => shift(x, -integral(c).get)
    case TimestampAddInterval(x, c, _) if interval(c).isDefined => shift(x, interval(c).get)
    case Cast(x, t, _, _) if t == x.dataType => linear(x)
    case r: RuntimeReplaceable => linear(r.replacement)
    case _ => None
  }

  private def shift(x: Expression, by: Long) = linear(x).map { case (a, d) => (a, d + by) }

  /** A constant integral offset (a literal, possibly cast or negated), as a Long. */
  private def integral(c: Expression): Option[Long] = c.dataType match {
    case IntLike() if c.foldable && c.references.isEmpty => Option(c.eval()).map(fromAny)
    case _ => None
  }

  /** A constant interval offset (possibly negated) in microseconds. */
  private def interval(c: Expression): Option[Long] =
    if (!c.foldable || c.references.nonEmpty) None else Option(c.eval()).flatMap(micros(_, c.dataType))

  /** Matches the integral types of a literal offset. */
  private object IntLike {
    def unapply(t: DataType): Boolean = t match {
      case LongType | IntegerType | ShortType | ByteType => true
      case _ => false
    }
  }

  /** An interval literal as microseconds (no months: a month has no fixed length). */
  private def micros(v: Any, t: DataType): Option[Long] = (v, t) match {
    case (m: Long, _: DayTimeIntervalType) => Some(m)
    case (c: CalendarInterval, CalendarIntervalType) if c.months == 0 =>
      Some(c.days * 86400000000L + c.microseconds)
    case _ => None
  }
}
