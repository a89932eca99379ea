package punctuated.input

import java.time.{Duration, LocalDateTime, ZoneOffset}

import scala.util.Random

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import punctuated.compat.TimestampAddInterval
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.input.MonotoneExpressions._

/**
 * The monotonicity rule of [[MonotoneExpressions]], expression by expression and composed: the
 * bound a range punctuation `ts <= T` closes up to, evaluated, against the groups future rows
 * (`ts > T`) can still reach — never one of them closed (safety), and every group that no
 * future row reaches closed (maximality, for the expressions of one value per row).
 */
class MonotoneExpressionsSuite extends AnyFunSuite {

  private val ts = AttributeReference("ts", TimestampType)()
  private val utc = Some("UTC")
  private def micros(s: String): Long = {
    val t = LocalDateTime.parse(s).toInstant(ZoneOffset.UTC)
    t.getEpochSecond * 1000000L + t.getNano / 1000
  }
  private val Hour = Literal("HOUR")

  /** `e` evaluated with ts = t (Spark's replacements of runtime-replaceable functions applied). */
  private def at(e: Expression, t: Long): Any = e.transform {
    case a: Attribute if a.exprId == ts.exprId => Literal(t, TimestampType)
  }.transformUp { case r: RuntimeReplaceable => r.replacement }.eval()

  private def bound(g: Expression, defs: Definitions = NoDefinitions): Expression =
    closingBound(g, ts, defs).fold(why => fail(s"${g.sql} not closable: $why"), identity)

  private def ordering(t: DataType) =
    org.apache.spark.sql.catalyst.util.TypeUtils.getInterpretedOrdering(t)

  /** Safety and maximality of `g`'s bound at the punctuation `ts <= t`. */
  private def check(g: Expression, t: Long): Unit = {
    val b = at(bound(g), t)
    val ord = ordering(g.dataType)
    // no group a future row reaches is closed
    for (d <- Seq(1L, 2L, 999L, 1000000L, 59999999L, 3600000000L, 86400000000L))
      assert(ord.gt(at(g, t + d), b), s"${g.sql}: ts = ${t + d} reaches a closed group (bound $b)")
    // the group of ts = t is closed exactly when the next instant is in another group
    assert(ord.lteq(at(g, t), b) == ord.lt(at(g, t), at(g, t + 1)), s"${g.sql} at $t: bound $b")
  }

  private val monotone: Seq[(String, Expression)] = Seq(
    "ts" -> ts,
    "date_trunc('hour', ts)" -> TruncTimestamp(Hour, ts, utc),
    "date_trunc('day', ts)" -> TruncTimestamp(Literal("DAY"), ts, utc),
    "to_date(ts)" -> ParseToDate(ts, None, utc, ansiEnabled = true),
    "CAST(ts AS DATE)" -> Cast(ts, DateType, utc),
    "unix_seconds(ts) div 60" -> IntegralDivide(UnixSeconds(ts), Literal(60L), EvalMode.LEGACY),
    "unix_timestamp(ts) div 300" -> IntegralDivide(
      UnixTimestamp(ts, Literal("yyyy-MM-dd HH:mm:ss"), utc, failOnError = true), Literal(300L), EvalMode.LEGACY),
    "ts + INTERVAL 90 MINUTES" -> TimestampAddInterval(ts, Literal(Duration.ofMinutes(90)), utc),
    "year(ts)" -> Year(Cast(ts, DateType, utc)),
    "date_trunc('hour', ts + INTERVAL 30 MINUTES)" ->
      TruncTimestamp(Hour, TimestampAddInterval(ts, Literal(Duration.ofMinutes(30)), utc), utc),
    "unix_seconds(date_trunc('hour', ts)) div 7200 + 1" ->
      Add(IntegralDivide(UnixSeconds(TruncTimestamp(Hour, ts, utc)), Literal(7200L), EvalMode.LEGACY), Literal(1L)),
    "2 * unix_micros(ts)" -> Multiply(Literal(2L), UnixMicros(ts)))

