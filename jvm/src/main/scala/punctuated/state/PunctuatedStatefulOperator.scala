package punctuated.state

import org.apache.hadoop.conf.Configuration
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import punctuated.compat.{StatefulOperatorCustomMetric, StateStoreRDDs, StateStoreWriterCompat}
import org.apache.spark.sql.execution.streaming.state.StateSchemaValidationResult
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStore, StateStoreConf, StateStoreCoordinatorRef}
import org.apache.spark.sql.types.StructType

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
   * An aggregation's or deduplication's tasks: `task(store, storeConf, hadoopConf, rows)` on
   * each partition of `data`, with the operator's default store (key `keySchema`, value
   * `valueSchema`) opened with the run's Hadoop conf (no broadcast of it per micro-batch), and
   * a store Spark cannot load reported with its damaged files ([[DamagedStateRDD]]). `task`
   * gets the conf to open its held-punctuations store with ([[GroupPunctuations]]).
   *
   * {{{
   *   withKeyStore(child.execute(), keys, values) { (store, storeConf, hadoopConf, rows) =>
   *     new PunctuatedAggregateTask(this, store, storeConf, hadoopConf, wide).run(rows)
   *   }
   * }}}
   */
  protected def withKeyStore(data: RDD[InternalRow], keySchema: StructType, valueSchema: StructType)(
      task: (StateStore, StateStoreConf, Configuration, Iterator[InternalRow]) => Iterator[InternalRow])
      : RDD[InternalRow] = {
    val storeConf = new StateStoreConf(conf)
    val hadoopConf = broadcastHadoopConf()
    val rdd = StateStoreRDDs.withStateStore(data, getStateInfo, keySchema, valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema), session, Some(stateStoreCoordinator), hadoopConf) {
      (store, rows) => task(store, storeConf, hadoopConf.value.value, rows)
    }
    new DamagedStateRDD(rdd, getStateInfo, hadoopConf)
  }

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
