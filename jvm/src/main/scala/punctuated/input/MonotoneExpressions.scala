package punctuated.input

import org.apache.spark.sql.catalyst.expressions._
import punctuated.compat.TimestampAddInterval
import org.apache.spark.sql.types._

/**
 * Which grouping expressions a range punctuation on a time column closes, and up to which
 * value: the one rule, explicit and tested, behind windows and time expressions in punctuated
 * aggregations (Tucker et al. 2003, §5.2: group-by passes a group once punctuations match all
 * its future rows; §7, grouping on a function of a punctuated attribute).
 *
 * A range punctuation `ts <= T` says every future row has `ts >= succ(T)` (`T` + 1 µs for a
 * timestamp, + 1 day for a date, + 1 for an integer). If a grouping expression `g(ts)` never
 * decreases as `ts` grows, every future row has `g >= g(succ(T))` — its *lower bound* — so
 * each group `k < g(succ(T))` is complete. The operator closes groups `k <= bound` with
 * `bound = pred(g(succ(T)))` (pred: − 1 µs, − 1 day, − 1, per field of a window): exact and
 * maximal for the lower bound.
 *
 * The rule per expression (`x` the argument that depends on `ts`, every other argument constant):
 * {{{
 *   ts itself                                   lower bound succ(T)
 *   window(ts, size[, slide, start])            windows of future rows end after succ(T):
 *                                               (succ(T) + 1µs − size, succ(T) + 1µs); a window
 *                                               [start, end) — end exclusive — closes once
 *                                               T >= end − 1 µs (a punctuation at its end does it)
 *   window.start / window.end                   that bound's field (fixed size: both grow together)
 *   date_trunc(unit, x), trunc(x, unit), year(x), to_date(x), CAST(x AS DATE),
 *   CAST(date AS TIMESTAMP), CAST(x AS BIGINT), unix_seconds/millis/micros(x), unix_date(x),
 *   unix_timestamp(x), x + INTERVAL c, x - INTERVAL c, date_add(x, c), date_sub(x, c),
 *   x + c, x - c, c + x, x * c (c > 0), x div c (c > 0)           f(lower bound of x)
 *   hour, minute, second, day of week/month/year, month, quarter, week: not monotone (they
 *   wrap around); anything else: not known to be monotone. Neither is closable.
 * }}}
 * Compositions follow: a monotone function of a monotone expression is monotone, and its
 * lower bound is the function of its argument's lower bound.
 *
 * Example: `g = date_trunc('hour', ts)`, punctuation `ts <= 10:59:59.999999`: lower bound
 * `date_trunc('hour', 11:00:00) = 11:00`, bound `10:59:59.999999`: the group `10:00` closes.
 * Time zones: truncations and dates are computed in the session time zone, as Spark does;
 * a zone whose clocks go back across midnight would make `to_date` decrease for an hour.
 */
object MonotoneExpressions {

  /** How a column under the aggregation is computed. */
  sealed trait Definition
  /** `column = expression` (a projection below). */
  final case class Computed(expression: Expression) extends Definition
  /** A `window(time, size, ...)` column of fixed-size windows (`sizeMicros`). */
  final case class TimeWindowOf(time: Attribute, sizeMicros: Long) extends Definition

  type Definitions = ExprId => Option[Definition]
  val NoDefinitions: Definitions = _ => None

  /**
   * The bound up to which a range punctuation on `time` closes groups of `g`, as an
   * expression of `time` (evaluated on the punctuation row), or why `g` is not closable.
   */
  def closingBound(g: Expression, time: Attribute, defs: Definitions = NoDefinitions): Either[String, Expression] =
    for {
      from <- successor(time)
      low <- lowerBound(g, time, from, defs)
      bound <- predecessor(low)
    } yield simplified(bound)

