package punctuated

/**
 * Where Spark 4.1 and 4.2 keep the streaming internals the extension uses: this file is
 * compiled into the 4.1 and 4.2 builds (`jvm/src/main/scala-spark-4.1+`); Spark 4.0 keeps the
 * same classes in other packages (`jvm/src/main/scala-spark-4.0`, docs/spark-versions.md).
 * Every source that uses one imports it from here, so one source tree compiles for each:
 *
 * {{{
 *   import punctuated.compat.{StatefulOperatorStateInfo, StateStoreWriter}
 * }}}
 * A type alias stands for the class; a `val` of the same name for its companion object.
 */
package object compat {

  // org.apache.spark.sql.execution.streaming.operators.stateful
  type StatefulOperatorStateInfo = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
  val StatefulOperatorStateInfo = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorStateInfo
  type StatefulOperator = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperator
  type StateStoreWriter = org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreWriter
  /** What the extension's operators extend: Spark's `StateStoreWriter` (4.0 adds `stateStoreNames`, `setStoreCustomMetrics`). */
  type StateStoreWriterCompat = StateStoreWriter
  type StateStoreSaveExec = org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreSaveExec
  type StateStoreRestoreExec = org.apache.spark.sql.execution.streaming.operators.stateful.StateStoreRestoreExec
  type StreamingDeduplicateExec = org.apache.spark.sql.execution.streaming.operators.stateful.StreamingDeduplicateExec
  type EventTimeWatermarkExec = org.apache.spark.sql.execution.streaming.operators.stateful.EventTimeWatermarkExec
  type StatefulOperatorCustomMetric = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorCustomMetric
  type StatefulOperatorCustomSumMetric = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorCustomSumMetric
  val StatefulOperatorCustomSumMetric = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorCustomSumMetric
  val StatefulOperatorPartitioning = org.apache.spark.sql.execution.streaming.operators.stateful.StatefulOperatorPartitioning
  type StreamingAggregationStateManager = org.apache.spark.sql.execution.streaming.operators.stateful.StreamingAggregationStateManager
  val StreamingAggregationStateManager = org.apache.spark.sql.execution.streaming.operators.stateful.StreamingAggregationStateManager

  // org.apache.spark.sql.execution.streaming.operators.stateful.join
  type StreamingSymmetricHashJoinExec = org.apache.spark.sql.execution.streaming.operators.stateful.join.StreamingSymmetricHashJoinExec
  val StreamingSymmetricHashJoinHelper = org.apache.spark.sql.execution.streaming.operators.stateful.join.StreamingSymmetricHashJoinHelper

  // org.apache.spark.sql.execution.streaming.runtime
  type MemoryStream[A] = org.apache.spark.sql.execution.streaming.runtime.MemoryStream[A]
  val MemoryStream = org.apache.spark.sql.execution.streaming.runtime.MemoryStream
  type StreamExecution = org.apache.spark.sql.execution.streaming.runtime.StreamExecution
  type StreamingQueryWrapper = org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
  type StreamingRelation = org.apache.spark.sql.execution.streaming.runtime.StreamingRelation
  val StreamingRelation = org.apache.spark.sql.execution.streaming.runtime.StreamingRelation

  // org.apache.spark.sql.execution.streaming.checkpointing
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

  /** What the extension's connector tables extend (4.0 adds `schema()` from `columns()`). */
  type TableCompat = org.apache.spark.sql.connector.catalog.Table

  // org.apache.spark.sql.catalyst.expressions (4.0: TimeAdd)
  type TimestampAddInterval = org.apache.spark.sql.catalyst.expressions.TimestampAddInterval
  val TimestampAddInterval = org.apache.spark.sql.catalyst.expressions.TimestampAddInterval
}
