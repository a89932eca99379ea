package punctuated.compat

/**
 * Spark 4.1 and later analyze a `Dataset.join` without casting the analyzed plan to `Join`, so
 * the extension's analyzer rules rewrite a punctuated anti join or a band-only join wherever it
 * is (the 4.0 side, `jvm/src/main/scala-spark-4.0`, says what differs there).
 */
object DatasetJoinCompat {
  /** Whether a join at the root of an analyzed plan must stay a `Join` (Spark 4.0). */
  val keepRootJoins: Boolean = false
}
