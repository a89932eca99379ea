package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleExchangeLike}
import punctuated.compat.StatefulOperatorStateInfo

import punctuated.checkpoint.{CheckpointDeclarations, PerRun}
import punctuated.conf.PunctuatedConf
import punctuated.input.{AggregateLayout, KeyPrefix, PartitionWideRows, PunctuationReplicatingExchangeExec}

/**
 * Used by the rules planning a single-input punctuated operator (aggregation, deduplication):
 * its shuffle — the first exchange below it, through its unary steps (Spark's restore and
 * merge steps of an aggregation) — becomes a [[PunctuationReplicatingExchangeExec]], so the
 * operator's partition-wide punctuations reach every partition in the same stage instead of
 * being gathered by a job of their own.
 *
 * {{{
 *   PunctuatedAggregateExec                   PunctuatedAggregateExec
 *     HashAggregate(merge)                      HashAggregate(merge)
 *       StateStoreRestore          ==>            StateStoreRestore
 *         HashAggregate(merge)                      HashAggregate(merge)
 *           Exchange hashpartitioning(hour)           PunctuationReplicatingExchange
 * }}}
 */
object ReplicatingShuffles {

  /**
   * `plan` with its first exchange replaced, and the replaced exchange's partitioning (the
   * operator's tasks find their home copies by it); unchanged, with `None`, when that
   * exchange is not Spark's hash shuffle or `wide` declines its input (no partition-wide kinds).
   *
   * @param wide which rows of the exchange's input (given its output) go to every partition
   */
  def replace(plan: SparkPlan, keys: HashPartitioning => HashPartitioning = identity)(
      wide: Seq[Attribute] => Option[PartitionWideRows]): (SparkPlan, Option[HashPartitioning]) = {
    var replaced: Option[HashPartitioning] = None
    def walk(p: SparkPlan): SparkPlan = p match {
      case e: ShuffleExchangeExec =>
        (e.outputPartitioning, wide(e.child.output)) match {
          case (h: HashPartitioning, Some(rows)) =>
            val partitioning = keys(h)
            replaced = Some(partitioning)
            PunctuationReplicatingExchangeExec(partitioning, rows, e.child)
          case _ => e
        }
      case _: ShuffleExchangeLike => p
      case u: UnaryExecNode => u.withNewChildren(Seq(walk(u.child)))
      case other => other
    }
    val result = walk(plan)
    (result, replaced)
  }

  /**
   * The key positions a keyed operator's shuffle hashes by (None: the whole key), decided at a
   * run's first micro-batch and kept for the run in `decided`: a checkpoint that holds state
   * keeps its recorded hashing; a new one takes [[KeyPrefix.of]] unless
   * `spark.punctuated.prefixPartitioning` is off or a join reads the operator in its stage
   * (`coPartitioned`).
   */
  def prefix(session: SparkSession, info: StatefulOperatorStateInfo, layout: AggregateLayout, keyLength: Int,
      coPartitioned: Set[Long], decided: PerRun[Option[Seq[Int]]]): Option[Seq[Int]] =
    decided(info) {
      CheckpointDeclarations.recordedPartitioning(info, session.sessionState.newHadoopConf()).getOrElse(
        if (!PunctuatedConf.prefixPartitioning(session.sessionState.conf) || coPartitioned(info.operatorId)) None
        else KeyPrefix.of(layout, keyLength))
    }

  /** What the checkpoint records: `prefix` where [[replace]] applied it, else the whole key. */
  def applied(prefix: Option[Seq[Int]], replaced: Option[HashPartitioning]): Option[Seq[Int]] =
    prefix.filter(p => replaced.exists(_.expressions.length == p.length))
}
