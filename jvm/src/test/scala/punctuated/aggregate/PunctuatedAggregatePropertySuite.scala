package punctuated.aggregate

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.Row
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{count, max, sum}
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of the punctuated GROUP BY: random interleavings of rows and punctuations,
 * compared after every micro-batch with a model of the contract (Tucker et al. 2003,
 * Table 2, group-by pass/keep invariants; user contract, late rows and retention):
 *
 *  (a) the output so far is exactly the batch aggregate of the groups punctuations have
 *      completed (over their non-late rows), each emitted once, in the batch that closes it;
 *  (b) the state holds exactly the groups not yet completed (nothing purgeable remains);
 *  (c) `numRowsTotal`, `numRowsPurged`, `numPunctuationsReceived`, `numPunctuationsHeld` and
 *      `numLateRowsDropped` equal the model's counts.
 *
 * Many independent cases run in one query: case `c` groups by `(c, k)`, and every scheme
 * fixes `c`, so cases never interact. A stop/restart from the checkpoint comes before the
 * third batch (exactly-once).
 */
class PunctuatedAggregatePropertySuite extends PunctuatedStreamTest {
  import testImplicits._
  import PunctuatedAggregatePropertySuite._

  private val cases = 30
  private val batches = 5

  /** The variants run (scheme kind, retention, partitioning). */
  protected def variants: Seq[Variant] = Variants

  for (Variant(kind, retention, byC, hashed) <- variants) {
    test(s"random interleavings: scheme '${kind.scheme}', retention $retention$hashed") {
      withSQLConf(PunctuatedConf.PunctuationRetention -> retention.toString,
          PunctuatedConf.PrefixPartitioning -> byC.toString) {
        val seed = (kind.scheme + retention).hashCode
        val rng = new Random(seed)
        val model = new Model(kind, retention, copies = if (byC) 1 else Partitions)
        val input = MemoryStream[(Option[Int], Option[Int], Option[Int], Boolean)]
        val df = declare(input.toDF().toDF("c", "k", "v", "p"), "S", Schemes -> kind.scheme, Marker -> "p")
        val out = df.groupBy("c", "k").agg(count("*").as("n"), sum("v").as("total"), max("v").as("top"))
        val actions = (0 until batches).flatMap { i =>
          val batch = (0 until cases).flatMap(c => model.generate(c, rng))
          model.endBatch(batch)
          val (groups, purged, received, held, late) =
            (model.openGroups, model.purgedInBatch, model.receivedInBatch, model.held, model.lateInBatch)
          (if (i == 2) Seq(StopStream, StartStream()) else Nil) ++ Seq(
            AddData(input, batch.map(_.tuple): _*),
            CheckAnswer(model.output.toSeq: _*),
            AssertOnQuery(s"batch $i (seed $seed)") { q =>
              val p = punctuatedProgress(q)
              def metric(name: String) = p.customMetrics.get(name).longValue()
              assert(p.numRowsTotal == groups, s"groups ${p.numRowsTotal} != $groups (seed $seed) ${p.json}")
              assert(metric("numRowsPurged") == purged, s"purged ${metric("numRowsPurged")} != $purged (seed $seed)")
              assert(metric("numPunctuationsReceived") == received, s"received != $received (seed $seed)")
              assert(metric("numPunctuationsHeld") == held, s"held ${metric("numPunctuationsHeld")} != $held (seed $seed)")
              assert(metric("numLateRowsDropped") == late, s"late ${metric("numLateRowsDropped")} != $late (seed $seed)")
              true
            })
        }
        testStream(out, OutputMode.Append())(actions: _*)
      }
    }
  }
}

/** [[PunctuatedAggregatePropertySuite]] on RocksDB state stores (retention 2 only). */
class PunctuatedAggregatePropertyRocksDBSuite extends PunctuatedAggregatePropertySuite with OnRocksDB {
  override protected def variants: Seq[PunctuatedAggregatePropertySuite.Variant] =
    PunctuatedAggregatePropertySuite.Variants.filter(_.retention == 2)
}

object PunctuatedAggregatePropertySuite {
  /** `spark.sql.shuffle.partitions` of the suites ([[punctuated.spark.PunctuatedStreamTest]]). */
  val Partitions = 2

  /**
   * One case of the property suites: a scheme kind, a retention, and whether the shuffle
   * hashes by `c`, the column every scheme fixes (`KeyPrefix`), or by the whole key `(c, k)`
   * (`hashed`: for the test's name; a whole-key scheme hashes by the whole key either way).
   */
  final case class Variant(kind: SchemeKind, retention: Int, byC: Boolean, hashed: String)
  val Variants: Seq[Variant] =
    for (kind <- Seq(WholeKey, CaseRange, CaseAtLeast, CaseOnly); retention <- Seq(0, 2);
         byC <- Seq(true, false) if byC || kind != WholeKey)
    yield Variant(kind, retention, byC,
      if (kind == WholeKey) "" else if (byC) ", hashed by c" else ", hashed by (c, k)")
  sealed abstract class SchemeKind(val scheme: String)
  /** "c, k": closes one group. */
  case object WholeKey extends SchemeKind("c, k")
  /** "c, k<=": closes the case's groups with k <= bound (every partition). */
  case object CaseRange extends SchemeKind("c, k<=")
  /** "c, k>=": closes the case's groups with k >= bound (every partition). */
  case object CaseAtLeast extends SchemeKind("c, k>=")
  /** "c": closes every group of the case (every partition). */
  case object CaseOnly extends SchemeKind("c")

