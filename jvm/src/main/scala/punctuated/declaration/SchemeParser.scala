package punctuated.declaration

/**
 * Parses the text of `punctuated.schemes` / `punctuated.unique` (user contract,
 * "Declaring punctuation schemes"):
 *
 * {{{
 *   text      := scheme (';' scheme)*
 *   scheme    := attribute (',' attribute)*
 *   attribute := identifier ['<=' | '>=']  -- plain: constant pattern; '<=', '>=': range pattern
 *   identifier:= [A-Za-z_][A-Za-z0-9_]* | '`' (any-but-backquote | '``')+ '`'
 * }}}
 * White space is ignored. Inside backquotes a backquote is doubled, as in Spark SQL
 * (`` `a``b` `` names the column a`b); any other name (non-ASCII letters, a leading digit,
 * spaces) must be backquoted, and the error says so. `"auction; bidder, day<="` gives two schemes:
 * `[auction]` and `[bidder, day<=]`. Only syntax is checked here; names are resolved
 * against the table's columns by [[DeclarationResolver]].
 */
object SchemeParser {

  /** An attribute as written: its name (unresolved), whether it was written `name<=` or `name>=`
   * (a range), and which of the two (`atLeast`: `>=`). */
  final case class RawAttribute(name: String, isRange: Boolean, atLeast: Boolean = false) {
    def written: String = name + punctuated.declaration.AttributeKind.of(isRange, atLeast).operator
  }

  /** Either the schemes, or the failing condition with a description of the problem. */
  def parse(text: String): Either[(Condition.Value, String), Seq[Seq[RawAttribute]]] = {
    val schemes = splitTopLevel(text, ';')
    if (schemes.exists(_.trim.isEmpty)) {
      // An empty scheme is reported only when the text is otherwise well formed.
      val bad = schemes.filter(_.trim.nonEmpty).flatMap(s => parseScheme(s).left.toOption)
      bad.headOption.map(e => Left((Condition.MALFORMED, e)))
        .getOrElse(Left((Condition.EMPTY_SCHEME, "a scheme has no attributes")))
    } else {
      val parsed = schemes.map(parseScheme)
      parsed.collectFirst { case Left(e) => Left((Condition.MALFORMED, e)) }
        .getOrElse(Right(parsed.collect { case Right(s) => s }))
    }
  }

  private def parseScheme(scheme: String): Either[String, Seq[RawAttribute]] = {
    val attrs = splitTopLevel(scheme, ',').map(parseAttribute)
    attrs.collectFirst { case Left(e) => Left(e) }.getOrElse(Right(attrs.collect { case Right(a) => a }))
  }

  private val Plain = "[A-Za-z_][A-Za-z0-9_]*".r
  private val Quoted = "`((?:[^`]|``)+)`".r
  /** One word that is no plain name but would be a name backquoted (`prénom`, `1st`). */
  private val Word = "[^\\s`,;<=>]+".r

  private def parseAttribute(raw: String): Either[String, RawAttribute] = {
    val text = raw.trim
    if (text.isEmpty) return Left("an attribute is empty (two separators in a row?)")
    val (body, isRange, atLeast) =
      if (text.endsWith("<=")) (text.dropRight(2).trim, true, false)
      else if (text.endsWith(">=")) (text.dropRight(2).trim, true, true)
      else (text, false, false)
    body match {
      case Plain() => Right(RawAttribute(body, isRange, atLeast))
      case Quoted(name) => Right(RawAttribute(name.replace("``", "`"), isRange, atLeast))
      case Word() =>
        Left(s"'${DeclarationError.shorten(body)}' is not a plain name ([A-Za-z_][A-Za-z0-9_]*): " +
          s"backquote it: `${DeclarationError.shorten(body)}`")
      case _ => Left(s"'${DeclarationError.shorten(text)}' is not an attribute name optionally followed by '<=' or '>='")
    }
  }

  /** Splits on `sep` outside backquotes (a backquoted name may contain ';' or ','). */
  private def splitTopLevel(text: String, sep: Char): Seq[String] = {
    val parts = Seq.newBuilder[String]
    val current = new StringBuilder
    var quoted = false
    text.foreach { ch =>
      if (ch == '`') quoted = !quoted
      if (ch == sep && !quoted) { parts += current.toString; current.clear() }
      else current += ch
    }
    parts += current.toString
    parts.result()
  }
}
