package punctuated.aggregate

import org.apache.spark.SparkException
import org.apache.spark.sql.{DataFrame, Row}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{col, count, date_trunc, max, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Watermarks as punctuations of a punctuated aggregation ([[WatermarkClosing]]; user
 * contract, "Event time"): over a declared stream with a `withWatermark` column, groups close
 * by the stream's punctuations and by the watermark, whichever comes first — windows, a time
 * expression, the time column itself; a restart between; rows of a group the watermark closed
 * are late by policy; and where the watermark is not a sound bound (the `max` policy with two
 * watermarks) only punctuations close. HDFS-backed state store; [[WatermarkAggregateRocksDBSuite]]
 * runs the same on RocksDB.
 */
class WatermarkAggregateSuite extends PunctuatedStreamTest {
  import testImplicits._
  import EventTimeAggregateSuite.{reading, t}

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  /** Readings declared with schemes `sensor` (punctuations: "no more readings of sensor s"), watermarked on ts. */
  private def readings(delay: String = "10 minutes"): (MemoryStream[TimedReading], DataFrame) = {
    val input = MemoryStream[TimedReading]
    (input, declare(input.toDF(), "readings", Schemes -> "sensor", Marker -> "is_punct").withWatermark("ts", delay))
  }

  /** The punctuation "no more readings of sensor s". */
  private def sensorDone(s: Long) = TimedReading(Some(s), None, None, is_punct = true)


  private def AssertGroups(n: Long) = AssertOnQuery(s"$n groups stored") { q =>
    assert(punctuatedProgress(q).numRowsTotal == n, punctuatedProgress(q).json)
    true
  }

  private def ExpectPunctuatedPlan(watermark: Boolean) = AssertOnQuery(s"punctuated, watermark used: $watermark") { q =>
    val ops = q.lastExecution.executedPlan.collect { case p: PunctuatedAggregateExec => p }
    assert(ops.size == 1 && ops.head.useWatermark == watermark, q.lastExecution.executedPlan.treeString)
    true
  }

  test("window(ts) and sensor: the watermark closes windows of every sensor, a sensor's punctuation the rest") {
    val (input, r) = readings()
    val out = r.groupBy(window(col("ts"), "10 minutes"), col("sensor")).agg(count("*").as("n"), max("temp").as("top"))
      .select(col("window.start"), col("sensor"), col("n"), col("top"))
    testStream(out, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 20.0), reading(2, "10:03", 21.0), reading(1, "10:12", 22.0)),
      CheckNewAnswer(),                                             // watermark 10:02: nothing ends by then
      ExpectPunctuatedPlan(watermark = true),
      AssertGroups(3),
      AddData(input, reading(1, "10:25", 23.0)),                    // watermark 10:15
      CheckNewAnswer(Row(t("10:00"), 1L, 1L, 20.0), Row(t("10:00"), 2L, 1L, 21.0)),
      AssertGroups(2),
      StopStream,
      StartStream(),
      AddData(input, sensorDone(1)),                                // sensor 1's later windows close at once
      CheckNewAnswer(Row(t("10:10"), 1L, 1L, 22.0), Row(t("10:20"), 1L, 1L, 23.0)),
      AssertGroups(0),
      // [10:00, 10:10) closed by the watermark: late; sensor 1 closed by its punctuation: late
      // (times up to 10:25: the watermark stays, no batch without data follows)
      AddData(input, reading(2, "10:05", 30.0), reading(1, "10:24", 30.0), reading(3, "10:21", 24.0)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 2),
      AssertGroups(1),
      AddData(input, reading(3, "10:45", 25.0)),                    // watermark 10:35: [10:20, 10:30) closes
      CheckNewAnswer(Row(t("10:20"), 3L, 1L, 24.0)),
      AssertGroups(1))
  }

  test("late rows by policy: a row of a window the watermark closed fails the query under lateRows=fail") {
    withSQLConf(PunctuatedConf.LateRows -> "fail") {
      val (input, r) = readings()
      val out = r.groupBy(window(col("ts"), "10 minutes"), col("sensor")).agg(count("*").as("n"))
      testStream(out, OutputMode.Append())(
        AddData(input, reading(1, "10:01", 20.0), reading(1, "10:25", 20.0)),
        CheckNewAnswer(Row(Row(t("10:00"), t("10:10")), 1L, 1L)),   // watermark 10:15
        AddData(input, reading(2, "10:40", 20.0)),                  // watermark 10:30
        CheckNewAnswer(Row(Row(t("10:20"), t("10:30")), 1L, 1L)),
        AddData(input, reading(2, "10:05", 20.0)),
        ExpectFailure[SparkException] { e =>
          assert(e.getMessage.contains("PUNCTUATED_LATE_ROW") && e.getMessage.contains("the watermark"), e.getMessage)
        })
    }
  }

  test("a time expression and the time column itself as keys close by the watermark") {
    val (input, r) = readings("0 seconds")
    val hourly = r.groupBy(date_trunc("hour", col("ts")).as("hour"), col("sensor")).agg(count("*").as("n"))
    testStream(hourly, OutputMode.Append())(
      AddData(input, reading(1, "09:59", 1.0), reading(1, "10:00", 1.0), reading(2, "10:30", 1.0)),
      CheckNewAnswer(Row(t("09:00"), 1L, 1L)),                      // watermark 10:30: 09:00 is complete
      ExpectPunctuatedPlan(watermark = true),
      AddData(input, reading(2, "11:00", 1.0)),
      CheckNewAnswer(Row(t("10:00"), 1L, 1L), Row(t("10:00"), 2L, 1L)),
      AssertGroups(1))

    val (input2, r2) = readings("0 seconds")
    val byTime = r2.groupBy(col("ts"), col("sensor")).agg(count("*").as("n"))
    testStream(byTime, OutputMode.Append())(
      AddData(input2, reading(1, "10:00", 1.0), reading(1, "10:00", 1.0), reading(2, "10:05", 1.0)),
      CheckNewAnswer(Row(t("10:00"), 1L, 2L), Row(t("10:05"), 2L, 1L)),   // watermark 10:05: ts <= 10:05 closed
      AddData(input2, reading(1, "10:07", 1.0), sensorDone(1)),
      CheckNewAnswer(Row(t("10:07"), 1L, 1L)),
      AssertGroups(0))
  }

  test("two watermarks under the max policy: the watermark is no sound bound, punctuations alone close") {
    withSQLConf(SQLConf.STREAMING_MULTIPLE_WATERMARK_POLICY.key -> "max") {
      val (input, r) = readings()
      val other = MemoryStream[TimedReading]
      val o = other.toDF().withWatermark("ts", "10 minutes")
      val out = r.groupBy(window(col("ts"), "10 minutes"), col("sensor")).agg(count("*").as("n"))
        .select(col("window.start"), col("sensor"), col("n"))
        .union(o.groupBy(window(col("ts"), "10 minutes"), col("sensor")).agg(count("*").as("n"))
          .select(col("window.start"), col("sensor"), col("n")))
      testStream(out, OutputMode.Append())(
        AddData(input, reading(1, "10:01", 20.0)),
        AddData(other, reading(9, "11:00", 20.0)),
        CheckNewAnswer(),
        AddData(other, reading(9, "11:30", 20.0)),                 // the global watermark (max) is 11:20
        CheckNewAnswer(Row(t("11:00"), 9L, 1L)),                    // Spark's own aggregation closes its window
        ExpectPunctuatedPlan(watermark = false),
        AddData(input, sensorDone(1)),
        CheckNewAnswer(Row(t("10:00"), 1L, 1L)))
    }
  }
}

class WatermarkAggregateRocksDBSuite extends WatermarkAggregateSuite with OnRocksDB
