package punctuated.dedup

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.sql.Row
import punctuated.compat.MemoryStream

import punctuated.aggregate.PunctuatedAggregatePropertySuite.{Data, Elem, HeldModel, Partitions, Punct, SchemeKind, Variant, Variants}
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Property test of the punctuated deduplication (Tucker et al. 2003, Table 2, duplicate
 * elimination keep invariant): random interleavings of rows and punctuations, compared after
 * every micro-batch with a model — the output so far is each key's first non-late row since
 * the key was last forgotten; the state holds exactly the keys no punctuation has closed; the
 * metrics equal the model's counts. Cases `c` are independent (every scheme fixes `c`); a
 * stop/restart from the checkpoint comes before the third batch.
 */
class PunctuatedDeduplicatePropertySuite extends PunctuatedStreamTest {
  import testImplicits._
  import PunctuatedDeduplicatePropertySuite._

  private val cases = 30
  private val batches = 5

  for (Variant(kind, retention, byC, hashed) <- Variants) {
    test(s"random interleavings: scheme '${kind.scheme}', retention $retention$hashed") {
      withSQLConf(PunctuatedConf.PunctuationRetention -> retention.toString,
          PunctuatedConf.PrefixPartitioning -> byC.toString) {
        val seed = (kind.scheme + retention + "dedup").hashCode
        val rng = new Random(seed)
        val model = new Model(kind, retention, copies = if (byC) 1 else Partitions)
        val input = MemoryStream[(Option[Int], Option[Int], Option[Int], Boolean)]
        val df = declare(input.toDF().toDF("c", "k", "v", "p"), "S", Schemes -> kind.scheme, Marker -> "p")
        val out = df.dropDuplicates("c", "k").select("c", "k")
        val actions = (0 until batches).flatMap { i =>
          val batch = (0 until cases).flatMap(c => model.generate(c, rng))
          model.endBatch(batch)
          val (keys, purged, held, late) = (model.seenKeys, model.purgedInBatch, model.held, model.lateInBatch)
          (if (i == 2) Seq(StopStream, StartStream()) else Nil) ++ Seq(
            AddData(input, batch.map(_.tuple): _*),
            CheckAnswer(model.output: _*),
            AssertOnQuery(s"batch $i (seed $seed)") { q =>
              val p = punctuatedProgress(q)
              def metric(name: String) = p.customMetrics.get(name).longValue()
              assert(p.numRowsTotal == keys, s"keys ${p.numRowsTotal} != $keys (seed $seed) ${p.json}")
              assert(metric("numRowsPurged") == purged, s"purged ${metric("numRowsPurged")} != $purged (seed $seed)")
              assert(metric("numPunctuationsHeld") == held, s"held ${metric("numPunctuationsHeld")} != $held (seed $seed)")
              assert(metric("numLateRowsDropped") == late, s"late ${metric("numLateRowsDropped")} != $late (seed $seed)")
              true
            })
        }
        testStream(out)(actions: _*)
      }
    }
  }
}

class PunctuatedDeduplicatePropertyRocksDBSuite extends PunctuatedDeduplicatePropertySuite with OnRocksDB

object PunctuatedDeduplicatePropertySuite {
  /** The contract, for one query: what is emitted, remembered, held and dropped. */
  class Model(kind: SchemeKind, retention: Int, copies: Int) {
    private val seen = mutable.Set.empty[(Int, Int)]
    private val heldPuncts = new HeldModel(kind, retention, copies)
    private val emitted = mutable.ArrayBuffer.empty[Row]
    private var batch = -1
    var purgedInBatch = 0L
    var lateInBatch = 0L

    def generate(c: Int, rng: Random): Seq[Elem] =
      (0 until rng.nextInt(5)).map { _ =>
        if (rng.nextInt(4) == 0) Punct(kind, c, rng.nextInt(4)) else Data(c, rng.nextInt(4), rng.nextInt(10))
      }

    def endBatch(elems: Seq[Elem]): Unit = {
      batch += 1
      purgedInBatch = 0; lateInBatch = 0
      val puncts = elems.collect { case p: Punct => p }
      elems.foreach {
        case d: Data if heldPuncts.covers(d.c, d.k) => lateInBatch += 1
        case d: Data if !seen.contains((d.c, d.k)) =>
          seen += ((d.c, d.k))
          emitted += Row(d.c, d.k)
        case _ =>
      }
      for (key <- seen.toSeq if puncts.exists(_.covers(key._1, key._2))) {
        seen -= key
        purgedInBatch += 1
      }
      heldPuncts.endBatch(puncts, batch)
    }

    def output: Seq[Row] = emitted.toSeq
    def seenKeys: Long = seen.size.toLong
    def held: Long = heldPuncts.count
  }
}
