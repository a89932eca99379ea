package punctuated.input

import punctuated.declaration.Declaration
import punctuated.model.{Constant, Punctuation, Range}

/**
 * Turns punctuation rows (marker true) of one stream into [[Punctuation]]s (user contract,
 * "Declaring punctuation schemes"): the row instantiates the one scheme whose attributes
 * are exactly its non-NULL, non-marker columns, as the operators' [[RowDecoder]] finds it;
 * constant attributes become [[punctuated.model.Constant]] patterns, `attr<=` attributes
 * `Range(-inf, v]`, every other column a wildcard. A row that instantiates no scheme is an invalid punctuation.
 *
 * {{{
 *   // schemes "auction; bidder, day<=" over (auction, bidder, day, price, is_punct)
 *   decode(row(auction = 42))          = Some(<42, *, *, *>)
 *   decode(row(bidder = 7, day = 17))  = Some(<*, 7, (-inf, 17], *>)
 *   decode(row(bidder = 7))            = None   // partial scheme
 * }}}
 *
 * @param declaration the stream's declaration
 * @param columns     the stream's column names, in row order
 */
final class PunctuationDecoder(declaration: Declaration, columns: Seq[String]) {
  /** The decoder the operators use, over the row's ordinals. */
  val decoder: RowDecoder = RowDecoder.of(declaration, columns)
  private val schemes = declaration.instantiableSchemes

  /**
   * The punctuation a row describes, or `None` if it is an invalid punctuation.
   *
   * @param isNull whether the column at an ordinal is NULL
   * @param value  the value at an ordinal
   */
  def decode(isNull: Int => Boolean, value: Int => Any): Option[Punctuation] = {
    decoder.scheme(isNull) match {
      case RowDecoder.Invalid => None
      case i => Some(Punctuation(schemes(i).attributes.map { a =>
        val v = value(columns.indexOf(a.name))
        a.name -> (if (!a.isRange) Constant(v) else if (a.atLeast) Range.atLeast(v) else Range.atMost(v))
      }.toMap))
    }
  }

  /** The same, for a row given as column name → value (`null` = NULL). */
  def decode(row: Map[String, Any]): Option[Punctuation] =
    decode(i => row.getOrElse(columns(i), null) == null, i => row(columns(i)))
}
