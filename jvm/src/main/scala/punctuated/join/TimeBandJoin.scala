package punctuated.join

import scala.collection.mutable

import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStore

import punctuated.input.InputSpec
import punctuated.state.StoreNamespace

/**
 * A [[TimeBand]] at work in one task of [[PunctuatedSymmetricHashJoinExec]] (Tucker et al.
 * 2003, §5; the purge rule of [[TimeBand]]): each input's range punctuations on its time
 * column (`ts<=c`) raise its bound at the end of the batch; the other input's stored rows
 * whose band ends at or below it are purged through the [[TimeIndex]]; a later row of the
 * input at or below its own bound is late; a later row of the other input whose band ends at
 * or below the bound is joined with what is stored and not stored (it can meet no future
 * partner), as for key punctuations. Rows with a NULL time join nothing through the band and
 * are never stored.
 *
 * {{{
 *   band reach (10 min, 5 min); a stores (k=1, 12:00), b says ts<=12:10 at the end of batch n
 *   -> a's row is purged (12:00 + 10 min <= 12:10); an a row at 12:00 in batch n+1 is joined, not stored
 * }}}
 *
 * @param band     the join's band
 * @param inputs   the task's inputs
 * @param shared   the join's shared store
 * @param gathered per input, the highest bound of this batch's band punctuations gathered on
 *                 the driver (an input that is not replicated), and of its watermark as a
 *                 punctuation ([[WatermarkPunctuations]]), else None
 */
