package punctuated.join.shedding

import scala.util.hashing.MurmurHash3

/**
 * The priorities of Das, Gehrke and Riedewald 2005, §4.2, of one stored row of input L with
 * join value v, and the order in which rows are shed (lowest first). Pure: no Spark.
 *
 *  - PROB: the *other* input's estimated arrival probability of v, its count of v over the sum
 *    of its counts ([[FrequencyEstimator]], as of the start of the batch, so that priorities do
 *    not depend on the order rows arrive within a batch): a row whose value the other input
 *    sends often produces many results while stored. Probabilities, not counts, so that rows of
 *    both inputs compare fairly in one budget when one input is faster.
 *  - LIFE: PROB × remaining lifetime: a row about to be closed by a punctuation anyway is worth
 *    less. In a time-band join (the paper's sliding window, §4.2.2: `w - age`) the row's time
 *    left in its band before the other input's range punctuations close it, in the time
 *    column's unit ([[lifeInBand]]); otherwise remaining = max(1, mean key lifetime of L − age
 *    of v on L, in batches), and without an observed lifetime yet, remaining = 1 (LIFE = PROB).
 *  - RAND: a hash of (row bytes, batch id, seed): deterministic pseudo-random, so a replayed
 *    batch sheds the same rows.
 *
 * Example: the other input sent value 7 nine times and value 3 once; PROB keeps a row with
 * value 7 (priority 0.9) over one with value 3 (priority 0.1).
 */
object Priorities {
  val Prob = "prob"
  val Life = "life"
  val Rand = "rand"

  /** @param otherTotal the sum of the other input's counts (0: nothing seen, priority 0) */
  def prob(otherEstimate: Long, otherTotal: Long): Double =
    otherEstimate.toDouble / math.max(otherTotal, 1L)

  /**
   * @param meanLifetime the mean key lifetime observed on the row's input, in batches
   * @param age          batches since the row's value first arrived on its input
   */
  def life(otherEstimate: Long, otherTotal: Long, meanLifetime: Option[Double], age: Long): Double =
    prob(otherEstimate, otherTotal) * meanLifetime.map(m => math.max(1.0, m - age)).getOrElse(1.0)

  /**
   * LIFE in a time-band join: PROB × the row's time left in its band (at least 1).
   * {{{
   *   lifeInBand(3, 5, 2) = 0.6 * 2 = 1.2;  lifeInBand(2, 5, 10) = 0.4 * 10 = 4.0 (kept first)
   * }}}
   */
  def lifeInBand(otherEstimate: Long, otherTotal: Long, timeLeft: Long): Double =
    prob(otherEstimate, otherTotal) * math.max(1L, timeLeft).toDouble

  def rand(rowBytes: Array[Byte], batch: Long, seed: Int): Double = {
    val h = MurmurHash3.bytesHash(rowBytes, MurmurHash3.mix(seed, batch.hashCode))
    h.toDouble
  }

  /** A content hash of a row, the tie-breaker among rows of equal priority stored in the same batch. */
  def contentHash(rowBytes: Array[Byte]): Int = MurmurHash3.bytesHash(rowBytes, 0x5eed)

  /**
   * One stored row competing for the budget.
   *
   * @param priority by the policy
   * @param fresh    stored in this batch (on ties, rows of earlier batches go first)
   * @param hash     [[contentHash]] of the row
   * @param input    the input's number, then `ref` (its store key's bytes): a total order
   */
  final case class Candidate(priority: Double, fresh: Boolean, hash: Int, input: Int, ref: Array[Byte])

  /**
   * Shedding order, lowest first: priority, then earlier-stored first (rows of earlier batches
   * before this batch's), then the content hash, then input and store key (a total order, so
   * the choice never depends on the order rows were read in).
   */
  val sheddingOrder: Ordering[Candidate] = (a: Candidate, b: Candidate) => {
    var c = java.lang.Double.compare(a.priority, b.priority)
    if (c == 0) c = java.lang.Boolean.compare(a.fresh, b.fresh)
    if (c == 0) c = Integer.compare(a.hash, b.hash)
    if (c == 0) c = Integer.compare(a.input, b.input)
    if (c == 0) c = java.util.Arrays.compareUnsigned(a.ref, b.ref)
    c
  }

  /** The indices of the `excess` candidates to shed: the lowest by [[sheddingOrder]]. */
  def victims(candidates: IndexedSeq[Candidate], excess: Int): Seq[Int] =
    if (excess <= 0) Nil
    else candidates.indices.sorted(Ordering.by[Int, Candidate](candidates(_))(sheddingOrder)).take(excess)
}
