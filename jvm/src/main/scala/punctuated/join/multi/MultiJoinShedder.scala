package punctuated.join.multi

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.StateStore
import org.apache.spark.sql.types.{BinaryType, DataType, IntegerType, LongType}

import punctuated.conf.SheddingConf
import punctuated.join.shedding.{FrequencyEstimator, Priorities, ValueBytes}
import punctuated.state.StoreNamespace

/**
 * Semantic load shedding in one cell (partition) of one micro-batch of the multi-way join
 * ([[PunctuatedMultiJoinExec]]): the binary join's rule ([[punctuated.join.shedding.JoinShedder]],
 * Das, Gehrke and Riedewald 2005, §4.2) over every row the cell stores — the inputs' rows and
 * the combinations its plan's intermediate nodes hold — kept within
 * `spark.punctuated.shedding.maxStateRows`.
 *
 * '''When.''' At the end of the batch, after the chained purge: if the cell then stores more
 * than the budget, the rows of lowest priority among all of them, this batch's included, are
 * removed until the budget holds (priorities as of the start of the batch, so the choice does
 * not depend on the order rows arrived in). A row shed has already probed, and been probed by,
 * the batch's rows: its results are produced. Shedding only removes stored rows (a combination
 * of a node is a stored row too), so every result emitted is a true one, emitted once — by the
 * arrival of its last row — and the output is a subset of the exact join.
 *
 * '''Priorities, extended to n inputs.''' The paper's PROB ranks a stored row of one input by
 * the other input's arrival probability of its join value: the chance that the next arrival
 * joins it. Here a stored row of a unit U (an input, or a node covering inputs X) joins the
 * next arrival of an input j outside X that shares a class with U iff j's row carries U's
 * values in the classes they share; PROB of the row is the sum over those inputs j of that
 * probability, estimated as the smallest, over the shared classes c, of j's arrival frequency
 * of the row's value of c in this cell ([[FrequencyEstimator]] per input and class, as the
 * binary join's per input):
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v): a's row a(1): p_b,k(1);  b's row b(1, 7): p_a,k(1) + p_c,v(7);
 *   the node {a, b}'s combination (a(1), b(1, 7)): p_c,v(7)
 * }}}
 * With two inputs it is the paper's PROB. LIFE multiplies it by the remaining lifetime of the
 * row's key on its input (the mean observed lifetime of a key of that input, from its first
 * arrival to the punctuation purging it, less the key's age; for a node's combination the
 * smallest over its inputs; 1 until a lifetime is observed). RAND: a deterministic hash.
 * Ties: rows of earlier batches go first, then by content, then unit and row bytes.
 *
 * '''Cost.''' The cell's row count is its committed count (kept here, since a provider may
 * not report it while being updated) plus the task's changes; only a batch over the budget
 * reads the stored rows, once, and sorts them. The estimators are one entry per input and
 * class, read and written once per batch.
 *
 * '''State.''' In `punctuated-meta` ([[MultiJoinLayout.sheddingNamespace]],
 * [[MultiJoinLayout.sheddingCounts]]), committed with the batch: a retried batch or a restart
 * loads the same estimators and sheds the same rows.
 *
 * @param conf    the shedding settings (enabled)
 * @param meta    the cell's `punctuated-meta` store
 * @param batch   the micro-batch (store version being written)
 * @param cell    the cell (RAND's seed)
 * @param classes per input, its classes
 */
