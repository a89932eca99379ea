package punctuated.spark

import org.apache.spark.sql.test.SharedSparkSession

import punctuated.spark.rules.{MoveWhereEqualitiesIntoJoins, PunctuateStreamingJoins}

/**
 * Checks how `scripts/spark-suites.sh` loads the extension into Spark's own suites: those
 * build their session from `new SparkConf()` (Spark's `SharedSparkSession`), which reads
 * `spark.*` JVM system properties, so `-Dspark.sql.extensions=...` loads the extension into
 * every suite without changing it. This suite runs first in each of the script's runs and
 * fails when the session's rules do not match the property; under `sbt test` (no property)
 * it asserts the plain session has none of them.
 *
 * {{{
 *   java -Dspark.sql.extensions=punctuated.spark.PunctuatedExtensions ... -s punctuated.spark.SparkSuitesProbeSuite
 * }}}
 */
class SparkSuitesProbeSuite extends SharedSparkSession {

  test("the session loads the extension exactly when spark.sql.extensions names it") {
    val named = sys.props.get("spark.sql.extensions").exists(
      _.split(",").map(_.trim).contains(classOf[PunctuatedExtensions].getName))
    val rules = spark.sessionState.analyzer.postHocResolutionRules
    val loaded = rules.exists(_.isInstanceOf[MoveWhereEqualitiesIntoJoins]) &&
      rules.exists(_.isInstanceOf[PunctuateStreamingJoins])
    assert(loaded == named, s"extension named by the system property: $named, rules loaded: $loaded " +
      s"(${rules.map(_.ruleName).mkString(", ")})")
    // Printed so that the script's log shows which mode the suites ran in.
    info(s"punctuated extension loaded: $loaded")
  }
}
