package punctuated.aggregate

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Reads the merge aggregation below a [[PunctuatedRestoreExec]] to its end before the merge
 * above it starts, when its groups fit in `maxBytes`: the hash map below is then freed before
 * the one above takes memory, and a task holds one map's memory at a time instead of two.
 *
 * Why it matters: a hash aggregation takes its first memory page with its first group, and a
 * page is `spark.buffer.pageSize` (64 MB with a few GB of executor memory). Every partition of
 * a punctuated aggregation gets the partition-wide punctuations ([[punctuated.input.PunctuationReplicatingExchangeExec]]),
 * so both merges of every partition hold a group, and a page, in every micro-batch — also where
 * no data row arrived, where Spark's own aggregation allocates nothing. Spark pools freed pages
 * of that size for reuse, so the pages are not allocated again, but the pool keeps as many as
 * were in use at once: with two maps per task, twice as many large arrays stay in the JVM's old
 * generation, enough (in `benchmarks/results/`, q7 at 2 M events) for the G1 collector to start
 * a concurrent marking cycle at every large allocation. Read ahead, the merge below frees its
 * page (its generated code frees its map as it finds no further group) and the merge above
 * reuses it.
 *
 * A partition with more merged groups than `maxBytes` is read the usual way (the first
 * `maxBytes` ahead, the rest as the merge above asks): the rows read ahead are copies, held on
 * the JVM heap, and the memory they may take is bounded.
 *
 * Example: `MergedGroupsReadAhead(rows, maxBytes = 4 << 20)` over 3 merged groups of 40 bytes
 * returns an iterator over copies of the 3 (and `rows` has ended: the map below is freed);
 * over 200,000 such groups the first 4 MB are copies, the rest `rows` itself.
 */
object MergedGroupsReadAhead {

  /** The bytes of merged groups read ahead per task at most (copies on the JVM heap). */
  val DefaultMaxBytes: Long = 4L << 20

  /** `rows` (UnsafeRows of the merge below), read ahead up to `maxBytes` (see above). */
  def apply(rows: Iterator[InternalRow], maxBytes: Long = DefaultMaxBytes): Iterator[InternalRow] = {
    val ahead = ArrayBuffer.empty[InternalRow]
    var bytes = 0L
    while (bytes < maxBytes && rows.hasNext) {
      val row = rows.next().asInstanceOf[UnsafeRow].copy()
      bytes += row.getSizeInBytes
      ahead += row
    }
    ahead.iterator ++ rows
  }
}
