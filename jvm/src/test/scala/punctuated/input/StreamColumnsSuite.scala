package punctuated.input

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.analysis.{EliminateSubqueryAliases, EliminateView}
import org.apache.spark.sql.catalyst.optimizer.ColumnPruning
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.functions.{col, count, max, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.{OutputMode, Trigger}

import punctuated.compat.StreamExecution
import punctuated.nexmark.NexmarkStreams
import punctuated.spark.{NotOnRocksDB, OnRocksDB, PunctuatedStreamTest}

/**
 * A filter right above a micro-batch stream reads it through [[StreamColumns]], put in once
 * when the query starts: Spark's `ColumnPruning` then leaves that part of every micro-batch's
 * plan as it is (without it, it puts a projection in under the filter and takes it out again
 * in every pass, as new nodes), and the optimized and physical plans are the ones Spark makes
 * without it. NEXMark bids (a V2 source) under a window, whose `dateTime IS NOT NULL` filter
 * lets the time punctuations through; the answer is the batch computation's, across a restart.
 * HDFS-backed state store; [[StreamColumnsRocksDBSuite]] runs the same on RocksDB.
 */
class StreamColumnsSuite extends PunctuatedStreamTest {

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private val total = 20000L
  private val opts = Map("totalEvents" -> total.toString, "eventsPerBatch" -> "1000",
    "numPartitions" -> "2", "punctuations" -> "true", "timePunctuations" -> "true", "seed" -> "5")

  private def read(options: Map[String, String]): DataFrame =
    spark.readStream.format("nexmark").option("table", "bid").options(options).load()

  private def windows(df: DataFrame): DataFrame = df.groupBy(window(col("dateTime"), "200 milliseconds"))
    .agg(count("*").as("bids"), max("price").as("top"))
    .select(col("window.start"), col("bids"), col("top"))

  /** The plan as the optimizer starts on it, without the views and aliases it drops first. */
  private def bare(plan: LogicalPlan): LogicalPlan = EliminateView(EliminateSubqueryAliases(plan))

  private def withoutStreamColumns(plan: LogicalPlan): LogicalPlan =
    plan.transformUp { case StreamColumns(_, child) => child }

  private def AssertPlans = AssertOnQuery("the filter reads the stream through its columns read; the " +
      "optimizer's column pruning is stable there; optimized plan as without them") { q: StreamExecution =>
    val analyzed = q.lastExecution.analyzed
    val read = analyzed.collect { case s: StreamColumns => s.columns.map(_.name) }
    // the schemes' columns (auction; dateTime<=), the marker and the aggregated price
    assert(read == Seq(Seq("auction", "price", "dateTime", "is_punct")), analyzed.treeString)
    assert(q.lastExecution.optimizedPlan.collect { case s: StreamColumns => s }.isEmpty)
    // one ColumnPruning pass leaves a plan that the next pass returns as the same nodes ...
    val once = ColumnPruning(bare(analyzed))
    assert(ColumnPruning(once) eq once, once.treeString)
    // ... where without them every pass makes the plan anew (equal, but new nodes to the root)
    val before = ColumnPruning(bare(withoutStreamColumns(analyzed)))
    val again = ColumnPruning(before)
    assert((again ne before) && again == before, before.treeString)
    // and the micro-batch's optimized plan is what the optimizer makes without them (below
    // the sink's write, made anew by each run)
    val optimized = q.lastExecution.optimizedPlan.children.head
    val without = spark.sessionState.optimizer.execute(withoutStreamColumns(analyzed)).children.head
    assert(without.treeString(verbose = true) == optimized.treeString(verbose = true), s"$without\n$optimized")
    true
  }

  test("a window's filter reads NEXMark bids through the columns read; the same windows across a restart") {
    val lastMs = total * 1000L / 10000L   // the time of the first event after the stream
    val expected = {
      val rows = NexmarkStreams.batches(read(opts - "timePunctuations" - "punctuations")).values.flatten.toSeq
      rows.groupBy(r => r.getAs[java.sql.Timestamp]("dateTime").getTime / 200L * 200L)
        .filter { case (start, _) => start + 200L <= lastMs }
        .map { case (start, rs) => Row(new java.sql.Timestamp(start), rs.size.toLong, rs.map(_.getAs[Long]("price")).max) }
        .toSeq
    }
    assert(expected.size == lastMs / 200L)
    val checkpoint = java.nio.file.Files.createTempDirectory("stream-columns").toFile.getCanonicalPath
    testStream(windows(read(opts)), OutputMode.Append())(
      StartStream(Trigger.ProcessingTime(100), checkpointLocation = checkpoint),
      AssertOnQuery("a few micro-batches done") { q =>
        eventually(timeout(streamingTimeout)) {
          assert(q.lastProgress != null && q.lastProgress.batchId >= 2)
        }
        true
      },
      AssertPlans,
      StopStream,
      StartStream(checkpointLocation = checkpoint),
      ProcessAllAvailable(),
      AssertPlans,
      AssertOnQuery("no window the stream has passed is held") { q => punctuatedProgress(q).numRowsTotal == 0 },
      CheckAnswerRows(expected, lastOnly = false, isSorted = false))
  }

  test("a stream whose every column is read gets none; an undeclared query is left as it is", NotOnRocksDB) {
    val plain = read(opts - "timePunctuations" - "punctuations")
    // no punctuated operator: Spark's plan, untouched
    testStream(plain.where(col("price") > 100).select("auction"))(
      StartStream(),
      ProcessAllAvailable(),
      AssertOnQuery("no StreamColumns") { q =>
        q.lastExecution.analyzed.collect { case s: StreamColumns => s }.isEmpty
      })
    // every column of the stream read above the window's filter: nothing to prune
    val allRead = read(opts).groupBy(window(col("dateTime"), "200 milliseconds"))
      .agg(max("auction"), max("bidder"), max("price"), max("channel"), max("url"), max("extra"))
    testStream(allRead, OutputMode.Append())(
      StartStream(),
      ProcessAllAvailable(),
      AssertOnQuery("no StreamColumns") { q =>
        q.lastExecution.analyzed.collect { case s: StreamColumns => s }.isEmpty
      })
  }
}

class StreamColumnsRocksDBSuite extends StreamColumnsSuite with OnRocksDB
