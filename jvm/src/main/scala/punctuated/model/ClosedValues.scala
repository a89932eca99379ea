package punctuated.model

import scala.collection.mutable

/**
 * What a stream has closed, remembered compactly once its punctuations are no longer held,
 * so that a late row (a data row matching a punctuation its own stream sent earlier) is still
 * recognised: the punctuations of one scheme merged into a few patterns describing every value
 * they closed (Tucker et al. 2003, §3: a range pattern `[a, b]` or a list pattern `{a, b, c}`
 * stands for many constant punctuations at once). Two forms, both bounded by a number of
 * entries:
 *
 *  - [[ClosedIntervals]]: for a scheme fixing one ordered integral attribute (`id`): sorted
 *    disjoint intervals, merged as values arrive. Sequential ids are one interval.
 *  - [[ClosedSet]]: for any other scheme: the closed values of its constant attributes, each
 *    with the highest bound of its range attribute if it has one (`sensor, hour<=` keeps one
 *    bound per sensor; `hour<=` alone one entry).
 *
 * When a summary exceeds its bound, the oldest entries (the lowest interval; the value closed
 * longest ago) are forgotten and counted: a late row of a forgotten value is then not
 * recognised any more. Forgetting never makes a value look closed, so a summary never drops a
 * row that is not late.
 */
object ClosedValues

/**
 * Closed values of one ordered integral attribute as sorted disjoint intervals `[lo, hi]`.
 *
 * {{{
 *   add(1), add(2), add(3)      -> [1, 3]                      one entry
 *   add(7)                      -> [1, 3] [7, 7]
 *   add(5), add(4), add(6)      -> [1, 7]
 * }}}
 *
 * A gap between two intervals is also bridged when every value in it is `foreign`: a value no
 * row of this partition can have (its key hashes to another partition). So the values a
 * partition sees of a sequence of ids, one in every few, still make one interval. Only gaps of
 * at most `maxGap` values are checked.
 *
 * @param limit   entries kept at most; beyond, the lowest intervals are forgotten
 * @param foreign values that never reach this summary's owner (never covered by `covers`)
 * @param maxGap  the largest gap checked for `foreign` values
 */
final class ClosedIntervals(limit: Int, foreign: Long => Boolean = _ => false, maxGap: Long = 0L) {
  private val intervals = new java.util.TreeMap[java.lang.Long, java.lang.Long]()
  private var dropped = 0L

  /** Intervals kept. */
  def size: Int = intervals.size

  /** Entries forgotten so far by this instance (to exceed no `limit`). */
  def forgotten: Long = dropped

  /** Is `v` closed (and not foreign)? */
  def covers(v: Long): Boolean = {
    val e = intervals.floorEntry(v)
    e != null && v <= e.getValue && !foreign(v)
  }

  /** Closes `v`; returns whether anything changed. */
  def add(v: Long): Boolean = {
    val below = intervals.floorEntry(v)
    if (below != null && v <= below.getValue) return false
    val above = intervals.ceilingEntry(v)
    val joinBelow = below != null && bridged(below.getValue, v)
    val joinAbove = above != null && bridged(v, above.getKey)
    val lo: Long = if (joinBelow) below.getKey else v
    val hi: Long = if (joinAbove) above.getValue else v
    if (joinAbove) intervals.remove(above.getKey)
    intervals.put(lo, hi)
    while (intervals.size > limit) {
      intervals.pollFirstEntry()
      dropped += 1
    }
    true
  }

  /** Can `[.., a]` and `[b, ..]` (a < b) be one interval? */
  private def bridged(a: Long, b: Long): Boolean = {
    val gap = b - a - 1 // negative on overflow: not bridged
    gap == 0 || (gap > 0 && gap <= maxGap && {
      var v = a + 1
      while (v < b && foreign(v)) v += 1
      v == b
    })
  }

