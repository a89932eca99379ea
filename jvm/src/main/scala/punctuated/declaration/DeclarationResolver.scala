package punctuated.declaration

import org.apache.spark.sql.types._

import punctuated.declaration.SchemeParser.RawAttribute

/**
 * Validates the `punctuated.*` properties of one stream against its columns and builds
 * the [[Declaration]]. The first problem found is thrown as a [[DeclarationException]]
 * naming table, property and offending text. Order (the shared test vectors pin it):
 * an unknown `punctuated.*` property (a typo, with the nearest known one); then
 * `punctuated.marker`; then `punctuated.schemes` (syntax of the whole text, then each
 * scheme left to right: its attributes left to right — unknown column, duplicate, marker
 * used in a scheme, `<=` on an unordered type — then the scheme as a whole: more than one
 * range attribute, the same scheme twice, or the same columns as an earlier scheme); then
 * `punctuated.unique`.
 *
 * {{{
 *   resolve("bids", Map("punctuated.schemes" -> "AUCTION", "punctuated.marker" -> "is_punct"),
 *           StructType.fromDDL("auction BIGINT, is_punct BOOLEAN"))
 *   // Declaration(bids, [auction], Some(is_punct), None)
 * }}}
 */
object DeclarationResolver {
  import Declaration.{Marker, PropertyKeys, Schemes, Unique}
  import DeclarationError.shorten

  def resolve(
      table: String,
      properties: collection.Map[String, String],
      schema: StructType,
      caseSensitive: Boolean = false): Declaration = {
    val columns = new Columns(table, schema, caseSensitive)
    unknownProperty(table, properties).foreach(e => throw e)
    val markerText = properties.get(Marker)
    val schemesText = properties.get(Schemes)
    val uniqueText = properties.get(Unique)

    val marker = markerText.map(columns.marker)
    if (schemesText.isDefined && marker.isEmpty) {
      throw columns.error(Condition.MARKER_MISSING, Marker, "", "",
        s"'$Schemes' is declared but '$Marker' is not, so punctuation rows cannot be told apart",
        s"name the BOOLEAN column that flags punctuation rows: ALTER TABLE $table SET " +
          s"TBLPROPERTIES ('$Marker' = '<column>')")
    }
    if (marker.isDefined && schemesText.isEmpty && uniqueText.isEmpty) {
      throw columns.error(Condition.MARKER_WITHOUT_SCHEMES, Marker, markerText.get,
        markerText.get, "a marker column is declared but no scheme a punctuation could instantiate",
        s"declare the schemes: ALTER TABLE $table SET TBLPROPERTIES ('$Schemes' = '<attr>, ...')")
    }
    val schemes = schemesText.map { text =>
      parse(columns, Schemes, text).foldLeft(Vector.empty[Scheme]) { (earlier, raw) =>
        val scheme = columns.scheme(Schemes, text, raw, marker)
        columns.checkScheme(text, scheme, earlier)
        earlier :+ scheme
      }
    }
    val unique = uniqueText.map { text =>
      parse(columns, Unique, text) match {
        case Seq(key) if !key.exists(_.isRange) => columns.scheme(Unique, text, key, marker)
        case _ =>
          throw columns.error(Condition.MALFORMED, Unique, text, text,
            "'punctuated.unique' is one key: attribute names separated by ',' without '<=' or '>='",
            s"ALTER TABLE $table SET TBLPROPERTIES ('$Unique' = '<attr>, ...')")
      }
    }
    Declaration(table, schemes.getOrElse(Nil), marker, unique)
  }

  /**
   * The first `punctuated.*` key (in sorted order) that is not a property of the contract:
   * a typo such as `punctuated.scheme` would otherwise leave the declaration silently
   * incomplete. The message names the nearest known key (edit distance) and all of them.
   */
  private def unknownProperty(table: String, properties: collection.Map[String, String]): Option[DeclarationException] =
    properties.keys.filter(k => Declaration.isPunctuatedKey(k) && !PropertyKeys.contains(k)).toSeq.sorted
      .headOption.map { key =>
        val value = properties(key)
        val nearest = PropertyKeys.map(k => k -> editDistance(key.toLowerCase(java.util.Locale.ROOT), k))
          .minBy(_._2)
        val rename = s"ALTER TABLE $table UNSET TBLPROPERTIES ('${shorten(key)}')"
        val fix = nearest match {
          case (known, d) if d <= 3 =>
            s"did you mean '$known'? Rename it: $rename; ALTER TABLE $table SET TBLPROPERTIES " +
              s"('$known' = '${shorten(value)}')"
          case _ => s"remove it ($rename) or use one of the known properties"
        }
        new DeclarationException(DeclarationError(Condition.UNKNOWN_PROPERTY, table, key, value, key,
          s"'${shorten(key)}' is not a punctuation property (known: ${PropertyKeys.mkString(", ")})", fix))
      }