private[multi] final class MultiJoinShedder(conf: SheddingConf, meta: StateStore, batch: Long, cell: Int,
    classes: IndexedSeq[Seq[Int]]) {
  import MultiJoinShedder._

  private val budget = conf.maxStateRows.getOrElse(throw new IllegalArgumentException("shedding is off"))
  private val n = classes.size

  private def ns(id: Int, valueFields: Int = 1) = StoreNamespace(meta, id, 1, valueFields)
  /** Per input and class (position in the input's classes), its estimator as of the start of the batch. */
  private val estimators: IndexedSeq[IndexedSeq[FrequencyEstimator[ValueBytes]]] = (0 until n).map { i =>
    classes(i).map { c =>
      val stored = ns(MultiJoinLayout.sheddingNamespace(i, c)).get(EntryKey)
      if (stored == null) new FrequencyEstimator[ValueBytes](conf.historyRows, conf.historyValues)
      else FrequencyEstimator.fromBytes(stored.getBinary(0), conf.historyRows, conf.historyValues)
    }.toIndexedSeq
  }
  private lazy val totals = estimators.map(_.map(_.total))
  private val arrivals = (0 until n).map(i => classes(i).map(_ => mutable.HashMap.empty[ValueBytes, Long]))
  private val lifetimes = IndexedSeq.fill(n)(ArrayBuffer.empty[Long])

  /** Rows shed in this task, per input (a node's combination counts for the node: index n). */
  val shed: Array[Long] = new Array[Long](n + 1)
  /** Per unit shed over: its state, the inputs it covers, its rows as of the last commit. */
  private var counted: Seq[(MultiJoinState, Set[Int], Long)] = Nil

  /** A data row of input `i` with this binding (class -> value) arrived in its home cell. */
  def arrived(i: Int, binding: collection.Map[Int, UnsafeRow]): Unit = classes(i).indices.foreach { q =>
    val v = ValueBytes(binding(classes(i)(q)).getBytes.clone())
    arrivals(i)(q)(v) = arrivals(i)(q).getOrElse(v, 0L) + 1
  }

  /** Input `i`'s rows with this binding were purged by punctuations: LIFE's observed lifetime. */
  def closed(i: Int, binding: collection.Map[Int, UnsafeRow]): Unit =
    estimators(i)(0).firstBatch(ValueBytes(binding(classes(i).head).getBytes)).foreach(f => lifetimes(i) += batch - f)

  private def frequency(j: Int, c: Int, value: UnsafeRow): Double = {
    val q = classes(j).indexOf(c)
    Priorities.prob(estimators(j)(q).estimate(ValueBytes(value.getBytes)), totals(j)(q))
  }

  /** PROB of a stored row of a unit covering `covered` with this binding (see the class doc). */
  private[multi] def prob(covered: Set[Int], binding: collection.Map[Int, UnsafeRow]): Double =
    (0 until n).filterNot(covered).map { j =>
      val shared = classes(j).filter(binding.contains)
      if (shared.isEmpty) 0.0 else shared.map(c => frequency(j, c, binding(c))).min
    }.sum

  private def remaining(i: Int, binding: collection.Map[Int, UnsafeRow]): Double = {
    val e = estimators(i)(0)
    val age = e.firstBatch(ValueBytes(binding(classes(i).head).getBytes)).map(batch - _).getOrElse(0L)
    e.meanLifetime.map(m => math.max(1.0, m - age)).getOrElse(1.0)
  }

  private def priority(covered: Set[Int], binding: collection.Map[Int, UnsafeRow], row: UnsafeRow): Double =
    conf.policy match {
      case Priorities.Prob => prob(covered, binding)
      case Priorities.Life => prob(covered, binding) * covered.map(remaining(_, binding)).min
      case _ => Priorities.rand(row.getBytes, batch, cell)
    }

  /**
   * Removes the lowest-priority rows of `units` (each state with the inputs it covers) until
   * the cell holds at most the budget (counted in [[shed]]); returns the input keys (input,
   * key) left without a row, for the purge to follow.
   */
  def shedOver(units: Seq[(MultiJoinState, Set[Int])]): Seq[(Int, UnsafeRow)] = {
    val atStart = units.map { case (st, covered) => (st, covered, committed(st, covered)) }
    counted = atStart
    val excess = atStart.map { case (st, _, c) => c + st.rowDelta }.sum - budget
    if (excess <= 0) Nil
    else {
      val candidates = ArrayBuffer.empty[Priorities.Candidate]
      val refs = ArrayBuffer.empty[(Int, UnsafeRow, UnsafeRow)]
      units.zipWithIndex.foreach { case ((st, covered), u) =>
        val fresh = mutable.HashMap.empty[UnsafeRow, Int]
        st.appended.foreach(r => fresh(r) = fresh.getOrElse(r, 0) + 1)
        st.currentRows.foreach { case (row, key) =>
          // a row stored this batch, as many times as it was (identical rows are interchangeable)
          val isFresh = fresh.get(row).exists(_ > 0)
          if (isFresh) fresh(row) -= 1
          candidates += Priorities.Candidate(priority(covered, st.bindingOf(key), row), isFresh,
            Priorities.contentHash(row.getBytes), u, row.getBytes)
          refs += ((u, row, key))
        }
      }
      val victims = Priorities.victims(candidates.toIndexedSeq, math.min(excess, Int.MaxValue).toInt)
      val touched = mutable.LinkedHashSet.empty[(Int, UnsafeRow)]
      victims.foreach { c =>
        val (u, row, key) = refs(c)
        val (st, covered) = units(u)
        if (st.removeRow(row, key)) {
          shed(if (covered.size == 1) covered.head else n) += 1
          if (covered.size == 1) touched += (covered.head -> key)
        }
      }
      touched.toSeq.filter { case (i, key) => !units.find(_._2 == Set(i)).exists(_._1.isStored(key)) }
    }
  }

  /** A unit's rows as of the last commit: kept here by the batch before, else one pass to count. */
  private def committed(st: MultiJoinState, covered: Set[Int]): Long =
    Option(ns(MultiJoinLayout.sheddingCounts(covered.toSeq), 2).get(EntryKey))
      .filter(_.getLong(1) == batch - 1).map(_.getLong(0))
      .getOrElse(st.storedRows.size.toLong - st.flushedDelta)

  /**
   * Adds the batch's arrivals and lifetimes to the estimators and writes them and the counts
   * (before the states write their changes: [[MultiJoinState.prepareCommit]]).
   */
  def finish(): Unit = {
    for (i <- 0 until n; q <- classes(i).indices) {
      val e = estimators(i)(q)
      if (q == 0) lifetimes(i).foreach(e.observeLifetime)
      e.update(arrivals(i)(q), batch)
      ns(MultiJoinLayout.sheddingNamespace(i, classes(i)(q))).put(EntryKey, binaryRow(FrequencyEstimator.toBytes(e)))
    }
    // the rows each unit commits (whatever removed them after the shedding: a purge, too)
    counted.foreach { case (st, covered, atStart) =>
      ns(MultiJoinLayout.sheddingCounts(covered.toSeq), 2).put(EntryKey, countRow(atStart + st.rowDelta, batch))
    }
  }
}

private[multi] object MultiJoinShedder {
  private val EntryKey: UnsafeRow =
    UnsafeProjection.create(Array[DataType](IntegerType))(new GenericInternalRow(Array[Any](0))).copy()
  private def countRow(rows: Long, batch: Long): UnsafeRow =
    UnsafeProjection.create(Array[DataType](LongType, LongType))(new GenericInternalRow(Array[Any](rows, batch))).copy()
  private def binaryRow(bytes: Array[Byte]): UnsafeRow =
    UnsafeProjection.create(Array[DataType](BinaryType))(new GenericInternalRow(Array[Any](bytes))).copy()
}
