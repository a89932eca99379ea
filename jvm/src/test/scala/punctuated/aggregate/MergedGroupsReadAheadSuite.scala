package punctuated.aggregate

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.scalatest.funsuite.AnyFunSuite

/**
 * [[MergedGroupsReadAhead]]: the merge below is read to its end when its groups fit the budget
 * (so that its map is freed first), in order, as copies of the one row object a generated
 * iterator reuses; beyond the budget, the rest is read as asked.
 */
class MergedGroupsReadAheadSuite extends AnyFunSuite {

  /** `n` groups (key, count) through one reused row, as a hash aggregation outputs them; `asked` counts `hasNext`. */
  private class Groups(n: Int) extends Iterator[InternalRow] {
    private val w = new UnsafeRowWriter(2)
    private var i = 0
    var asked = 0
    var ended = false
    override def hasNext: Boolean = { asked += 1; ended = i >= n; !ended }
    override def next(): InternalRow = { w.reset(); w.zeroOutNullBytes(); w.write(0, i.toLong); w.write(1, 10L * i); i += 1; w.getRow }
  }

  private def keys(rows: Iterator[InternalRow]): Seq[Long] = rows.map(_.getLong(0)).toList

  test("few groups: the merge below has ended before the first is returned, and each is a copy") {
    val below = new Groups(3)
    val ahead = MergedGroupsReadAhead(below, maxBytes = 1 << 20)
    assert(below.ended, "the map below is freed as its iterator finds no further group")
    val rows = ahead.toList
    assert(rows.map(_.getLong(0)) == Seq(0L, 1L, 2L) && rows.map(_.getLong(1)) == Seq(0L, 10L, 20L))
    assert(rows.map(_.asInstanceOf[UnsafeRow]).distinct.size == 3)
  }

  test("more groups than the budget: the first read ahead, the rest as asked, all in order") {
    val below = new Groups(1000)
    val rowBytes = 8 + 2 * 8
    val ahead = MergedGroupsReadAhead(below, maxBytes = 10L * rowBytes)
    assert(!below.ended && below.asked == 10)
    assert(keys(ahead) == (0L until 1000L))
    assert(below.ended)
  }

  test("no group: nothing, and the merge below has ended") {
    val below = new Groups(0)
    assert(MergedGroupsReadAhead(below).isEmpty && below.ended)
  }
}
