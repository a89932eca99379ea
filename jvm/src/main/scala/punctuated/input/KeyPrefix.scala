package punctuated.input

import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, UnspecifiedDistribution}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike

/**
 * The key columns a punctuated aggregation's (or deduplication's) shuffle hashes by, when its
 * punctuations fix only part of the key: the columns every such scheme fixes (`auction` of
 * `GROUP BY auction, window(...)` under the scheme `auction`). All of a group's rows and every
 * punctuation that names those columns then meet in one partition — the group's home — so a
 * punctuation closing "auction 42 in every window" goes to that partition only instead of to
 * every one ([[PunctuationReplicatingExchangeExec]]); a range alone (`dateTime<=`) still goes
 * to every partition. Hashing by a subset of the grouping columns
 * still clusters each group in one partition (Spark's `ClusteredDistribution`).
 *
 * Spark plans exchanges before this choice, so an operator whose output another input must
 * match partition for partition in the same stage (a join above it with no shuffle between)
 * keeps the whole key ([[coPartitioned]]).
 *
 * Example: key (auction, window), schemes `auction` (kind 1) and `dateTime<=` on window
 * (kind 2): prefix `[0]`, the exchange hashes by `auction`, kind 2 alone is replicated.
 */
object KeyPrefix {

  /**
   * The key positions every part-of-key scheme with constants fixes, if that is a non-empty
   * strict part of the key (none: hash by the whole key, as Spark does).
   */
  def of(layout: AggregateLayout, keyLength: Int): Option[Seq[Int]] = {
    val partial = layout.partitionWide(keyLength).toSeq.sorted.map(k => layout.closing(k - 1))
      .filter(_.constants.nonEmpty)
    if (partial.isEmpty || layout.isUnion) None
    else {
      val common = partial.map(_.constants.toSet).reduce(_ intersect _)
      if (common.isEmpty || common.size >= keyLength) None else Some(common.toSeq.sorted)
    }
  }

  /** The kinds whose punctuations go to every partition under `prefix`. */
  def replicated(layout: AggregateLayout, keyLength: Int, prefix: Option[Seq[Int]]): Set[Int] =
    layout.partitionWide(keyLength).filterNot { k =>
      prefix.exists(p => p.forall(layout.closing(k - 1).constants.contains))
    }

  /** The exchange's hash partitioning restricted to `prefix` (the whole key's otherwise). */
  def partitioning(prefix: Option[Seq[Int]], keyLength: Int): HashPartitioning => HashPartitioning = h =>
    prefix match {
      case Some(p) if h.expressions.length == keyLength && p.forall(_ < keyLength) =>
        HashPartitioning(p.map(h.expressions), h.numPartitions)
      case _ => h
    }

  /**
   * The state operator ids of the keyed operators (`stateful` names a save step or a
   * deduplication by its id) whose output reaches, in the same stage, a node that needs its
   * inputs partitioned alike (a join: Spark found the whole key's hashing matching the other
   * input's, and did not shuffle). A union needs nothing of the kind.
   */
  def coPartitioned(plan: SparkPlan)(stateful: PartialFunction[SparkPlan, Long]): Set[Long] = {
    def walk(p: SparkPlan, belowJoin: Boolean): Seq[Long] = {
      val here = if (belowJoin) stateful.lift(p).toSeq else Nil
      val below = p match {
        case _: ShuffleExchangeLike => false
        case _ if p.children.size > 1 =>
          belowJoin || p.requiredChildDistribution.exists(_ != UnspecifiedDistribution)
        case _ => belowJoin
      }
      here ++ p.children.flatMap(walk(_, below))
    }
    walk(plan, belowJoin = false).toSet
  }
}
