package punctuated.join.shedding

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{BinaryType, DataType, IntegerType, LongType}

import punctuated.conf.SheddingConf
import punctuated.join.JoinInputState
import punctuated.state.StoreNamespace

/**
 * Semantic load shedding in one partition of one micro-batch of the binary punctuated join
 * (Das, Gehrke and Riedewald 2005, §2 and §4.2): keeps the partition's stored data rows, both
 * inputs together, within `spark.punctuated.shedding.maxStateRows` by not keeping the rows of
 * lowest priority ([[Priorities]]: PROB, LIFE or RAND; LIFE over a time band by the row's time left
 * in its band, the paper's sliding-window LIFE, otherwise by observed key lifetimes).
 *
 * '''When.''' At the end of the batch, after its punctuations have purged what they close:
 * if the inputs then hold more than the budget, the lowest-priority rows among every stored
 * row, this batch's included, are removed until the budget holds. Because priorities are
 * those as of the start of the batch (the estimators are updated only afterwards), this is
 * the paper's rule "when storing a row would exceed the memory, the row of lowest priority,
 * the arriving one included, is not kept" applied to the batch's rows at once, and the rows
 * kept do not depend on the order rows arrived in within the batch. Within the batch the state
 * may exceed the budget by the batch's new rows; a row shed at the end has already probed,
 * and been probed by, the batch's rows: its results are produced. Output therefore stays a
 * subset of the exact join (shedding only removes stored rows; every emitted pair is a true
 * pair, emitted once, by the later of its two rows).
 *
 * '''Cost.''' In a batch where the budget is exceeded, the stored rows are read once (a scan of
 * at most the budget plus the batch's new rows) into an in-memory list of (priority, store
 * key), sorted once; otherwise nothing is read. The estimators are one state-store value per
 * input, read once and written once per batch (at most `historyValues` entries each); the
 * batch's arrival counts are one in-memory map per input, keyed by join value.
 *
 * '''State.''' Each input's [[FrequencyEstimator]] is one entry in its namespace of the shared
 * store `punctuated-meta` (namespace [[JoinShedder.namespaceOf]]), checkpointed with the join:
 * a restarted or replayed batch loads the same estimators and sheds the same rows.
 *
 * @param conf  the shedding settings (enabled)
 * @param meta  the join's shared store
 * @param batch the micro-batch (store version being written)
 * @param seed  RAND's seed (the partition), so that partitions shed independently
 * @param bandLifetime for a time-band join, LIFE's remaining lifetime of input `i`'s stored row
 *              through the band ([[punctuated.join.TimeBandJoin.remaining]]), as of the end of
 *              the batch; where it gives none (or the join has no band), LIFE uses the key
 *              lifetimes observed from punctuations
 */
