package punctuated.spark

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.functions.{count, sum}
import org.apache.spark.sql.streaming.OutputMode
import punctuated.compat.MemoryStream

import punctuated.checkpoint.{CheckpointDeclarations, OperatorRecord}
import punctuated.declaration.Declaration._
import punctuated.errors.{PunctuatedAnalysisException, PunctuatedErrors}

/**
 * Range punctuations that close upwards, `attr>=` ("no more rows with attr >= v"; Tucker et
 * al. 2003, §3, range patterns `[v, +inf)`), in every operator. The streams here replay each
 * sensor's history newest day first (a backfill), so each says `sensor, day>=d` once it has
 * sent day d: a join purges the other input's stored rows of that sensor from day d up, an
 * aggregation emits those days' groups, a deduplication forgets those keys, later rows there
 * are late. A time expression or a band closes only on `ts<=` (their groups and bands end at
 * increasing times): strict safety says so. HDFS-backed store; [[AtLeastRangeRocksDBSuite]]
 * runs the same on RocksDB.
 */
class AtLeastRangeSuite extends PunctuatedStreamTest {
  import testImplicits._

  private type R = (Option[Int], Option[Int], Option[Int], Boolean)
  private def row(sensor: Int, day: Int, v: Int): R = (Some(sensor), Some(day), Some(v), false)
  /** "no more rows of `sensor` on day `day` or later" */
  private def from(sensor: Int, day: Int): R = (Some(sensor), Some(day), None, true)

  private def backfill(s: MemoryStream[R], name: String, value: String, scheme: String = "sensor, day>="): DataFrame =
    declare(s.toDF().toDF("sensor", "day", value, "p"), name, Schemes -> scheme, Marker -> "p")

  private def readingsWithAlerts(rs: MemoryStream[R], as: MemoryStream[R], scheme: String = "sensor, day>="): DataFrame = {
    val (r, a) = (backfill(rs, "readings", "v", scheme), backfill(as, "alerts", "level", scheme))
    r.join(a, r("sensor") === a("sensor") && r("day") === a("day")).select(r("sensor"), r("day"), r("v"), a("level"))
  }

