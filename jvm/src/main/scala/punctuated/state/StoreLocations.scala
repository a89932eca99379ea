package punctuated.state

import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.streaming.state.{StateStoreCoordinatorRef, StateStoreProviderId}

/**
 * Where a state store's provider is loaded, as Spark's state-store coordinator knows it: the
 * preferred location of a task that opens the store (Spark's `StateStoreRDD` asks the same),
 * so that a micro-batch's task finds the provider it loaded in the last one.
 *
 * {{{
 *   StoreLocations.of(Some(coordinator), providerId)   // e.g. Some("executor_host_1"), None if unknown
 * }}}
 */
object StoreLocations {

  /**
   * The coordinator Spark's own stateful operators use to place tasks where their stores
   * live (`stateStoreCoordinator` is package-private in Scala, public in bytecode).
   */
  def coordinator(session: SparkSession): StateStoreCoordinatorRef = {
    val manager = session.sessionState.streamingQueryManager
    manager.getClass.getMethod("stateStoreCoordinator").invoke(manager).asInstanceOf[StateStoreCoordinatorRef]
  }

  /** The executor the coordinator last saw `id` loaded on, if any (driver side only). */
  def of(coordinator: Option[StateStoreCoordinatorRef], id: StateStoreProviderId): Option[String] =
    // `getLocation` is package-private in Scala, public in bytecode
    coordinator.flatMap(c => c.getClass.getMethod("getLocation", classOf[StateStoreProviderId])
      .invoke(c, id).asInstanceOf[Option[String]])
}