final class JoinShedder(conf: SheddingConf, meta: StateStore, batch: Long, seed: Int,
    bandLifetime: Option[(Int, InternalRow) => Option[Long]] = None) {
  import JoinShedder._

  private val budget = conf.maxStateRows.getOrElse(throw new IllegalArgumentException("shedding is off"))
  private val namespaces = IndexedSeq(0, 1).map(i => StoreNamespace(meta, namespaceOf(i), 1, 1))

  /** Each input's estimator as of the start of the batch (priorities use these). */
  val estimators: IndexedSeq[FrequencyEstimator[ValueBytes]] = namespaces.map { ns =>
    val stored = ns.get(EntryKey)
    if (stored == null) new FrequencyEstimator[ValueBytes](conf.historyRows, conf.historyValues)
    else FrequencyEstimator.fromBytes(stored.getBinary(0), conf.historyRows, conf.historyValues)
  }
  private val arrivals = IndexedSeq.fill(2)(mutable.HashMap.empty[ValueBytes, Long])
  /** Per input and join value stored this batch, the first slot stored this batch. */
  private val firstFresh = IndexedSeq.fill(2)(mutable.HashMap.empty[ValueBytes, Long])
  private val lifetimes = IndexedSeq.fill(2)(ArrayBuffer.empty[Long])
  /**
   * Each input's stored rows as of the last commit: kept next to the estimators (a provider may
   * not report its row count before the commit); read by one scan if never recorded (the first
   * batch with shedding on).
   */
  private val committedRows: IndexedSeq[Option[Long]] = namespaces.map { ns =>
    Option(ns.get(CountKey)).map(_.getLong(0))
  }
  private def rowsNow(states: IndexedSeq[JoinInputState]): IndexedSeq[Long] = states.indices.map { i =>
    committedRows(i).getOrElse(states(i).storedRows().size.toLong - states(i).rowDelta) + states(i).rowDelta
  }
  private var held: Option[IndexedSeq[Long]] = None

  /** Rows shed in this task, per input. */
  val shed: Array[Long] = Array(0L, 0L)

  /** A data row of input `i` with join key `key` arrived (not late, key not NULL). */
  def arrived(i: Int, key: UnsafeRow): Unit = {
    val v = ValueBytes(key.getBytes.clone())
    arrivals(i)(v) = arrivals(i).getOrElse(v, 0L) + 1
  }

  /** A row of input `i` with join key `key` was stored under `slot`. */
  def stored(i: Int, key: UnsafeRow, slot: Long): Unit =
    firstFresh(i).getOrElseUpdate(ValueBytes(key.getBytes.clone()), slot)

  /** Input `i`'s stored rows with `key` were purged by a punctuation: LIFE's observed lifetime. */
  def closed(i: Int, key: UnsafeRow): Unit =
    estimators(i).firstBatch(ValueBytes(key.getBytes)).foreach(first => lifetimes(i) += batch - first)

  /** Each input's sum of counts, as of the start of the batch. */
  private lazy val totals = estimators.map(_.total)

  private def priority(i: Int, value: ValueBytes, row: UnsafeRow): Double = conf.policy match {
    case Priorities.Prob => Priorities.prob(estimators(1 - i).estimate(value), totals(1 - i))
    case Priorities.Life => bandLifetime.flatMap(_(i, row)) match {
      case Some(left) => Priorities.lifeInBand(estimators(1 - i).estimate(value), totals(1 - i), left)
      case None =>
        val age = estimators(i).firstBatch(value).map(batch - _).getOrElse(0L)
        Priorities.life(estimators(1 - i).estimate(value), totals(1 - i), estimators(i).meanLifetime, age)
    }
    case _ => Priorities.rand(row.getBytes, batch, seed)
  }

  /**
   * Removes the lowest-priority rows until the inputs hold at most the budget (see the class
   * doc); returns the number removed.
   */
  def shedOver(states: IndexedSeq[JoinInputState]): Long = {
    val before = rowsNow(states)
    held = Some(before)
    val excess = before.sum - budget
    if (excess <= 0) 0L
    else {
      val candidates = ArrayBuffer.empty[Priorities.Candidate]
      val refs = ArrayBuffer.empty[(UnsafeRow, UnsafeRow)]
      for (i <- states.indices; (key, slot, storeKey, value) <- states(i).storedRows()) {
        val v = ValueBytes(key.getBytes)
        val bytes = value.getBytes
        val fresh = firstFresh(i).get(v).exists(slot >= _)
        candidates += Priorities.Candidate(priority(i, v, value), fresh, Priorities.contentHash(bytes),
          i, storeKey.getBytes.clone())
        refs += (storeKey.copy() -> key.copy())
      }
      val victims = Priorities.victims(candidates.toIndexedSeq, math.min(excess, Int.MaxValue).toInt)
      victims.foreach { c =>
        val input = candidates(c).input
        states(input).removeRow(refs(c)._1, refs(c)._2)
        shed(input) += 1
      }
      held = Some(before.indices.map(i => before(i) - shed(i)))
      victims.size.toLong
    }
  }

  /** Adds the batch's arrivals and lifetimes to the estimators and writes them (before commit). */
  def finish(): Unit = IndexedSeq(0, 1).foreach { i =>
    val e = estimators(i)
    lifetimes(i).foreach(e.observeLifetime)
    e.update(arrivals(i), batch)
    namespaces(i).put(EntryKey, valueRow(FrequencyEstimator.toBytes(e)))
    held.foreach(h => namespaces(i).put(CountKey, countRow(h(i))))
  }
}

object JoinShedder {
  /**
   * The shared-store namespace of input `i`'s estimator: `(1 << 25) + i`, clear of the inputs'
   * other namespaces, of a time-band join's time index (`1000 + 2n`, `1001 + 2n`, [[punctuated.join.TimeIndex]])
   * and of the multi-way join's (`(1 << 20)` to `(1 << 24) + n`).
   */
  def namespaceOf(i: Int): Int = (1 << 25) + i

  private def intRow(i: Int): UnsafeRow =
    UnsafeProjection.create(Array[DataType](IntegerType))(new GenericInternalRow(Array[Any](i))).copy()
  /** The estimator's entry, and the stored-row count's, in an input's namespace. */
  private val EntryKey: UnsafeRow = intRow(0)
  private val CountKey: UnsafeRow = intRow(1)
  private def countRow(n: Long): UnsafeRow =
    UnsafeProjection.create(Array[DataType](LongType))(new GenericInternalRow(Array[Any](n))).copy()
  private def valueRow(bytes: Array[Byte]): UnsafeRow =
    UnsafeProjection.create(Array[DataType](BinaryType))(new GenericInternalRow(Array[Any](bytes))).copy()
}
