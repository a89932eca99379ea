package punctuated.checkpoint

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import punctuated.compat.StatefulOperatorStateInfo

import punctuated.input.PunctuatedInput
import punctuated.join.multi.{MultiJoinInputSpec, MultiJoinPlan, PunctuatedMultiJoinExec}

/**
 * A multi-way join's checkpoint, as its physical rule writes it on the driver before every
 * micro-batch, in two steps around building the operator:
 *
 * {{{
 *   val plan = MultiJoinCheckpoint.planInForce(info, names, inputs, sharesChosenNow, tree, session)
 *   val exec = PunctuatedMultiJoinExec(..., shares = plan.shares, ..., plan = plan.tree)
 *   MultiJoinCheckpoint.record(exec, declarations, plan, "symmetricHashJoin", members, session)
 * }}}
 *
 *  1. [[planInForce]]: the plan the batch runs with ([[PlanLog]]): the shares recorded for
 *     the state win over the ones the planner chooses now;
 *  2. [[record]], before any state store is opened: the operator's record is verified
 *     against the checkpoint's ([[CheckpointDeclarations.verify]], which refuses another
 *     operator's or plan's state), the plan is logged for the batch, and Spark's state
 *     metadata and schema files describe the operator's stores ([[StateMetadata]]) — and no
 *     store for the group's other joins, whose operator ids keep no state.
 */
object MultiJoinCheckpoint {

  /** An input's name in the plan record: its declared name's last part, else its first column's. */
  def inputName(declaration: Option[PunctuatedInput], output: Seq[Attribute]): String =
    declaration.map(_.name.split('.').last).getOrElse(output.head.name)

  /**
   * The plan batch `info.storeVersion` runs with.
   *
   * @param names  the inputs' names ([[inputName]]), in input order
   * @param inputs the inputs as planned
   * @param shares the hypercube shares the planner chooses now
   * @param plan   the plan tree the planner chooses now (after a recorded plan of another
   *               tree, the batch migrates to it: [[punctuated.join.multi.MultiJoinMigration]])
   * @param strategy `spark.punctuated.migration.strategy`
   */
  def planInForce(info: StatefulOperatorStateInfo, names: Seq[String], inputs: Seq[MultiJoinInputSpec],
      shares: Seq[Int], plan: MultiJoinPlan.Join, session: SparkSession, strategy: String = "moving_state"): PlanRecord =
    PlanLog.inForce(info, PlanRecord.of(names, inputs, shares, plan), session.sessionState.newHadoopConf(), strategy)

  /**
   * Verifies and writes the operator's checkpoint records (see the object's doc).
   *
   * @param exec         the operator, built with `plan.shares`
   * @param declarations each input's declaration (None: undeclared), in input order
   * @param plan         the plan in force ([[planInForce]])
   * @param recordedName the short name of the group's top join as Spark planned it (Spark's
   *                     restart check compares it: see [[StateMetadata]])
   * @param members      the state locations of the group's other joins
   */
  def record(exec: PunctuatedMultiJoinExec, declarations: Seq[Option[PunctuatedInput]], plan: PlanRecord,
      recordedName: String, members: Seq[StatefulOperatorStateInfo], session: SparkSession): Unit = {
    val info = exec.stateInfo.get
    val hadoopConf = session.sessionState.newHadoopConf()
    val columns = exec.childOutputs
    val probed = plan.copy(probeOrders = exec.inputs.indices.map(exec.probeOrder))
    // the operator record leaves out the statistics (they change every batch; the plan log has them)
    CheckpointDeclarations.verify(info, OperatorRecords.multiJoin(exec.shortName, exec.stateStoreNames, exec.inputs,
      declarations.map(_.map(_.declaration)), columns, probed.copy(statistics = None)), hadoopConf)
    PlanLog.write(info, probed, hadoopConf)
    StateMetadata.write(info, recordedName, StoreSchemas.multiJoin(exec.stateStoreNames, columns), session, hadoopConf)
    members.foreach(m => StateMetadata.write(m, recordedName, Nil, session, hadoopConf))
  }
}
