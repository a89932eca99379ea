package punctuated.join

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.Row
import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test: random interleavings of rows and punctuations on both inputs, compared
 * after every micro-batch with a model of the contract (Tucker et al. 2003 faithfulness;
 * Tucker 2005 purge invariants; Li et al. 2006 §5.1 lifespans):
 *
 *  (a) the output so far is exactly the batch join of all non-late input so far, restricted
 *      to what may be emitted (an outer join's null-padded row once the other input has
 *      punctuated the row's key; a semi join's row once);
 *  (b) the operator stores exactly the rows that can still meet a partner (maximal purge) and
 *      holds exactly the punctuations that can still matter;
 *  (c) `numRowsTotal`, `numPunctuationsHeld` (every partition's copy of a range or prefix
 *      punctuation counted), `numRangeIndexEntries` and `numLateRowsDropped` equal those counts.
 *
 * Many independent cases run in one query: case `c` uses join keys `(c, k)` only, and every
 * scheme fixes `c`, so cases never interact. Join key `(c, k)`, `k` in a small domain.
 */
class PunctuatedJoinPropertySuite extends PunctuatedStreamTest {
  import testImplicits._
  import PunctuatedJoinPropertySuite._

  private val cases = 40
  private val batches = 4

  /**
   * Declaration layouts exercising point, key-prefix and range punctuations and a unique key.
   * The third has ranges on both inputs (so range punctuations release each other) mixed with
   * prefix ones and the point ones of a unique key, and joins with the key in the order
   * (k, c): the range attribute comes first in the key, the constant after it. (An input's
   * schemes must differ in their attributes: a punctuation row names its scheme by them.)
   */
  private val layouts = Seq(
    Layout("constants-and-ranges",
      left = Seq(Schemes -> "c, k", Marker -> "p"), leftSchemes = Seq(WholeKey),
      right = Seq(Schemes -> "c, k<=", Marker -> "p"), rightSchemes = Seq(CaseRange),
      leftUnique = false),
    Layout("unique-and-prefix",
      left = Seq(Unique -> "c, k", Schemes -> "c", Marker -> "p"), leftSchemes = Seq(CaseOnly),
      right = Seq(Schemes -> "c, k; c", Marker -> "p"), rightSchemes = Seq(WholeKey, CaseOnly),
      leftUnique = true),
    Layout("ranges-on-both-inputs",
      left = Seq(Unique -> "c, k", Schemes -> "c, k<=", Marker -> "p"), leftSchemes = Seq(CaseRange),
      right = Seq(Schemes -> "c, k<=; c", Marker -> "p"), rightSchemes = Seq(CaseRange, CaseOnly),
      leftUnique = true, rangeFirst = true),
    // the third with `k>=` ranges: the model runs on `Domain - 1 - k` (a `>=` range is a `<=`
    // range of the reversed order), the query sees k itself
    Layout("at-least-ranges-on-both-inputs",
      left = Seq(Unique -> "c, k", Schemes -> "c, k>=", Marker -> "p"), leftSchemes = Seq(CaseRange),
      right = Seq(Schemes -> "c, k>=; c", Marker -> "p"), rightSchemes = Seq(CaseRange, CaseOnly),
      leftUnique = true, rangeFirst = true, atLeast = true))

  /** The join types each layout runs with. */
  protected def joinTypes: Seq[String] = Seq("inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti")

  private val runs = for (layout <- layouts;
      joinType <- joinTypes)
    yield (layout, joinType, false)