private[join] final class TimeBandJoin(band: TimeBand, inputs: IndexedSeq[JoinInput], shared: StateStore,
    gathered: IndexedSeq[Option[Long]]) {

  private def other(i: Int) = 1 - i

  /** Is input `i`'s state purged by the other input's bound? */
  private def indexed(i: Int) = band.reach(i).isDefined && band.bounded(other(i))

  private val width = TimeIndex.widthFor(band)
  val indexes: IndexedSeq[TimeIndex] = inputs.map { in =>
    val n = in.number
    new TimeIndex(StoreNamespace(shared, TimeIndex.metaNamespace(n), 1, TimeIndex.MetaValueSchema.length),
      if (indexed(n)) Some(StoreNamespace(shared, TimeIndex.bucketNamespace(n), 1, 1)) else None,
      in.keyLength, width)
  }

  /** This batch's highest band-punctuation bound per input. */
  private val pending: Array[Option[Long]] = gathered.toArray

  /** Is `row` (a punctuation of input `i`) a range punctuation on the band's time column? */
  def isBandPunctuation(i: Int, row: InternalRow): Boolean =
    band.schemes(i).exists(s => TimeBandJoin.schemeIndex(inputs(i).spec, row) == s)

  /** Takes a punctuation row of input `i` into account; returns whether it was a band one. */
  def punctuation(i: Int, row: InternalRow): Boolean = isBandPunctuation(i, row) && {
    band.timeOf(i, row).foreach(t => pending(i) = Some(pending(i).fold(t)(Math.max(_, t))))
    true
  }

  /** Is this data row of input `i` late (at or below a bound its input punctuated before)? */
  def isLate(i: Int, row: InternalRow): Boolean = band.bounded(i) &&
    band.timeOf(i, row).exists(t => indexes(i).bound.exists(t <= _))

  /** What a late row of input `i` came after, for the late-row error ("... arrived after <input> <this>"). */
  def lateReason(i: Int): String = {
    val bound = indexes(i).bound.fold("")(c => s" (bound $c in the column's internal unit)")
    if (band.watermarked(i)) s"had its event-time watermark or a range punctuation pass its time$bound"
    else s"punctuated its time column up to it with a range punctuation$bound"
  }

  /** Can this data row of input `i` meet no future row of the other input? */
  def noFuturePartner(i: Int, row: InternalRow): Boolean = band.timeOf(i, row) match {
    case None => true
    case Some(t) => band.reach(i).exists(r => indexes(other(i)).bound.exists(c => t + r <= c))
  }

  /**
   * LIFE's remaining lifetime of input `i`'s stored `row` through the band (Das, Gehrke and
   * Riedewald 2005, §4.2.2: `w - age`, in the time column's unit, the current unit included):
   * `t + reach(i) - c + 1`, `c` the other input's bound (its last range punctuation or
   * watermark), or `reach(i) + 1` while it has none. None when the band does not bound the row
   * (its time NULL, or no `reach(i)`): the band says nothing of its life.
   * {{{
   *   reach 2 (w = 3), a row at step 4, the other input at ts<=5: 4 + 2 - 5 + 1 = 2 (w - age = 3 - 1)
   * }}}
   */
  def remaining(i: Int, row: InternalRow): Option[Long] =
    for (t <- band.timeOf(i, row); r <- band.reach(i)) yield t + r - indexes(other(i)).bound.getOrElse(t) + 1

  /** Input `i` stored a row with this key. */
  def stored(i: Int, key: UnsafeRow, row: InternalRow): Unit =
    if (indexed(i)) band.timeOf(i, row).foreach(t => indexes(i).add(key, t))

  /**
   * Raises each input's bound by this batch's band punctuations and purges the other input's
   * rows they put out of reach; `purged(value, i)` is told of each row of input `i` removed,
   * `emptied(key, i)` of each join key of input `i` whose stored rows the band has all removed.
   * Returns the output bounds ([[outputBound]]) this batch raised, by input number.
   */
  def endOfBatch(purged: (UnsafeRow, Int) => Unit, emptied: (UnsafeRow, Int) => Unit = (_, _) => ()): Seq[(Int, Long)] = {
    val before = inputs.indices.map(outputBound)
    for (o <- inputs.indices; c <- pending(o) if indexes(o).raise(c)) {
      val i = other(o)
      if (indexed(i)) purge(i, c - band.reach(i).get, purged, emptied)
    }
    inputs.indices.flatMap(i => outputBound(i).filter(b => before(i).forall(_ < b)).map(i -> _))
  }

  /**
   * The output punctuation on input `i`'s time column (Tucker et al. 2003, Table 3: a join
   * propagates what no future result can carry; here for a band): a future result's `i`-time
   * is a future row of `i` (above `i`'s bound `C_i`) or a row of `i` meeting a future row of
   * the other input (above its bound `C_o`), which the band allows only while `t + reach(i) > C_o`.
   * So no future result has an `i`-time at or below `min(C_i, C_o - reach(i))`; None until both
   * inputs have a bound, or when the band does not bound `i`'s rows.
   * {{{
   *   b.ts BETWEEN a.ts - 2 AND a.ts + 3: reach (3, 2); a says ts<=20, b says ts<=15
   *   -> output a.ts<=12 (an a row at 13 may still meet a b row at 16), b.ts<=15 (min(15, 20 - 2))
   * }}}
   */
  def outputBound(i: Int): Option[Long] =
    for (ci <- indexes(i).bound; r <- band.reach(i); co <- indexes(other(i)).bound) yield math.min(ci, co - r)

  private def purge(i: Int, upTo: Long, purged: (UnsafeRow, Int) => Unit, emptied: (UnsafeRow, Int) => Unit): Unit = {
    val state = inputs(i).state
    val index = indexes(i)
    val (keys, bs) = index.keysUpTo(upTo)
    val left = mutable.HashMap.empty[UnsafeRow, mutable.Set[Long]]
    keys.foreach { key =>
      val rows = state.rowsWithKey(key).map(p => (p.key.copy(), p.value.copy())).toArray
      val remaining = mutable.Set.empty[Long]
      rows.foreach { case (storeKey, value) =>
        band.timeOf(i, value) match {
          case Some(t) if t <= upTo => state.removeRow(storeKey, key); purged(value, i)
          case Some(t) => remaining += index.bucketOf(t)
          case None =>
        }
      }
      left(key) = remaining
      if (rows.nonEmpty && remaining.isEmpty) emptied(key, i)
    }
    index.settle(upTo, bs, (k, b) => left.get(k).forall(_.contains(b)))
  }

  /** The range punctuations the band holds in this partition: each input's bound, once it has one. */
  def boundsHeld: Int = indexes.count(_.bound.isDefined)

  /** The stored entries of the inputs' time indexes in this partition: their open buckets. */
  def indexBuckets: Int = indexes.map(_.numOpenBuckets).sum

  /** Writes the bounds and indexes back (before the shared store commits). */
  def flush(): Unit = indexes.foreach(_.flush())
}

private[join] object TimeBandJoin {

  /** The index of the scheme a punctuation row instantiates (see [[InputSpec.schemeOf]]). */
  def schemeIndex(spec: InputSpec, row: InternalRow): Int =
    spec.decoder.scheme(row.isNullAt, m => !row.isNullAt(m) && row.getBoolean(m))

  /**
   * The highest bound of this batch's band punctuations of an input that is not replicated (one
   * small job over its rows; None if it sent none).
   */
  def gather(rdd: RDD[InternalRow], spec: InputSpec, band: TimeBand, i: Int): Option[Long] =
    band.schemes(i).flatMap { s =>
      val found = rdd.mapPartitions { iter =>
        iter.filter(r => spec.isPunctuation(r) && schemeIndex(spec, r) == s).flatMap(r => band.timeOf(i, r))
      }.collect()
      found.maxOption
    }
}
