package punctuated.state

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, SpecializedGetters, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.types._
import punctuated.input.KeyScheme

/**
 * The punctuations one input of a punctuated operator holds in one partition, and the values
 * it closed for good: the table the join (per input), the aggregation and the deduplication
 * all keep, over [[StoreNamespace]]s (Tucker et al. 2003, §5: an operator keeps the
 * punctuations it received to recognise what they exclude; Li et al. 2006, §5.1: a join
 * releases them once both inputs have closed a key).
 *
 * A held punctuation is identified by an `id` — a join's [[KeyScheme.id]], an aggregation's
 * punctuation kind — and its constants, and says "no more rows whose key has these constants
 * (and a range value <= bound)". Punctuations of a scheme on the whole key close one key and
 * live in one namespace; the others (a key prefix, a range: every partition holds a copy) in
 * another — the same one when the operator does not tell them apart.
 *
 * {{{
 *   held punctuations   key:   (id INT, constants BINARY)     constants: UnsafeRow over scheme.constants
 *                       value: (bound BINARY, closedAt BIGINT) bound: UnsafeRow of the range value;
 *                                                              closedAt: the batch both sides closed
 *                                                              it, -1 while still open (a join's)
 *   closed values       one summary per id ([[ClosedKeys]]), in one of the [[ClosedSummaries]] layouts
 * }}}
 *
 * Look-ups are cached per task (one state-store get per (id, constants) per micro-batch);
 * closed-values summaries are read once and written back once ([[flushClosed]]); expiring
 * ([[releaseExpired]]) and counting read the small held-punctuation namespaces once.
 *
 * Example (an aggregation on `hour`, kind 1 = `hour<=`):
 * {{{
 *   t.hold(1, scheme, t.constantsOf(scheme, key), Some(9), closedAt = 3)
 *   t.covers(1, scheme, keyOfHour8)  // true: held bound 9 >= 8
 *   t.releaseExpired(batch = 5, retention = 2, forGood = _ => false)  // released
 * }}}
 *
 * @param wholeKey      namespace of held whole-key punctuations, if the input has such schemes
 * @param partitionWide namespace of held partition-wide ones (may be `wholeKey`'s)
 * @param summaries     where the closed-values summaries are stored
 * @param schemes       the ids whose closed values are remembered, with their schemes
 * @param keySchema     the operator's key (join key, grouping columns, deduplication key)
 * @param maxRemembered entries per closed-values summary (`spark.punctuated.lateRows.maxRemembered`)
 * @param partition     (this partition, number of partitions)
 */
