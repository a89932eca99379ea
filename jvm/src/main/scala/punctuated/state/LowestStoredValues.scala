package punctuated.state

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter

/**
 * The lowest value each range scheme sees among an aggregation's stored groups, so that a
 * micro-batch whose range punctuations all stay below it skips the pass over the stored groups:
 * no stored group can be covered (Tucker et al. 2003, §5.2: a punctuation closes the groups it
 * matches; none matches a value above its bound). Kept for the kinds whose scheme is one range
 * alone (`hour<=`, `ts<=` over `window(ts, ...)`), beside the held punctuations:
 *
 * {{{
 *   punctuations   key: (-kind, [1])   value: (lowest value BINARY, batch BIGINT)   NULL: no stored group has one
 * }}}
 *
 * The entry is at most the lowest value stored, never above it: a group stored lowers it, a
 * group removed leaves it (lower than need be: the next pass then finds nothing and sets it
 * exactly). Every micro-batch that knows it writes it with its own number; one written by
 * another than the micro-batch before is not trusted (a run of a version of the extension
 * that stored groups without lowering it came between). Without a trusted entry (a checkpoint
 * written before it, a kind added at a restart) the value is unknown and every advancing
 * punctuation makes the pass, which then records it.
 *
 * Example (`GROUP BY sensor, window(ts, '10 minutes')`, kind 1 = `ts<=`): after a pass leaves
 * windows ending at 10:10 and 10:20 stored, the entry is the window [10:00, 10:10); the
 * punctuations `ts<=10:03`, `ts<=10:06` then skip the pass, `ts<=10:09:59.999999` makes it.
 *
 * @param ns     the held punctuations' store (a whole store: the entries' keys are negative,
 *               as the closed-values summaries', so they are never taken for held punctuations)
 * @param ranges per kind, how its scheme's range orders the grouping keys
 * @param batch  this micro-batch (its stores' version before it commits)
 */
final class LowestStoredValues(ns: StoreNamespace, ranges: Seq[(Int, RangeBounds.Single)], batch: Long) {
  private val keyWriter = new UnsafeRowWriter(2, 16)
  private val valueWriter = new UnsafeRowWriter(2, 32)
  private val Marker = Array[Byte](1)
  // per kind: None unknown; Some(null) no stored value; Some(v) the lowest (read when first asked)
  private val lowest = mutable.LongMap.empty[Option[Any]]
  private val bounds: Array[RangeBounds.Single] = ranges.map(_._2).toArray

  private def key(kind: Int): UnsafeRow = StoreNamespace.keyRow(keyWriter, -kind, Marker)

  private def current(kind: Int, bounds: RangeBounds.Single): Option[Any] =
    lowest.getOrElseUpdate(kind.toLong, Option(ns.get(key(kind))).filter(_.getLong(1) == batch - 1).map { v =>
      if (v.isNullAt(0)) null else bounds.fromBytes(v.getBinary(0))
    })

  private def boundsOf(kind: Int): Option[RangeBounds.Single] = ranges.collectFirst { case (`kind`, b) => b }

  /** Does the pass have to look for groups `kind`'s punctuation up to `bound` closes? */
  def mayCover(kind: Int, bound: Any): Boolean = boundsOf(kind) match {
    case None => true
    case Some(b) => current(kind, b) match {
      case None => true
      case Some(null) => false
      case Some(v) => b.covers(bound, v)
    }
  }

  /** A group stored with this key: lowers each known lowest value above its own. */
  def stored(key: InternalRow): Unit = ranges.foreach { case (kind, b) =>
    current(kind, b) match {
      case Some(v) =>
        val mine = b.peek(key)
        if (mine != null && (v == null || !b.covers(mine, v))) {   // v above mine
          lowest(kind.toLong) = Some(b.valueOf(key))
        }
      case None =>
    }
  }

  /** After a pass over every stored group: `left` are the keys of the groups it left stored. */
  def passed(left: Iterator[InternalRow]): Unit = {
    val found = Array.fill[Any](ranges.size)(null)
    left.foreach { key =>
      var i = 0
      while (i < bounds.length) {   // per stored group: no allocation
        val b = bounds(i)
        val mine = b.peek(key)
        if (mine != null && (found(i) == null || !b.covers(mine, found(i)))) found(i) = b.valueOf(key)
        i += 1
      }
    }
    ranges.iterator.zipWithIndex.foreach { case ((kind, _), i) => lowest(kind.toLong) = Some(found(i)) }
  }

  /** Writes every known value with this micro-batch's number (before the store commits). */
  def flush(): Unit = ranges.foreach { case (kind, b) =>
    current(kind, b).foreach { v =>
      ns.put(key(kind), StoreNamespace.bytesAndLong(valueWriter, if (v == null) null else b.toBytes(v), batch))
    }
  }
}
