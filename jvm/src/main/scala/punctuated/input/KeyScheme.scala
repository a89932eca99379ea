package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}

/**
 * A punctuation scheme of one join input, seen through the join key: the scheme's
 * attributes are join-key columns, `constants` the key positions its constant patterns
 * fix, `range` the key position of its range pattern (`attr<=`, or `attr>=` when `atLeast`),
 * if any. Only such schemes can
 * purge join state (Li et al. 2006, §3: a punctuation on non-join attributes never covers
 * all future partners of a stored tuple). Two inputs' schemes over the same key positions
 * have the same [[id]], so their punctuations can be compared (Li et al. §5.1, lifespan).
 *
 * {{{
 *   join key (auction, day); scheme "auction"        → KeyScheme(constants = [0], range = None)
 *   join key (auction, day); scheme "auction, day<=" → KeyScheme(constants = [0], range = Some(1))
 *   join key (auction, day); scheme "auction, day>=" → KeyScheme([0], Some(1), atLeast = true)
 * }}}
 *
 * A `>=` range is a `<=` range under the reversed order of its column: every comparison of a
 * range value with a bound goes through [[rangeOrdering]], so "the greatest bound", "covered
 * by the bound" and the range index's look-ups read the same for both directions.
 */
final case class KeyScheme(constants: Array[Int], range: Option[Int], atLeast: Boolean = false,
    moreRanges: IndexedSeq[(Int, Boolean)] = Vector.empty) {
  require(constants.forall(_ < 24) && range.forall(_ < 24), "join keys of at most 24 columns")
  require(range.isDefined || !atLeast, "a direction without a range")
  require(range.isDefined || moreRanges.isEmpty, "more ranges without a first one")

  /**
   * Same key positions, same id, whichever input the scheme belongs to: constants as bits
   * 0-23, the range's position + 1 in bits 24-28, `>=` in bit 29. A scheme of several ranges
   * ([[moreRanges]]) has bit 30 set and, in the other bits, a hash of its positions and
   * directions (checked distinct where a join's schemes are gathered: [[KeyScheme.distinctIds]]).
   */
  val id: Int =
    if (moreRanges.isEmpty) constants.foldLeft(0)((bits, p) => bits | (1 << p)) |
      range.map(r => (r + 1) << 24).getOrElse(0) | (if (atLeast) 1 << 29 else 0)
    else (1 << 30) | (scala.util.hashing.MurmurHash3.seqHash(
      constants.toSeq ++ Seq(-1) ++ range.toSeq.flatMap(r => Seq(r, if (atLeast) 1 else 0)) ++
        moreRanges.flatMap { case (r, ge) => Seq(r, if (ge) 1 else 0) }) & ((1 << 30) - 1))

  /**
   * Every range attribute: (key position, `>=`), the first one ([[range]], [[atLeast]]) first.
   * A punctuation of the scheme closes the keys whose range values are at or below its bounds
   * in every one of them ([[punctuated.model.RangeRegion]]).
   */
  val ranges: IndexedSeq[(Int, Boolean)] = range.map(r => (r, atLeast)).toIndexedSeq ++ moreRanges

  /** Two range attributes or more: bounds are regions ([[punctuated.state.RangeBounds]]). */
  def isMultiRange: Boolean = moreRanges.nonEmpty

  /**
   * The order bounds of the range are compared in: the column's, reversed for `attr>=`
   * (a punctuation `>= v` covers the values `<= v` of the reversed order).
   *
   * {{{
   *   KeyScheme([], Some(0)).rangeOrdering(IntegerType).lteq(3, 5)                  // true:  3 <= 5
   *   KeyScheme([], Some(0), atLeast = true).rangeOrdering(IntegerType).lteq(7, 5)  // true:  7 >= 5
   * }}}
   */
  def rangeOrdering(dataType: org.apache.spark.sql.types.DataType): Ordering[Any] =
    KeyScheme.ordering(dataType, atLeast)

  /** The range's operator as written: `<=` or `>=` ("" without a range). */
  def rangeOperator: String = if (range.isEmpty) "" else if (atLeast) ">=" else "<="

  /** A constant punctuation on the whole key: it closes exactly one key (point purge). */
  def isWholeKey(keyLength: Int): Boolean = range.isEmpty && constants.length == keyLength

  override def equals(other: Any): Boolean = other match {
    case k: KeyScheme => k.id == id && k.moreRanges == moreRanges
    case _ => false
  }
  // computed once: schemes key the operators' per-row look-ups
  override val hashCode: Int = id * 31 + moreRanges.hashCode()
  override def toString: String = s"KeyScheme(${constants.mkString("[", ",", "]")}" +
    ranges.map { case (r, ge) => s", $r${if (ge) ">=" else "<="}" }.mkString + ")"
}

