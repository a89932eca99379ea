package punctuated.compat

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import punctuated.state.SerializableHadoopConf

/**
 * The 4.0 and 4.1 side of `StateStoreRDDs` (`jvm/src/main/scala-spark-4.0-4.1`): Spark's
 * `mapPartitionsWithStateStore`, which broadcasts the session's Hadoop conf for each micro-batch
 * (`hadoopConf`, the run's, is not needed), and an aggregation's restore step left Spark's
 * (`mapPartitionsWithReadStateStore` is package-private there). The 4.2 side opens both stores
 * with the run's conf instead.
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

  /** Spark's restore step of an aggregation stays Spark's here (its read-store RDD is Spark-internal). */
  val ownReadStore: Boolean = false

  /** Not used on 4.0 and 4.1 ([[ownReadStore]] is false). */
  def withReadStateStore(
      data: RDD[InternalRow],
      stateInfo: StatefulOperatorStateInfo,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      session: org.apache.spark.sql.classic.SparkSession,
      coordinator: Option[StateStoreCoordinatorRef],
      hadoopConf: Broadcast[SerializableHadoopConf])(
      f: (ReadStateStore, Iterator[InternalRow]) => Iterator[InternalRow]): RDD[InternalRow] =
    throw new UnsupportedOperationException("the restore step stays Spark's on Spark 4.0 and 4.1")
}