final class HeldPunctuationTable(
    wholeKey: Option[StoreNamespace],
    partitionWide: Option[StoreNamespace],
    summaries: ClosedSummaries,
    schemes: Seq[(Int, KeyScheme)],
    keySchema: StructType,
    maxRemembered: Int,
    partition: (Int, Int)) {

  private val keyLength = keySchema.length
  // key and value written directly, as a generated projection would (see StoreNamespace)
  private val keyWriter = new UnsafeRowWriter(2, 64)
  private val valueWriter = new UnsafeRowWriter(2, 32)
  private val constantsProjs = mutable.HashMap.empty[KeyScheme, UnsafeProjection]
  private val rangeBounds = mutable.HashMap.empty[KeyScheme, RangeBounds]
  /** This task's look-ups of held punctuations, per id and constants (a copy); None: not held. */
  private val cache = mutable.LongMap.empty[mutable.HashMap[UnsafeRow, Option[(Option[Any], Long)]]]
  private def cacheOf(id: Int) = cache.getOrElseUpdate(id.toLong, mutable.HashMap.empty)
  /** How `scheme`'s range bounds compare with keys ([[RangeBounds]]; the scheme has a range). */
  def bounds(scheme: KeyScheme): RangeBounds = rangeBounds.getOrElseUpdate(scheme, RangeBounds(scheme, keySchema))

  /** The namespace of `scheme`'s held punctuations (None: the input holds none such). */
  private def namespaceOf(scheme: KeyScheme): Option[StoreNamespace] =
    if (scheme.isWholeKey(keyLength)) wholeKey else partitionWide

  private def storeKey(id: Int, constants: UnsafeRow): UnsafeRow =
    StoreNamespace.keyRow(keyWriter, id, constants.getBytes).copy()

  /**
   * The constants `scheme` fixes in this key (a reused row: copy to keep). A scheme of ranges
   * alone (`ts<=`) fixes none: one empty row, with no projection per key (a look-up per group).
   */
  def constantsOf(scheme: KeyScheme, key: InternalRow): UnsafeRow =
    if (scheme.constants.isEmpty) HeldPunctuationTable.NoConstants
    else constantsProjs.getOrElseUpdate(scheme, UnsafeProjection.create(
      scheme.constants.toSeq.map(p => BoundReference(p, keySchema(p).dataType, nullable = true))))(key)

  /**
   * The bound a punctuation with this key carries under `scheme` (a copy), if the scheme has a
   * range: the range value, or, with several ranges, the region of its one corner.
   */
  def boundOf(scheme: KeyScheme, key: InternalRow): Option[Any] =
    if (!scheme.hasRange) None else Some(bounds(scheme).boundOf(key))

  // ---- held punctuations -------------------------------------------------------------

  /** The held punctuation `id` with these constants, if any: (bound, closedAt). */
  def held(id: Int, scheme: KeyScheme, constants: UnsafeRow): Option[(Option[Any], Long)] = {
    val byConstants = cacheOf(id)
    byConstants.get(constants) match {
      case Some(found) => found
      case None =>
        val found = namespaceOf(scheme).flatMap(ns => Option(ns.get(storeKey(id, constants)))).map { v =>
          val bound = if (v.isNullAt(0)) None else Some(bounds(scheme).fromBytes(v.getBinary(0)))
          (bound, v.getLong(1))
        }
        byConstants(constants.copy()) = found
        found
    }
  }

  /** Holds punctuation `id` with this bound and `closedAt` (replacing a held one). */
  def hold(id: Int, scheme: KeyScheme, constants: UnsafeRow, bound: Option[Any], closedAt: Long): Unit = {
    val ns = namespaceOf(scheme).getOrElse(throw new IllegalStateException(s"no held punctuations of $scheme"))
    val boundBytes = bound.filter(_ => scheme.hasRange).map(b => bounds(scheme).toBytes(b)).orNull
    ns.put(storeKey(id, constants), StoreNamespace.bytesAndLong(valueWriter, boundBytes, closedAt).copy())
    cacheOf(id)(constants.copy()) = Some((bound, closedAt))
  }

  /**
   * Holds punctuation `id`, with what its bound and a held one's close together (one range:
   * the greater bound; several: the union of their regions).
   */
  def holdGreatest(id: Int, scheme: KeyScheme, constants: UnsafeRow, bound: Option[Any], closedAt: Long): Unit = {
    val current = held(id, scheme, constants).flatMap(_._1)
    val greatest = (current, bound) match {
      case (Some(c), Some(b)) if scheme.hasRange => Some(bounds(scheme).merge(c, b))
      case (c, b) => b.orElse(c)
    }
    hold(id, scheme, constants, greatest, closedAt)
  }

  /** Marks a held punctuation closed at `batch` if it is still open (closedAt < 0). */
  def close(id: Int, scheme: KeyScheme, constants: UnsafeRow, batch: Long): Unit =
    held(id, scheme, constants).foreach { case (bound, closedAt) =>
      if (closedAt < 0) hold(id, scheme, constants, bound, batch)
    }

  def release(id: Int, scheme: KeyScheme, constants: UnsafeRow): Unit = {
    namespaceOf(scheme).foreach(_.remove(storeKey(id, constants)))
    cacheOf(id)(constants.copy()) = None
  }

  /** Is every row with `key` excluded by the held punctuation `id` of `scheme`? */
  def heldCovers(id: Int, scheme: KeyScheme, key: InternalRow): Boolean =
    held(id, scheme, constantsOf(scheme, key)).exists { case (bound, _) =>
      !scheme.hasRange || bound.exists(b => bounds(scheme).coversKey(b, key))
    }

  /** Is every row with `key` excluded by a held or remembered punctuation `id` of `scheme`? */
  def covers(id: Int, scheme: KeyScheme, key: InternalRow): Boolean =
    heldCovers(id, scheme, key) || closed.covers(id, key)

  /**
   * [[covers]] as a function, for a run of look-ups (a task's input groups) while nothing is
   * held, released or remembered: a snapshot, valid until the next change. A scheme without
   * constants (`ts<=`) holds one punctuation at most: it is read once and its bound compared
   * directly ([[RangeBounds.keyCoverer]]); an empty closed-values summary is not consulted.
   *
   * Example: holding `ts<=9` (kind 1), `t.coverer(1, scheme)` answers `covers(1, scheme, key)`
   * for every key, with one look-up in all.
   */
  def coverer(id: Int, scheme: KeyScheme): InternalRow => Boolean = {
    val summary = closed.coverer(id)
    def orSummary(c: InternalRow => Boolean): InternalRow => Boolean =
      if (summary eq HeldPunctuationTable.Never) c else key => c(key) || summary(key)
    if (scheme.constants.nonEmpty) orSummary(key => heldCovers(id, scheme, key))
    else held(id, scheme, HeldPunctuationTable.NoConstants) match {
      case Some(_) if !scheme.hasRange => HeldPunctuationTable.Always
      case Some((Some(bound), _)) => orSummary(bounds(scheme).keyCoverer(bound))
      case _ => summary
    }
  }

  /**
   * The held whole-key punctuations of these schemes (by id), as (id, scheme, constants): a
   * pass over their namespace, for releasing those another input's range punctuation closed.
   */
  def heldWholeKey(byId: Map[Int, KeyScheme]): Iterator[(Int, KeyScheme, UnsafeRow)] =
    wholeKey.iterator.flatMap(_.iterator()).flatMap { pair =>
      byId.get(pair.key.getInt(0)).map { scheme =>
        val bytes = pair.key.getBinary(1)
        val constants = new UnsafeRow(scheme.constants.length)
        constants.pointTo(bytes, bytes.length)
        (pair.key.getInt(0), scheme, constants)
      }
    }

  /** The held-punctuation namespaces (once each), without closed-values summaries. */
  private def namespaces: Seq[StoreNamespace] = (wholeKey.toSeq ++ partitionWide.toSeq).distinct
  private def heldRows(ns: StoreNamespace) = ns.iterator().filter(p => !summaries.isSummary(p.key))

  /**
   * Releases the punctuations closed at least `retention` batches before `batch` (except the
   * ids `forGood` keeps) and returns how many stay held: one pass over the small namespaces.
   */
  def releaseExpired(batch: Long, retention: Int, forGood: Int => Boolean): Long = {
    var remaining = 0L
    namespaces.foreach { ns =>
      heldRows(ns).map(p => (p.key.copy(), p.value.getLong(1))).toArray.foreach { case (k, closedAt) =>
        if (closedAt >= 0 && !forGood(k.getInt(0)) && batch - closedAt >= retention) ns.remove(k)
        else remaining += 1
      }
    }
    cache.clear()
    remaining
  }

  /**
   * Held punctuations of this partition: whole-key ones, and this partition's copies of the
   * partition-wide ones (every partition holds a copy of each, and each copy is counted).
   */
  def count: Long = namespaces.map(ns => heldRows(ns).size.toLong).sum

  // ---- closed values (remembered for good, compactly) ----------------------------------

  private val closed = new ClosedKeysTable(schemes, keySchema, maxRemembered, partition,
    summaries.read, summaries.write)

  /** Remembers the values punctuation `id` closes, for good. */
  def remember(id: Int, constants: UnsafeRow, bound: Option[Any]): Unit = closed.add(id, constants, bound)

  /** Has the input closed everything this punctuation covers, by an earlier punctuation? */
  def remembers(id: Int, constants: UnsafeRow, bound: Option[Any]): Boolean =
    closed.coversPunctuation(id, constants, bound)

  /** Writes the changed summaries back (before the store commits); returns the entries forgotten. */
  def flushClosed(): Long = closed.flush()

  /** Closed-value entries remembered, as stored (after [[flushClosed]]): one get per id. */
  def numRemembered: Long = schemes.map { case (id, _) => summaries.entries(id) }.sum

  // ---- a batch's punctuations ----------------------------------------------------------

  /**
   * Punctuations `ps` (a micro-batch's partition-wide ones, as (scheme, constants, bound))
   * indexed for matching keys: per scheme and constants, the greatest bound. Matching a key
   * is then one hash look-up per scheme, not a comparison with every punctuation.
   */
  private def rangeBoundsOf(scheme: KeyScheme): RangeBounds = HeldPunctuationTable.this.bounds(scheme)

  def index(ps: Seq[(KeyScheme, UnsafeRow, Option[Any])]): PunctuationIndex = {
    val bounds = mutable.HashMap.empty[(KeyScheme, UnsafeRow), Option[Any]]
    ps.foreach { case (scheme, constants, bound) =>
      if (!scheme.hasRange) bounds((scheme, constants)) = None
      else bound.foreach { b =>
        val greatest = bounds.get((scheme, constants)).flatten match {
          case Some(c) => rangeBoundsOf(scheme).merge(c, b)
          case None => b
        }
        bounds((scheme, constants)) = Some(greatest)
      }
    }
    new PunctuationIndex(bounds.keys.map(_._1).toSeq.distinct, bounds)
  }

  /**
   * [[index]]: does one of the indexed punctuations match the key? A scheme without constants
   * has one bound at most, compared directly ([[RangeBounds.keyCoverer]]); the others are
   * looked up by the key's constants.
   */
  final class PunctuationIndex private[HeldPunctuationTable] (
      schemes: Seq[KeyScheme], bounds: mutable.HashMap[(KeyScheme, UnsafeRow), Option[Any]]) {
    def isEmpty: Boolean = schemes.isEmpty
    private val checks: Array[InternalRow => Boolean] = schemes.map { s =>
      if (s.constants.nonEmpty) (key: InternalRow) => bounds.get((s, constantsOf(s, key))).exists { bound =>
        !s.hasRange || bound.exists(b => rangeBoundsOf(s).coversKey(b, key))
      }
      else bounds.get((s, HeldPunctuationTable.NoConstants)) match {
        case Some(_) if !s.hasRange => HeldPunctuationTable.Always
        case Some(Some(b)) => rangeBoundsOf(s).keyCoverer(b)
        case _ => HeldPunctuationTable.Never
      }
    }.toArray
    def covers(key: InternalRow): Boolean = {
      var i = 0
      while (i < checks.length) { if (checks(i)(key)) return true; i += 1 }
      false
    }
  }
}

