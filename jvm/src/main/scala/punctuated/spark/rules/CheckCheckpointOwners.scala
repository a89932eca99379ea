package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, DeduplicateWithinWatermark, Distinct, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.streaming.WriteToStream

import punctuated.aggregate.PunctuatedAggregates
import punctuated.checkpoint.{StateOwners, UnfinishedRepartition}
import punctuated.checkpoint.StateOwners.PlannedOperator
import punctuated.conf.PunctuatedConf
import punctuated.dedup.PunctuatedDeduplicates
import punctuated.join.multi.MultiJoinGroups
import punctuated.input.PunctuationColumns
import punctuated.spark.JoinGraph

/**
 * Check rule, at `start()` (the analyzed `WriteToStream`, which carries the resolved
 * checkpoint location): a restarted query whose stateful operator would resume state the
 * other engine wrote — ours under Spark's own operator after the declarations were removed,
 * or Spark's own join's under ours after they were added — fails with
 * `PUNCTUATED_INCOMPATIBLE_CHECKPOINT` before Spark plans the first micro-batch
 * ([[StateOwners]]). So does a restart whose joins would run under another join plan than
 * the one that wrote their state (a tree of binary joins against one multi-way join: the
 * groups of [[MultiJoinGroups.of]] under the session's `spark.punctuated.join.plan`). A query
 * with punctuated operators on a checkpoint that Spark's offline state repartitioning left
 * unfinished fails with `PUNCTUATED_UNFINISHED_REPARTITION`, naming the file to delete
 * ([[UnfinishedRepartition]]).
 * Queries that read no state (a new checkpoint) cost one existence check (two with punctuated
 * operators: the offsets, then the state).
 */
case class CheckCheckpointOwners(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan match {
    case w: WriteToStream if !w.deleteCheckpointOnStop =>
      operators(w.inputQuery).foreach { ops =>
        if (ops.nonEmpty) {
          val hadoopConf = session.sessionState.newHadoopConf()
          val ours = ops.filter(_.punctuated).map(o =>
            (o.kind +: o.tables.headOption.map(_ => "of " + o.tables.mkString(", ")).toSeq).mkString(" "))
          if (ours.nonEmpty) {
            UnfinishedRepartition.check(w.resolvedCheckpointLocation, ours, hadoopConf).foreach(e => throw e)
          }
          val stateDir = new org.apache.hadoop.fs.Path(w.resolvedCheckpointLocation, "state").toString
          StateOwners.check(stateDir, ops, hadoopConf).foreach(e => throw e)
        }
      }
    case _ =>
  }

  /**
   * The stateful operators Spark will number, in its order (pre-order, left to right), or
   * None when the plan has one this check does not know (it then judges nothing).
   */
  private def operators(plan: LogicalPlan): Option[Seq[PlannedOperator]] = {
    val conf = PunctuatedConf(session.sessionState.conf)
    val groups = MultiJoinGroups.of(plan, conf.joinPlan, conf.emitPunctuations)
    def joinPlan(j: Join): (String, Seq[String]) =
      groups.find(_.joins.exists(_ eq j)).map { g =>
        (if (g.top eq j) StateOwners.MultiWay else StateOwners.InMultiWay, g.inputs.map(_.name))
      }.getOrElse((StateOwners.Binary, Nil))
    val known = plan.collect {
      case j: Join if j.left.isStreaming && j.right.isStreaming =>
        val (how, inputs) = joinPlan(j)
        Some(PlannedOperator("join", PunctuationColumns.find(j.condition).isDefined, "symmetricHashJoin", tables(j),
          how, conf.joinPlan, inputs))
      case a: Aggregate if a.isStreaming =>
        Some(PlannedOperator("aggregation", PunctuatedAggregates.layoutOf(a).isDefined, "stateStoreSave", tables(a)))
      case d: Deduplicate if d.isStreaming =>
        Some(PlannedOperator("deduplication", PunctuatedDeduplicates.isRewritten(d.child), "dedupe", tables(d)))
      case d: Distinct if d.isStreaming =>
        Some(PlannedOperator("aggregation", punctuated = false, "stateStoreSave", tables(d)))
      case d: DeduplicateWithinWatermark if d.isStreaming =>
        Some(PlannedOperator("deduplication", punctuated = false, "dedupeWithinWatermark", tables(d)))
      case other if other.isStreaming && isOtherStateful(other) => None
    }
    if (known.contains(None)) None else Some(known.flatten)
  }

  /** Stateful operators not judged here (arbitrary state, limits): their presence skips the check. */
  private def isOtherStateful(p: LogicalPlan): Boolean = {
    val name = p.getClass.getSimpleName
    name.contains("State") || name.contains("Limit") || name == "Tail" || name == "Offset"
  }

  private def tables(p: LogicalPlan): Seq[String] =
    p.collectLeaves().flatMap(JoinGraph.tableOf).distinct
}
