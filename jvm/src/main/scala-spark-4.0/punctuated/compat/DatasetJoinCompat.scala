package punctuated.compat

/**
 * Spark 4.0's `Dataset.join(right, condition, joinType)` analyzes the new `Join` on its own and
 * casts the analyzed plan to `Join` (`Dataset.resolveSelfJoinCondition`); 4.1 no longer does.
 * The extension's analyzer rule rewrites a punctuated left anti join into a projection of a
 * filtered left outer join (`PunctuateStreamingJoins`), which that cast refuses
 * (`ClassCastException: Project cannot be cast to Join`). On 4.0 the rule therefore leaves an
 * anti join at the root of the plan it analyzes as a (punctuated) anti join, and rewrites it
 * once it is below the root: when the query built on it is analyzed.
 */
object DatasetJoinCompat {
  /** Whether an anti join at the root of an analyzed plan must stay a `Join` (Spark 4.0). */
  val keepRootAntiJoin: Boolean = true
}
