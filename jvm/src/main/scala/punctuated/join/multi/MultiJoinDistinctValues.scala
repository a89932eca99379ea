package punctuated.join.multi

import scala.collection.mutable

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore

import punctuated.state.StoreNamespace

/**
 * The distinct values of each class of one input among its stored rows in one cell, kept in
 * namespace [[MultiJoinLayout.distinctNamespace]] of `punctuated-meta` (one counter per class,
 * committed with the batch), so that `auto`'s fan-outs (rows stored / distinct values,
 * [[MultiJoinObserved]]) do not depend on the plan that runs or on the order rows arrive in.
 *
 * [[MultiJoinState]] stores a class value's n rows under dense slots 0 .. n-1, so the count
 * changes only when a value's slot count goes from 0 to some (+1: its first row) or back to 0
 * (-1: its last row removed). The state reports that for the values its task changed, at
 * commit: no scan, no extra look-up.
 * {{{
 *   b(k, v), classes k = 0, v = 1; stored b(1, 7), b(2, 7)      counters {0: 2, 1: 1}
 *   b(3, 7) arrives                                              {0: 3, 1: 1}  (v = 7 had rows)
 *   k = 1 and k = 2 purged                                       {0: 1, 1: 1}
 * }}}
 *
 * Key -1 marks the counters exact. A checkpoint written before they existed has rows but no
 * marker: such a cell does not count (it cannot know its values without a pass over the rows)
 * until its rows of the input are all gone after a batch; then every counter is 0, exactly, and
 * it counts from there. Meanwhile [[MultiJoinObserved.statistics]] takes the input's fan-outs
 * from look-ups. A state without rows and without marker (a fresh query) counts from the start.
 *
 * @param meta   the cell's `punctuated-meta` store
 * @param number the input's number
 * @param classes the input's classes
 * @param empty  the input has no stored rows in this cell (read only without a marker)
 */
final class MultiJoinDistinctValues(meta: StateStore, number: Int, classes: Seq[Int], empty: => Boolean) {
  import MultiJoinDistinctValues._

  private val ns = StoreNamespace(meta, MultiJoinLayout.distinctNamespace(number), 1, 1)
  private val counts = new Array[Long](classes.size)
  private val changed = mutable.Set.empty[Int]

  /** Are the counters exact (see above)? */
  var counting: Boolean =
    if (ns.get(key(Marker)) != null) {
      classes.indices.foreach(q => counts(q) = Option(ns.get(key(classes(q)))).map(_.getLong(0)).getOrElse(0L))
      true
    } else if (empty) { changed ++= classes.indices; true } // the marker is written at commit
    else false

  /** The distinct values of class `c` (None: not counting, or not a class of the input). */
  def of(c: Int): Option[Long] = {
    val q = classes.indexOf(c)
    if (!counting || q < 0) None else Some(counts(q))
  }

  /** A value of class `c` got its first row (`delta` 1) or lost its last (-1). */
  def add(c: Int, delta: Long): Unit = {
    val q = classes.indexOf(c)
    if (counting && q >= 0) { counts(q) += delta; changed += q }
  }

  /** Every row of the input was removed. */
  def emptied(): Unit = if (counting) classes.indices.foreach { q => counts(q) = 0L; changed += q }

  /** Writes the changed counters (before the store commits); `noRows`: the input has no rows now. */
  def write(noRows: => Boolean): Unit = {
    if (!counting && noRows) { // a cell of an older checkpoint emptied: exact from now on
      counting = true
      emptied()
    }
    if (counting && changed.nonEmpty) {
      changed.foreach(q => ns.put(key(classes(q)), long(counts(q))))
      ns.put(key(Marker), long(1L))
      changed.clear()
    }
  }
}

object MultiJoinDistinctValues {
  /** The key of the marker (no class is negative). */
  private val Marker = -1

  private def key(c: Int): UnsafeRow = {
    val r = new UnsafeRow(1)
    r.pointTo(new Array[Byte](16), 16)
    r.setInt(0, c)
    r
  }

  private def long(v: Long): UnsafeRow = {
    val r = new UnsafeRow(1)
    r.pointTo(new Array[Byte](16), 16)
    r.setLong(0, v)
    r
  }
}
