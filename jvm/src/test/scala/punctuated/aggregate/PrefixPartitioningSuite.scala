package punctuated.aggregate

import java.io.File
import java.nio.file.Files

import org.apache.commons.io.FileUtils
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{SparkPlan, UnionExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.joins.SortMergeJoinExec
import org.apache.spark.sql.functions.{col, count, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.checkpoint.{CheckpointDeclarations, OperatorRecord}
import punctuated.compat.{MemoryStream, StateStoreSaveExec, StreamExecution}
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.input.{KeyPrefix, PunctuationReplicatingExchangeExec}
import punctuated.spark.{NotOnRocksDB, OnRocksDB}

/**
 * An aggregation whose punctuations fix part of its grouping key (`sensor` of `GROUP BY
 * sensor, window(ts, ...)` under the scheme `sensor; ts<=`), or a deduplication part of its
 * key, hashes its shuffle by that part
 * ([[KeyPrefix]]): "no more readings of sensor 1" goes to sensor 1's partition only, not to
 * every partition; the range `ts<=` still goes to every one. A checkpoint keeps the hashing it
 * started with (`partitionedBy` in its record), whatever
 * `spark.punctuated.prefixPartitioning` says later. HDFS-backed state store;
 * [[PrefixPartitioningRocksDBSuite]] runs the same on RocksDB. (2 shuffle partitions.)
 */
class PrefixPartitioningSuite extends PerSensorWindows {
  import testImplicits._
  import EventTimeAggregateSuite._

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private def newCheckpoint(): String = Files.createTempDirectory("punctuated-ckpt").toFile.getCanonicalPath

  private def record(checkpoint: String): OperatorRecord = OperatorRecord.fromJson(new String(Files.readAllBytes(
    new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}/${CheckpointDeclarations.FileName}").toPath), "UTF-8"))

  private def exchange(q: StreamExecution) =
    q.lastExecution.executedPlan.collect { case e: PunctuationReplicatingExchangeExec => e }

  /** The columns the aggregation's shuffle hashes by. */
  private def HashedBy(columns: String*) = AssertOnQuery(s"hashed by ${columns.mkString(", ")}") { q =>
    val found = exchange(q).flatMap(_.partitioning.expressions.map(_.asInstanceOf[Attribute].name))
    assert(found == columns, s"hashed by $found")
    true
  }

  /** Copies of punctuations the shuffle sent to every partition in the last micro-batch. */
  private def Replicated(copies: Long) = AssertOnQuery(s"$copies punctuation copies") { q =>
    val found = exchange(q).map(_.metrics("numReplicatedPunctuations").value).sum
    assert(found == copies, s"$found copies")
    true
  }

  private val sensor1 = Seq(Row(1L, t("09:55"), 1L), Row(1L, t("10:00"), 2L), Row(1L, t("10:05"), 1L))
  private val sensor2Early = Seq(Row(2L, t("09:55"), 1L), Row(2L, t("10:00"), 1L))
  private val sensor2Late = Seq(Row(2L, t("10:05"), 1L), Row(2L, t("10:10"), 1L))

  test("hashed by sensor: a sensor's punctuation closes its windows in its own partition, a range in every one") {
    val (input, out) = perSensor()
    val checkpoint = newCheckpoint()
    testStream(out, OutputMode.Append())(
      StartStream(checkpointLocation = checkpoint),
      AddData(input, reading(1, "10:01", 1.0), reading(2, "10:02", 1.0), reading(1, "10:07", 1.0)),
      CheckNewAnswer(),
      HashedBy("sensor"),
      AddData(input, noMoreOf(1)),
      CheckNewAnswer(sensor1: _*),
      Replicated(0),                                   // the whole key: 2, one per partition
      AssertMetric("numClosedValuesRemembered", 1),    // sensor 1's partition only (whole key: 2)
      StopStream,
      // the checkpoint keeps its hashing, whatever the setting says now
      StartStream(checkpointLocation = checkpoint,
        additionalConfs = Map(PunctuatedConf.PrefixPartitioning -> "false")),
      AddData(input, reading(2, "10:12", 1.0), upTo("10:10")),
      CheckNewAnswer(sensor2Early: _*),
      HashedBy("sensor"),
      Replicated(2),                                   // the range goes to both partitions
      AddData(input, noMoreOf(1), upTo("10:30")),      // sensor 1 again: already closed
      CheckNewAnswer(sensor2Late: _*),
      AssertPunctuatedState(rows = 0, punctuations = 2))   // the range's bound, held in each partition
    assert(record(checkpoint).partitionedBy == Some(Seq(0)))
  }

  test("a checkpoint started hashed by the whole key keeps it, as does one written before records") {
    val (input, out) = perSensor()
    val checkpoint = newCheckpoint()
    testStream(out, OutputMode.Append())(
      StartStream(checkpointLocation = checkpoint,
        additionalConfs = Map(PunctuatedConf.PrefixPartitioning -> "false")),
      AddData(input, reading(1, "10:01", 1.0), reading(2, "10:02", 1.0), reading(1, "10:07", 1.0)),
      CheckNewAnswer(),
      HashedBy("sensor", "window"),
      AddData(input, noMoreOf(1)),
      CheckNewAnswer(sensor1: _*),
      Replicated(2),
      AssertMetric("numClosedValuesRemembered", 2),
      StopStream,
      StartStream(checkpointLocation = checkpoint),   // the setting's default: true
      AddData(input, reading(2, "10:12", 1.0), upTo("10:10")),
      CheckNewAnswer(sensor2Early: _*),
      HashedBy("sensor", "window"),
      StopStream)
    assert(record(checkpoint).partitionedBy.isEmpty)
    // as written before records existed: state, no record — hashed by the whole key, as then
    FileUtils.deleteDirectory(new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}"))
    testStream(out, OutputMode.Append())(
      StartStream(checkpointLocation = checkpoint),
      AddData(input, upTo("10:30")),
      CheckNewAnswer(sensor2Late: _*),
      HashedBy("sensor", "window"))
    assert(record(checkpoint).partitionedBy.isEmpty)
  }

  test("hashed by the columns every part-of-key scheme fixes; none in common, or a range alone: the whole key", NotOnRocksDB) {
    def grouped(schemes: String, by: String*): (MemoryStream[TimedReading], DataFrame) = {
      val input = MemoryStream[TimedReading]
      val r = declare(input.toDF(), "readings", Schemes -> schemes, Marker -> "is_punct")
      val keys = by.map(col) :+ window(col("ts"), "10 minutes")
      (input, r.groupBy(keys: _*).agg(count("*").as("n")).select(by.map(col) ++ Seq(col("window.start"), col("n")): _*))
    }
    val noMoreOfTemp1 = TimedReading(None, None, Some(1.0), is_punct = true)
    val (a, sensorTemp) = grouped("sensor; ts<=", "sensor", "temp")
    testStream(sensorTemp, OutputMode.Append())(
      AddData(a, reading(1, "10:01", 1.0), reading(1, "10:02", 2.0), reading(2, "10:03", 1.0)),
      CheckNewAnswer(),
      HashedBy("sensor"),
      AddData(a, noMoreOf(1)),
      CheckNewAnswer(Row(1L, 1.0, t("10:00"), 1L), Row(1L, 2.0, t("10:00"), 1L)),
      AddData(a, upTo("10:10")),
      CheckNewAnswer(Row(2L, 1.0, t("10:00"), 1L)))
    val (b, twoParts) = grouped("sensor; temp; ts<=", "sensor", "temp")
    testStream(twoParts, OutputMode.Append())(
      AddData(b, reading(1, "10:01", 1.0), reading(1, "10:02", 2.0), reading(2, "10:03", 1.0)),
      CheckNewAnswer(),
      HashedBy("sensor", "temp", "window"),
      AddData(b, noMoreOfTemp1),
      CheckNewAnswer(Row(1L, 1.0, t("10:00"), 1L), Row(2L, 1.0, t("10:00"), 1L)),
      AddData(b, noMoreOf(1)),
      CheckNewAnswer(Row(1L, 2.0, t("10:00"), 1L)))
    val (c, rangeAlone) = grouped("ts<=", "sensor")
    testStream(rangeAlone, OutputMode.Append())(
      AddData(c, reading(1, "10:01", 1.0), reading(2, "10:03", 1.0), upTo("10:10")),
      CheckNewAnswer(Row(1L, t("10:00"), 1L), Row(2L, t("10:00"), 1L)),
      HashedBy("sensor", "window"))
  }

  test("a deduplication on (sensor, temp) under 'sensor': hashed by sensor, restarts keep it") {
    val input = MemoryStream[TimedReading]
    val r = declare(input.toDF(), "readings", Schemes -> "sensor", Marker -> "is_punct")
    val out = r.dropDuplicates("sensor", "temp").select(col("sensor"), col("temp"))
    val checkpoint = newCheckpoint()
    testStream(out, OutputMode.Append())(
      StartStream(checkpointLocation = checkpoint),
      AddData(input, reading(1, "10:01", 1.0), reading(1, "10:02", 1.0), reading(2, "10:03", 1.0)),
      CheckNewAnswer(Row(1L, 1.0), Row(2L, 1.0)),
      HashedBy("sensor"),
      AddData(input, noMoreOf(1), reading(2, "10:04", 2.0)),
      CheckNewAnswer(Row(2L, 2.0)),
      Replicated(0),                                   // the whole key: 2, one per partition
      AssertPunctuatedState(rows = 2, punctuations = 0),   // sensor 1's key forgotten
      AssertMetric("numClosedValuesRemembered", 1),    // in sensor 1's partition only
      StopStream,
      StartStream(checkpointLocation = checkpoint,
        additionalConfs = Map(PunctuatedConf.PrefixPartitioning -> "false")),
      AddData(input, reading(1, "10:05", 3.0), reading(2, "10:06", 2.0), reading(3, "10:07", 1.0)),
      CheckNewAnswer(Row(3L, 1.0)),                    // sensor 1's row is late, (2, 2.0) seen
      HashedBy("sensor"),
      AssertCounted("numLateRowsDropped", 1))
    assert(record(checkpoint).partitionedBy == Some(Seq(0)))
  }

  test("an aggregation whose output a join reads in the same stage keeps the whole key; under a union it need not", NotOnRocksDB) {
    // Spark plans exchanges first: a join above the aggregation on its whole key found the
    // aggregation's hashing matching the other side's and did not shuffle it. The save step
    // as our rule finds it: Spark's own aggregation's plan (an undeclared stream)
    val input = MemoryStream[TimedReading]
    val sparks = input.toDF().withWatermark("ts", "0 seconds")
      .groupBy(col("sensor"), window(col("ts"), "10 minutes")).agg(count("*").as("n"))
    var plan: SparkPlan = null
    testStream(sparks, OutputMode.Append())(
      AddData(input, reading(1, "10:01", 1.0)),
      CheckNewAnswer(),
      Execute { q => plan = q.lastExecution.executedPlan })
    val save = plan.collectFirst { case s: StateStoreSaveExec => s }.get
    val id = save.stateInfo.get.operatorId
    val keys = save.keyExpressions
    def coPartitioned(p: SparkPlan) = KeyPrefix.coPartitioned(p) { case s: StateStoreSaveExec => s.stateInfo.get.operatorId }
    assert(coPartitioned(plan).isEmpty)
    assert(coPartitioned(SortMergeJoinExec(keys, keys, Inner, None, save, save)) == Set(id))
    assert(coPartitioned(UnionExec(Seq(save, save))).isEmpty)
    val shuffled = ShuffleExchangeExec(HashPartitioning(keys, 2), save)
    assert(coPartitioned(SortMergeJoinExec(keys, keys, Inner, None, shuffled, shuffled)).isEmpty)
  }
}

class PrefixPartitioningRocksDBSuite extends PrefixPartitioningSuite with OnRocksDB
