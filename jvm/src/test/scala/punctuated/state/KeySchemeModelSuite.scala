package punctuated.state

import java.nio.file.Files
import java.util.UUID

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.{BinaryType, IntegerType, LongType, StructType}

import punctuated.input.KeyScheme
import punctuated.model.{Constant, Pattern, Punctuation, Range}
import punctuated.spark.PunctuatedStreamTest

/**
 * The operators' view of a punctuation (a [[KeyScheme]]: constants and ranges over key
 * positions, bounds compared through [[RangeBounds]], held in a [[HeldPunctuationTable]]) is the
 * model's punctuation (Tucker et al. 2003, §3: one [[Pattern]] per attribute; a set of them
 * excludes what any matches, `setMatch` of Table 1), on random schemes of constants and up to
 * two ranges either way, random punctuations and random keys, over a real state store:
 *
 *  - a key is covered by what the table holds of a scheme exactly when the model's `setMatch`
 *    says one of the punctuations held matches it (before and after a commit and reopen);
 *  - a punctuation says nothing new (its bound included in the held one) exactly when every
 *    key it matches is matched by the punctuations held;
 *  - the intersection of two bounds covers exactly the keys both cover.
 */
class KeySchemeModelSuite extends PunctuatedStreamTest {

  private val width = 3
  private val keySchema = (0 until width).foldLeft(new StructType())((s, i) => s.add(s"k$i", IntegerType))
  private val toKey = UnsafeProjection.create(keySchema)
  private def key(values: Seq[Int]): UnsafeRow = toKey(new GenericInternalRow(values.toArray[Any])).copy()
  private implicit val ord: Ordering[Any] = Ordering.Int.asInstanceOf[Ordering[Any]]

  private val heldKey = new StructType().add("kind", IntegerType, nullable = false)
    .add("constants", BinaryType, nullable = false)
  private val heldValue = new StructType().add("bound", BinaryType, nullable = true)
    .add("closedAt", LongType, nullable = false)

  /** The model's punctuation a punctuation row `values` of `scheme` stands for. */
  private def model(scheme: KeyScheme, values: Seq[Int]): Punctuation = Punctuation(
    (scheme.constants.map(p => s"k$p" -> (Constant(values(p)): Pattern)) ++
      scheme.ranges.map { case (p, ge) => s"k$p" -> (if (ge) Range.atLeast(values(p)) else Range.atMost(values(p))) }).toMap)

  private def tuple(values: Seq[Int]): String => Any = a => values(a.drop(1).toInt)

  private def randomScheme(rng: Random): KeyScheme = {
    val positions = rng.shuffle((0 until width).toList)
    val ranges = 1 + rng.nextInt(2)
    val constants = rng.nextInt(width - ranges + 1)
    KeyScheme(positions.take(constants).sorted.toArray,
      positions.slice(constants, constants + ranges).sorted.map(p => (p, rng.nextBoolean())).toIndexedSeq)
  }

  private val values = 0 to 5
  private val everyKey: Seq[Seq[Int]] =
    (0 until width).foldLeft(Seq(Seq.empty[Int]))((ks, _) => for (k <- ks; v <- -1 to 6) yield k :+ v)

  test("held punctuations cover exactly the keys the model's setMatch excludes; includes and intersect agree") {
    val rng = new Random(20261128)
    (1 to 40).foreach { round =>
      val scheme = randomScheme(rng)
      val dir = Files.createTempDirectory("punctuated-model").toFile.getCanonicalPath
      val provider = StateStoreProvider.createAndInit(
        StateStoreProviderId(StateStoreId(dir, 0, 0, "s"), UUID.randomUUID()), heldKey, heldValue,
        NoPrefixKeyStateEncoderSpec(heldKey), false, new StateStoreConf(spark.sessionState.conf),
        new Configuration(), false, None)
      def table(store: StateStore) = {
        val ns = StoreNamespace.whole(store)
        new HeldPunctuationTable(Some(ns), Some(ns), ClosedSummaries.BesideHeld(ns), Seq(1 -> scheme), keySchema,
          maxRemembered = 100, partition = (0, 1))
      }
      val bounds = RangeBounds(scheme, keySchema)
      val store = provider.getStore(0)
      val t = table(store)
      // punctuations sharing the constants of the first, so one held slot gathers them
      val first = Seq.fill(width)(values(rng.nextInt(values.size)))
      val rows = first +: Seq.fill(1 + rng.nextInt(4)) {
        (0 until width).map(p => if (scheme.constants.contains(p)) first(p) else values(rng.nextInt(values.size)))
      }
      val constants = t.constantsOf(scheme, key(first)).copy()
      rows.zipWithIndex.foreach { case (r, i) =>
        val incoming = t.boundOf(scheme, key(r)).get
        val held = t.held(1, scheme, constants).flatMap(_._1)
        // includes: the held bound closes everything the new one does, per the model
        held.foreach { h =>
          val modelIncludes = everyKey.forall(k => !model(scheme, r).matches(tuple(k)) ||
            Punctuation.setMatch(tuple(k), rows.take(i).map(model(scheme, _))))
          assert(bounds.includes(h, incoming) == modelIncludes, s"round $round: $scheme, ${rows.take(i + 1)}")
        }
        t.holdGreatest(1, scheme, constants, Some(incoming), closedAt = 0)
      }
      def check(tb: HeldPunctuationTable, what: String): Unit = everyKey.foreach { k =>
        val expected = Punctuation.setMatch(tuple(k), rows.map(model(scheme, _)))
        assert(tb.heldCovers(1, scheme, key(k)) == expected, s"round $round ($what): $scheme, $rows, key $k")
      }
      check(t, "held")
      // the intersection of two punctuations' bounds covers the keys both match
      val (a, b) = (rows.head, rows.last)
      val both = bounds.intersect(t.boundOf(scheme, key(a)).get, t.boundOf(scheme, key(b)).get)
      everyKey.filter(k => scheme.constants.forall(p => k(p) == first(p))).foreach { k =>
        val expected = model(scheme, a).matches(tuple(k)) && model(scheme, b).matches(tuple(k))
        assert(both.exists(bounds.coversKey(_, key(k))) == expected, s"round $round: $scheme, $a ∩ $b, key $k")
      }
      store.commit()
      check(table(provider.getStore(1)), "after a reopen")
      provider.close()
    }
  }
}