  // with output punctuations (emitPunctuations=true): the markers are selected
  for ((layout, joinType, emit) <- runs ++ layouts.map(l => (l, "inner", true))) {
    test(s"random interleavings: $joinType, ${layout.name}${if (emit) ", output punctuations" else ""}") {
     withSQLConf(punctuated.conf.PunctuatedConf.EmitPunctuations -> emit.toString) {
      val seed = (layout.name + joinType + emit).hashCode
      val rng = new Random(seed)
      val model = new Model(joinType, layout, emit)

      val l = MemoryStream[(Option[Int], Option[Int], Option[Int], Boolean)]
      val r = MemoryStream[(Option[Int], Option[Int], Option[Int], Boolean)]
      val left = declare(l.toDF().toDF("c", "k", "v", "p"), "L", layout.left: _*)
      val right = declare(r.toDF().toDF("c", "k", "w", "p"), "R", layout.right: _*)
      val condition =
        if (layout.rangeFirst) left("k") === right("k") && left("c") === right("c")
        else left("c") === right("c") && left("k") === right("k")
      val joined = left.join(right, condition, joinType)
      val out = if (joinType == "left_semi" || joinType == "left_anti") joined.select(left("c"), left("k"), left("v"))
        else if (emit) joined.select(left("c"), left("k"), left("p"), right("c"), right("k"), right("p"))
        else joined.select(left("c"), left("k"), left("v"), right("w"))

      // generate batch i from the model's state after batch i - 1, then apply it to the model
      val actions = (0 until batches).flatMap { i =>
        val batch = (0 until cases).map(c => model.generate(c, rng))
        val ls = batch.flatMap(_._1)
        val rs = batch.flatMap(_._2)
        model.endBatch(batch)
        val expectedOut = model.output.toSeq
        val (rows, puncts, late) = (model.storedRows, model.heldPunctuations, model.lateInBatch)
        val entries = model.rangeIndexEntries
        // stop and restart from the checkpoint before the third batch: exactly once
        (if (i == 2) Seq(StopStream, StartStream()) else Nil) ++ Seq(
          MultiAddData(l, ls.map(layout.tuple): _*)(r, rs.map(layout.tuple): _*),
          CheckAnswer(expectedOut: _*),
          AssertOnQuery(s"batch $i: $rows rows, $puncts punctuations, $late late (seed $seed)") { q =>
            val p = punctuatedProgress(q)
            assert(p.numRowsTotal == rows, s"rows ${p.numRowsTotal} != $rows (seed $seed) ${p.json}")
            assert(p.customMetrics.get("numPunctuationsHeld") == puncts,
              s"punctuations ${p.customMetrics.get("numPunctuationsHeld")} != $puncts (seed $seed)")
            assert(p.customMetrics.get("numRangeIndexEntries") == entries,
              s"index entries ${p.customMetrics.get("numRangeIndexEntries")} != $entries (seed $seed)")
            assert(p.customMetrics.get("numLateRowsDropped") == late,
              s"late ${p.customMetrics.get("numLateRowsDropped")} != $late (seed $seed)")
            true
          })
      }
      testStream(out)(actions: _*)
     }
    }
  }
}

/** [[PunctuatedJoinPropertySuite]] on RocksDB state stores (an inner and a full outer join per layout). */
class PunctuatedJoinPropertyRocksDBSuite extends PunctuatedJoinPropertySuite with OnRocksDB {
  override protected def joinTypes: Seq[String] = Seq("inner", "full_outer")
}

object PunctuatedJoinPropertySuite {
  val Domain = 4
  /** `spark.sql.shuffle.partitions` of the suites ([[punctuated.spark.PunctuatedStreamTest]]). */
  val Partitions = 2

  sealed trait SchemeKind
  case object WholeKey extends SchemeKind   // "no more rows with (c, k)"
  case object CaseRange extends SchemeKind  // "no more rows with c and k <= b"
  case object CaseOnly extends SchemeKind   // "no more rows with c"

  case class Layout(name: String, left: Seq[(String, String)], leftSchemes: Seq[SchemeKind],
      right: Seq[(String, String)], rightSchemes: Seq[SchemeKind], leftUnique: Boolean,
      rangeFirst: Boolean = false, atLeast: Boolean = false) {
    /** `k` as the query sees it: reversed for `k>=` layouts (the model's `<=` is then `>=`). */
    def k(modelK: Int): Int = if (atLeast) Domain - 1 - modelK else modelK
    def tuple(e: Elem): (Option[Int], Option[Int], Option[Int], Boolean) = {
      val (c, kk, v, p) = e.tuple
      (c, kk.map(k), v, p)
    }
  }

  /** A punctuation of the model: its held slot (kind, case, k for WholeKey) and bound. */
  case class Punct(kind: SchemeKind, c: Int, k: Int) {
    def covers(cc: Int, kk: Int): Boolean = cc == c && (kind match {
      case WholeKey => kk == k
      case CaseRange => kk <= k
      case CaseOnly => true
    })
    def slot: (SchemeKind, Int, Int) = (kind, c, if (kind == WholeKey) k else -1)
    def bound: Int = if (kind == CaseRange) k else 0
  }

