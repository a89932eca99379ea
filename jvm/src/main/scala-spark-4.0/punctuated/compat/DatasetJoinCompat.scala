package punctuated.compat

/**
 * Spark 4.0's `Dataset.join(right, condition, joinType)` analyzes the new `Join` on its own and
 * casts the analyzed plan to `Join` (`Dataset.resolveSelfJoinCondition`); 4.1 no longer does.
 * Two of the extension's analyzer rules replace a join by a projection above another plan: a
 * punctuated left anti join becomes a projection of a filtered left outer join
 * (`PunctuateStreamingJoins`), a band-only join a projection of an equi-join on time buckets
 * (`BucketBandOnlyJoins`); that cast refuses both (`ClassCastException: Project cannot be cast
 * to Join`). On 4.0 the rules therefore leave such a join at the root of the plan they analyze
 * as it is (an anti join still marked punctuated), and rewrite it once it is below the root:
 * when the query built on it is analyzed.
 */
object DatasetJoinCompat {
  /** Whether a join at the root of an analyzed plan must stay a `Join` (Spark 4.0). */
  val keepRootJoins: Boolean = true
}
