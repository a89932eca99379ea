package punctuated.join.multi

import org.apache.spark.{OneToOneDependency, Partition, SparkContext, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.{StateStoreCoordinatorRef, StateStoreId, StateStoreProviderId}

/** Partition `index` of a [[StateStoreAwareZipRDD]]: partition `index` of every parent. */
private[multi] final class ZipPartition(override val index: Int, val parents: Array[Partition]) extends Partition

/**
 * The partitions of N RDDs of equally many partitions zipped, run where the operator's
 * state stores of each partition live: Spark's `StateStoreAwareZipPartitionsRDD` (its
 * symmetric hash join's) for any number of inputs. Partition `p` computes
 * `f(p, iterators of partition p of each parent)`; its preferred locations are those the
 * state-store coordinator reports for the stores of partition `p` (as Spark's does).
 *
 * Example: `new StateStoreAwareZipRDD(sc, Seq(a, b, c), info, stores, Some(coordinator))(
 * (cell, its) => task(cell).run(its))`.
 *
 * @param parents     the inputs, each with the operator's number of partitions
 * @param stateInfo   the operator's state (for its stores' locations)
 * @param storeNames  the operator's stores
 * @param coordinator Spark's state-store coordinator (driver side only)
 * @param f           the operator's task
 */
private[multi] class StateStoreAwareZipRDD(
    sc: SparkContext,
    @transient private var parents: Seq[RDD[InternalRow]],
    stateInfo: StatefulOperatorStateInfo,
    storeNames: Seq[String],
    @transient private val coordinator: Option[StateStoreCoordinatorRef])(
    private var f: (Int, IndexedSeq[Iterator[InternalRow]]) => Iterator[InternalRow])
  extends RDD[InternalRow](sc, parents.map(new OneToOneDependency(_))) {

  override protected def getPartitions: Array[Partition] = {
    val sizes = parents.map(_.partitions.length).distinct
    require(sizes.size == 1, s"zipped inputs have different numbers of partitions: $sizes")
    Array.tabulate[Partition](sizes.head)(i => new ZipPartition(i, parents.map(_.partitions(i)).toArray))
  }

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] = {
    val p = split.asInstanceOf[ZipPartition]
    val inputs = dependencies.indices.map { i =>
      dependencies(i).rdd.asInstanceOf[RDD[InternalRow]].iterator(p.parents(i), context)
    }
    f(p.index, inputs)
  }

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    storeNames.flatMap { name =>
      val id = StateStoreProviderId(
        StateStoreId(stateInfo.checkpointLocation, stateInfo.operatorId, split.index, name), stateInfo.queryRunId)
      punctuated.state.StoreLocations.of(coordinator, id)
    }.distinct

  override def clearDependencies(): Unit = {
    super.clearDependencies()
    parents = null
    f = null
  }
}