  sealed trait Elem { def tuple: (Option[Int], Option[Int], Option[Int], Boolean) }
  case class Data(c: Int, k: Int, v: Int, late: Boolean) extends Elem {
    def tuple = (Some(c), Some(k), Some(v), false)
  }
  case class PunctRow(p: Punct) extends Elem {
    def tuple = p.kind match {
      case CaseOnly => (Some(p.c), None, None, true)
      case _ => (Some(p.c), Some(p.k), None, true)
    }
  }

  /** The contract's semantics, element by element (no Spark). */
  class Model(joinType: String, layout: Layout, emit: Boolean = false) {
    /** Output punctuations so far: what both inputs have closed, once per closing. */
    private val finished = mutable.ArrayBuffer.empty[Punct]
    private val data = Map(true -> mutable.ArrayBuffer.empty[Data], false -> mutable.ArrayBuffer.empty[Data])
    private val sent = Map(true -> mutable.ArrayBuffer.empty[Punct], false -> mutable.ArrayBuffer.empty[Punct])
    /** Held punctuations by slot (Li et al. §5.1: held until the other input covers them). */
    private val held = Map(true -> mutable.Map.empty[(SchemeKind, Int, Int), Punct],
      false -> mutable.Map.empty[(SchemeKind, Int, Int), Punct])
    private var late = 0
    /**
     * What each input closed, remembered for good (user contract, late rows): its effective
     * punctuations, per scheme. A punctuation a remembered one of its scheme covers says
     * nothing new; one the other input's remembered ones cover is closed by both (not held).
     */
    private val remembered = Map(true -> mutable.ArrayBuffer.empty[Punct], false -> mutable.ArrayBuffer.empty[Punct])
    private def remembers(isLeft: Boolean, p: Punct) = remembered(isLeft).exists { q =>
      q.kind == p.kind && q.c == p.c && (p.kind match {
        case WholeKey => q.k == p.k
        case CaseRange => q.k >= p.k
        case CaseOnly => true
      })
    }

    private def closed(isLeft: Boolean, c: Int, k: Int) = sent(isLeft).exists(_.covers(c, k))
    private def heldCovers(isLeft: Boolean, c: Int, k: Int) = held(isLeft).values.exists(_.covers(c, k))
    private def usedKey(c: Int, k: Int) = data(true).exists(d => !d.late && d.c == c && d.k == k)

    /** One batch of case `c`: left and right elements (grammatical, plus late rows: all detected). */
    def generate(c: Int, rng: Random): (Seq[Elem], Seq[Elem]) = {
      def side(isLeft: Boolean): Seq[Elem] = {
        val kinds = if (isLeft) layout.leftSchemes else layout.rightSchemes
        (0 until rng.nextInt(4)).flatMap { _ =>
          val k = rng.nextInt(Domain)
          if (rng.nextInt(4) == 0) Some(PunctRow(Punct(kinds(rng.nextInt(kinds.size)), c, k)))
          else if (isLeft && layout.leftUnique && usedKey(c, k)) None
          else if (!closed(isLeft, c, k)) Some(Data(c, k, rng.nextInt(1000), late = false))
          else if (rng.nextBoolean()) Some(Data(c, k, rng.nextInt(1000), late = true))
          else None
        }.distinctBy { case Data(cc, kk, _, _) if isLeft && layout.leftUnique => (cc, kk, 0); case e => e }
      }
      (side(true), side(false))
    }

    /** Applies one batch (all cases): rows first, punctuations at the end of the batch. */
    def endBatch(batch: Seq[(Seq[Elem], Seq[Elem])]): Unit = {
      late = 0
      for (isLeft <- Seq(true, false); (ls, rs) <- batch; e <- if (isLeft) ls else rs) e match {
        case d: Data => if (d.late) late += 1 else data(isLeft) += d
        case _ =>
      }
      val implicitLeft = if (!layout.leftUnique) Nil else
        batch.flatMap(_._1).collect { case d: Data if !d.late => Punct(WholeKey, d.c, d.k) }
      val newPuncts = Map(
        true -> (batch.flatMap(_._1).collect { case PunctRow(p) => p } ++ implicitLeft),
        false -> batch.flatMap(_._2).collect { case PunctRow(p) => p })
      // an input's punctuations of one batch take effect together: per slot, the greatest bound
      def strongest(ps: Seq[Punct]) = ps.groupBy(_.slot).values.map(_.maxBy(_.bound)).toSeq
      for (isLeft <- Seq(true, false); p <- newPuncts(isLeft)) sent(isLeft) += p
      val effective = mutable.ArrayBuffer.empty[(Boolean, Punct)]
      for (isLeft <- Seq(true, false); p <- strongest(newPuncts(isLeft))) {
        val own = held(isLeft)
        val other = held(!isLeft)
        if (!own.get(p.slot).exists(_.bound >= p.bound) && !remembers(isLeft, p)) {
          effective += (isLeft -> p)
          remembered(isLeft) += p
          val o = other.get(p.slot)
          val closed = o.exists(_.bound >= p.bound) || remembers(!isLeft, p)
          val closesOther = o.exists(x => p.bound >= x.bound)
          if (closed) finished += p else if (closesOther) finished += o.get
          if (!closed) own(p.slot) = p
          if (closesOther) other.remove(p.slot)
        }
      }
      // Li et al. §5.1 for ranges: the other input's held whole-key punctuations a range
      // punctuation covers are closed by both inputs: released
      for ((isLeft, p) <- effective if p.kind == CaseRange) {
        held(!isLeft).filter { case (_, o) => o.kind == WholeKey && o.c == p.c && o.k <= p.k }
          .keys.toSeq.foreach(held(!isLeft).remove)
      }
    }

