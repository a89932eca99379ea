package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

import punctuated.declaration.DeclarationException
import punctuated.errors.PunctuatedErrors
import punctuated.input.DeclaredStreams

/**
 * Check rule: every punctuation declaration on a stream the plan reads is valid.
 * Runs at the end of analysis (so `spark.readStream.table("bids")` or
 * `df.withMetadata(...)` fails at once, not when the query starts) and rejects a bad
 * declaration with `PUNCTUATED_INVALID_DECLARATION.<condition>`, naming the table, the
 * property and the offending text.
 */
case class ValidateDeclarations(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = if (plan.isStreaming) {
    try DeclaredStreams.find(plan, session.sessionState.conf.caseSensitiveAnalysis)
    catch { case e: DeclarationException => throw PunctuatedErrors.invalidDeclaration(e) }
  }
}
