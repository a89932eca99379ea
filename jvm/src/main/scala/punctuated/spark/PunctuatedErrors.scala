package punctuated.spark

import org.apache.spark.sql.AnalysisException

import punctuated.declaration.{DeclarationError, DeclarationException}

/**
 * Errors the extension raises, in Spark's shape: an [[AnalysisException]] whose error class
 * is `PUNCTUATED_*` (`getCondition`), with message parameters and an SQLSTATE, so that
 * PySpark raises `pyspark.errors.AnalysisException` carrying the same fields.
 */
class PunctuatedAnalysisException(
    message: String,
    condition: String,
    parameters: Map[String, String],
    state: String,
    cause: Option[Throwable] = None)
  extends AnalysisException(
    message = message,
    cause = cause,
    errorClass = Some(condition),
    messageParameters = parameters,
    sqlState = Some(state)) {
  override def getSqlState: String = state
}

object PunctuatedErrors {

  /** SQLSTATE 42K0I: "SQL config / option or property not found or invalid" class of errors. */
  private val InvalidDeclarationState = "42K0I"

  /** SQLSTATE 0A000: feature not supported (a plan whose state cannot be bounded). */
  def unsafeQuery(text: String): AnalysisException =
    new PunctuatedAnalysisException(
      s"[PUNCTUATED_UNSAFE_QUERY] The query's state could never be purged " +
        s"(${PunctuatedConf.SafetyMode}=strict):\n$text",
      "PUNCTUATED_UNSAFE_QUERY", Map("details" -> text), "0A000")

  def invalidDeclaration(e: DeclarationException): AnalysisException = {
    val error: DeclarationError = e.error
    new PunctuatedAnalysisException(
      error.message,
      error.errorClass,
      Map("table" -> error.table, "property" -> error.property,
        "text" -> DeclarationError.shorten(error.text), "offending" -> DeclarationError.shorten(error.offending)),
      InvalidDeclarationState,
      Some(e))
  }
}