  test("join: 'day>=' punctuations purge the other input's rows from that day up; late rows; restart") {
    val (rs, as) = (MemoryStream[R], MemoryStream[R])
    testStream(readingsWithAlerts(rs, as))(
      MultiAddData(rs, row(1, 10, 100), row(1, 9, 90), row(2, 10, 200))(as, row(1, 10, 7)),
      CheckNewAnswer((1, 10, 100, 7)),
      AssertPunctuatedState(rows = 4, punctuations = 0),
      // readings are done with sensor 1 from day 10 up: alerts' (1, 10) goes, (1, 9) is not covered
      AddData(rs, from(1, 10)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 3, punctuations = 2),   // one range per partition
      // alerts are done with sensor 1 from day 9 up: readings' (1, 10) and (1, 9) go; it also
      // covers readings' held `>= 10` (9 is lower: it closes more), which is released
      AddData(as, from(1, 9)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 1, punctuations = 2),
      AssertCounted("numRowsPurged", 3),
      // readings' day 12 of sensor 1 is late (readings said >= 10); day 8 is not
      AddData(rs, row(1, 12, 120), row(1, 8, 80)),
      CheckNewAnswer(),
      AssertCounted("numLateRowsDropped", 1),
      StopStream,
      StartStream(),
      // alerts' day 8 meets readings' day 8; alerts' day 9 is late after the restart (>= 9 held)
      AddData(as, row(1, 8, 3), row(1, 9, 4)),
      CheckNewAnswer((1, 8, 80, 3)),
      AssertCounted("numLateRowsDropped", 1),
      // both close sensor 1 entirely (>= 0) and sensor 2: nothing is left but held punctuations
      MultiAddData(rs, from(1, 0), from(2, 0))(as, from(1, 0), from(2, 0)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("aggregation: GROUP BY sensor, day emits the days a 'day>=' punctuation closes, in append mode") {
    val s = MemoryStream[R]
    val agg = backfill(s, "readings", "v").groupBy("sensor", "day").agg(count("*").as("n"), sum("v").as("total"))
    testStream(agg, OutputMode.Append())(
      AddData(s, row(1, 10, 1), row(1, 10, 2), row(1, 9, 3), row(2, 10, 4)),
      CheckNewAnswer(),
      // sensor 1 is done from day 10 up: (1, 10) is final; (1, 9) and sensor 2 stay open
      AddData(s, from(1, 10), row(1, 9, 5)),
      CheckNewAnswer((1, 10, 2L, 3L)),
      AssertPunctuatedState(rows = 2, punctuations = 0),
      StopStream,
      StartStream(),
      // a row of (1, 11) is late; from(1, 5) closes day 9; from(2, 10) closes sensor 2's day 10
      AddData(s, row(1, 11, 9), from(1, 5), from(2, 10)),
      CheckNewAnswer((1, 9, 2L, 8L), (2, 10, 1L, 4L)),
      AssertCounted("numLateRowsDropped", 1),
      AssertPunctuatedState(rows = 0, punctuations = 0))
  }

  test("deduplication: a 'day>=' punctuation forgets the keys it closes; later rows there are late") {
    val s = MemoryStream[R]
    val firsts = backfill(s, "readings", "v").dropDuplicates("sensor", "day").select("sensor", "day", "v")
    testStream(firsts)(
      AddData(s, row(1, 10, 1), row(1, 10, 2), row(1, 9, 3)),
      CheckNewAnswer((1, 10, 1), (1, 9, 3)),
      AssertPunctuatedState(rows = 2, punctuations = 0),
      AddData(s, from(1, 10), row(1, 9, 4)),
      CheckNewAnswer(),
      AssertPunctuatedState(rows = 1, punctuations = 0),
      StopStream,
      StartStream(),
      AddData(s, row(1, 10, 5), row(1, 8, 6)),
      CheckNewAnswer((1, 8, 6)),
      AssertCounted("numLateRowsDropped", 1))
  }

  test("strict safety: a join on 'day>=' is safe; a time expression or a band does not close on 'ts>='") {
    val (rs, as) = (MemoryStream[R], MemoryStream[R])
    val q = readingsWithAlerts(rs, as).writeStream.format("memory").queryName("at_least_join").start()
    try assert(q.isActive) finally q.stop()

    val ts = MemoryStream[(Option[Int], Option[java.sql.Timestamp], Option[Int], Boolean)]
    val timed = declare(ts.toDF().toDF("sensor", "ts", "v", "p"), "timed", Schemes -> "ts>=", Marker -> "p")
    val hourly = timed.groupBy(org.apache.spark.sql.functions.window($"ts", "1 hour")).count()
    val e = intercept[AnalysisException](
      hourly.writeStream.format("memory").outputMode("append").queryName("at_least_window").start())
    assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
    assert(e.getMessage.contains("'ts>=' punctuations close no group of window(ts") &&
      e.getMessage.contains("Declare 'ts<=' on the stream"), e.getMessage)

    val other = declare(ts.toDF().toDF("sensor", "ts", "w", "p"), "timed2", Schemes -> "ts>=", Marker -> "p")
    val band = timed.join(other, timed("sensor") === other("sensor") &&
      other("ts").between(timed("ts") - org.apache.spark.sql.functions.expr("INTERVAL 1 MINUTE"), timed("ts")))
    val e2 = intercept[AnalysisException](band.writeStream.format("memory").queryName("at_least_band").start())
    assert(e2.getCondition == "PUNCTUATED_UNSAFE_QUERY", e2.getMessage)
    assert(e2.getMessage.contains("declare a range scheme on timed2's time column ('punctuated.schemes' = 'ts<=')"), e2.getMessage)
  }

  test("a checkpoint written with 'day>=' is refused under 'day<=' before the state is touched; the record names '>='") {
    val checkpoint = Files.createTempDirectory("at-least").toFile.getCanonicalPath
    val (rs, as) = (MemoryStream[R], MemoryStream[R])
    testStream(readingsWithAlerts(rs, as))(
      StartStream(checkpointLocation = checkpoint),
      MultiAddData(rs, row(1, 10, 100))(as, row(1, 9, 7)),
      CheckNewAnswer(),
      StopStream)
    val file = new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}/${CheckpointDeclarations.FileName}")
    val recorded = OperatorRecord.fromJson(new String(Files.readAllBytes(file.toPath), "UTF-8"))
    assert(recorded.inputs.map(_.schemes) == Seq(Seq("sensor, day>="), Seq("sensor, day>=")), recorded)

    val flipped = readingsWithAlerts(rs, as, scheme = "sensor, day<=")
    testStream(flipped)(
      StartStream(checkpointLocation = checkpoint),
      AddData(rs, row(1, 9, 90)),
      ExpectFailure[PunctuatedAnalysisException] { e =>
        val a = e.asInstanceOf[AnalysisException]
        assert(a.getCondition == PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
        assert(a.getMessage.contains("sensor, day>="), a.getMessage)
        // the index is there, for the other direction: the message says so, not that it lacks one
        assert(a.getMessage.contains("the checkpoint's index was written for 'sensor, day>=', in the reversed order"),
          a.getMessage)
        assert(!a.getMessage.contains("which the checkpoint lacks"), a.getMessage)
      })
  }
}

class AtLeastRangeRocksDBSuite extends AtLeastRangeSuite with OnRocksDB
