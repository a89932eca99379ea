package punctuated.state

import org.apache.spark.broadcast.Broadcast
import punctuated.compat.{StatefulOperatorCustomMetric, StateStoreWriterCompat}
import org.apache.spark.sql.execution.streaming.state.StateSchemaValidationResult
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef

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
}