  /** The intervals, lowest first, as (lo, hi). */
  def entries: Seq[(Long, Long)] = {
    val out = mutable.ArrayBuffer.empty[(Long, Long)]
    intervals.forEach((lo, hi) => out += ((lo.longValue, hi.longValue)))
    out.toSeq
  }

  /** Restores intervals from [[entries]] (as stored). */
  def load(stored: Iterable[(Long, Long)]): Unit = stored.foreach { case (lo, hi) => intervals.put(lo, hi) }
}

/**
 * How a [[ClosedSet]] compares the bounds of a scheme's range attributes: does a bound close a
 * value, does a held bound close everything an incoming one does, and what two close together.
 * One range: the column's order (the greatest bound); several: regions of maximal corners
 * ([[RangeRegion]]).
 */
trait BoundOps[B] {
  def covers(bound: B, value: B): Boolean
  def includes(held: B, incoming: B): Boolean
  def merge(held: B, incoming: B): B
}

object BoundOps {
  /** One range attribute: bounds are values of its order, the greatest kept. */
  def ordered[B](implicit ordering: Ordering[B]): BoundOps[B] = new BoundOps[B] {
    override def covers(bound: B, value: B): Boolean = ordering.lteq(value, bound)
    override def includes(held: B, incoming: B): Boolean = ordering.gteq(held, incoming)
    override def merge(held: B, incoming: B): B = ordering.max(held, incoming)
  }
}

/**
 * Closed values of a scheme's constant attributes (`K`), each with what it closed of the
 * range attributes (`B`: the highest bound of one range, the region of several) if the scheme
 * has any, oldest first.
 *
 * {{{
 *   scheme "sensor, hour<=":  add(s1, 9), add(s2, 4), add(s1, 12)  -> s2: <= 4, s1: <= 12
 *   covers(s1, 10) = true, covers(s2, 5) = false, covers(s3, 1) = false
 *   scheme "auction":         add(a7, None)                        -> a7
 * }}}
 *
 * @param limit entries kept at most; beyond, the ones closed longest ago are forgotten
 * @param ops   how bounds compare ([[BoundOps.ordered]] for one range)
 */
final class ClosedSet[K, B](limit: Int, ops: BoundOps[B]) {
  def this(limit: Int)(implicit ordering: Ordering[B]) = this(limit, BoundOps.ordered[B])

  private val closed = mutable.LinkedHashMap.empty[K, Option[B]]
  private var dropped = 0L

  def size: Int = closed.size
  def forgotten: Long = dropped

  /** Is every row with constants `k` (and range value `value`, if the scheme has a range) closed? */
  def covers(k: K, value: Option[B]): Boolean = closed.get(k).exists {
    case Some(b) => value.exists(ops.covers(b, _))
    case None => true
  }

  /** Did `k`'s closed values already include everything a punctuation with this bound closes? */
  def includes(k: K, bound: Option[B]): Boolean = closed.get(k).exists(held => within(held, bound))

  private def within(held: Option[B], bound: Option[B]): Boolean = (held, bound) match {
    case (Some(h), Some(b)) => ops.includes(h, b)
    case (Some(_), None) => false
    case (None, _) => true
  }

  /** Closes `k` (up to `bound`, with what it closed before); returns whether anything changed. */
  def add(k: K, bound: Option[B]): Boolean = {
    val current = closed.get(k)
    if (current.exists(within(_, bound))) false
    else {
      val merged = (current, bound) match {
        case (Some(Some(c)), Some(b)) => Some(ops.merge(c, b))
        case _ => bound
      }
      closed.remove(k) // re-inserted as the newest
      closed(k) = merged
      while (closed.size > limit) {
        closed.remove(closed.head._1)
        dropped += 1
      }
      true
    }
  }

  /** Entries, oldest first. */
  def entries: Seq[(K, Option[B])] = closed.toSeq

  /** Restores entries from [[entries]] (as stored). */
  def load(stored: Iterable[(K, Option[B])]): Unit = stored.foreach { case (k, b) => closed(k) = b }
}
