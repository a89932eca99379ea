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

  /**
   * The coordinator Spark's own stateful operators use to place tasks where their stores
   * live (`stateStoreCoordinator` is package-private in Scala, public in bytecode).
   */
  protected def stateStoreCoordinator: StateStoreCoordinatorRef = {
    val manager = session.sessionState.streamingQueryManager
    manager.getClass.getMethod("stateStoreCoordinator").invoke(manager).asInstanceOf[StateStoreCoordinatorRef]
  }

  /**
   * The session's Hadoop conf, for opening extra state stores in tasks: the run's, given by
   * the rule that planned the operator ([[HadoopConfPerRun]]), or broadcast now.
   */
  protected def broadcastHadoopConf(): Broadcast[SerializableHadoopConf] =
    getTagValue(HadoopConfPerRun.Tag).getOrElse(
      sparkContext.broadcast(new SerializableHadoopConf(session.sessionState.newHadoopConf())))
}
