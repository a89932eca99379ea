package punctuated.join

import java.util.concurrent.TimeUnit.NANOSECONDS

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.plans._
import org.apache.spark.sql.execution.streaming.state._

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.KeyScheme
import punctuated.join.shedding.{JoinShedder, SheddingMetrics}
import punctuated.state.PunctuatedJoinMetrics

/**
 * One partition of one micro-batch of [[PunctuatedSymmetricHashJoinExec]]: each input in
 * turn (input 0, then input 1), then this batch's punctuations, then commit. Everything is
 * written per input number `i` and its partner `other(i)` ([[JoinInput]]); only the join
 * type's asymmetries (which input an outer, semi or anti join preserves) name an input, through
 * `preserved(i)`.
 *
 * @param partitionWide per input, this batch's partition-wide punctuations gathered on the
 *                      driver (see [[PunctuatedSymmetricHashJoinExec.partitionWide]])
 * @param bandBounds    per input, the highest bound of this batch's range punctuations on the
 *                      band's time column gathered on the driver ([[TimeBandJoin.gather]])
 */
private[join] class PunctuatedJoinTask(
    exec: PunctuatedSymmetricHashJoinExec,
    partitionId: Int,
    storeConf: StateStoreConf,
    hadoopConf: org.apache.hadoop.conf.Configuration,
    partitionWide: IndexedSeq[Array[(KeyScheme, UnsafeRow)]],
    bandBounds: IndexedSeq[Option[Long]] = IndexedSeq(None, None)) {
  import exec.{condition, getStateInfo, indexSchemes, joinType, metric, other, output, preserved,
    reportCustomStoreMetrics, reportStoreMetrics, settings, usesSharedStore}
  import PunctuatedJoinMetrics._

  private val info = getStateInfo
  private val batch = info.storeVersion

  /** Every input's held punctuations and range indexes ([[StoreNamespace]]). */
  private val shared =
    if (usesSharedStore) Some(JoinInputState.openShared(info, partitionId, storeConf, hadoopConf)) else None
  private val inputs: IndexedSeq[JoinInput] = exec.inputs.map { in =>
    val state = new JoinInputState(in.number, shared, info, partitionId, JoinInputState.keySchema(in.keys),
      org.apache.spark.sql.catalyst.types.DataTypeUtils.fromAttributes(in.output),
      in.spec.keySchemes, indexSchemes(in.number), settings.maxRemembered, storeConf, hadoopConf)
    new JoinInput(in, state, partitionWide(in.number))
  }
  private val states = inputs.map(_.state)
  /** The time band's purge, bounds and late rows ([[TimeBandJoin]]), for a band join. */
  private val band = exec.band.map(new TimeBandJoin(_, inputs, shared.get, bandBounds))
  /** Load shedding under `spark.punctuated.shedding.maxStateRows` (inner joins; see [[JoinShedder]]). */
  private val shedder =
    if (!settings.shedding.enabled || joinType != Inner) None
    else shared.map(new JoinShedder(settings.shedding, _, batch, partitionId,
      band.map(b => (i: Int, row: InternalRow) => b.remaining(i, row))))
  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
    states.foreach(_.abortIfNeeded())
    shared.foreach(s => if (!s.hasCommitted) s.abort())
  })

  private val allValueAttrs = inputs.flatMap(_.valueAttrs)
  private val pairCondition: InternalRow => Boolean = condition match {
    case Some(c) => Predicate.create(c, allValueAttrs).eval
    case None => _ => true
  }
  private val semi = joinType == LeftSemi || joinType == LeftAnti
  /** Output rows from the inputs' rows in the stored layout, in input order (a semi join: input 0's). */
  private val outputProj = UnsafeProjection.create(output, allValueAttrs)
  private val joined = new JoinedRow
  private val pairRows = new Array[InternalRow](2)

  /** Input `i`'s row `mine` and input `other(i)`'s row `theirs` as one row, in input order. */
  private def joinedOf(i: Int, mine: InternalRow, theirs: InternalRow): InternalRow = {
    pairRows(i) = mine
    pairRows(other(i)) = theirs
    joined(pairRows(0), pairRows(1))
  }

  private var seq = 0L
  private var stored = 0L
  private var purged = 0L

  /** Joins the inputs' rows of this batch (`iters(i)`: input `i`'s), in input order. */
  def run(iters: IndexedSeq[Iterator[InternalRow]]): Iterator[InternalRow] = {
    val start = System.nanoTime
    val out = inputs.indices.map(i => processInput(iters(i), i)).reduce(_ ++ _) ++
      Iterator.single(()).flatMap(_ => endOfBatch())
    val numOutputRows = metric("numOutputRows")
    val counted = out.map { row => numOutputRows += 1; row }
    new CompletingIterator[InternalRow](counted, () => {
      metric("allUpdatesTimeMs") += NANOSECONDS.toMillis(System.nanoTime - start)
      // read before the commit; a band's bounds are range punctuations held too
      val held = states.map(_.numPunctuations).sum + band.map(_.boundsHeld).getOrElse(0)
      val buckets = band.map(_.indexBuckets).getOrElse(0)
      val stores = states.map(_.rowsStore) ++ shared
      metric("commitTimeMs") += timed {
        band.foreach(_.flush())
        states.foreach(_.prepareCommit())
        stores.foreach(_.commit())
      }
      // every store's own metrics, read once per store (a provider's metrics are not free: the
      // HDFS-backed provider estimates the size of the maps it keeps, RocksDB reads native
      // properties): rows from the inputs' stores; as Spark's setStoreMetrics reports one
      // store's, memory and the provider's custom metrics (RocksDB's) summed over every store
      val storeMetrics = stores.map(_.metrics)
      metric("numTotalStateRows") += storeMetrics.take(states.size).map(_.numKeys).sum
      metric(PunctuationsHeld) += held
      metric(RangeIndexEntries) += states.map(_.numIndexEntries).sum
      metric(TimeIndexBuckets) += buckets
      metric(ClosedValuesRemembered) += states.map(_.numClosedValues).sum
      metric(ClosedValuesForgotten) += states.map(_.numClosedValuesForgotten).sum
      metric("stateMemory") += storeMetrics.map(_.memoryUsedBytes).sum
      storeMetrics.foreach(m => reportCustomStoreMetrics(m.customMetrics))
      metric("numUpdatedStateRows") += stored
      val shed = shedder.map(_.shed).getOrElse(Array(0L, 0L))
      metric("numRemovedStateRows") += purged + shed.sum
      metric(SheddingMetrics.RowsShed) += shed.sum
      metric(SheddingMetrics.RowsShedLeft) += shed(0)
      metric(SheddingMetrics.RowsShedRight) += shed(1)
      metric(RowsPurged) += purged
      metric(StateRowsScanned) += states.map(_.rowsScanned).sum
      reportStoreMetrics()
    })
  }

  private def timed(body: => Unit): Long = {
    val t = System.nanoTime; body; NANOSECONDS.toMillis(System.nanoTime - t)
  }

  /** An output row of input `i`'s row `mine` and its partner `theirs` (a copy: results are buffered). */
  private def emit(i: Int, mine: InternalRow, theirs: InternalRow): InternalRow =
    outputProj(joinedOf(i, mine, theirs)).copy()

  private def processInput(iter: Iterator[InternalRow], i: Int): Iterator[InternalRow] = {
    val own = inputs(i)
    iter.flatMap { row =>
      if (own.spec.isPunctuation(row)) {
        punctuation(row, own)
        Iterator.empty
      } else {
        val key = own.keyProj(row)
        if (key.anyNull) {
          // NULL keys never match: emitted at once where unmatched rows are kept
          val value = own.state.valueOf(row, matched = false)
          if (preserved(i) && joinType != LeftSemi) Iterator.single(padded(value, i))
          else Iterator.empty
        } else if (own.state.covers(key)) {
          late(row, own)
          Iterator.empty
        } else if (band.exists(_.isLate(i, row))) {
          late(row, own, band.get.lateReason(i))
          Iterator.empty
        } else {
          shedder.foreach(_.arrived(i, key))
          joinRow(row, key.copy(), i)
        }
      }
    }
  }

  private def padded(value: InternalRow, i: Int): InternalRow = emit(i, value, inputs(other(i)).nullRow)

  private def joinRow(row: InternalRow, key: UnsafeRow, i: Int): Iterator[InternalRow] = {
    val own = inputs(i)
    val theirs = inputs(other(i))
    // the row in the stored layout (`matched` false), as a view: copied only if stored
    val value = own.unmatchedView(row)
    val results = ArrayBuffer.empty[InternalRow]
    var matched = false
    // partners are read as the scan goes, unless the loop changes the other input's rows
    val partners =
      if (preserved(theirs.number) || semi) {
        theirs.state.rowsWithKey(key).map(p => (p.key.copy(), p.value.copy())).toArray.iterator
      } else theirs.state.rowsWithKey(key).map(p => (p.key, p.value))
    partners.foreach { case (otherKey, otherValue) =>
      if (pairCondition(joinedOf(i, value, otherValue))) {
        matched = true
        joinType match {
          case LeftSemi | LeftAnti if !preserved(i) =>
            // a stored row of the preserved input met its first partner: semi emits it, anti never will
            if (joinType == LeftSemi) results += emit(theirs.number, otherValue, value)
            theirs.state.removeRow(otherKey, key); purged += 1
          case LeftSemi | LeftAnti =>
          case _ =>
            results += emit(i, value, otherValue)
            if (preserved(theirs.number) && !otherValue.getBoolean(otherValue.numFields - 1)) {
              otherValue.setBoolean(otherValue.numFields - 1, true)
              theirs.state.update(otherKey, otherValue)
            }
        }
      }
    }
    if (semi && preserved(i) && matched) {
      // semi: emitted once, nothing more to wait for; anti: never emitted
      if (joinType == LeftSemi) results += emit(i, value, theirs.nullRow)
    } else if (theirs.state.covers(key) || theirs.closedNow.contains(key) ||
        band.exists(_.noFuturePartner(i, row))) {
      // The other input closed this key: no future partner, so the row is not stored.
      if (preserved(i) && !matched && joinType != LeftSemi) results += padded(value, i)
    } else {
      val slot = own.state.append(key, (batch << 32) | seq, own.state.valueOf(row, matched))
      shedder.foreach(_.stored(i, key, slot))
      band.foreach(_.stored(i, key, row))
      seq += 1; stored += 1
    }
    own.spec.unique.foreach { u =>
      own.newPunctuations += own.state.punctuationFor(u, key)
      if (u.isWholeKey(key.numFields)) own.closedNow += key
    }
    results.iterator
  }

  private def punctuation(row: InternalRow, own: JoinInput): Unit = {
    own.spec.schemeOf(row) match {
      case Some(keyScheme) =>
        // a partition-wide punctuation of a replicated input comes to every partition: the
        // copy in the partition the hash names (its home) counts it and applies the rest
        val onBand = band.exists(_.punctuation(own.number, row))
        val home = !own.replicated || !(onBand || keyScheme.exists(!_.isWholeKey(own.keyLength))) ||
          own.homePartition(row) == partitionId
        if (home) metric(PunctuationsReceived) += 1
        // partition-wide ones of other inputs come to every partition from `partitionWide`
        if (own.replicated) keyScheme.filterNot(_.isWholeKey(own.keyLength)).foreach { s =>
          own.newPunctuations += own.state.punctuationFor(s, own.keyProj(row))
        }
        if (home) keyScheme.filter(_.isWholeKey(own.keyLength)).foreach { s =>
          own.newPunctuations += own.state.punctuationFor(s, own.keyProj(row))
          own.closedNow += own.keyProj(row).copy()
        }
      case None if settings.failOnInvalidPunctuations =>
        throw PunctuatedErrors.invalidPunctuation(own.render(row), own.spec.name, own.spec.schemeNames)
      case None =>
        metric(InvalidPunctuationsDropped) += 1
    }
  }

  /** A late row of `own`: dropped and counted, or fails the query; `after` says what it came after. */
  private def late(row: InternalRow, own: JoinInput, after: String = ""): Unit = {
    if (settings.failOnLateRows) {
      val name = if (own.spec.name.nonEmpty) own.spec.name else s"the ${if (own.number == 0) "left" else "right"} input"
      val what = if (after.nonEmpty) after else own.spec.watermark match {
        case Some((_, scheme)) => s"punctuated its key, or its event-time watermark ($scheme) passed it"
        case None => "punctuated its key"
      }
      throw PunctuatedErrors.lateRow(s"Row ${own.render(row)} of $name arrived after $name $what")
    }
    metric(LateRowsDropped) += 1
  }

  /** Applies this batch's punctuations: purge, hold, release (see the operator's doc). */
  private def endOfBatch(): Iterator[InternalRow] = {
    val results = ArrayBuffer.empty[InternalRow]
    val ranges = ArrayBuffer.empty[(KeyPunctuation, Int)]
    for (own <- inputs; newest <- strongest(own.newPunctuations.toSeq, own.state)) {
      val theirs = inputs(other(own.number))
      val already = own.state.held(newest.scheme, newest.constants)
      // what the input closes now: its held bound and the new one together (one range: the
      // greater; several: the union of the regions, which need not include one another)
      val p = newest.copy(bound = own.state.mergeBounds(newest.scheme, already.flatMap(_._1), newest.bound))
      // a punctuation repeating what its input closed before (held, or remembered) says nothing new
      if (!already.exists { case (b, _) => own.state.boundCovers(p.scheme, b, p.bound) } &&
          !own.state.remembers(p)) {
        own.state.remember(p)
        // the keys p closes: its own (whole key), or those the range index lists
        val keys =
          if (p.scheme.isWholeKey(own.keyLength)) Array(p.constants) else theirs.state.keysCoveredBy(p)
        keys.foreach { k =>
          val removed = theirs.state.purgeKey(k)
          if (removed.nonEmpty) shedder.foreach(_.closed(theirs.number, k))
          removed.foreach(purge(_, theirs.number, results))
        }
        if (p.scheme.hasRange) ranges += (p -> own.number)
        val otherHeld = theirs.state.held(p.scheme, p.constants)
        val closed = otherHeld.exists { case (b, _) => theirs.state.boundCovers(p.scheme, b, p.bound) } ||
          theirs.state.remembers(p)
        val closesOther = otherHeld.exists { case (b, _) => own.state.boundCovers(p.scheme, p.bound, b) }
        val retention = settings.punctuationRetention
        // (a partition-wide punctuation is seen by every partition: output once, by partition 0)
        // (only of schemes both inputs declare: a watermark's range is not in the output's
        // derived declaration, and Spark passes the watermark on by itself)
        if (settings.emitPunctuations && (p.scheme.isWholeKey(own.keyLength) || partitionId == 0) &&
            inputs.forall(_.spec.declaredKeySchemes.contains(p.scheme))) {
          // what both inputs have now closed: no output row can match it any more (the
          // intersection of their bounds: one range, the lower; several, the regions')
          val finished = if (closed) Some(p)
            else for ((Some(b), _) <- otherHeld; ours <- p.bound; both <- own.state.intersectBounds(p.scheme, b, ours))
              yield KeyPunctuation(p.scheme, p.constants, Some(both))
          finished.foreach(f => outputPunctuations ++= outputPunctuationRows(f))
        }
        if (!closed) own.state.hold(p, -1L)
        else if (retention > 0) own.state.hold(p, batch)
        if (closesOther) {
          if (retention == 0) theirs.state.release(p.scheme, p.constants)
          else otherHeld.foreach { case (b, _) =>
            theirs.state.hold(KeyPunctuation(p.scheme, p.constants, b), batch)
          }
        }
      }
    }
    band.foreach { b =>
      val risen = b.endOfBatch((value, i) => purge(value, i, results), bandEmptied)
      // every partition has the same bounds: output once, by partition 0
      if (settings.emitPunctuations && partitionId == 0) {
        risen.foreach { case (i, t) => outputPunctuations ++= timePunctuationRows(i, t) }
      }
    }
    if (ranges.nonEmpty) releaseClosedByRanges(ranges.toSeq)
    results ++= outputPunctuations    // after the rows they cover
    if (settings.punctuationRetention > 0) {
      states.foreach(_.releaseExpired(batch, settings.punctuationRetention))
    }
    // after the purges: shed what still exceeds the budget, then update the estimators
    shedder.foreach { s => s.shedOver(states); s.finish() }
    results.iterator
  }

  /**
   * One punctuation per scheme and constants: what the batch's punctuations of an input with
   * them close together (one range: the greatest bound; several: the union of their regions).
   * They take effect together, so keeping one makes holding, releasing and output
   * punctuations independent of the order in which they reach the partition.
   */
  private def strongest(ps: Seq[KeyPunctuation], state: JoinInputState): Iterable[KeyPunctuation] = {
    val best = scala.collection.mutable.LinkedHashMap.empty[(Int, UnsafeRow), KeyPunctuation]
    ps.foreach { p =>
      val slot = (p.scheme.id, p.constants)
      best.get(slot) match {
        case Some(q) if state.boundCovers(p.scheme, q.bound, p.bound) =>
        // what both close (one range: the greater bound; several: two corners neither of which
        // covers the other close their union)
        case Some(q) => best(slot) = p.copy(bound = state.mergeBounds(p.scheme, q.bound, p.bound))
        case None => best(slot) = p
      }
    }
    best.values
  }

  private val outputPunctuations = ArrayBuffer.empty[InternalRow]
  private lazy val outputRowProj = UnsafeProjection.create(output.map(_.dataType).toArray)
  /** Where each input's columns start in an output row. */
  private val offsets = inputs.scanLeft(0)(_ + _.output.size)

  /**
   * Output punctuations for values both inputs have closed (Tucker et al. 2003, Table 3,
   * join propagation: an input's punctuation extended with wildcards for the other input's
   * columns): for each input whose columns are in the output and whose marker is visible, a
   * row with that marker true (for an input that is itself a join's output: the marker of
   * the stream its key columns come from), that input's join-key columns set as the
   * punctuation says (the bound for a range), the other markers false, every other column NULL.
   */
  private def outputPunctuationRows(p: KeyPunctuation): Seq[InternalRow] =
    shown.flatMap { in =>
      val keys = in.keys
      val ordinals = keys.map {
        case a: Attribute => in.output.indexWhere(_.exprId == a.exprId)
        case _ => -1
      }
      val positions = p.scheme.constants.toSeq ++ p.scheme.ranges.map(_._1)
      val marker = if (positions.exists(ordinals(_) < 0)) -1 else in.spec.markerFor(positions.map(ordinals))
      val constants = p.scheme.constants.zipWithIndex.map { case (pos, i) =>
        ordinals(pos) -> p.constants.get(i, keys(pos).dataType)
      }
      // a range's bound; with several ranges, one punctuation row per corner of the region
      val corners: Seq[Seq[(Int, Any)]] = p.scheme.ranges.map(_._1) match {
        case Seq() => Seq(Nil)
        case Seq(pos) => Seq(Seq(ordinals(pos) -> p.bound.orNull))
        case rs => p.bound.toSeq.flatMap(_.asInstanceOf[punctuated.model.RangeRegion].corners)
          .map(c => rs.map(ordinals).zip(c))
      }
      corners.flatMap(c => punctuationRow(in, marker, constants ++ c))
    }

  /**
   * The output punctuation "no more results with input `i`'s time at or below `bound`"
   * ([[TimeBandJoin.outputBound]]), if input `i`'s columns are in the output: its time column
   * set, as [[outputPunctuationRows]] sets key columns.
   */
  private def timePunctuationRows(i: Int, bound: Long): Seq[InternalRow] = {
    val b = exec.band.get
    shown.filter(_.number == i).flatMap { in =>
      punctuationRow(in, in.spec.markerFor(Seq(b.times(i))), Seq(b.times(i) -> TimeBand.toInternal(bound, b.dataType)))
    }
  }

  /** The inputs whose columns are in the output (a semi or anti join: the preserved one). */
  private val shown = if (semi) inputs.filter(in => preserved(in.number)) else inputs

  /**
   * An output punctuation row of input `in` (none if `marker` < 0): its marker ordinal
   * `marker` true, its columns at `values` (ordinals in its rows) set, the other markers false,
   * every other column NULL.
   */
  private def punctuationRow(in: JoinInput, marker: Int, values: Seq[(Int, Any)]): Option[InternalRow] =
    if (marker < 0) None
    else {
      val offset = offsets(in.number)
      val row = new GenericInternalRow(output.size)
      // the input's other markers (a join's output has several) say "not mine"
      in.spec.punctuationOrdinals.foreach(m => row.setBoolean(offset + m, m == marker))
      row.setBoolean(offset + marker, true)
      // the other inputs' markers, if in the output, say "not my punctuation"
      shown.filter(_.number != in.number).foreach { o =>
        o.spec.punctuationOrdinals.foreach(m => row.setBoolean(offsets(o.number) + m, false))
      }
      values.foreach { case (ordinal, v) => row.update(offset + ordinal, v) }
      Some(outputRowProj(row).copy())
    }

  /**
   * Li et al. 2006, §5.1 for ranges: a held whole-key punctuation of one input ("no more rows
   * with key k") is released once the other input's range punctuation covers k too ("no more
   * rows with key <= b", b >= k): both inputs have then closed k.
   *
   * @param scans this batch's new range punctuations, with their input's number
   */
  private def releaseClosedByRanges(scans: Seq[(KeyPunctuation, Int)]): Unit = {
    for (own <- inputs) {
      val ps = scans.collect { case (p, n) if n == own.number && p.scheme.hasRange => p }
      if (ps.nonEmpty) {
        val theirs = inputs(other(own.number))
        val keys = theirs.keys
        val closed = theirs.state.heldWholeKey.filter { case (scheme, constants) =>
          ps.exists(p => closesHeld(p, scheme, constants, keys, theirs.state))
        }.toArray
        closed.foreach { case (scheme, constants) =>
          if (settings.punctuationRetention == 0) theirs.state.releaseHeld(scheme, constants)
          else theirs.state.closeHeld(scheme, constants, batch)
        }
      }
    }
  }

  /** Does range punctuation `p` cover every key of the held whole-key punctuation? */
  private def closesHeld(p: KeyPunctuation, scheme: KeyScheme, constants: UnsafeRow,
      keys: Seq[Expression], state: JoinInputState): Boolean = {
    def valueAt(pos: Int): Any = {
      val i = scheme.constants.indexOf(pos)
      if (i < 0 || constants.isNullAt(i)) null else constants.get(i, keys(pos).dataType)
    }
    val rangeValues = p.scheme.ranges.map { case (r, _) => valueAt(r) }
    p.scheme.constants.zipWithIndex.forall { case (pos, i) =>
        val v = valueAt(pos)
        v != null && !p.constants.isNullAt(i) && v == p.constants.get(i, keys(pos).dataType)
      } &&
      state.boundCoversValues(p.scheme, p.bound, rangeValues)
  }

  /**
   * Input `i`'s stored rows with `key` are all gone, put out of reach by the band: its held
   * whole-key punctuations on `key` (a unique id's, say) say nothing more and are released, so
   * that they do not pile up as the keys go by (NEXMark q8: one per person). A later row of the
   * other input with `key` is still kept out of the state by what `i` closed (its closed-values
   * summary), and the band would put it out of reach anyway; a late row of `i` is still
   * recognised by the summary. With `spark.punctuated.punctuationRetention` > 0 they are held
   * as that setting says.
   */
  private def bandEmptied(key: UnsafeRow, i: Int): Unit = if (settings.punctuationRetention == 0) {
    val in = inputs(i)
    in.spec.keySchemes.filter(_.isWholeKey(in.keyLength)).foreach { s =>
      in.state.release(s, in.state.punctuationFor(s, key).constants)
    }
  }

  /** Counts a purged row of input `i` (already removed) and emits it null-padded if it must be. */
  private def purge(value: UnsafeRow, i: Int, results: ArrayBuffer[InternalRow]): Unit = {
    purged += 1
    val matched = value.getBoolean(value.numFields - 1)
    if (preserved(i) && !matched && joinType != LeftSemi) results += padded(value, i)
  }
}

/** Runs once after the wrapped iterator is exhausted. */
private[join] class CompletingIterator[T](it: Iterator[T], onComplete: () => Unit) extends Iterator[T] {
  private var done = false
  override def hasNext: Boolean = {
    val more = it.hasNext
    if (!more && !done) { done = true; onComplete() }
    more
  }
  override def next(): T = it.next()
}