  /**
   * `bound` with the round trips the steps above leave folded away: a timestamp converted to
   * microseconds and straight back, a field of a struct built right there, and constant offsets added one after another (`x + 1 - 1`).
   * The value is the same (except that an intermediate step at the very end of the timestamp
   * range no longer overflows); the expression is a third of the size, which every micro-batch's
   * optimizer pass and the generated code see.
   *
   * Example: the bound of `window(ts, '10 seconds')` becomes
   * `(ts + 1 µs - 10 s, ts + 1 µs)` on microseconds, not a chain of twelve conversions.
   */
  def simplified(bound: Expression): Expression = {
    val once = bound.transformUp {
      case GetStructField(c: CreateNamedStruct, ordinal, _) => c.valExprs(ordinal)
      case PreciseTimestampConversion(PreciseTimestampConversion(x, from, via), via2, to)
          if via == via2 && from == to && x.dataType == to => x
      case Subtract(x, Literal(c: Long, LongType), mode) if c != Long.MinValue => Add(x, Literal(-c), mode)
      case Add(Add(x, Literal(a: Long, LongType), _), Literal(b: Long, LongType), mode)
          if scala.util.Try(Math.addExact(a, b)).isSuccess => Add(x, Literal(a + b), mode)
      case Add(x, Literal(0L, LongType), _) if x.dataType == LongType => x
    }
    if (once fastEquals bound) bound else simplified(once)
  }

  /** The least value `g` takes on rows whose `time >= from`, if `g` never decreases with `time`. */
  def lowerBound(g: Expression, time: Attribute, from: Expression, defs: Definitions): Either[String, Expression] = {
    def sql = g.sql
    g match {
      case a: Attribute if a.exprId == time.exprId => scala.util.Right(from)
      case a: Attribute => defs(a.exprId) match {
        case Some(TimeWindowOf(t, size)) if t.exprId == time.exprId => windowFrom(from, size, a.dataType)
        case Some(Computed(e)) => lowerBound(e, time, from, defs)
        case _ => scala.util.Left(s"${a.name} is not computed from ${time.name}")
      }
      case GetStructField(w: Attribute, ordinal, _) if isWindow(w, defs) =>
        lowerBound(w, time, from, defs).map(GetStructField(_, ordinal))
      case _ if !g.deterministic => scala.util.Left(s"$sql is not deterministic")
      case _ => wraps(g) match {
        case Some(why) => scala.util.Left(s"$sql is not monotone in ${time.name}: $why")
        case None => argument(g) match {
          case Some(i) if g.children.indices.forall(j => j == i || g.children(j).foldable) =>
            lowerBound(g.children(i), time, from, defs).map(low => g.withNewChildren(g.children.updated(i, low)))
          case _ => scala.util.Left(s"$sql is not known to be non-decreasing in ${time.name} " +
            "(monotone: date_trunc, to_date, CAST AS DATE, window, unix_seconds, div by a positive constant, + INTERVAL)")
        }
      }
    }
  }

  /** The argument in which `g` never decreases (the others must be constants), if any. */
  def argument(g: Expression): Option[Int] = g match {
    case _: TruncTimestamp => Some(1)
    case _: TruncDate | _: Year | _: UnixSeconds | _: UnixMillis | _: UnixMicros | _: UnixDate => Some(0)
    case p: ParseToDate if p.format.isEmpty => Some(0)
    case u: UnixTimestamp if isTime(u.timeExp.dataType) => Some(0)
    case u: ToUnixTimestamp if isTime(u.timeExp.dataType) => Some(0)
    case c: Cast if monotoneCast(c.child.dataType, c.dataType) => Some(0)
    case _: TimestampAddInterval | _: TimestampAddYMInterval | _: DateAddInterval | _: DateAdd | _: DateSub => Some(0)
    case _: DatetimeSub | _: KnownNullable | _: KnownNotNull | _: PreciseTimestampConversion => Some(0)
    case Add(l, r, _) if isIntegral(g.dataType) => if (r.foldable) Some(0) else if (l.foldable) Some(1) else None
    case Subtract(_, r, _) if isIntegral(g.dataType) && r.foldable => Some(0)
    case Multiply(l, r, _) if isIntegral(g.dataType) =>
      if (positive(r)) Some(0) else if (positive(l)) Some(1) else None
    case IntegralDivide(_, r, _) if positive(r) => Some(0)
    case _ => None
  }