  for ((name, g) <- monotone) test(s"monotone: $name closes exactly the groups no later row reaches") {
    val rng = new Random(name.hashCode)
    val edges = Seq("2024-03-10T10:59:59.999999", "2024-03-10T11:00:00", "2024-12-31T23:59:59.999999",
      "2024-02-29T00:00:00", "1969-12-31T23:59:59.999999").map(micros)
    (edges ++ Seq.fill(200)(micros("2024-01-01T00:00:00") + (rng.nextLong() % (400L * 86400000000L)).abs))
      .foreach(t => check(g, t))
  }

  test("date_trunc('hour', ts): the punctuation at the hour's last microsecond closes it, earlier ones do not") {
    val g = TruncTimestamp(Hour, ts, utc)
    val ten = micros("2024-03-10T10:00:00")
    assert(at(bound(g), micros("2024-03-10T10:59:59.999999")) == micros("2024-03-10T10:59:59.999999"))
    assert(at(bound(g), micros("2024-03-10T10:59:59.999998")).asInstanceOf[Long] < ten)
  }

  private val win = AttributeReference("window", new StructType()
    .add("start", TimestampType).add("end", TimestampType))()
  private val tenMinutes = 600000000L
  private val windows: Definitions = id => if (id == win.exprId) Some(TimeWindowOf(ts, tenMinutes)) else None
  private def window(start: String) = InternalRow(micros(start), micros(start) + tenMinutes)

  test("window(ts, '10 minutes'): a window [start, end) closes once T >= end - 1 µs, by the same bound for any slide") {
    val ord = ordering(win.dataType)
    def closed(w: InternalRow, t: String) =
      ord.lteq(w, at(bound(win, windows), micros(t)).asInstanceOf[InternalRow])
    assert(closed(window("2024-03-10T10:00:00"), "2024-03-10T10:09:59.999999"))
    assert(closed(window("2024-03-10T10:00:00"), "2024-03-10T10:10:00"))
    assert(!closed(window("2024-03-10T10:00:00"), "2024-03-10T10:09:59.999998"))
    // sliding by 5 minutes: [10:05, 10:15) still gets rows of 10:10 on
    assert(closed(window("2024-03-10T09:55:00"), "2024-03-10T10:09:59.999999"))
    assert(!closed(window("2024-03-10T10:05:00"), "2024-03-10T10:09:59.999999"))
    // sliding by one minute, or tumbling with an offset: the same rule on the end
    assert(closed(window("2024-03-10T09:59:00"), "2024-03-10T10:08:59.999999"))
    assert(!closed(window("2024-03-10T09:59:00"), "2024-03-10T10:08:59.999998"))
  }

  test("window.start, window.end and functions of them close with their window") {
    val start = GetStructField(win, 0, Some("start"))
    val end = GetStructField(win, 1, Some("end"))
    val t = micros("2024-03-10T10:09:59.999999")
    assert(at(bound(start, windows), t) == micros("2024-03-10T10:00:00"))
    assert(at(bound(end, windows), t) == micros("2024-03-10T10:10:00"))
    val day = TruncTimestamp(Literal("DAY"), start, utc)
    assert(at(bound(day, windows), t).asInstanceOf[Long] < micros("2024-03-10T00:00:00"))
    assert(at(bound(day, windows), micros("2024-03-11T00:09:59.999999")) == micros("2024-03-10T23:59:59.999999"))
  }

  test("a window's bound is written plainly: one conversion each way and one offset per field") {
    // (ts + 1 µs - 10 min, ts + 1 µs) on microseconds: not succ, window and pred chained
    val b = bound(win, windows)
    assert(b.collect { case c: PreciseTimestampConversion => c }.size == 4, b.sql)
    assert(b.collect { case a: Add => a }.size == 2 && b.collect { case s: Subtract => s }.isEmpty, b.sql)
    assert(b.collect { case g: GetStructField => g }.isEmpty, b.sql)
    val t = micros("2024-03-10T10:09:59.999999")
    assert(at(b, t) == InternalRow(t + 1 - tenMinutes, t + 1))
  }

