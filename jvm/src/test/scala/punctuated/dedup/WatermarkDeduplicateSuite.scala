package punctuated.dedup

import org.apache.spark.sql.internal.SQLConf
import punctuated.compat.MemoryStream

import punctuated.aggregate.EventTimeAggregateSuite.{reading, t}
import punctuated.aggregate.TimedReading
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Watermarks as punctuations of a punctuated deduplication (`punctuated.aggregate.WatermarkClosing`):
 * `dropDuplicates("sensor", "ts")` over a stream declaring `sensor` and watermarked on `ts`
 * forgets a key when its sensor is punctuated or when the watermark passes its `ts`, whichever
 * comes first; a row at or behind the watermark is late (Spark's own deduplication drops it
 * too). HDFS-backed state store; [[WatermarkDeduplicateRocksDBSuite]] runs the same on RocksDB.
 */
class WatermarkDeduplicateSuite extends PunctuatedStreamTest {
  import testImplicits._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private def AssertState(keys: Long, late: Option[Long] = None) = AssertOnQuery(s"$keys keys, late $late") { q =>
    val p = punctuatedProgress(q)
    assert(p.operatorName == "punctuatedDeduplicate" && p.numRowsTotal == keys, p.json)
    late.foreach(n => assert(p.customMetrics.get("numLateRowsDropped") == n, p.json))
    true
  }

  test("dropDuplicates(sensor, ts): keys go when the watermark passes ts or when their sensor is punctuated") {
    val input = MemoryStream[TimedReading]
    val r = declare(input.toDF(), "readings", Schemes -> "sensor", Marker -> "is_punct").withWatermark("ts", "10 minutes")
    val firsts = r.dropDuplicates("sensor", "ts").select("sensor", "ts")
    testStream(firsts)(
      AddData(input, reading(1, "10:01", 1.0), reading(1, "10:01", 2.0), reading(2, "10:03", 1.0), reading(1, "10:20", 1.0)),
      CheckNewAnswer((1L, t("10:01")), (2L, t("10:03")), (1L, t("10:20"))),
      AssertState(keys = 1),                                  // watermark 10:10: ts <= 10:10 forgotten
      AddData(input, reading(2, "10:03", 5.0), reading(3, "10:05", 1.0)),
      CheckNewAnswer(),                                       // behind the watermark: late, not new
      AssertState(keys = 1, late = Some(2)),
      StopStream,
      StartStream(),
      AddData(input, reading(2, "10:15", 1.0), TimedReading(Some(1), None, None, is_punct = true)),
      CheckNewAnswer((2L, t("10:15"))),
      AssertState(keys = 1),                                  // sensor 1's (1, 10:20) forgotten
      AddData(input, reading(3, "10:40", 1.0)),
      CheckNewAnswer((3L, t("10:40"))),
      AssertState(keys = 1))                                  // watermark 10:30: (2, 10:15) forgotten
  }
}

class WatermarkDeduplicateRocksDBSuite extends WatermarkDeduplicateSuite with OnRocksDB
