package punctuated.spark

import org.apache.spark.sql.SparkSessionExtensions

import punctuated.spark.rules.ValidateDeclarations

/**
 * Punctuated's entry point: `spark.sql.extensions=punctuated.spark.PunctuatedExtensions`.
 *
 * A registry: one commented `inject*` per rule, each rule in its own file under
 * `punctuated.spark.rules`.
 */
class PunctuatedExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    // Reject bad punctuation declarations (table properties or with_schemes metadata) at
    // analysis, naming table, property and offending text.
    extensions.injectCheckRule(ValidateDeclarations)
  }
}