    def lateInBatch: Long = late

    private def partners(d: Data, isLeft: Boolean) = data(!isLeft).filter(o => o.c == d.c && o.k == d.k)

    /** Rows that can still meet a partner: the other input has not punctuated their key. */
    def storedRows: Long = Seq(true, false).map { isLeft =>
      data(isLeft).count { d =>
        !closed(!isLeft, d.c, d.k) &&
          !(joinType == "left_semi" && isLeft && partners(d, isLeft).nonEmpty)
      }.toLong
    }.sum

    /**
     * Held punctuations, every partition's copy counted: a whole-key one is held by the key's
     * partition, a range or prefix one by every partition.
     */
    def heldPunctuations: Long = Seq(true, false).map { isLeft =>
      held(isLeft).values.map(p => if (p.kind == WholeKey) 1L else Partitions.toLong).sum
    }.sum

    /**
     * Range-index entries: each input's distinct stored join keys, once per scheme of the
     * other input that does not fix the whole key (a range or a prefix).
     */
    def rangeIndexEntries: Long = Seq(true, false).map { isLeft =>
      val indexed = (if (isLeft) layout.rightSchemes else layout.leftSchemes).count(_ != WholeKey)
      val keys = data(isLeft).filter { d =>
        !closed(!isLeft, d.c, d.k) && !(joinType == "left_semi" && isLeft && partners(d, isLeft).nonEmpty)
      }.map(d => (d.c, d.k)).distinct.size
      indexed.toLong * keys
    }.sum

    def output: Seq[Row] = {
      def v(d: Data) = d.v
      def kq(k: Int) = layout.k(k)
      joinType match {
        case "inner" if emit =>
          val pairs = for (l <- data(true); r <- partners(l, isLeft = true)) yield Row(l.c, kq(l.k), false, r.c, kq(r.k), false)
          val puncts = finished.flatMap { p =>
            val k = if (p.kind == CaseOnly) null else kq(p.k)
            Seq(Row(p.c, k, true, null, null, false), Row(null, null, false, p.c, k, true))
          }
          (pairs ++ puncts).toSeq
        case "left_semi" =>
          data(true).filter(d => partners(d, isLeft = true).nonEmpty).map(d => Row(d.c, kq(d.k), v(d))).toSeq
        case "left_anti" =>   // emitted once the right input has closed the key
          data(true).filter(d => partners(d, isLeft = true).isEmpty && closed(false, d.c, d.k))
            .map(d => Row(d.c, kq(d.k), v(d))).toSeq
        case _ =>
          val inner = for (l <- data(true); r <- partners(l, isLeft = true)) yield Row(l.c, kq(l.k), l.v, r.v)
          val leftPadded = if (!Seq("left_outer", "full_outer").contains(joinType)) Nil else
            data(true).filter(l => partners(l, isLeft = true).isEmpty && closed(false, l.c, l.k))
              .map(l => Row(l.c, kq(l.k), l.v, null))
          val rightPadded = if (!Seq("right_outer", "full_outer").contains(joinType)) Nil else
            data(false).filter(r => partners(r, isLeft = false).isEmpty && closed(true, r.c, r.k))
              .map(r => Row(null, null, null, r.v))
          (inner ++ leftPadded ++ rightPadded).toSeq
      }
    }
  }
}