  /** Why a calendar field is not closable: it wraps around. */
  def wraps(g: Expression): Option[String] = g match {
    case _: Hour => Some("the hour of the day wraps around every day")
    case _: Minute => Some("the minute wraps around every hour")
    case _: Second => Some("the second wraps around every minute")
    case _: DayOfWeek | _: WeekDay => Some("the day of the week wraps around every week")
    case _: DayOfMonth => Some("the day of the month wraps around every month")
    case _: DayOfYear | _: Month | _: Quarter | _: WeekOfYear => Some("it wraps around every year")
    case _: DateFormatClass => Some("a formatted date is text, not ordered like time")
    case _ => None
  }

  /** The lower bound of a window: windows of rows `time >= from` end after `from`. */
  private def windowFrom(from: Expression, size: Long, dataType: DataType): Either[String, Expression] =
    dataType match {
      case StructType(Array(s, e)) if isTimestamp(s.dataType) && s.dataType == e.dataType && from.dataType == s.dataType =>
        val t = s.dataType
        val micros = PreciseTimestampConversion(from, t, LongType)
        def at(offset: Long) = PreciseTimestampConversion(Add(micros, Literal(offset)), LongType, t)
        scala.util.Right(CreateNamedStruct(Seq(Literal(s.name), at(1 - size), Literal(e.name), at(1))))
      case other => scala.util.Left(s"a window of ${other.simpleString} over a ${from.dataType.simpleString} column " +
        "is not one of timestamps over a timestamp column")
    }

  /** The least value after `time` (the first value a future row can have). */
  def successor(time: Attribute): Either[String, Expression] = time.dataType match {
    case t if isTimestamp(t) =>
      scala.util.Right(PreciseTimestampConversion(Add(PreciseTimestampConversion(time, t, LongType), Literal(1L)), LongType, t))
    case DateType => scala.util.Right(DateAdd(time, Literal(1)))
    case t if isIntegral(t) => scala.util.Right(Add(time, Cast(Literal(1), t)))
    case t => scala.util.Left(s"${time.name} is of type ${t.simpleString}, not a timestamp, date or integer")
  }

  /** The greatest value below `e`: closed groups are those `<= predecessor(lower bound)`. */
  def predecessor(e: Expression): Either[String, Expression] = e.dataType match {
    case t if isTimestamp(t) =>
      scala.util.Right(PreciseTimestampConversion(Subtract(PreciseTimestampConversion(e, t, LongType), Literal(1L)), LongType, t))
    case DateType => scala.util.Right(DateAdd(e, Literal(-1)))
    case t if isIntegral(t) => scala.util.Right(Subtract(e, Cast(Literal(1), t)))
    case StructType(Array(s, en)) if isTimestamp(s.dataType) && s.dataType == en.dataType =>
      for {
        ps <- predecessor(GetStructField(e, 0))
        pe <- predecessor(GetStructField(e, 1))
      } yield CreateNamedStruct(Seq(Literal(s.name), ps, Literal(en.name), pe))
    case t => scala.util.Left(s"values of type ${t.simpleString} have no predecessor")
  }

  private def isWindow(w: Attribute, defs: Definitions): Boolean =
    defs(w.exprId).exists(_.isInstanceOf[TimeWindowOf])

  private def monotoneCast(from: DataType, to: DataType): Boolean = (from, to) match {
    case (f, t) if f == t => true
    case (f, DateType) if isTimestamp(f) => true
    case (DateType, t) if isTimestamp(t) => true
    case (f, LongType) if isTimestamp(f) => true
    case (f, t) if isIntegral(f) && isIntegral(t) => width(f) <= width(t)
    case _ => false
  }

  private def width(t: DataType): Int = t match {
    case ByteType => 1
    case ShortType => 2
    case IntegerType => 4
    case _ => 8
  }

  private def positive(e: Expression): Boolean = e.foldable && isIntegral(e.dataType) && (e.eval() match {
    case n: java.lang.Number => n.longValue() > 0
    case _ => false
  })

  private def isTimestamp(t: DataType): Boolean = t == TimestampType || t == TimestampNTZType
  private def isTime(t: DataType): Boolean = isTimestamp(t) || t == DateType
  private def isIntegral(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType => true
    case _ => false
  }
}