object HeldPunctuationTable {
  /** The constants of a scheme without constant attributes: the empty row (never written to). */
  val NoConstants: UnsafeRow = EmptyUnsafeRow.row
  /** A look-up that covers nothing, and one that covers everything ([[HeldPunctuationTable.coverer]]). */
  val Never: InternalRow => Boolean = _ => false
  val Always: InternalRow => Boolean = _ => true
}

/**
 * Where a [[HeldPunctuationTable]] stores its closed-values summaries ([[ClosedKeys]]), one
 * row per id. Two layouts, each the one its operators' checkpoints have always had:
 *
 * {{{
 *   OwnNamespace (a join)                    key: (id INT)                value: (entries BIGINT, summary BINARY)
 *   BesideHeld   (aggregation, dedup)        key: (-id INT, empty BINARY) value: (summary BINARY, entries BIGINT)
 *                in the held punctuations' namespace (ids are positive: a negative one is a summary)
 * }}}
 */
sealed trait ClosedSummaries {
  def read(id: Int): Option[Array[Byte]]
  def write(id: Int, bytes: Array[Byte], entries: Long): Unit
  /** The entries of summary `id` as stored (0 if none). */
  def entries(id: Int): Long
  /** Is this key of the held punctuations' namespace a summary's? */
  def isSummary(key: UnsafeRow): Boolean
}

