package punctuated.state

import scala.reflect.ClassTag

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.rdd.RDD
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StateStoreProviderId}


/**
 * The RDD of Spark's `mapPartitionsWithStateStore` (which opens the operator's default state
 * store before any of the operator's code runs), with a store that cannot be loaded reported
 * by [[DamagedCheckpoint.opening]]: the damaged files and the fix instead of Spark's
 * uncategorized load error. Partitions, locations and rows are the parent's.
 *
 * {{{
 *   DamagedStateRDD(child.execute().mapPartitionsWithStateStore(info, ...)(f), info, hadoopConf)
 * }}}
 *
 * @param prev       the state store RDD
 * @param info       its operator's state
 * @param hadoopConf to list the store's files after a failure
 */
final class DamagedStateRDD[T: ClassTag](prev: RDD[T], info: StatefulOperatorStateInfo,
    hadoopConf: Broadcast[SerializableHadoopConf]) extends RDD[T](prev) {

  override protected def getPartitions: Array[Partition] = prev.partitions
  override protected def getPreferredLocations(p: Partition): Seq[String] = prev.preferredLocations(p)

  override def compute(split: Partition, context: TaskContext): Iterator[T] = {
    val id = StateStoreProviderId(
      StateStoreId(info.checkpointLocation, info.operatorId, split.index, StateStoreId.DEFAULT_STORE_NAME),
      info.queryRunId)
    DamagedCheckpoint.opening(id, info.storeVersion, hadoopConf.value.value)(prev.iterator(split, context))
  }
}
