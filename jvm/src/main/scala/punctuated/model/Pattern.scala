package punctuated.model

/**
 * One attribute's pattern in a punctuation (Tucker, Maier, Sheard, Fegaras 2003, §3):
 *
 * {{{
 *   *        Wildcard       matches every value (NULL included)
 *   42       Constant(42)   matches only 42
 *   (-inf,17] Range(..)      matches values in the range (bounds inclusive or not, or absent)
 *   {1, 7}   ValueList(..)  matches the listed values
 *   {}       Empty          matches nothing
 * }}}
 *
 * Values are whatever the column carries (JVM values or Catalyst's internal values);
 * comparisons go through the column's [[Ordering]], supplied by the caller. A NULL value
 * (`null`) matches only the wildcard.
 *
 * `combine` (§3.1) is the intersection of the sets two patterns describe, normalised so
 * that equal sets have equal patterns: a one-value list or a closed range `[a, a]` is a
 * [[Constant]], an empty list or range is [[Empty]], list values are sorted and distinct.
 * {{{
 *   combine(Range(≤ 10), Constant(5))       = Constant(5)
 *   combine(ValueList(1, 5, 9), Range(≥ 5)) = ValueList(5, 9)
 *   combine(Constant(5), Constant(6))       = Empty
 * }}}
 */
sealed trait Pattern {
  def matches(value: Any)(implicit ord: Ordering[Any]): Boolean
  def isWildcard: Boolean = false
}

case object Wildcard extends Pattern {
  override def matches(value: Any)(implicit ord: Ordering[Any]): Boolean = true
  override def isWildcard: Boolean = true
}

case object Empty extends Pattern {
  override def matches(value: Any)(implicit ord: Ordering[Any]): Boolean = false
}

final case class Constant(value: Any) extends Pattern {
  override def matches(v: Any)(implicit ord: Ordering[Any]): Boolean =
    v != null && ord.equiv(v, value)
}

/** A bound of a [[Range]]; `inclusive` says whether the value itself is in the range. */
final case class Bound(value: Any, inclusive: Boolean)

/** Values between `lo` and `hi`; an absent bound is unbounded on that side. */
final case class Range(lo: Option[Bound], hi: Option[Bound]) extends Pattern {
  override def matches(v: Any)(implicit ord: Ordering[Any]): Boolean = v != null && {
    val aboveLo = lo.forall { b => val c = ord.compare(v, b.value); c > 0 || (c == 0 && b.inclusive) }
    val belowHi = hi.forall { b => val c = ord.compare(v, b.value); c < 0 || (c == 0 && b.inclusive) }
    aboveLo && belowHi
  }
}

object Range {
  /** `attr<=` punctuations of the user contract: "no more rows with attr <= v". */
  def atMost(v: Any): Range = Range(None, Some(Bound(v, inclusive = true)))

  /** `attr>=` punctuations of the user contract: "no more rows with attr >= v". */
  def atLeast(v: Any): Range = Range(Some(Bound(v, inclusive = true)), None)
}

/** A list pattern; build it with [[Pattern.list]] to get the normalised form. */
final case class ValueList(values: Seq[Any]) extends Pattern {
  override def matches(v: Any)(implicit ord: Ordering[Any]): Boolean =
    v != null && values.exists(ord.equiv(v, _))
}

object Pattern {

  /** The normalised list pattern of `values`: sorted, distinct, one value = constant. */
  def list(values: Seq[Any])(implicit ord: Ordering[Any]): Pattern = {
    val sorted = values.sorted(ord)
    val distinct = sorted.headOption.toSeq ++ sorted.zip(sorted.drop(1)).collect {
      case (a, b) if !ord.equiv(a, b) => b
    }
    distinct match {
      case Seq() => Empty
      case Seq(single) => Constant(single)
      case many => ValueList(many)
    }
  }

  /** The normalised range: empty → [[Empty]], `[a, a]` → [[Constant]]. */
  def range(lo: Option[Bound], hi: Option[Bound])(implicit ord: Ordering[Any]): Pattern =
    (lo, hi) match {
      case (Some(l), Some(h)) =>
        val c = ord.compare(l.value, h.value)
        if (c > 0 || (c == 0 && !(l.inclusive && h.inclusive))) Empty
        else if (c == 0) Constant(l.value)
        else Range(lo, hi)
      case _ => Range(lo, hi)
    }

  /** Intersection of two patterns (Tucker et al. 2003, §3.1, per attribute). */
  def combine(a: Pattern, b: Pattern)(implicit ord: Ordering[Any]): Pattern = (a, b) match {
    case (Wildcard, p) => p
    case (p, Wildcard) => p
    case (Empty, _) | (_, Empty) => Empty
    case (Constant(v), p) => if (p.matches(v)) Constant(v) else Empty
    case (p, Constant(v)) => if (p.matches(v)) Constant(v) else Empty
    case (ValueList(vs), p) => list(vs.filter(p.matches))
    case (p, ValueList(vs)) => list(vs.filter(p.matches))
    case (Range(lo1, hi1), Range(lo2, hi2)) =>
      range(tighter(lo1, lo2, lower = true), tighter(hi1, hi2, lower = false))
  }

  private def tighter(a: Option[Bound], b: Option[Bound], lower: Boolean)(
      implicit ord: Ordering[Any]): Option[Bound] = (a, b) match {
    case (None, x) => x
    case (x, None) => x
    case (Some(x), Some(y)) =>
      val c = ord.compare(x.value, y.value)
      if (c == 0) Some(Bound(x.value, x.inclusive && y.inclusive))
      else if ((c > 0) == lower) Some(x)
      else Some(y)
  }
}
