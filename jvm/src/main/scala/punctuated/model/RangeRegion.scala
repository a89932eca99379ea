package punctuated.model

/**
 * The values of a scheme's range attributes that a set of its punctuations with the same
 * constants closes (Tucker et al. 2003, §3: a punctuation is a conjunction of patterns, and
 * a set of punctuations excludes the union of what each matches — `setMatch`, Table 1).
 *
 * A punctuation of a scheme with `k` range attributes, `a1<=, ..., ak<=` (a `>=` attribute
 * compares in its column's reversed order), has one bound per range attribute: its *corner*
 * `c = (c1, ..., ck)`; it closes every point `v` with `vi <= ci` for all `i` (the down-set of
 * `c` under the product order). A set of them closes the union of their down-sets, described
 * exactly by its maximal corners — the Pareto staircase: no corner is below another in every
 * attribute. With one range attribute the staircase is one corner, the greatest bound (what
 * operators hold today); with two it is a staircase of corners, each higher in one attribute
 * and lower in the other:
 *
 * {{{
 *   day<=, price<=            add (3, 10), add (5, 4), add (2, 8)      (2, 8) is below (3, 10)
 *   corners: (3, 10), (5, 4)  covers (3, 9): yes (below (3, 10))   covers (4, 9): no
 *                             covers (5, 4): yes   covers (6, 0): no
 *
 *   price ^
 *      10 +--------+                 the closed region: below and left of the staircase
 *       4 |        +-----+
 *         +--------+-----+--> day
 *                  3     5
 * }}}
 *
 * A point or corner with a NULL value is covered by nothing (a NULL is equal to no value).
 * Immutable; operations return a new region.
 *
 * @param orders  the order of each range attribute (reversed for `>=`)
 * @param corners the maximal corners, none below another, in insertion order
 */
final class RangeRegion private (val orders: IndexedSeq[Ordering[Any]], val corners: Vector[IndexedSeq[Any]]) {

  /** The number of range attributes. */
  def dimensions: Int = orders.length

  def isEmpty: Boolean = corners.isEmpty

  /** Is `point` closed: at or below some corner in every attribute? */
  def covers(point: IndexedSeq[Any]): Boolean = {
    require(point.length == dimensions, s"a point of ${point.length} values in a region of $dimensions")
    point.forall(_ != null) && corners.exists(c => RangeRegion.below(orders, point, c))
  }

  /** Does this region close everything `other` closes? */
  def contains(other: RangeRegion): Boolean = other.corners.forall(covers)

  /**
   * The region closed once the punctuation with this corner is added: unchanged when the
   * corner is covered already; otherwise the corner, and the corners it covers dropped.
   */
  def add(corner: IndexedSeq[Any]): RangeRegion = {
    require(corner.length == dimensions, s"a corner of ${corner.length} values in a region of $dimensions")
    if (corner.exists(_ == null) || covers(corner)) this
    else new RangeRegion(orders, corners.filterNot(c => RangeRegion.below(orders, c, corner)) :+ corner)
  }

  /** The union of two regions over the same attributes. */
  def union(other: RangeRegion): RangeRegion = other.corners.foldLeft(this)(_ add _)

  /**
   * What both regions close (what two inputs of a join have both closed, Li et al. 2006,
   * §5.1): the union, over each pair of corners, of their down-sets' intersection — the
   * corner of their smaller values.
   *
   * {{{
   *   [(3, 10), (5, 4)] intersect [(4, 8)]  =  [(3, 8), (4, 4)]
   * }}}
   */
  def intersect(other: RangeRegion): RangeRegion = RangeRegion.of(orders,
    for (a <- corners; b <- other.corners) yield a.indices.map(i => orders(i).min(a(i), b(i))))

  override def toString: String =
    corners.map(_.mkString("(", ", ", ")")).mkString("RangeRegion[", ", ", "]")
}

object RangeRegion {

  /** The region nothing has closed yet, over attributes compared in `orders`. */
  def empty(orders: IndexedSeq[Ordering[Any]]): RangeRegion = {
    require(orders.nonEmpty, "a region over no range attribute")
    new RangeRegion(orders, Vector.empty)
  }

  /** The region closed by punctuations with these corners. */
  def of(orders: IndexedSeq[Ordering[Any]], corners: Seq[IndexedSeq[Any]]): RangeRegion =
    corners.foldLeft(empty(orders))(_ add _)

  /** Is `p` at or below `c` in every attribute? */
  private def below(orders: IndexedSeq[Ordering[Any]], p: IndexedSeq[Any], c: IndexedSeq[Any]): Boolean = {
    var i = 0
    while (i < orders.length) {
      if (!orders(i).lteq(p(i), c(i))) return false
      i += 1
    }
    true
  }
}
