package punctuated.model

/**
 * A punctuation: a predicate, written as one [[Pattern]] per attribute, that no later
 * element of its stream satisfies (Tucker, Maier, Sheard, Fegaras 2003, §3). Attributes
 * not named in `patterns` are wildcards.
 *
 * {{{
 *   // bids(auction, bidder, price): "no more bids for auction 42"
 *   val p = Punctuation(Map("auction" -> Constant(42L)))
 *   p.matches(Map("auction" -> 42L, "bidder" -> 7L, "price" -> 1.5))   // true
 * }}}
 *
 * @param patterns the non-wildcard patterns by attribute name
 */
final case class Punctuation(patterns: Map[String, Pattern]) {

  /** The pattern of `attr` (wildcard if not named). */
  def apply(attr: String): Pattern = patterns.getOrElse(attr, Wildcard)

  /** `match(t, p)` of §3.1: every attribute's value matches its pattern. */
  def matches(tuple: String => Any)(implicit ord: Ordering[Any]): Boolean =
    patterns.forall { case (attr, pattern) => pattern.matches(tuple(attr)) }

  /**
   * `combine(p1, p2)` of §3.1: the punctuation describing the intersection, or `None` for
   * Ψ when the intersection is empty.
   */
  def combine(other: Punctuation)(implicit ord: Ordering[Any]): Option[Punctuation] = {
    val attrs = patterns.keySet ++ other.patterns.keySet
    val combined = attrs.iterator.map(a => a -> Pattern.combine(this(a), other(a))).toMap
    if (combined.valuesIterator.contains(Empty)) None
    else Some(Punctuation(combined.filterNot(_._2.isWildcard)))
  }
}

/** Table 1 of Tucker et al. 2003: the helpers built from `match` and `combine`. */
object Punctuation {
  val all: Punctuation = Punctuation(Map.empty[String, Pattern])

  def setMatch(t: String => Any, ps: Iterable[Punctuation])(implicit ord: Ordering[Any]): Boolean =
    ps.exists(_.matches(t))

  def setNomatch(t: String => Any, ps: Iterable[Punctuation])(implicit ord: Ordering[Any]): Boolean =
    !setMatch(t, ps)

  def setCombine(ps1: Iterable[Punctuation], ps2: Iterable[Punctuation])(
      implicit ord: Ordering[Any]): Seq[Punctuation] =
    (for (p1 <- ps1; p2 <- ps2; c <- p1.combine(p2)) yield c).toSeq
}
