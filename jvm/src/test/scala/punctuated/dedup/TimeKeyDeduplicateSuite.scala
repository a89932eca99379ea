package punctuated.dedup

import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.functions.{date_trunc, hour, to_date, window}
import org.apache.spark.sql.internal.SQLConf
import punctuated.compat.MemoryStream

import punctuated.aggregate.EventTimeAggregateSuite.{reading, t, upTo}
import punctuated.aggregate.TimedReading
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Deduplication keys that are time expressions (`punctuated.input.TimeKeys`): a range scheme
 * `ts<=` closes a key computed from `ts` by an expression that never decreases with it
 * (`date_trunc`, `to_date`, a window's start), as it closes an aggregation's group (Tucker et
 * al. 2003, §5.2 and Table 2, duplicate elimination: a seen key is forgotten once punctuations
 * match all its future rows); `hour(ts)` wraps around and is refused by `strict` safety.
 * HDFS-backed state store; [[TimeKeyDeduplicateRocksDBSuite]] runs the same on RocksDB.
 */
class TimeKeyDeduplicateSuite extends PunctuatedStreamTest {
  import testImplicits._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private def readings(input: MemoryStream[TimedReading]) =
    declare(input.toDF(), "readings", Schemes -> "ts<=", Marker -> "is_punct")

  private def AssertState(keys: Long) = AssertOnQuery(s"$keys keys") { q =>
    val p = punctuatedProgress(q)
    assert(p.operatorName == "punctuatedDeduplicate" && p.numRowsTotal == keys, p.json)
    true
  }

  test("dropDuplicates(sensor, date_trunc('hour', ts)): an hour's keys go once ts<= passes its end; late rows; restart") {
    val input = MemoryStream[TimedReading]
    val firsts = readings(input).withColumn("hour", date_trunc("hour", $"ts"))
      .dropDuplicates("sensor", "hour").select("sensor", "ts")
    testStream(firsts)(
      AddData(input, reading(1, "10:01", 1.0), reading(1, "10:30", 2.0), reading(2, "10:05", 1.0), reading(1, "11:02", 1.0)),
      CheckNewAnswer((1L, t("10:01")), (2L, t("10:05")), (1L, t("11:02"))),
      AssertState(keys = 3),
      // "no more readings at or before 10:59:59.999999": hour 10 is complete, hour 11 is not
      AddData(input, upTo("10:59:59.999999")),
      CheckNewAnswer(),
      AssertState(keys = 1),
      // sensor 1 at 10:45 is late (hour 10 closed): not emitted again; sensor 2 at 11:10 is new
      AddData(input, reading(1, "10:45", 3.0), reading(2, "11:10", 1.0), reading(1, "11:40", 1.0)),
      CheckNewAnswer((2L, t("11:10"))),
      AssertCounted("numLateRowsDropped", 1),
      AssertState(keys = 2),
      StopStream,
      StartStream(),
      AddData(input, upTo("11:30")),          // hour 11 not complete yet
      CheckNewAnswer(),
      AssertState(keys = 2),
      AddData(input, upTo("12:00")),          // now it is: every ts of hour 11 is before 12:00
      CheckNewAnswer(),
      AssertState(keys = 0))
  }

  test("to_date and a tumbling window's start close their keys the same way") {
    val input = MemoryStream[TimedReading]
    val byDay = readings(input).withColumn("day", to_date($"ts")).dropDuplicates("sensor", "day").select("sensor", "ts")
    testStream(byDay)(
      AddData(input, reading(1, "10:01", 1.0), reading(1, "12:00", 1.0), reading(2, "13:00", 1.0)),
      CheckNewAnswer((1L, t("10:01")), (2L, t("13:00"))),
      AssertState(keys = 2),
      AddData(input, upTo("23:00")),          // the day is not over
      CheckNewAnswer(),
      AssertState(keys = 2),
      AddData(input, upTo("23:59:59.999999")),
      CheckNewAnswer(),
      AssertState(keys = 0))
    val input2 = MemoryStream[TimedReading]
    val byWindow = readings(input2).withColumn("w", window($"ts", "10 minutes").getField("start"))
      .dropDuplicates("sensor", "w").select("sensor", "ts")
    testStream(byWindow)(
      AddData(input2, reading(1, "10:01", 1.0), reading(1, "10:09", 1.0), reading(1, "10:12", 1.0)),
      CheckNewAnswer((1L, t("10:01")), (1L, t("10:12"))),
      AddData(input2, upTo("10:09:59.999999")),   // [10:00, 10:10) closes; [10:10, 10:20) stays
      CheckNewAnswer(),
      AssertState(keys = 1))
  }

  test("hour(ts) wraps around: no punctuation on ts closes it, strict safety refuses it") {
    val input = MemoryStream[TimedReading]
    val wrapped = readings(input).withColumn("h", hour($"ts")).dropDuplicates("sensor", "h")
    val e = intercept[AnalysisException](wrapped.writeStream.format("memory").queryName("wrapped").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY" && e.getMessage.contains("deduplication"), e.getMessage)
    // the fix names the expression, why it closes nothing, and what would
    assert(e.getMessage.contains("close no key of hour(ts)") && e.getMessage.contains("date_trunc('hour', ts)"),
      e.getMessage)
  }
}

class TimeKeyDeduplicateRocksDBSuite extends TimeKeyDeduplicateSuite with OnRocksDB
