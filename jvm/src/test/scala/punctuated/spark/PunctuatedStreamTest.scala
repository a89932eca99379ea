package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.streaming.StreamTest

import punctuated.input.DeclaredStreams

/**
 * Base of the extension's streaming suites: Spark's own streaming test kit (`testStream`,
 * `MemoryStream`, `AddData`, `CheckNewAnswer`, `StopStream`, `StartStream` ...) on a local
 * session that loads the extension exactly as users do, through `spark.sql.extensions`.
 */
trait PunctuatedStreamTest extends StreamTest {
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.extensions", classOf[PunctuatedExtensions].getName)
    .set("spark.sql.shuffle.partitions", "2")
    .set("spark.sql.warehouse.dir", warehouse.getCanonicalPath)

  private lazy val warehouse = java.nio.file.Files.createTempDirectory("punctuated-warehouse").toFile

  /** Attaches a declaration to a stream the way `punctuated.with_schemes` does. */
  protected def declare(df: org.apache.spark.sql.DataFrame, name: String,
      properties: (String, String)*): org.apache.spark.sql.DataFrame = {
    val metadata = DeclaredStreams.metadataFor(name, properties.toMap)
    df.select(df.columns.toIndexedSeq.map(c => org.apache.spark.sql.functions.col(c).as(c, metadata)): _*)
  }

  /**
   * The progress of the last executed batch. Spark reports it just after the batch commits, so a
   * test step that runs right after the commit may see the previous batch's progress: wait for it.
   */
  protected def settledProgress(q: punctuated.compat.StreamExecution) = {
    val executed = Option(q.lastExecution).map(_.currentBatchId).getOrElse(-1L)
    val deadline = System.nanoTime() + 10L * 1000 * 1000 * 1000
    while ((q.lastProgress == null || q.lastProgress.batchId < executed) && System.nanoTime() < deadline) {
      Thread.sleep(10)
    }
    q.lastProgress
  }

  /** A punctuated operator holding state (a multi-way group's member holds none). */
  private def holdsState(op: org.apache.spark.sql.streaming.StateOperatorProgress): Boolean =
    op.operatorName.startsWith("punctuated") && op.operatorName != "punctuatedMultiJoinMember"

  protected def punctuatedProgress(q: punctuated.compat.StreamExecution) = {
    val progress = settledProgress(q)
    progress.stateOperators.find(holdsState).getOrElse(
      throw new AssertionError(s"no punctuated operator in ${progress.json}"))
  }

  /**
   * A metric of the punctuated operator after the last batch: for what the operator holds
   * (`numPunctuationsHeld`, `numRangeIndexEntries`, ...).
   */
  protected def AssertMetric(name: String, value: Long) = AssertOnQuery(s"$name == $value") { q =>
    val got = punctuatedProgress(q).customMetrics.get(name)
    assert(got == value, s"$name = $got, expected $value: ${settledProgress(q).json}")
    true
  }

  /**
   * A counter of the punctuated operator (`numLateRowsDropped`, `numRowsPurged`, ...) summed
   * over every batch this run of the query has executed. Rows added by consecutive steps may
   * fall into one micro-batch or several (the stream lists each source in turn), so a count
   * of the last batch alone depends on timing; the run's sum does not.
   */
  protected def AssertCounted(name: String, value: Long) = AssertOnQuery(s"$name counted $value") { q =>
    val last = settledProgress(q)
    val got = punctuatedCount(q, name)
    assert(got == value, s"$name = $got over this run's batches, expected $value; last batch: ${last.json}")
    true
  }

  /** A counter of the punctuated operator summed over the batches this run executed. */
  protected def punctuatedCount(q: punctuated.compat.StreamExecution, name: String): Long = {
    settledProgress(q)
    q.recentProgress.toSeq
      .filter(_.durationMs.containsKey("addBatch"))   // executed batches, not idle reports
      .groupBy(_.batchId).values.map(_.last).toSeq
      .flatMap(_.stateOperators.find(holdsState))
      .map(op => Option(op.customMetrics.get(name)).map(_.longValue).getOrElse(0L)).sum
  }

  /** Asserts the punctuated operator's state after the last batch. */
  protected def AssertPunctuatedState(rows: Long, punctuations: Long) =
    AssertOnQuery(s"state: $rows rows, $punctuations punctuations") { q =>
      val p = punctuatedProgress(q)
      assert(p.numRowsTotal == rows, s"numRowsTotal ${p.numRowsTotal} != $rows: ${p.json}")
      assert(p.customMetrics.get("numPunctuationsHeld") == punctuations,
        s"numPunctuationsHeld ${p.customMetrics.get("numPunctuationsHeld")} != $punctuations: ${p.json}")
      true
    }

  /** Creates a parquet catalog table and drops it after `body`. */
  protected def withDeclaredTable(name: String, columns: String, properties: Map[String, String])(
      body: => Unit): Unit = {
    val props =
      if (properties.isEmpty) ""
      else properties.map { case (k, v) => s"'$k' = '$v'" }.mkString(" TBLPROPERTIES (", ", ", ")")
    sql(s"CREATE TABLE $name ($columns) USING parquet$props")
    try body finally sql(s"DROP TABLE IF EXISTS $name")
  }
}
