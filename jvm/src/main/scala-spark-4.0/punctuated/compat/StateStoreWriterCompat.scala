package punctuated.compat

import org.apache.spark.sql.execution.streaming.state.{StateStoreCustomMetric, StateStoreId}

/**
 * Spark 4.0's `StateStoreWriter` with the two members 4.1 added that the extension's
 * operators use (on 4.1 and later `StateStoreWriterCompat` is Spark's `StateStoreWriter`):
 *  - `stateStoreNames`, the stores an operator opens (4.1 sizes its per-instance metrics by it;
 *    4.0 has no such metrics, the extension's own code reads it);
 *  - `setStoreCustomMetrics` (4.0 adds a store's custom metrics only inside
 *    `setStoreMetrics(store)`; the operators also report those of their other stores).
 */
trait StateStoreWriterCompat extends StateStoreWriter {
  val stateStoreNames: Seq[String] = Seq(StateStoreId.DEFAULT_STORE_NAME)

  protected def setStoreCustomMetrics(customMetrics: Map[StateStoreCustomMetric, Long]): Unit =
    customMetrics.foreach { case (metric, value) => longMetric(metric.name) += value }
}
