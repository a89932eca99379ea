package punctuated.compat

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import punctuated.state.SerializableHadoopConf

/**
 * The 4.0 and 4.1 side of `StateStoreRDDs` (`jvm/src/main/scala-spark-4.0-4.1`): Spark's
 * `mapPartitionsWithStateStore`, which broadcasts the session's Hadoop conf for each
 * micro-batch (`hadoopConf`, the run's, is not needed). The 4.2 side opens the store with the
 * run's conf instead.
 */
object StateStoreRDDs {

  /** `f(store, rows)` for each partition of `data`, the operator's default store opened. */
  def withStateStore(
      data: RDD[InternalRow],
      stateInfo: StatefulOperatorStateInfo,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      session: org.apache.spark.sql.classic.SparkSession,
      coordinator: Option[StateStoreCoordinatorRef],
      hadoopConf: Broadcast[SerializableHadoopConf])(
      f: (StateStore, Iterator[InternalRow]) => Iterator[InternalRow]): RDD[InternalRow] =
    data.mapPartitionsWithStateStore(stateInfo, keySchema, valueSchema, keyStateEncoderSpec,
      session.sessionState, coordinator)(f)
}
