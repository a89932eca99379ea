package punctuated.declaration

/**
 * Why a declaration is rejected: the sub-condition of error class
 * `PUNCTUATED_INVALID_DECLARATION` (the same names the shared test vectors use).
 */
object Condition extends Enumeration {
  val MALFORMED, EMPTY_SCHEME, UNKNOWN_COLUMN, DUPLICATE_ATTRIBUTE, MARKER_IN_SCHEME,
      UNORDERED_RANGE, MARKER_MISSING, MARKER_NOT_BOOLEAN, MARKER_WITHOUT_SCHEMES = Value
}

/**
 * A bad punctuation declaration, with everything the user needs to fix it.
 *
 * @param condition  what is wrong
 * @param table      the table (or stream) the declaration is on
 * @param property   the property (`punctuated.schemes`, `punctuated.marker`, `punctuated.unique`)
 * @param text       the property's whole text as written
 * @param offending  the part of it that is wrong
 * @param detail     one sentence saying what is wrong
 * @param fix        one sentence saying how to fix it
 */
final case class DeclarationError(
    condition: Condition.Value,
    table: String,
    property: String,
    text: String,
    offending: String,
    detail: String,
    fix: String) {

  def errorClass: String = s"${DeclarationError.ErrorClass}.$condition"

  def message: String =
    s"[$errorClass] Table $table, property '$property' = '$text': $detail. Fix: $fix"
}

object DeclarationError {
  val ErrorClass = "PUNCTUATED_INVALID_DECLARATION"
}

/** Thrown by the parser and validator; [[punctuated.spark.PunctuatedErrors]] turns it into an AnalysisException. */
final class DeclarationException(val error: DeclarationError) extends Exception(error.message)