  /** Levenshtein distance: the fewest single-character edits turning `a` into `b`. */
  private[declaration] def editDistance(a: String, b: String): Int = {
    var previous = Array.tabulate(b.length + 1)(identity)
    for (i <- 1 to a.length) {
      val current = new Array[Int](b.length + 1)
      current(0) = i
      for (j <- 1 to b.length) {
        val substitute = previous(j - 1) + (if (a(i - 1) == b(j - 1)) 0 else 1)
        current(j) = math.min(substitute, math.min(previous(j), current(j - 1)) + 1)
      }
      previous = current
    }
    previous(b.length)
  }

  private def parse(columns: Columns, property: String, text: String): Seq[Seq[RawAttribute]] =
    SchemeParser.parse(text) match {
      case Right(schemes) => schemes
      case Left((condition, detail)) =>
        throw columns.error(condition, property, text, text, detail,
          "write schemes as 'attr, attr<=; attr' (';' between schemes, ',' between attributes)")
    }

  /** The types whose values have an order a range punctuation can use. */
  def isOrdered(dataType: DataType): Boolean = dataType match {
    case _: NumericType | _: StringType | _: CharType | _: VarcharType => true
    case DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  /** Column look-up and error construction for one stream. */
  private final class Columns(table: String, schema: StructType, caseSensitive: Boolean) {
    private def find(name: String): Option[StructField] =
      if (caseSensitive) schema.fields.find(_.name == name)
      else schema.fields.find(_.name.equalsIgnoreCase(name))

    private def names: String = schema.fieldNames.mkString(", ")

    def error(condition: Condition.Value, property: String, text: String, offending: String,
        detail: String, fix: String): DeclarationException =
      new DeclarationException(DeclarationError(condition, table, property, text, offending, detail, fix))

    def marker(text: String): String = {
      val name = text.trim
      find(name) match {
        case None =>
          throw error(Condition.MARKER_MISSING, Marker, text, name,
            s"column '${shorten(name)}' does not exist (columns: $names)",
            s"add a BOOLEAN column '${shorten(name)}' or name an existing BOOLEAN column " +
              "(true on punctuation rows; false or NULL on data rows)")
        case Some(f) if f.dataType != BooleanType =>
          throw error(Condition.MARKER_NOT_BOOLEAN, Marker, text, name,
            s"column '${f.name}' is ${f.dataType.sql}, not BOOLEAN",
            "the marker must be a BOOLEAN column, true on punctuation rows (false or NULL: a data row)")
        case Some(f) => f.name
      }
    }

    def scheme(property: String, text: String, raw: Seq[RawAttribute], marker: Option[String]): Scheme = {
      val seen = scala.collection.mutable.Set.empty[String]
      Scheme(raw.map { attr =>
        val written = attr.written
        val field = find(attr.name).getOrElse(throw error(Condition.UNKNOWN_COLUMN, property, text,
          attr.name, s"unknown column '${shorten(attr.name)}' (columns: $names)",
          s"name columns of $table in '$property'"))
        if (!seen.add(field.name)) {
          throw error(Condition.DUPLICATE_ATTRIBUTE, property, text, attr.name,
            s"'${shorten(attr.name)}' names column '${field.name}' a second time in one scheme",
            "name each column once per scheme")
        }
        if (marker.contains(field.name)) {
          throw error(Condition.MARKER_IN_SCHEME, property, text, attr.name,
            s"the marker column '${field.name}' cannot be a scheme attribute",
            "name data columns only in schemes")
        }
        if (attr.isRange && !isOrdered(field.dataType)) {
          throw error(Condition.UNORDERED_RANGE, property, text, written,
            s"'${field.name}${written.drop(attr.name.length)}' asks for a range on ${field.dataType.sql}, a type without an order",
            s"drop the '${written.drop(attr.name.length)}' (a constant pattern), or use a numeric, string, date or timestamp column")
        }
        SchemeAttribute(field.name, attr.isRange, attr.atLeast)
      })
    }

    /**
     * A resolved scheme as a whole, against the schemes declared before it. A punctuation row
     * is matched to its scheme by the columns it sets (user contract), so two schemes over the
     * same columns cannot be told apart. (A scheme may have several ranges: its punctuations
     * close regions, [[punctuated.model.RangeRegion]].)
     */
    def checkScheme(text: String, scheme: Scheme, earlier: Seq[Scheme]): Unit = {
      earlier.zipWithIndex.find(_._1.names.toSet == scheme.names.toSet).foreach { case (same, i) =>
        val position = s"scheme ${earlier.size + 1} '${shorten(scheme.toString)}'"
        if (same.attributes.toSet == scheme.attributes.toSet) {
          throw error(Condition.DUPLICATE_SCHEME, Schemes, text, scheme.toString,
            s"$position repeats scheme ${i + 1}", "declare each scheme once")
        }
        throw error(Condition.AMBIGUOUS_SCHEMES, Schemes, text, scheme.toString,
          s"$position sets the same columns as scheme ${i + 1} '${shorten(same.toString)}', so a " +
            "punctuation row setting them could instantiate either",
          "keep one of the two (a range 'k<=' also closes each single value a constant 'k' would)")
      }
    }
  }
}
