package punctuated.compat

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import punctuated.state.{SerializableHadoopConf, StoreLocations}

/**
 * The 4.2 side of [[StateStoreRDDs]] (`jvm/src/main/scala-spark-4.2`): a punctuated
 * operator's partitions run with its state store opened by [[RunConfStateStoreRDD]], which
 * opens it with the Hadoop conf the operator's tasks already use for their other stores
 * (broadcast once per run, [[punctuated.state.HadoopConfPerRun]]). Spark's
 * `mapPartitionsWithStateStore` builds a `StateStoreRDD`, which broadcasts the session's
 * Hadoop conf again for every micro-batch: about 8 ms of the driver's time per operator and
 * batch (a conf of a thousand entries serialised), before any task starts.
 *
 * Spark's restore step of an aggregation (`mapPartitionsWithReadStateStore`, a
 * `ReadStateStoreRDD`) broadcasts it too; [[RunConfReadStateStoreRDD]] opens the read store
 * with the run's conf, and hands it to the write step of the same task as Spark's does.
 *
 * The 4.0 and 4.1 side calls `mapPartitionsWithStateStore` and `mapPartitionsWithReadStateStore`
 * as before.
 */
object StateStoreRDDs {

  /**
   * `f(store, rows)` for each partition of `data`, the operator's default store opened at the
   * micro-batch's version (from the read store an earlier step of the same task opened, as
   * Spark's restore step does, else anew); the store is aborted if the task ends uncommitted.
   */
  def withStateStore(
      data: RDD[InternalRow],
      stateInfo: StatefulOperatorStateInfo,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      session: org.apache.spark.sql.classic.SparkSession,
      coordinator: Option[StateStoreCoordinatorRef],
      hadoopConf: Broadcast[SerializableHadoopConf])(
      f: (StateStore, Iterator[InternalRow]) => Iterator[InternalRow]): RDD[InternalRow] = {
    new RunConfStateStoreRDD(data, stateInfo, keySchema, valueSchema, keyStateEncoderSpec,
      new StateStoreConf(session.sessionState.conf), hadoopConf, coordinator)({ (store, rows) =>
      TaskContext.get().addTaskCompletionListener[Unit](_ => if (!store.hasCommitted) store.abort())
      f(store, rows)
    })
  }

  /** An aggregation's restore step is ours ([[withReadStateStore]]). */
  val ownReadStore: Boolean = true

  /**
   * `f(store, rows)` for each partition of `data`, the operator's default store opened read-only
   * at the micro-batch's version; a later [[withStateStore]] of the same task (the write step)
   * continues from it, as Spark's write step continues from its restore step's store.
   */
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
    new RunConfReadStateStoreRDD(data, stateInfo, keySchema, valueSchema, keyStateEncoderSpec,
      new StateStoreConf(session.sessionState.conf), hadoopConf, coordinator)({ (store, rows) =>
      // the task's thread forgets the read store when the task ends (a later task of another
      // operator on the same thread must not continue from it)
      TaskContext.get().addTaskCompletionListener[Unit](_ => StateStoreThreadLocalTracker.clearStore())
      f(store, rows)
    })
}

/**
 * Spark's `StateStoreRDD` (Spark 4.2) with the Hadoop conf given instead of broadcast anew:
 * partition `p` computes `f(store of partition p, rows of partition p)`, where Spark's state
 * stores of the operator's partition `p` live (the coordinator's location, as Spark's).
 *
 * @param hadoopConf the run's broadcast conf the stores are opened with
 */
private[compat] class RunConfStateStoreRDD(
    data: RDD[InternalRow],
    stateInfo: StatefulOperatorStateInfo,
    keySchema: StructType,
    valueSchema: StructType,
    keyStateEncoderSpec: KeyStateEncoderSpec,
    storeConf: StateStoreConf,
    hadoopConf: Broadcast[SerializableHadoopConf],
    coordinator: Option[StateStoreCoordinatorRef])(
    f: (StateStore, Iterator[InternalRow]) => Iterator[InternalRow])
  extends OperatorStoreRDD(data, stateInfo, coordinator) {

  override def compute(partition: Partition, context: TaskContext): Iterator[InternalRow] = {
    val id = providerId(partition.index)
    val rows = data.iterator(partition, context)
    val conf = hadoopConf.value.value
    val checkpointId = stateInfo.stateStoreCkptIds.map(_.apply(partition.index).head)
    val store = StateStoreThreadLocalTracker.getStore match {
      case Some(read) =>
        StateStore.getWriteStore(read, id, keySchema, valueSchema, keyStateEncoderSpec,
          stateInfo.storeVersion, checkpointId, stateInfo.stateSchemaMetadata, useColumnFamilies = false,
          storeConf, conf)
      case None =>
        StateStore.get(id, keySchema, valueSchema, keyStateEncoderSpec, stateInfo.storeVersion, checkpointId,
          stateInfo.stateSchemaMetadata, useColumnFamilies = false, storeConf, conf)
    }
    if (storeConf.unloadOnCommit) context.addTaskCompletionListener[Unit](_ => StateStore.doMaintenanceAndUnload(id))
    f(store, rows)
  }
}

/**
 * Spark's `ReadStateStoreRDD` (Spark 4.2) with the Hadoop conf given instead of broadcast anew:
 * partition `p` opens the operator's store of partition `p` read-only, registers it for the
 * task's write step (Spark's `StateStoreThreadLocalTracker`), and computes `f(store, rows)`.
 *
 * @param hadoopConf the run's broadcast conf the store is opened with
 */
private[compat] class RunConfReadStateStoreRDD(
    data: RDD[InternalRow],
    stateInfo: StatefulOperatorStateInfo,
    keySchema: StructType,
    valueSchema: StructType,
    keyStateEncoderSpec: KeyStateEncoderSpec,
    storeConf: StateStoreConf,
    hadoopConf: Broadcast[SerializableHadoopConf],
    coordinator: Option[StateStoreCoordinatorRef])(
    f: (ReadStateStore, Iterator[InternalRow]) => Iterator[InternalRow])
  extends OperatorStoreRDD(data, stateInfo, coordinator) {

  override def compute(partition: Partition, context: TaskContext): Iterator[InternalRow] = {
    val rows = data.iterator(partition, context)
    val store = StateStore.getReadOnly(providerId(partition.index), keySchema, valueSchema, keyStateEncoderSpec,
      stateInfo.storeVersion, stateInfo.stateStoreCkptIds.map(_.apply(partition.index).head),
      stateInfo.stateSchemaMetadata, useColumnFamilies = false, storeConf, hadoopConf.value.value)
    StateStoreThreadLocalTracker.setStore(store)
    f(store, rows)
  }
}

/**
 * What both RDDs above share with Spark's `BaseStateStoreRDD`: the partitions of `data`, and
 * each placed where the coordinator last saw the operator's store of that partition loaded.
 */
private[compat] abstract class OperatorStoreRDD(
    data: RDD[InternalRow],
    stateInfo: StatefulOperatorStateInfo,
    @transient private val coordinator: Option[StateStoreCoordinatorRef]) extends RDD[InternalRow](data) {

  override protected def getPartitions: Array[Partition] = data.partitions

  protected def providerId(partition: Int): StateStoreProviderId = StateStoreProviderId(
    StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, partition), stateInfo.queryRunId)

  override protected def getPreferredLocations(partition: Partition): Seq[String] =
    StoreLocations.of(coordinator, providerId(partition.index)).toSeq
}
