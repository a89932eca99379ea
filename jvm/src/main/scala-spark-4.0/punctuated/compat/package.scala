package punctuated

/**
 * Where Spark 4.0 keeps the streaming internals the extension uses: this file is compiled
 * only into the 4.0 build (`jvm/src/main/scala-spark-4.0`). Spark 4.1 moved them into
 * `execution.streaming.operators.stateful`, `.operators.stateful.join`, `.runtime` and
 * `.checkpointing` (`jvm/src/main/scala-spark-4.1+`, docs/spark-versions.md); every source
 * imports them from here, so one source tree compiles for each:
 *
 * {{{
 *   import punctuated.compat.{StatefulOperatorStateInfo, StateStoreWriter}
 * }}}
 * A type alias stands for the class; a `val` of the same name for its companion object.
 */
package object compat {
  // org.apache.spark.sql.execution.streaming (StreamingAggregationStateManager: .state)
  type StatefulOperatorStateInfo = org.apache.spark.sql.execution.streaming.StatefulOperatorStateInfo
  val StatefulOperatorStateInfo = org.apache.spark.sql.execution.streaming.StatefulOperatorStateInfo
  type StatefulOperator = org.apache.spark.sql.execution.streaming.StatefulOperator
  type StateStoreWriter = org.apache.spark.sql.execution.streaming.StateStoreWriter
  // StateStoreWriterCompat, TableCompat, AnalysisExceptionCompat: classes in this directory
  type StateStoreSaveExec = org.apache.spark.sql.execution.streaming.StateStoreSaveExec
  type StateStoreRestoreExec = org.apache.spark.sql.execution.streaming.StateStoreRestoreExec
  type StreamingDeduplicateExec = org.apache.spark.sql.execution.streaming.StreamingDeduplicateExec
  type EventTimeWatermarkExec = org.apache.spark.sql.execution.streaming.EventTimeWatermarkExec
  type StatefulOperatorCustomMetric = org.apache.spark.sql.execution.streaming.StatefulOperatorCustomMetric
  type StatefulOperatorCustomSumMetric = org.apache.spark.sql.execution.streaming.StatefulOperatorCustomSumMetric
  val StatefulOperatorCustomSumMetric = org.apache.spark.sql.execution.streaming.StatefulOperatorCustomSumMetric
  val StatefulOperatorPartitioning = org.apache.spark.sql.execution.streaming.StatefulOperatorPartitioning
  type StreamingAggregationStateManager = org.apache.spark.sql.execution.streaming.state.StreamingAggregationStateManager
  val StreamingAggregationStateManager = org.apache.spark.sql.execution.streaming.state.StreamingAggregationStateManager
  type StreamingSymmetricHashJoinExec = org.apache.spark.sql.execution.streaming.StreamingSymmetricHashJoinExec
  val StreamingSymmetricHashJoinHelper = org.apache.spark.sql.execution.streaming.StreamingSymmetricHashJoinHelper
  type MemoryStream[A] = org.apache.spark.sql.execution.streaming.MemoryStream[A]
  val MemoryStream = org.apache.spark.sql.execution.streaming.MemoryStream
  type StreamExecution = org.apache.spark.sql.execution.streaming.StreamExecution
  type StreamingQueryWrapper = org.apache.spark.sql.execution.streaming.StreamingQueryWrapper
  type StreamingRelation = org.apache.spark.sql.execution.streaming.StreamingRelation
  val StreamingRelation = org.apache.spark.sql.execution.streaming.StreamingRelation
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager

  // org.apache.spark.sql.catalyst.expressions: 4.1 renamed TimeAdd (same fields) to TimestampAddInterval
  type TimestampAddInterval = org.apache.spark.sql.catalyst.expressions.TimeAdd
  val TimestampAddInterval = org.apache.spark.sql.catalyst.expressions.TimeAdd
}
