package punctuated.input

import punctuated.declaration.Declaration

/**
 * What a row of a punctuated input is (user contract, "Declaring punctuation schemes"): a
 * data row when none of its markers is true; else a punctuation row, which instantiates the
 * one scheme whose attributes are exactly its non-NULL columns (Tucker et al. 2003, §3: a
 * punctuation is a pattern per attribute, here a constant or `attr<=` bound on the scheme's
 * attributes and a wildcard elsewhere), or, when no scheme has exactly those columns, is an
 * invalid punctuation. The one decoder of the extension: the join's inputs
 * ([[InputSpec]]), the aggregation's and deduplication's kind column ([[PunctuationKind]])
 * and the model's [[PunctuationDecoder]] all call [[decode]].
 *
 * Positions are whatever the caller reads values at (ordinals of a row, children of an
 * expression). When two schemes have the same columns (a declared scheme over the unique
 * key's columns), the first one wins.
 *
 * {{{
 *   // schemes "auction; bidder, day<=" over (auction, bidder, day, price, is_punct)
 *   val d = RowDecoder.of(declaration, Seq("auction", "bidder", "day", "price", "is_punct"))
 *   d.decode(row(42, NULL, NULL, NULL, true))   = 0                   "auction"
 *   d.decode(row(NULL, 7, 17, NULL, true))      = 1                   "bidder, day<="
 *   d.decode(row(NULL, 7, NULL, NULL, true))    = RowDecoder.Invalid  partial scheme
 *   d.decode(row(42, 7, 3, 1.5, false))         = RowDecoder.Data
 * }}}
 *
 * A join's output read by the operator above it has one marker per stream
 * ([[punctuated.declaration.Derived]]); a punctuation row sets one of them, and the columns of
 * the other streams say nothing about it: they are not read (`owners`). They are NULL as the
 * join emits the row, but a NOT NULL column cannot carry a NULL through Spark's projections
 * (its null bit is not written): it reads as 0 or "" there.
 * {{{
 *   // (a ⋈ b) over (a_k NOT NULL, a_p, b_k NOT NULL, b_p); schemes "a_k" (marker a_p), "b_k" (b_p)
 *   d.decode(row(1, true, 0, false))   = 0     b_k belongs to b, whose marker is false: not read
 * }}}
 *
 * @param markers positions of the columns whose true value marks a punctuation row
 * @param columns positions of the other columns
 * @param schemes each scheme as the set of positions it sets, in declaration order
 * @param owners  for a join's output: a column's position -> the position of the marker of the
 *                stream it comes from (a column of a stream whose marker is false, or not in the
 *                row (-1), is not read)
 */
final case class RowDecoder(markers: Array[Int], columns: Array[Int], schemes: Seq[Set[Int]],
    owners: Map[Int, Int] = Map.empty) {

  private val schemeBySet: Map[Set[Int], Int] = schemes.zipWithIndex.reverse.toMap

  /** Is the row a punctuation (one of its markers true)? */
  def isPunctuation(isTrue: Int => Boolean): Boolean = {
    var i = 0
    while (i < markers.length) {
      if (isTrue(markers(i))) return true
      i += 1
    }
    false
  }

  /** The index of the scheme a punctuation row instantiates, or [[RowDecoder.Invalid]]. */
  def scheme(isNull: Int => Boolean): Int = scheme(isNull, _ => true)

  /**
   * The same, reading only the columns of streams whose marker is true (`isTrue`: whether
   * the value at a marker position is TRUE); without `owners`, every column.
   */
  def scheme(isNull: Int => Boolean, isTrue: Int => Boolean): Int = {
    val set = if (owners.isEmpty) columns.iterator.filterNot(isNull).toSet
      else columns.iterator.filter(c => owners.get(c).forall(m => m >= 0 && isTrue(m)) && !isNull(c)).toSet
    schemeBySet.getOrElse(set, RowDecoder.Invalid)
  }

  /**
   * [[RowDecoder.Data]], the index of the scheme the row instantiates, or [[RowDecoder.Invalid]].
   *
   * @param isNull whether the value at a position is NULL
   * @param isTrue whether the value at a (marker) position is TRUE
   */
  def decode(isNull: Int => Boolean, isTrue: Int => Boolean): Int =
    if (isPunctuation(isTrue)) scheme(isNull, isTrue) else RowDecoder.Data
}

object RowDecoder {
  /** A data row. */
  val Data: Int = -1
  /** A punctuation row that instantiates none of the schemes. */
  val Invalid: Int = -2

  /**
   * The decoder of a stream's rows from its declaration: its markers, its instantiable
   * schemes (the declared ones, then the unique key), by column position.
   *
   * @param position a declared column's position, if the row has it
   */
  def of(declaration: Declaration, position: String => Option[Int], positions: Seq[Int]): RowDecoder = {
    val markers = declaration.markers.flatMap(position).toArray
    val owners = declaration.derived.toSeq.flatMap(_.owners).flatMap { case (c, m) =>
      position(c).map(_ -> position(m).getOrElse(-1)) }.toMap
    RowDecoder(markers, positions.filterNot(markers.contains).toArray,
      declaration.instantiableSchemes.map(_.names.flatMap(position).toSet), owners)
  }

  /** The same for rows with these columns, in order. */
  def of(declaration: Declaration, columns: Seq[String]): RowDecoder =
    of(declaration, c => Some(columns.indexOf(c)).filter(_ >= 0), columns.indices)
}
