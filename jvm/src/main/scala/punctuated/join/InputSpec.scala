package punctuated.join

import punctuated.state.KeyScheme

/**
 * What the join needs to know of one input's declaration, in ordinals of that input's rows.
 *
 * @param name            the stream's name, for messages
 * @param markerOrdinal   ordinal of the marker column its output punctuations set, or -1
 * @param dataOrdinals    ordinals of the other columns
 * @param schemes         for each declared scheme (and the unique key), the ordinals it sets
 *                        and its [[KeyScheme]] if it can purge (None otherwise)
 * @param schemeNames     the declared schemes as written, for messages
 * @param unique          the unique key as a [[KeyScheme]], if it is part of the join key
 * @param columnNames     column names of the input, for messages
 * @param punctuationOrdinals ordinals of the columns whose true value marks a punctuation row
 *                        (the marker; for a join's output read by another join, each
 *                        input's marker: [[punctuated.declaration.Derived]])
 * @param owners          for a join's output: column ordinal → ordinal of the marker of the
 *                        stream it comes from (see `markerFor`)
 */
final case class InputSpec(
    name: String,
    markerOrdinal: Int,
    dataOrdinals: Array[Int],
    schemes: Seq[(Set[Int], Option[KeyScheme])],
    schemeNames: Seq[String],
    unique: Option[KeyScheme],
    columnNames: Seq[String],
    punctuationOrdinals: Array[Int],
    owners: Map[Int, Int] = Map.empty) {

  /**
   * The marker an output punctuation on these columns sets: this input's marker, or, for a
   * join's output, the marker of the stream the columns come from (-1: none, or several).
   */
  def markerFor(columns: Seq[Int]): Int =
    if (markerOrdinal >= 0) markerOrdinal
    else columns.map(owners.getOrElse(_, -1)).distinct match {
      case Seq(m) => m
      case _ => -1
    }

  /** Schemes whose punctuations purge: explicit ones and the unique key. */
  val keySchemes: Seq[KeyScheme] = (schemes.flatMap(_._2) ++ unique).distinct

  def hasPunctuations: Boolean = hasMarker || unique.isDefined

  /** Can rows of this input be punctuations? */
  def hasMarker: Boolean = punctuationOrdinals.nonEmpty

  /** Is this row a punctuation (a marker column true)? */
  def isPunctuation(row: org.apache.spark.sql.catalyst.InternalRow): Boolean = {
    var i = 0
    while (i < punctuationOrdinals.length) {
      val m = punctuationOrdinals(i)
      if (!row.isNullAt(m) && row.getBoolean(m)) return true
      i += 1
    }
    false
  }

  /**
   * The scheme a punctuation row instantiates: `Some(Some(keyScheme))` for one that purges,
   * `Some(None)` for a valid one that does not, `None` for an invalid punctuation. A row
   * instantiates the scheme whose visible attributes are exactly its non-NULL columns.
   */
  def schemeOf(row: org.apache.spark.sql.catalyst.InternalRow): Option[Option[KeyScheme]] = {
    val set = dataOrdinals.filterNot(row.isNullAt).toSet
    schemes.find(_._1 == set).map(_._2)
  }
}

object InputSpec {
  def undeclared(columns: Seq[String]): InputSpec =
    InputSpec("", -1, columns.indices.toArray, Nil, Nil, None, columns, Array.empty)
}