  sealed trait Elem { def tuple: (Option[Int], Option[Int], Option[Int], Boolean) }
  final case class Data(c: Int, k: Int, v: Int) extends Elem {
    def tuple = (Some(c), Some(k), Some(v), false)
  }
  final case class Punct(kind: SchemeKind, c: Int, k: Int) extends Elem {
    def tuple = kind match {
      case CaseOnly => (Some(c), None, None, true)
      case _ => (Some(c), Some(k), None, true)
    }
    def covers(cc: Int, kk: Int): Boolean = cc == c && (kind match {
      case WholeKey => kk == k
      case CaseRange => kk <= k
      case CaseAtLeast => kk >= k
      case CaseOnly => true
    })
  }

  /**
   * The punctuations an operator holds (user contract, retention): `retention` micro-batches
   * after their own, none without one; a range per (scheme, constants) as its highest bound,
   * refreshed by each punctuation. Every punctuation is also remembered for good (late rows:
   * a row any earlier punctuation covers is late, held or not). Shared by the aggregation and
   * deduplication models.
   */
  class HeldModel(kind: SchemeKind, retention: Int, copies: Int) {
    private val held = mutable.Map.empty[Punct, Int]   // -> batch held from
    private val remembered = mutable.ArrayBuffer.empty[Punct]

    def covers(c: Int, k: Int): Boolean = held.keys.exists(_.covers(c, k)) || remembered.exists(_.covers(c, k))

    /** Holds this batch's punctuations and releases the expired ones. */
    def endBatch(puncts: Seq[Punct], batch: Int): Unit = {
      remembered ++= puncts
      puncts.foreach { p =>
        if (retention > 0) kind match {
          case CaseRange | CaseAtLeast =>
            // the one held range of the case: the bound covering the most (lowest for `>=`)
            val same = held.keys.filter(_.c == p.c).toSeq
            val bounds = same.map(_.k) :+ p.k
            val top = if (kind == CaseAtLeast) bounds.min else bounds.max
            same.foreach(held.remove)
            held(Punct(kind, p.c, top)) = batch
          case _ => held(p) = batch
        }
      }
      held.filter { case (_, from) => batch - from >= retention }.keys.foreach(held.remove)
    }

    /**
     * Held punctuations, one per (scheme, constants) and partition holding it: a whole-key
     * one in its group's partition, a range or case one in c's partition when the shuffle
     * hashes by c, else in every partition (`copies`; each copy counted).
     */
    def count: Long = kind match {
      case CaseRange | CaseAtLeast => held.keys.map(_.c).toSet.size.toLong * copies
      case CaseOnly => held.keys.map(_.c).toSet.size.toLong * copies
      case WholeKey => held.keys.map(p => (p.c, p.k)).toSet.size.toLong
    }
  }

  /** The contract, for one query: what is emitted, stored, held and dropped. */
  class Model(kind: SchemeKind, retention: Int, copies: Int) {
    private val open = mutable.Map.empty[(Int, Int), (Long, Long, Int)]   // n, total, top
    private val heldPuncts = new HeldModel(kind, retention, copies)
    private val emitted = mutable.ArrayBuffer.empty[Row]
    private var batch = -1
    var purgedInBatch = 0L
    var receivedInBatch = 0L
    var lateInBatch = 0L

    def generate(c: Int, rng: Random): Seq[Elem] =
      (0 until rng.nextInt(5)).map { _ =>
        if (rng.nextInt(4) == 0) Punct(kind, c, rng.nextInt(4)) else Data(c, rng.nextInt(4), rng.nextInt(10))
      }

    def endBatch(elems: Seq[Elem]): Unit = {
      batch += 1
      purgedInBatch = 0; lateInBatch = 0
      val puncts = elems.collect { case p: Punct => p }
      receivedInBatch = puncts.size
      elems.foreach {
        case d: Data if heldPuncts.covers(d.c, d.k) => lateInBatch += 1
        case d: Data =>
          val (n, t, m) = open.getOrElse((d.c, d.k), (0L, 0L, Int.MinValue))
          open((d.c, d.k)) = (n + 1, t + d.v, math.max(m, d.v))
        case _ =>
      }
      for (((c, k), (n, t, m)) <- open.toSeq if puncts.exists(_.covers(c, k))) {
        emitted += Row(c, k, n, t, m)
        open.remove((c, k))
        purgedInBatch += 1
      }
      heldPuncts.endBatch(puncts, batch)
    }

    def output: Seq[Row] = emitted.toSeq
    def openGroups: Long = open.size.toLong
    def held: Long = heldPuncts.count
  }
}