object KeyScheme {
  /** Do these schemes have distinct ids (as the held punctuations and summaries need)? */
  def distinctIds(schemes: Seq[KeyScheme]): Boolean = schemes.distinct.map(_.id).distinct.size == schemes.distinct.size

  /** A column's order, reversed for a `>=` range. */
  def ordering(dataType: org.apache.spark.sql.types.DataType, atLeast: Boolean): Ordering[Any] = {
    val ordering = org.apache.spark.sql.catalyst.util.TypeUtils.getInterpretedOrdering(dataType)
    if (atLeast) ordering.reverse else ordering
  }
}

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
 * @param watermark       the range scheme its event-time watermark instantiates on a join-key
 *                        column (`ts<=w` at each micro-batch, no marker rows:
 *                        `punctuated.join.WatermarkPunctuations.onKey`), with its name for
 *                        messages and records
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
    owners: Map[Int, Int] = Map.empty,
    watermark: Option[(KeyScheme, String)] = None) {

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

  /** Schemes whose punctuations purge: explicit ones, the unique key and the watermark's range. */
  val keySchemes: Seq[KeyScheme] = (schemes.flatMap(_._2) ++ unique ++ watermark.map(_._1)).distinct

  /** Schemes the input's declaration instantiates (marker rows, the unique key): not the watermark's. */
  val declaredKeySchemes: Seq[KeyScheme] = (schemes.flatMap(_._2) ++ unique).distinct

  def hasPunctuations: Boolean = hasMarker || unique.isDefined || watermark.isDefined

  /** Can rows of this input be punctuations? */
  def hasMarker: Boolean = punctuationOrdinals.nonEmpty

  /** This input's rows decoded: data, a punctuation of one of [[schemes]], or invalid. */
  val decoder: RowDecoder = RowDecoder(punctuationOrdinals, dataOrdinals, schemes.map(_._1), owners)

  /** Is this row a punctuation (a marker column true)? */
  def isPunctuation(row: org.apache.spark.sql.catalyst.InternalRow): Boolean =
    decoder.isPunctuation(m => !row.isNullAt(m) && row.getBoolean(m))

  /**
   * The scheme a punctuation row instantiates: `Some(Some(keyScheme))` for one that purges,
   * `Some(None)` for a valid one that does not, `None` for an invalid punctuation. A row
   * instantiates the scheme whose visible attributes are exactly its non-NULL columns.
   */
  def schemeOf(row: org.apache.spark.sql.catalyst.InternalRow): Option[Option[KeyScheme]] =
    decoder.scheme(row.isNullAt, m => !row.isNullAt(m) && row.getBoolean(m)) match {
      case RowDecoder.Invalid => None
      case i => Some(schemes(i)._2)
    }
}

object InputSpec {
  def undeclared(columns: Seq[String]): InputSpec =
    InputSpec("", -1, columns.indices.toArray, Nil, Nil, None, columns, Array.empty)

  /**
   * The join's view of one input: its [[PunctuatedInput]] (None: undeclared) in ordinals of
   * the input's rows `output`, its schemes over the join `keys`.
   *
   * {{{
   *   // output (p, auction, bid), keys (auction); marker p, scheme "auction", unique "bid"
   *   InputSpec.of(Some(bids), Seq(auction), output)
   *   // markerOrdinal 0, dataOrdinals [1, 2], schemes ({1} -> KeyScheme([0])), ({2} -> None)
   * }}}
   */
  def of(input: Option[PunctuatedInput], keys: Seq[Expression], output: Seq[Attribute]): InputSpec =
    input match {
      case None => undeclared(output.map(_.name))
      case Some(d) =>
        val ordinal = output.map(_.exprId).zipWithIndex.toMap
        def ordinalOf(column: String) = d.columns.get(column).flatMap(ordinal.get)
        val positions = PunctuatedInput.keyPositions(keys)
        val marker = d.declaration.marker.flatMap(ordinalOf).getOrElse(-1)
        val decoder = RowDecoder.of(d.declaration, ordinalOf, output.indices)
        val schemes = decoder.schemes.zip(d.declaration.instantiableSchemes.map(d.keyScheme(_, positions)))
        InputSpec(
          name = d.name,
          markerOrdinal = marker,
          dataOrdinals = decoder.columns,
          schemes = schemes,
          schemeNames = d.declaration.instantiableSchemes.map(_.toString),
          unique = d.declaration.unique.flatMap(d.keyScheme(_, positions)),
          columnNames = output.map(_.name),
          punctuationOrdinals = decoder.markers,
          owners = decoder.owners)
    }
}
