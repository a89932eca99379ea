package punctuated.state

import java.util.UUID

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.SparkPlan

import punctuated.compat.StatefulOperatorStateInfo

/**
 * The session's Hadoop conf, broadcast once per run of a query, for the tasks of the
 * punctuated operators planned by one rule: they open their extra state stores with it (the
 * held punctuations, the join's other stores). A broadcast per operator per micro-batch cost
 * each operator about 10 ms of driver time in every batch (a Hadoop conf holds a thousand
 * entries), where Spark's own stateful operators broadcast theirs already.
 *
 * The conf is the session's when the run's first micro-batch is planned. Spark's own state
 * stores read theirs once too: a store provider is created with the conf of the first batch
 * that opens it and kept for the run, so a conf changed during a run reaches neither.
 *
 * One instance per rule instance, and so per session (a streaming query runs in a session of
 * its own), like [[punctuated.checkpoint.OncePerRun]]; only the current run's broadcast is
 * kept (Spark's context cleaner removes an earlier one once nothing refers to it).
 *
 * {{{
 *   private val hadoopConfs = new HadoopConfPerRun(session)
 *   val exec = PunctuatedAggregateExec(...)
 *   hadoopConfs.attach(exec, s.stateInfo.get)   // exec.broadcastHadoopConf() returns it
 * }}}
 */
final class HadoopConfPerRun(session: SparkSession) {
  private var current: Option[(UUID, Broadcast[SerializableHadoopConf])] = None

  /** The run's broadcast conf (broadcast at the run's first call). */
  def apply(info: StatefulOperatorStateInfo): Broadcast[SerializableHadoopConf] = synchronized {
    current match {
      case Some((run, conf)) if run == info.queryRunId => conf
      case _ =>
        val conf = session.sparkContext.broadcast(new SerializableHadoopConf(session.sessionState.newHadoopConf()))
        current = Some(info.queryRunId -> conf)
        conf
    }
  }

  /** Gives `exec` the run's broadcast conf (a tag: it follows the operator through copies). */
  def attach(exec: SparkPlan, info: StatefulOperatorStateInfo): Unit =
    exec.setTagValue(HadoopConfPerRun.Tag, apply(info))
}

object HadoopConfPerRun {
  /** The tag holding an operator's broadcast Hadoop conf. */
  val Tag: TreeNodeTag[Broadcast[SerializableHadoopConf]] = TreeNodeTag("punctuated.hadoopConf")

  /** The run's conf `exec` was given ([[HadoopConfPerRun.attach]]), or the session's broadcast now. */
  def of(exec: SparkPlan): Broadcast[SerializableHadoopConf] =
    exec.getTagValue(Tag).getOrElse(
      exec.session.sparkContext.broadcast(new SerializableHadoopConf(exec.session.sessionState.newHadoopConf())))
}
