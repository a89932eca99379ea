package punctuated.checkpoint

import java.util.concurrent.ConcurrentHashMap

import punctuated.compat.StatefulOperatorStateInfo

/**
 * What a rule does to an operator's checkpoint when it plans the operator — verify the
 * declarations record ([[CheckpointDeclarations.verify]]), write the operator metadata and
 * schema files ([[StateMetadata.write]]) — is needed once per run of the query: a run's
 * declarations are fixed when it starts (its plan is analyzed once), and Spark too checks and
 * writes its own operator metadata at a run's first micro-batch only. Doing it at every
 * micro-batch cost several file-system reads in each batch's planning.
 *
 * One instance per rule instance, and so per session (a streaming query runs in a session of
 * its own); keyed by the run's id, the checkpoint and the operator. A step that fails is not
 * remembered (the query fails with it).
 *
 * {{{
 *   private val once = new OncePerRun
 *   once(info) { CheckpointDeclarations.verify(info, record, conf); StateMetadata.write(...) }
 * }}}
 */
final class OncePerRun {
  private val done = ConcurrentHashMap.newKeySet[(String, String, Long)]()

  def apply(info: StatefulOperatorStateInfo)(body: => Unit): Unit = {
    val key = (info.queryRunId.toString, info.checkpointLocation, info.operatorId)
    if (!done.contains(key)) {
      body
      done.add(key)
    }
  }
}

/**
 * A value decided once per run of the query for one operator, from its checkpoint, and used
 * by every micro-batch's planning of that run (how an aggregation's shuffle hashes: read from
 * the record before [[CheckpointDeclarations.verify]] may rewrite it). Keyed as [[OncePerRun]].
 */
final class PerRun[T] {
  private val values = new ConcurrentHashMap[(String, String, Long), T]()

  def apply(info: StatefulOperatorStateInfo)(decide: => T): T =
    values.computeIfAbsent((info.queryRunId.toString, info.checkpointLocation, info.operatorId), _ => decide)
}
