package punctuated.state

import org.apache.spark.broadcast.Broadcast
import punctuated.compat.{StatefulOperatorCustomMetric, StateStoreWriterCompat}
import org.apache.spark.sql.execution.streaming.state.StateSchemaValidationResult
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreCoordinatorRef}

/**
 * What every punctuated stateful operator (join, aggregation, deduplication) shares: the
 * contract's custom metrics, no watermark-driven extra batches, its own state layouts (not
 * Spark's schema files), and access to Spark's state-store coordinator and Hadoop conf.
 */
trait PunctuatedStatefulOperator extends StateStoreWriterCompat {

  override protected def customStatefulOperatorMetrics: Seq[StatefulOperatorCustomMetric] =
    PunctuatedJoinMetrics.all

  override def validateAndMaybeEvolveStateSchema(
      hadoopConf: org.apache.hadoop.conf.Configuration,
      batchId: Long,
      stateSchemaVersion: Int): List[StateSchemaValidationResult] = Nil

  override def shouldRunAnotherBatch(newInputWatermark: Long): Boolean = false

  /** Spark's state-store coordinator ([[StoreLocations.coordinator]]). */
  protected def stateStoreCoordinator: StateStoreCoordinatorRef = StoreLocations.coordinator(session)

  /**
   * The session's Hadoop conf, for opening extra state stores in tasks: the run's, given by
   * the rule that planned the operator ([[HadoopConfPerRun]]), or broadcast now.
   */
  protected def broadcastHadoopConf(): Broadcast[SerializableHadoopConf] = HadoopConfPerRun.of(this)

  /**
   * Spark's metrics of an aggregation's or deduplication's two stores: `numRowsTotal` from the
   * data store only (the groups or keys), memory and the provider's custom metrics summed over
   * it and the held-punctuations store (Spark's `setStoreMetrics` reports one store).
   */
  private[punctuated] def reportStoreMetrics(store: StateStore, heldStore: StateStore): Unit = {
    setStoreMetrics(store)
    // read once: a provider's metrics are not free (HDFS-backed: a size estimate of its maps)
    val held = heldStore.metrics
    longMetric("stateMemory") += held.memoryUsedBytes
    setStoreCustomMetrics(held.customMetrics)
    setOperatorMetrics(stateStoreNames.size)
  }
}
