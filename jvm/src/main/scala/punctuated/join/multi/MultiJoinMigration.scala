package punctuated.join.multi

import org.json4s._

/**
 * A change of a multi-way join's plan, as the plan record of the micro-batch it happens at
 * carries it ([[punctuated.checkpoint.PlanRecord]]): batch `since` runs another plan than
 * batch `since - 1`, switching at the boundary between them (nothing is in flight there).
 * After Aly et al., JISC (EDBT 2014): the plan changes at once, no input is replayed.
 *
 * What the switch does with the state, per cell (the hypercube cells do not depend on the
 * plan, so every input's rows stay where they are):
 *  - every input's rows, held punctuations and closed values: kept as they are (an input's
 *    state does not depend on the plan);
 *  - an intermediate node both plans have (the same inputs covered: the same rows, whatever
 *    the subtree below it): kept;
 *  - a node only the old plan has: its rows are removed at the switch, one pass over its
 *    store (counted in `numRemovedStateRows`), so that a later switch back starts it empty;
 *  - a node only the new plan has, under `jisc` (default): starts *incomplete* and is
 *    completed per (class, value) key when a probe first needs it, its marks and pending
 *    count in `punctuated-meta` ([[MultiJoinCompletion]]: JISC Procedures 1–3, §4.1–4.5);
 *    `numKeysCompleted` counts the keys completed, `numIncompleteStates` the (node, cell)
 *    pairs still incomplete;
 *  - under `moving_state`: *completed* at the switch batch, before the batch's rows,
 *    bottom-up: its combinations are joined from its children's states (one pass over its
 *    first child's rows, look-ups by class value in the others: JISC §3's Moving State
 *    baseline), leaving out those its purge would remove at once ([[ChainedPurge.check]]
 *    with its inputs covered). Counted in `numKeysCompleted` (distinct values of the node's
 *    first class). A node an earlier `jisc` switch left incomplete that the new plan keeps
 *    (overlapping migrations) is completed at the switch too, value by pending value.
 *  - under `parallel_track`: nothing is completed and nothing emptied at the switch; the
 *    old plan runs beside the new one (whose nodes hold combinations of new rows only) until
 *    punctuations have purged every row stored before the switch in the cell, then it is
 *    dropped ([[ParallelTrack]]: Zhu et al.'s Parallel Track, JISC §2's baseline);
 *    `numParallelPlans` counts the cells still running an old plan.
 *
 * A node both plans have keeps its completion state (a second switch before the first
 * completed, §4.5); a node the new plan drops loses it with its rows.
 *
 * Where a node's rows live: the rows stores a checkpoint has are fixed by its first batch
 * (Spark opens a store at a later version only if it was committed at every version before:
 * `StateStore.get` has no empty start there). A node of the first plan keeps its store
 * ([[MultiJoinLayout.node]]; the store stays open, empty, while another plan runs); a node
 * of any later plan lives in a namespace of `punctuated-meta`
 * ([[MultiJoinLayout.nodeNamespace]]). [[punctuated.checkpoint.PlanRecord.nodeStores]]
 * carries the stores from record to record.
 *
 * {{{
 *   batch 4: mjoin of a, b, c           stores input0..2-mjoin-rows, punctuated-meta
 *   restart with spark.punctuated.join.plan = ((a ⋈ b) ⋈ c):
 *   batch 5: record {"plan": [[0, 1], 2], "migration": {"from": [0, 1, 2],
 *            "strategy": "moving_state", "since": 5}}: node {a, b} is joined from a's and
 *            b's rows into namespace (1 << 20) + 3 of punctuated-meta, then the batch runs
 *   batch 6: record without migration; the same plan
 * }}}
 *
 * A retried batch reads its own record (the plan log) and so switches again from the same
 * state (the stores load the version before the batch). A restart in the middle of a `jisc`
 * migration continues it: which nodes are incomplete, per cell, is in the state, not in the
 * plan record (completion is decided per cell, in the tasks).
 *
 * @param from     the plan of the batch before (canonical)
 * @param strategy how new nodes are completed ([[MultiJoinMigration.Strategies]])
 * @param since    the batch that switches
 */
final case class MultiJoinMigration(from: MultiJoinPlan.Join, strategy: String, since: Long) {
  def toJValue: JValue = JObject(List[JField]("from" -> from.toJValue, "strategy" -> JString(strategy),
    "since" -> JInt(since)))
}

object MultiJoinMigration {
  /** `spark.punctuated.migration.strategy`'s values (results are identical under each). */
  val Strategies: Seq[String] = Seq("jisc", "moving_state", "parallel_track")

  def fromJValue(v: JValue): MultiJoinMigration = (v \ "from", v \ "strategy", v \ "since") match {
    case (from: JArray, JString(s), JInt(b)) =>
      MultiJoinMigration(MultiJoinPlan.fromJValue(from).asInstanceOf[MultiJoinPlan.Join], s, b.toLong)
    case _ => throw new IllegalArgumentException(s"not a plan migration: $v")
  }

  /**
   * A plan's intermediate nodes, bottom-up, each as the inputs it covers in the order its rows
   * hold their columns (a node of the same inputs in another order is another node: its rows
   * are laid out otherwise; it shares their storage, emptied before it is completed).
   */
  def nodeSets(plan: MultiJoinPlan.Join): Seq[Seq[Int]] = MultiJoinPlan.intermediates(plan).map(_.inputs)

  /** Nodes the old plan has and the new one does not: emptied at the switch. */
  def dropped(m: MultiJoinMigration, now: MultiJoinPlan.Join): Seq[Seq[Int]] =
    nodeSets(m.from).filterNot(nodeSets(now).contains)

  /** Nodes the new plan has and the old one does not (bottom-up): incomplete, or completed at the switch. */
  def added(m: MultiJoinMigration, now: MultiJoinPlan.Join): Seq[Seq[Int]] =
    nodeSets(now).filterNot(nodeSets(m.from).contains)

  /** Custom metrics of a migration ([[PunctuatedMultiJoinExec]]). */
  val NumMigrations = "numMigrations"
  val NumIncompleteStates = "numIncompleteStates"
  val NumKeysCompleted = "numKeysCompleted"
  /** Cells still running an old plan beside the current one (`parallel_track`, [[ParallelTrack]]). */
  val NumParallelPlans = "numParallelPlans"
}
