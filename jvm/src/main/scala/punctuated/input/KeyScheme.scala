package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}

/**
 * A punctuation scheme of one join input, seen through the join key: the scheme's
 * attributes are join-key columns, `constants` the key positions its constant patterns
 * fix, `ranges` the key positions of its range patterns with their direction (`attr<=`, or
 * `attr>=` when the flag is set), in the order the scheme lists them. Only such schemes can
 * purge join state (Li et al. 2006, §3: a punctuation on non-join attributes never covers
 * all future partners of a stored tuple). Two inputs' schemes over the same key positions
 * have the same [[id]], so their punctuations can be compared (Li et al. §5.1, lifespan).
 *
 * {{{
 *   join key (auction, day); scheme "auction"               → KeyScheme([0])
 *   join key (auction, day); scheme "auction, day<="        → KeyScheme([0], [1 <=])
 *   join key (auction, day); scheme "auction, day>="        → KeyScheme([0], [1 >=])
 *   join key (day, level);   scheme "day<=, level<="        → KeyScheme([], [0 <=, 1 <=])
 * }}}
 *
 * A punctuation of the scheme is one [[punctuated.model.Punctuation]] of the model: a
 * constant pattern per constant position, a range pattern per range position (Tucker et al.
 * 2003, §3); it closes the keys whose range values are at or below its bounds in every range
 * ([[punctuated.model.RangeRegion]]; one range: the region of one corner, the bound itself).
 * A `>=` range is a `<=` range under the reversed order of its column: every comparison of a
 * range value with a bound goes through [[KeyScheme.ordering]], so "the greatest bound",
 * "covered by the bound" and the range index's look-ups read the same for both directions.
 *
 * @param constants key positions of the constant patterns, increasing
 * @param ranges    (key position, `>=`) of each range pattern
 */
final case class KeyScheme(constants: Array[Int], ranges: IndexedSeq[(Int, Boolean)] = Vector.empty) {
  require(constants.forall(_ < 24) && ranges.forall(_._1 < 24), "join keys of at most 24 columns")

  /**
   * Same key positions, same id, whichever input the scheme belongs to. At most one range:
   * constants as bits 0-23, the range's position + 1 in bits 24-28, `>=` in bit 29. Several
   * ranges: bit 30 set and, in the other bits, a hash of the positions and directions
   * (checked distinct where a join's schemes are gathered: [[KeyScheme.distinctIds]]). Ids
   * are stored in checkpoints (held punctuations, range indexes): this formula never changes.
   */
  val id: Int = ranges match {
    case Seq() | Seq(_) =>
      constants.foldLeft(0)((bits, p) => bits | (1 << p)) |
        ranges.headOption.map { case (r, ge) => ((r + 1) << 24) | (if (ge) 1 << 29 else 0) }.getOrElse(0)
    case _ =>
      (1 << 30) | (scala.util.hashing.MurmurHash3.seqHash(
        constants.toSeq ++ Seq(-1) ++ ranges.flatMap { case (r, ge) => Seq(r, if (ge) 1 else 0) }) & ((1 << 30) - 1))
  }

  /** Does the scheme have a range pattern (its punctuations carry a bound)? */
  def hasRange: Boolean = ranges.nonEmpty

  /** The range patterns as written, by key position: `1<=`, `0<=,1>=` ("" without a range). */
  def rangeText: String = ranges.map { case (r, ge) => s"$r${if (ge) ">=" else "<="}" }.mkString(",")

  /** A constant punctuation on the whole key: it closes exactly one key (point purge). */
  def isWholeKey(keyLength: Int): Boolean = ranges.isEmpty && constants.length == keyLength

  override def equals(other: Any): Boolean = other match {
    case k: KeyScheme => (k eq this) || (k.id == id && k.ranges == ranges)
    case _ => false
  }
  // computed once: schemes key the operators' per-row look-ups
  override val hashCode: Int = id * 31 + ranges.hashCode()
  override def toString: String = s"KeyScheme(${constants.mkString("[", ",", "]")}" +
    ranges.map { case (r, ge) => s", $r${if (ge) ">=" else "<="}" }.mkString + ")"
}

object KeyScheme {
  /** A scheme of constants and one `<=` range at key position `range`. */
  def atMost(constants: Array[Int], range: Int): KeyScheme = KeyScheme(constants, Vector(range -> false))

  /** Do these schemes have distinct ids (as the held punctuations and summaries need)? */
  def distinctIds(schemes: Seq[KeyScheme]): Boolean = schemes.distinct.map(_.id).distinct.size == schemes.distinct.size

  /**
   * A column's order, reversed for a `>=` range.
   *
   * {{{
   *   KeyScheme.ordering(IntegerType, atLeast = false).lteq(3, 5)   // true: 3 <= 5
   *   KeyScheme.ordering(IntegerType, atLeast = true).lteq(7, 5)    // true: 7 >= 5
   * }}}
   */
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
