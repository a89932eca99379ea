package punctuated.aggregate

import java.sql.Timestamp
import java.time.Instant

import org.apache.spark.SparkException
import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{col, count, hour, max, to_date, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/** A timed reading; a punctuation row sets only `ts` ("no more readings with ts <= this"). */
case class TimedReading(sensor: Option[Long], ts: Option[Timestamp], temp: Option[Double], is_punct: Boolean = false)

/**
 * Windows and time expressions closed by range punctuations on event time (`ts<=`), in append
 * mode without a watermark (user contract, "Event time"; [[punctuated.input.MonotoneExpressions]]): tumbling and
 * sliding windows, `date_trunc`, `to_date`, other time keys, a range on a DATE column, a restart mid-window, late rows by
 * `spark.punctuated.lateRows`, and strict safety refusing `hour(ts)`. HDFS-backed state store;
 * [[EventTimeAggregateRocksDBSuite]] runs the same on RocksDB.
 */
class EventTimeAggregateSuite extends PunctuatedStreamTest {
  import testImplicits._
  import EventTimeAggregateSuite._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private def readings(): (MemoryStream[TimedReading], DataFrame) = {
    val input = MemoryStream[TimedReading]
    (input, declare(input.toDF(), "readings", Schemes -> "ts<=", Marker -> "is_punct"))
  }


  /** Readings whose punctuations close a sensor too (`sensor` set, ts NULL). */
  private def sensorReadings(): (MemoryStream[TimedReading], DataFrame) = {
    val input = MemoryStream[TimedReading]
    (input, declare(input.toDF(), "readings", Schemes -> "sensor; ts<=", Marker -> "is_punct"))
  }

  private def ExpectPunctuatedPlan = AssertOnQuery("planned with the punctuated aggregation") { q =>
    q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }.size == 1
  }

  test("tumbling window(ts, '10 minutes'): a window's row comes when a punctuation reaches its end") {
    val (input, r) = readings()
    val out = r.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n"), max("temp").as("top"))
      .select(col("window.start"), col("window.end"), col("n"), col("top"))
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 20.0), reading(2, "10:08", 21.5), reading(1, "10:12", 19.0)),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AssertPunctuatedState(rows = 2, punctuations = 0),
      // one microsecond short of the end: the window may still get a row at 10:09:59.999999
      AddData(input, upTo("10:09:59.999998")),
      CheckNewAnswer(),
      AddData(input, reading(2, "10:09:59.999999", 22.0), upTo("10:09:59.999999")),
      CheckNewAnswer(Row(t("10:00"), t("10:10"), 3L, 22.0)),
      AssertPunctuatedState(rows = 1, punctuations = 2),      // "ts <= ..." held in both partitions
      AssertMetric("numRowsPurged", 1),
      // restart mid-window: [10:10, 10:20) is stored, its rows survive
      StopStream,
      StartStream(),
      AddData(input, reading(3, "10:15", 25.0), reading(3, "10:05", 30.0)),   // 10:05 is late
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      AddData(input, upTo("10:20")),
      CheckNewAnswer(Row(t("10:10"), t("10:20"), 2L, 25.0)),
      AssertPunctuatedState(rows = 0, punctuations = 2))
  }

  test("sliding window(ts, '10 minutes', '5 minutes'): each window closes once, when its end is passed") {
    val (input, r) = readings()
    val out = r.groupBy(window(col("ts"), "10 minutes", "5 minutes")).agg(count("*").as("n"))
      .select(col("window.start"), col("n"))
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0), reading(1, "10:07", 1.0), reading(1, "10:12", 1.0)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 4, punctuations = 0),     // [9:55 [10:00 [10:05 [10:10
      AddData(input, upTo("10:04:59.999999")),
      CheckNewAnswer(Row(t("09:55"), 1L)),
      AddData(input, upTo("10:10")),
      CheckNewAnswer(Row(t("10:00"), 2L)),
      // each punctuation counted once, not once per window copy (two here)
      AssertCounted("numPunctuationsReceived", 2),
      StopStream,
      StartStream(),
      AddData(input, reading(2, "10:13", 1.0), upTo("10:30")),
      CheckNewAnswer(Row(t("10:05"), 3L), Row(t("10:10"), 2L)),
      AssertPunctuatedState(rows = 0, punctuations = 2))
  }

  test("sliding windows by sensor: a punctuation on the sensor (ts NULL) closes its windows before time does") {
    // Spark pushes the window's `ts IS NOT NULL` below the sliding window's Expand, where it
    // dropped the punctuations that leave ts NULL: sensor 1's windows waited for time
    val (input, r) = sensorReadings()
    val out = r.groupBy(col("sensor"), window(col("ts"), "10 minutes", "5 minutes")).agg(count("*").as("n"))
      .select(col("sensor"), col("window.start"), col("n"))
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0), reading(2, "10:02", 1.0), reading(1, "10:07", 1.0)),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AssertPunctuatedState(rows = 5, punctuations = 0),    // sensor 1: [9:55 [10:00 [10:05; 2: [9:55 [10:00
      AddData(input, noMoreOf(1)),
      CheckNewAnswer(Row(1L, t("09:55"), 1L), Row(1L, t("10:00"), 2L), Row(1L, t("10:05"), 1L)),
      AssertOnQuery("sensor 2's windows stay") { q => punctuatedProgress(q).numRowsTotal == 2 },
      AssertCounted("numPunctuationsReceived", 1),   // one row, though it falls in two windows' copies
      StopStream,
      StartStream(),
      AddData(input, upTo("10:30")),
      CheckNewAnswer(Row(2L, t("09:55"), 1L), Row(2L, t("10:00"), 1L)))
  }

  test("chained: windows by sensor, then the top count per window: the sensor's punctuation passes the second") {
    // the first aggregation passes sensor 1's punctuation on (its window NULL: a wildcard); the
    // second groups by window only, so it closes nothing there, and waits for time
    val (input, r) = sensorReadings()
    val perSensor = r.groupBy(col("sensor"), window(col("ts"), "10 minutes", "5 minutes")).agg(count("*").as("n"))
    val out = perSensor.groupBy(col("window")).agg(max("n").as("top")).select(col("window.start"), col("top"))
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0), reading(2, "10:02", 1.0), reading(1, "10:07", 1.0)),
      CheckNewAnswer(),
      AddData(input, noMoreOf(1)),
      CheckNewAnswer(),
      StopStream,
      StartStream(),
      AddData(input, upTo("10:30")),
      CheckNewAnswer(Row(t("09:55"), 1L), Row(t("10:00"), 2L), Row(t("10:05"), 1L)))
  }

  test("a scheme that closes no key (sensor under GROUP BY window) is dropped where the stream is read") {
    // "sensor; ts<=" under a window alone: sensor punctuations close nothing here; they are
    // filtered above the source, not carried to the operator and ignored there (an invalid
    // punctuation still reaches it: counted, with invalidPunctuations=drop)
    withSQLConf(PunctuatedConf.InvalidPunctuations -> "drop") {
    val (input, r) = sensorReadings()
    val out = r.groupBy(window(col("ts"), "10 minutes")).agg(count("*").as("n"))
      .select(col("window.start"), col("n"))
    def dropFilter(q: punctuated.compat.StreamExecution) = q.lastExecution.optimizedPlan.collect {
      case f: org.apache.spark.sql.catalyst.plans.logical.Filter
          if f.condition.exists(_.isInstanceOf[punctuated.input.PunctuationKind]) => f
    }
    val invalid = TimedReading(Some(3L), Some(t("10:03")), None, is_punct = true)   // neither scheme
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0), noMoreOf(1), reading(2, "10:02", 1.0), noMoreOf(2), invalid),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AssertOnQuery("one filter drops the sensor punctuations, right above the source") { q =>
        val fs = dropFilter(q)
        fs.size == 1 && fs.head.child.children.isEmpty
      },
      AssertCounted("numPunctuationsReceived", 0),          // neither sensor punctuation
      AssertCounted("numInvalidPunctuationsDropped", 1),    // the invalid row reached it
      AddData(input, reading(1, "10:12", 1.0), noMoreOf(3), upTo("10:10")),
      CheckNewAnswer(Row(t("10:00"), 2L)),
      AssertCounted("numPunctuationsReceived", 1),          // the time punctuation only
      StopStream,
      StartStream(),
      AddData(input, noMoreOf(1), upTo("10:20")),
      CheckNewAnswer(Row(t("10:10"), 1L)),
      AssertCounted("numPunctuationsReceived", 1),
      AssertOnQuery("the filter is planned once after a restart too") { q => dropFilter(q).size == 1 }) }
  }

  test("SQL: GROUP BY date_trunc('hour', ts), and to_date(ts) with another key column", NotOnRocksDB) {
    val (input, r) = readings()
    r.createOrReplaceTempView("timed_readings")
    val hourly = sql("SELECT date_trunc('hour', ts) AS hour, count(*) AS n, max(temp) AS top " +
      "FROM timed_readings GROUP BY date_trunc('hour', ts)")
    testStream(hourly, OutputMode.Append())(
      AddData(input, reading(1, "09:59:59", 1.0), reading(1, "10:00", 2.0), reading(2, "10:59:59.999999", 3.0)),
      CheckNewAnswer(),
      AddData(input, upTo("10:30")),
      CheckNewAnswer(Row(t("09:00"), 1L, 1.0)),
      AddData(input, upTo("10:59:59.999999")),
      CheckNewAnswer(Row(t("10:00"), 2L, 3.0)),
      AssertPunctuatedState(rows = 0, punctuations = 2))

    val (input2, r2) = readings()
    val daily = r2.groupBy(col("sensor"), to_date(col("ts")).as("day")).agg(count("*").as("n"))
    testStream(daily, OutputMode.Append())(
      AddData(input2, reading(1, "10:00", 1.0), reading(2, "11:00", 1.0), reading(1, "23:00", 1.0),
        TimedReading(Some(1), Some(Timestamp.from(Instant.parse("2024-03-11T01:00:00Z"))), Some(1.0))),
      CheckNewAnswer(),
      AddData(input2, upTo("23:59:59.999999")),
      CheckNewAnswer(Row(1L, java.sql.Date.valueOf("2024-03-10"), 2L), Row(2L, java.sql.Date.valueOf("2024-03-10"), 1L)),
      AssertPunctuatedState(rows = 1, punctuations = 2))
  }

  test("SQL: window(...).start, unix_seconds(ts) div 60 and CAST(ts + INTERVAL 830 MINUTES AS DATE) as keys", NotOnRocksDB) {
    val cases = Seq(
      "window(ts, '10 minutes').start" -> Seq(Row(t("10:00"), 2L)),
      "unix_seconds(ts) div 60" -> Seq(Row(t("10:00").getTime / 60000, 1L), Row(t("10:09").getTime / 60000, 1L)),
      "CAST(ts + INTERVAL 830 MINUTES AS DATE)" -> Seq(Row(java.sql.Date.valueOf("2024-03-10"), 2L)))
    for ((key, closed) <- cases) {
      val (input, r) = readings()
      r.createOrReplaceTempView("timed_readings")
      val q = sql(s"SELECT $key AS k, count(*) AS n FROM timed_readings GROUP BY $key")
      testStream(q, OutputMode.Append())(
        AddData(input, reading(1, "10:00:30", 1.0), reading(1, "10:09:59.999999", 1.0), reading(2, "10:10", 1.0)),
        CheckNewAnswer(),
        ExpectPunctuatedPlan,
        AddData(input, upTo("10:09:59.999999")),
        CheckNewAnswer(closed: _*),
        AssertPunctuatedState(rows = 1, punctuations = 2))
    }
  }

  test("a range on a DATE column (day<=) closes GROUP BY trunc(day, 'MM') at the month's last day", NotOnRocksDB) {
    val input = MemoryStream[(Option[java.sql.Date], Option[Int], Boolean)]
    val days = declare(input.toDF().toDF("day", "v", "p"), "daily", Schemes -> "day<=", Marker -> "p")
    days.createOrReplaceTempView("daily_values")
    val monthly = sql("SELECT trunc(day, 'MM') AS month, sum(v) AS total FROM daily_values GROUP BY trunc(day, 'MM')")
    def d(s: String) = Some(java.sql.Date.valueOf(s))
    testStream(monthly, OutputMode.Append())(
      AddData(input, (d("2024-02-29"), Some(1), false), (d("2024-03-30"), Some(2), false),
        (d("2024-03-31"), Some(3), false), (d("2024-04-01"), Some(4), false)),
      CheckNewAnswer(),
      ExpectPunctuatedPlan,
      AddData(input, (d("2024-03-30"), None, true)),
      CheckNewAnswer(Row(java.sql.Date.valueOf("2024-02-01"), 1L)),
      AddData(input, (d("2024-03-31"), None, true)),
      CheckNewAnswer(Row(java.sql.Date.valueOf("2024-03-01"), 5L)),
      AssertPunctuatedState(rows = 1, punctuations = 2))
  }

  test("late rows of a closed window fail the query with spark.punctuated.lateRows=fail", NotOnRocksDB) {
    val (input, r) = readings()
    val out = r.groupBy(window(col("ts"), "10 minutes")).agg(count("*"))
    testStream(out, OutputMode.Append())(
      StartStream(additionalConfs = Map(PunctuatedConf.LateRows -> "fail")),
      AddData(input, reading(1, "10:01", 1.0), upTo("10:10")),
      CheckNewAnswer(Row(Row(t("10:00"), t("10:10")), 1L)),
      AddData(input, reading(1, "10:09", 1.0)),
      ExpectFailure[SparkException](e => assert(e.getMessage.contains("PUNCTUATED_LATE_ROW"), e.getMessage)))
  }

  test("GROUP BY hour(ts): strict safety refuses it naming the expression and why; warn keeps the state", NotOnRocksDB) {
    val (input, r) = readings()
    val byHour = r.groupBy(hour(col("ts")).as("h")).agg(count("*"))
    val e = intercept[AnalysisException] {
      byHour.writeStream.format("memory").queryName("hours").outputMode("update").start().stop()
    }
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    assert(e.getMessage.contains("hour(ts)") && e.getMessage.contains("wraps around") &&
      e.getMessage.contains("date_trunc('hour', ts)"), e.getMessage)
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(byHour, OutputMode.Update())(
        AddData(input, reading(1, "10:01", 1.0), reading(1, "11:01", 1.0), upTo("12:00")),
        CheckNewAnswer(Row(10, 1L), Row(11, 1L)),
        AssertOnQuery("Spark's aggregation keeps every hour") { q =>
          assert(q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }.isEmpty)
          settledProgress(q).stateOperators.head.numRowsTotal == 2
        })
    }
  }
}

class EventTimeAggregateRocksDBSuite extends EventTimeAggregateSuite with OnRocksDB

object EventTimeAggregateSuite {
  /** 2024-03-10 at `hhmm` ("10:05", "10:09:59.999999"), UTC. */
  def t(hhmm: String): Timestamp = {
    val full = if (hhmm.count(_ == ':') == 1) hhmm + ":00" else hhmm
    Timestamp.from(Instant.parse(s"2024-03-10T${full}Z"))
  }
  def reading(sensor: Long, at: String, temp: Double): TimedReading = TimedReading(Some(sensor), Some(t(at)), Some(temp))
  /** The punctuation "no more readings with ts <= at". */
  def upTo(at: String): TimedReading = TimedReading(None, Some(t(at)), None, is_punct = true)
  /** The punctuation "no more readings of this sensor" (ts NULL). */
  def noMoreOf(sensor: Long): TimedReading = TimedReading(Some(sensor), None, None, is_punct = true)
}
