package punctuated.declaration

/**
 * How a scheme attribute is written (user contract, "Declaring punctuation schemes"): a
 * constant (`attr`: "no more rows with attr = v") or a range, `attr<=` ("no more rows with
 * attr <= v") or `attr>=` ("no more rows with attr >= v") — Tucker et al. 2003, §3, constant
 * and range patterns. A `>=` range is a `<=` range under the reversed order of its column,
 * which is how operators use it (`punctuated.input.KeyScheme.ordering`).
 */
sealed abstract class AttributeKind(val isRange: Boolean, val operator: String)

object AttributeKind {
  case object Constant extends AttributeKind(false, "")
  case object AtMost extends AttributeKind(true, "<=")
  case object AtLeast extends AttributeKind(true, ">=")

  def of(isRange: Boolean, atLeast: Boolean): AttributeKind =
    if (!isRange) Constant else if (atLeast) AtLeast else AtMost
}

/**
 * A punctuation scheme (Li, Chen, Tatemura, Agrawal, Candan, Hsiung 2006, §2): the
 * attributes a punctuation of the stream gives values to. A constant attribute says
 * "no more rows with attr = v"; a range attribute (`attr<=`, `attr>=`) says "no more rows
 * with attr <= v" (or `>= v`) (Tucker et al. 2003, §3 range pattern).
 *
 * @param atLeast for a range: written `attr>=` (else `attr<=`)
 */
final case class SchemeAttribute(name: String, isRange: Boolean, atLeast: Boolean = false) {
  def kind: AttributeKind = AttributeKind.of(isRange, atLeast)

  /** As written in `punctuated.schemes` (backquoted when not a plain identifier). */
  override def toString: String = {
    val quoted = if (name.matches("[A-Za-z_][A-Za-z0-9_]*")) name else s"`${name.replace("`", "``")}`"
    quoted + kind.operator
  }
}

final case class Scheme(attributes: Seq[SchemeAttribute]) {
  def names: Seq[String] = attributes.map(_.name)
  override def toString: String = attributes.mkString(", ")
}

/**
 * The punctuation declaration of one stream (user contract, "Declaring punctuation
 * schemes"), resolved against its columns: names are spelled as in the schema.
 *
 * @param table   the table or stream name, for messages
 * @param schemes the declared schemes (`punctuated.schemes`)
 * @param marker  the BOOLEAN column whose true rows are punctuations (`punctuated.marker`)
 * @param unique  a key of the stream (`punctuated.unique`): every data row implies the
 *                punctuation "no more rows with these values" (Li et al. 2006, §1)
 * @param derived set for the output of a punctuated join read by another join (never for a
 *                table): see [[Derived]]
 */
final case class Declaration(
    table: String,
    schemes: Seq[Scheme],
    marker: Option[String],
    unique: Option[Scheme],
    derived: Option[Derived] = None) {

  /** Columns whose true value marks a punctuation row (the marker, or a derived input's). */
  def markers: Seq[String] = marker.toSeq ++ derived.toSeq.flatMap(_.markers)

  /** Schemes a punctuation row may instantiate: the declared ones and the unique key. */
  def instantiableSchemes: Seq[Scheme] = schemes ++ unique.filterNot(schemes.contains)

  def isEmpty: Boolean = schemes.isEmpty && marker.isEmpty && unique.isEmpty

  /** The declaration written back as the contract's table properties. */
  def toProperties: Map[String, String] =
    Map(Declaration.Schemes -> schemes.mkString("; ")).filter(_._2.nonEmpty) ++
      marker.map(Declaration.Marker -> _) ++
      unique.map(Declaration.Unique -> _.toString)
}

/**
 * What makes a join's output a punctuated stream for the join above it (Li et al. 2006,
 * §4, binary join trees: an intermediate input carries the schemes its operator propagates).
 * The join's output punctuations (Tucker et al. 2003, Table 3) set one input's join-key
 * columns and the marker of the stream those columns come from; the schemes of the derived
 * declaration are those columns, named `stream.column`. Only those on the upper join's own
 * key columns purge: an output punctuation's key is read, and the row routed, by them.
 *
 * @param markers the streams' marker columns: a row with any of them true is a punctuation
 * @param owners  for each scheme column, the marker column of the stream it comes from: the
 *                one an output punctuation on that column sets
 */
final case class Derived(markers: Seq[String], owners: Seq[(String, String)])

object Declaration {
  val Schemes = "punctuated.schemes"
  val Marker = "punctuated.marker"
  val Unique = "punctuated.unique"
  val PropertyKeys: Seq[String] = Seq(Schemes, Marker, Unique)

  /** Is this a key of the `punctuated.*` namespace (known or not; case ignored)? */
  def isPunctuatedKey(key: String): Boolean = key.toLowerCase(java.util.Locale.ROOT).startsWith("punctuated.")

  /**
   * Does this property map declare anything? Any `punctuated.*` key counts, so that a
   * misspelt one (`punctuated.scheme`) is reported rather than ignored.
   */
  def isDeclared(properties: collection.Map[String, String]): Boolean =
    properties.keys.exists(isPunctuatedKey)
}
