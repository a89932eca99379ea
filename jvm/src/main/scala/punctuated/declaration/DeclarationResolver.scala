package punctuated.declaration

import org.apache.spark.sql.types._

import punctuated.declaration.SchemeParser.RawAttribute

/**
 * Validates the `punctuated.*` properties of one stream against its columns and builds
 * the [[Declaration]]. The first problem found is thrown as a [[DeclarationException]]
 * naming table, property and offending text. Order (the shared test vectors pin it):
 * `punctuated.marker`; then `punctuated.schemes` (syntax of the whole text, then each
 * scheme and attribute left to right: unknown column, duplicate, marker used in a scheme,
 * `<=` on an unordered type); then `punctuated.unique`.
 *
 * {{{
 *   resolve("bids", Map("punctuated.schemes" -> "AUCTION", "punctuated.marker" -> "is_punct"),
 *           StructType.fromDDL("auction BIGINT, is_punct BOOLEAN"))
 *   // Declaration(bids, [auction], Some(is_punct), None)
 * }}}
 */
object DeclarationResolver {
  import Declaration.{Marker, Schemes, Unique}

  def resolve(
      table: String,
      properties: collection.Map[String, String],
      schema: StructType,
      caseSensitive: Boolean = false): Declaration = {
    val columns = new Columns(table, schema, caseSensitive)
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
    val schemes = schemesText.map(text => parse(columns, Schemes, text).map(columns.scheme(Schemes, text, _, marker)))
    val unique = uniqueText.map { text =>
      parse(columns, Unique, text) match {
        case Seq(key) if !key.exists(_.isRange) => columns.scheme(Unique, text, key, marker)
        case _ =>
          throw columns.error(Condition.MALFORMED, Unique, text, text,
            "'punctuated.unique' is one key: attribute names separated by ',' without '<='",
            s"ALTER TABLE $table SET TBLPROPERTIES ('$Unique' = '<attr>, ...')")
      }
    }
    Declaration(table, schemes.getOrElse(Nil), marker, unique)
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
            s"column '$name' does not exist (columns: $names)",
            s"add a BOOLEAN column '$name' or name an existing BOOLEAN column")
        case Some(f) if f.dataType != BooleanType =>
          throw error(Condition.MARKER_NOT_BOOLEAN, Marker, text, name,
            s"column '${f.name}' is ${f.dataType.sql}, not BOOLEAN",
            "the marker must be a BOOLEAN column, true on punctuation rows")
        case Some(f) => f.name
      }
    }

    def scheme(property: String, text: String, raw: Seq[RawAttribute], marker: Option[String]): Scheme = {
      val seen = scala.collection.mutable.Set.empty[String]
      Scheme(raw.map { attr =>
        val written = if (attr.isRange) s"${attr.name}<=" else attr.name
        val field = find(attr.name).getOrElse(throw error(Condition.UNKNOWN_COLUMN, property, text,
          attr.name, s"unknown column '${attr.name}' (columns: $names)",
          s"name columns of $table in '$property'"))
        if (!seen.add(field.name)) {
          throw error(Condition.DUPLICATE_ATTRIBUTE, property, text, attr.name,
            s"column '${field.name}' appears twice in one scheme", "name each column once per scheme")
        }
        if (marker.contains(field.name)) {
          throw error(Condition.MARKER_IN_SCHEME, property, text, attr.name,
            s"the marker column '${field.name}' cannot be a scheme attribute",
            "name data columns only in schemes")
        }
        if (attr.isRange && !isOrdered(field.dataType)) {
          throw error(Condition.UNORDERED_RANGE, property, text, written,
            s"'${field.name}<=' asks for a range on ${field.dataType.sql}, a type without an order",
            s"drop the '<=' (a constant pattern), or use a numeric, string, date or timestamp column")
        }
        SchemeAttribute(field.name, attr.isRange)
      })
    }
  }
}
