package punctuated.join.shedding

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}

import scala.collection.mutable

/**
 * How often each join value arrives on one input of a join, estimated online from recent
 * history in bounded memory (Das, Gehrke and Riedewald 2005, §4.2: PROB needs the other
 * stream's arrival probability of a value; the paper assumes it known, we estimate it).
 *
 * Updated once per micro-batch, after the batch's rows of the input ([[update]]):
 *  1. add the batch's exact per-value arrival counts (a value new to the map remembers the
 *     batch it was first counted in: LIFE's age of a key);
 *  2. if the arrivals added since the last halving reach `historyRows`, halve every count
 *     (integer floor), drop zeros and reset that counter (exponential decay: the estimate
 *     follows a changing distribution, old history weighs half per `historyRows` arrivals);
 *  3. if more than `historyValues` values are kept, keep the `historyValues` largest counts
 *     (ties: the smaller value by `order`, for join values the key's canonical bytes).
 *
 * It also keeps LIFE's observed key lifetimes: the sum and number of lifetimes (in batches,
 * from a key's first arrival to the punctuation closing it) seen so far ([[observeLifetime]]).
 *
 * Example, `historyRows = 4`, `historyValues = 2`: batch 0 brings a, a, b: {a: 2, b: 1}
 * (3 arrivals since the last halving); batch 1 brings c, c, c: {a: 2, b: 1, c: 3}, 6
 * arrivals, so every count is halved and b (0) dropped: {a: 1, c: 1}. Had batch 1 brought
 * c, d instead ({a: 2, b: 1, c: 1, d: 1}, 5 arrivals: halved to {a: 1}), no cut is needed.
 *
 * @param historyRows   `spark.punctuated.shedding.historyRows`
 * @param historyValues `spark.punctuated.shedding.historyValues`
 */
final class FrequencyEstimator[K](val historyRows: Long, val historyValues: Int)(implicit order: Ordering[K]) {
  require(historyRows > 0 && historyValues > 0, s"historyRows $historyRows, historyValues $historyValues")

  /** value -> (count, batch it was first counted in). */
  private val entries = mutable.HashMap.empty[K, (Long, Long)]
  /** Arrivals added since the last halving. */
  var sinceHalving: Long = 0L
  /** Sum and number of the key lifetimes observed (LIFE). */
  var lifetimeSum: Long = 0L
  var lifetimesObserved: Long = 0L

  /** The estimated count of `value` (0 when not kept). */
  def estimate(value: K): Long = entries.get(value).map(_._1).getOrElse(0L)

  /** The batch `value` was first counted in, while kept. */
  def firstBatch(value: K): Option[Long] = entries.get(value).map(_._2)

  /** The kept values and their counts. */
  def counts: Map[K, Long] = entries.iterator.map { case (k, (c, _)) => k -> c }.toMap

  def size: Int = entries.size

  /** The sum of the kept counts (PROB's denominator: an estimate is `estimate(v) / total`). */
  def total: Long = entries.valuesIterator.map(_._1).sum

  /** Adds one batch's exact arrival counts (see the class doc for the three steps). */
  def update(arrivals: Iterable[(K, Long)], batch: Long): Unit = {
    arrivals.foreach { case (k, n) =>
      if (n > 0) {
        val (c, first) = entries.getOrElse(k, (0L, batch))
        entries(k) = (c + n, first)
        sinceHalving += n
      }
    }
    if (sinceHalving >= historyRows) {
      entries.foreach { case (k, (c, first)) => entries(k) = (c / 2, first) }
      entries.filterInPlace { case (_, (c, _)) => c > 0 }
      sinceHalving = 0L
    }
    if (entries.size > historyValues) {
      // the largest counts; ties: the smaller value
      val kept = entries.toSeq.sortWith { case ((k1, (c1, _)), (k2, (c2, _))) =>
        c1 > c2 || (c1 == c2 && order.lt(k1, k2))
      }.take(historyValues)
      entries.clear()
      entries ++= kept
    }
  }

  /** A key of this input lived `batches` batches (first arrival to the punctuation closing it). */
  def observeLifetime(batches: Long): Unit = {
    lifetimeSum += math.max(0L, batches)
    lifetimesObserved += 1
  }

  /** The mean key lifetime observed, in batches, if any. */
  def meanLifetime: Option[Double] =
    if (lifetimesObserved == 0) None else Some(lifetimeSum.toDouble / lifetimesObserved)

  private[shedding] def entriesIterator: Iterator[(K, Long, Long)] =
    entries.iterator.map { case (k, (c, f)) => (k, c, f) }
  private[shedding] def put(k: K, count: Long, first: Long): Unit = entries(k) = (count, first)
}

/** A join value as its key's canonical bytes (UnsafeRow bytes): equality and order by content. */
final case class ValueBytes(bytes: Array[Byte]) {
  override def equals(o: Any): Boolean = o match {
    case ValueBytes(b) => java.util.Arrays.equals(bytes, b)
    case _ => false
  }
  override def hashCode: Int = java.util.Arrays.hashCode(bytes)
}

object ValueBytes {
  /** Unsigned lexicographic order of the bytes (a shorter prefix first). */
  implicit val order: Ordering[ValueBytes] = (a: ValueBytes, b: ValueBytes) =>
    java.util.Arrays.compareUnsigned(a.bytes, b.bytes)
}

object FrequencyEstimator {
  private val FormatVersion = 1

  /** The estimator as bytes (one state-store value per input; at most `historyValues` entries). */
  def toBytes(e: FrequencyEstimator[ValueBytes]): Array[Byte] = {
    val buffer = new ByteArrayOutputStream()
    val out = new DataOutputStream(buffer)
    out.writeInt(FormatVersion)
    out.writeLong(e.sinceHalving); out.writeLong(e.lifetimeSum); out.writeLong(e.lifetimesObserved)
    out.writeInt(e.size)
    e.entriesIterator.foreach { case (k, c, f) =>
      out.writeInt(k.bytes.length); out.write(k.bytes); out.writeLong(c); out.writeLong(f)
    }
    out.flush()
    buffer.toByteArray
  }

  /** Reads [[toBytes]]'s output into a fresh estimator with these settings (they may have changed). */
  def fromBytes(bytes: Array[Byte], historyRows: Long, historyValues: Int): FrequencyEstimator[ValueBytes] = {
    val e = new FrequencyEstimator[ValueBytes](historyRows, historyValues)
    val in = new DataInputStream(new ByteArrayInputStream(bytes))
    val version = in.readInt()
    require(version == FormatVersion, s"shedding estimator format $version (this build reads $FormatVersion)")
    e.sinceHalving = in.readLong(); e.lifetimeSum = in.readLong(); e.lifetimesObserved = in.readLong()
    (0 until in.readInt()).foreach { _ =>
      val k = new Array[Byte](in.readInt()); in.readFully(k)
      e.put(ValueBytes(k), in.readLong(), in.readLong())
    }
    e
  }
}