  test("simplified folds round trips and constant offsets, and leaves everything else") {
    val l = AttributeReference("l", LongType)()
    val toMicros = PreciseTimestampConversion(ts, TimestampType, LongType)
    val roundTrip = PreciseTimestampConversion(
      PreciseTimestampConversion(Add(toMicros, Literal(1L)), LongType, TimestampType), TimestampType, LongType)
    assert(simplified(Subtract(roundTrip, Literal(1L))) == toMicros)
    assert(simplified(Add(Add(l, Literal(5L)), Literal(-2L))) == Add(l, Literal(3L)))
    // an offset sum that does not fit a long stays as written
    val far = Add(Add(l, Literal(Long.MaxValue)), Literal(1L))
    assert(simplified(far) == far)
    // a conversion that is not a round trip, and integer offsets, are left alone
    assert(simplified(toMicros) == toMicros)
    val i = AttributeReference("i", IntegerType)()
    assert(simplified(Add(Add(i, Literal(1)), Literal(1))) == Add(Add(i, Literal(1)), Literal(1)))
  }

  private val wrapping: Seq[(String, Expression)] = Seq(
    "hour(ts)" -> org.apache.spark.sql.catalyst.expressions.Hour(ts, utc),
    "minute(ts)" -> Minute(ts, utc),
    "dayofweek(ts)" -> DayOfWeek(Cast(ts, DateType, utc)),
    "month(ts)" -> Month(Cast(ts, DateType, utc)),
    "hour(ts) + 1" -> Add(org.apache.spark.sql.catalyst.expressions.Hour(ts, utc), Literal(1)),
    "date_trunc('hour', ts) of hour: hour(date_trunc('hour', ts))" ->
      org.apache.spark.sql.catalyst.expressions.Hour(TruncTimestamp(Hour, ts, utc), utc))

  for ((name, g) <- wrapping) test(s"not monotone: $name wraps around, and is not closable") {
    val why = closingBound(g, ts).swap.getOrElse(fail(s"$name judged closable"))
    assert(why.contains("wraps around") && why.contains("not monotone in ts"), why)
  }

  test("not known to be monotone: negative or non-constant factors, formats, other columns, aggregates") {
    val other = AttributeReference("other", LongType)()
    val seconds = UnixSeconds(ts)
    val notClosable = Seq(
      IntegralDivide(seconds, Literal(-60L), EvalMode.LEGACY),
      Multiply(seconds, Literal(-1L)),
      Subtract(Literal(0L), seconds),
      Add(seconds, other),
      IntegralDivide(seconds, other, EvalMode.LEGACY),
      ParseToDate(Cast(ts, StringType, utc), Some(Literal("yyyy-dd-MM")), utc, ansiEnabled = true),
      other,
      AggregateExpression(org.apache.spark.sql.catalyst.expressions.aggregate.Max(seconds),
        org.apache.spark.sql.catalyst.expressions.aggregate.Complete, isDistinct = false))
    notClosable.foreach(g => assert(closingBound(g, ts).isLeft, s"${g.sql} judged closable"))
    assert(closingBound(DateFormatClass(ts, Literal("yyyy-MM"), utc), ts).swap.exists(_.contains("text")))
  }

  test("a range on a date or an integer column: successor one day / one") {
    val day = AttributeReference("day", DateType)()
    val b = closingBound(DateAdd(day, Literal(7)), day).toOption.get
    assert(b.transform { case a: Attribute => Literal(100, DateType) }.eval() == 107)
    val hour = AttributeReference("hour", IntegerType)()
    val h = closingBound(IntegralDivide(Cast(hour, LongType), Literal(2L), EvalMode.LEGACY), hour).toOption.get
    // hour <= 9: future hours >= 10, group 10 div 2 = 5 is open, 4 closed
    assert(h.transform { case a: Attribute => Literal(9) }.eval() == 4L)
    assert(h.transform { case a: Attribute => Literal(8) }.eval() == 3L)
  }
}