object ClosedSummaries {
  /** No store: nothing is remembered (an input without schemes). */
  object None extends ClosedSummaries {
    override def read(id: Int): Option[Array[Byte]] = scala.None
    override def write(id: Int, bytes: Array[Byte], entries: Long): Unit = ()
    override def entries(id: Int): Long = 0L
    override def isSummary(key: UnsafeRow): Boolean = false
  }

  /** Summaries in a namespace of their own: key (id), value (entries, summary). */
  final case class OwnNamespace(ns: StoreNamespace) extends ClosedSummaries {
    private val valueWriter = new UnsafeRowWriter(2, 32)
    private def key(id: Int): UnsafeRow = StoreNamespace.intRow(id)
    override def read(id: Int): Option[Array[Byte]] = Option(ns.get(key(id))).map(_.getBinary(1))
    override def write(id: Int, bytes: Array[Byte], entries: Long): Unit =
      ns.put(key(id), StoreNamespace.longAndBytes(valueWriter, entries, bytes))
    override def entries(id: Int): Long = Option(ns.get(key(id))).map(_.getLong(0)).getOrElse(0L)
    override def isSummary(key: UnsafeRow): Boolean = false
  }

  /** The value layout of [[OwnNamespace]]. */
  val ValueSchema: StructType = new StructType()
    .add("entries", LongType, nullable = false).add("summary", BinaryType, nullable = false)

  /** Summaries beside the held punctuations: key (-id, empty), value (summary, entries). */
  final case class BesideHeld(ns: StoreNamespace) extends ClosedSummaries {
    private val keyWriter = new UnsafeRowWriter(2, 16)
    private val valueWriter = new UnsafeRowWriter(2, 32)
    private def key(id: Int): UnsafeRow = StoreNamespace.keyRow(keyWriter, -id, Array.emptyByteArray)
    override def read(id: Int): Option[Array[Byte]] = Option(ns.get(key(id))).map(_.getBinary(0))
    override def write(id: Int, bytes: Array[Byte], entries: Long): Unit =
      ns.put(key(id), StoreNamespace.bytesAndLong(valueWriter, bytes, entries))
    override def entries(id: Int): Long = Option(ns.get(key(id))).map(_.getLong(1)).getOrElse(0L)
    override def isSummary(key: UnsafeRow): Boolean = key.getInt(0) < 0
  }
}
