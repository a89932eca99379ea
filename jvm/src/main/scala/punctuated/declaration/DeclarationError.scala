package punctuated.declaration

/**
 * Why a declaration is rejected: the sub-condition of error class
 * `PUNCTUATED_INVALID_DECLARATION` (the same names the shared test vectors use).
 */
object Condition extends Enumeration {
  val UNKNOWN_PROPERTY, MALFORMED, EMPTY_SCHEME, UNKNOWN_COLUMN, DUPLICATE_ATTRIBUTE,
      MARKER_IN_SCHEME, UNORDERED_RANGE, DUPLICATE_SCHEME, AMBIGUOUS_SCHEMES,
      MARKER_MISSING, MARKER_NOT_BOOLEAN, MARKER_WITHOUT_SCHEMES = Value
}

/**
 * A bad punctuation declaration, with everything the user needs to fix it.
 *
 * @param condition  what is wrong
 * @param table      the table (or stream) the declaration is on
 * @param property   the property (`punctuated.schemes`, `punctuated.marker`, `punctuated.unique`,
 *                   or an unknown `punctuated.*` key)
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

  /** The message; user text longer than [[DeclarationError.MaxEcho]] is shortened. */
  def message: String =
    s"[$errorClass] Table $table, property '$property' = '${DeclarationError.shorten(text)}': " +
      s"$detail. Fix: $fix"
}

object DeclarationError {
  val ErrorClass = "PUNCTUATED_INVALID_DECLARATION"

  /** The most characters of user text a message repeats. */
  val MaxEcho = 200

  /**
   * User text as messages repeat it: whole up to [[MaxEcho]] characters, else its start and
   * its length (`"aaaa… (160000 characters)"`), so a huge property value never floods a log.
   */
  def shorten(text: String): String =
    if (text.length <= MaxEcho) text else s"${text.take(MaxEcho)}… (${text.length} characters)"
}

/** Thrown by the parser and validator; [[punctuated.errors.PunctuatedErrors]] turns it into an AnalysisException. */
final class DeclarationException(val error: DeclarationError) extends Exception(error.message)
