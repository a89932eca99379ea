package punctuated.model

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * The closed-values summaries ([[ClosedValues]]): examples, then properties against a plain
 * set of the values closed — the summary covers exactly them (within its limit), never a value
 * not closed (beyond it), and stays compact.
 */
class ClosedValuesSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  test("intervals: sequential values are one interval, in any order") {
    val c = new ClosedIntervals(limit = 10)
    Seq(1L, 2L, 3L, 7L).foreach(c.add)
    assert(c.entries == Seq((1L, 3L), (7L, 7L)))
    Seq(5L, 4L, 6L).foreach(c.add)
    assert(c.entries == Seq((1L, 7L)))
    assert(c.covers(4) && !c.covers(0) && !c.covers(8))
    assert(!c.add(5), "already closed: nothing changes")
  }

  test("intervals: a gap of foreign values is bridged; foreign values are never covered") {
    // this partition owns the even values
    val c = new ClosedIntervals(limit = 10, foreign = v => v % 2 != 0, maxGap = 4)
    Seq(2L, 4L, 8L, 20L).foreach(c.add)
    assert(c.entries == Seq((2L, 4L), (8L, 8L), (20L, 20L)))  // 6 is ours and not closed
    c.add(6)
    assert(c.entries == Seq((2L, 8L), (20L, 20L)))             // 10..18 hold even values
    assert(c.covers(6) && !c.covers(5) && !c.covers(10))
  }

  test("intervals: beyond the limit the lowest are forgotten, and counted") {
    val c = new ClosedIntervals(limit = 2)
    Seq(10L, 20L, 30L).foreach(c.add)
    assert(c.entries == Seq((20L, 20L), (30L, 30L)) && c.forgotten == 1)
    assert(!c.covers(10))
  }

  test("intervals: extreme values do not overflow") {
    val c = new ClosedIntervals(limit = 10, foreign = _ => true, maxGap = 100)
    c.add(Long.MinValue)
    c.add(Long.MaxValue)
    assert(c.size == 2)
  }

  test("set: one highest bound per constants, oldest forgotten first") {
    val c = new ClosedSet[String, Int](limit = 2)
    c.add("s1", Some(9)); c.add("s2", Some(4)); c.add("s1", Some(12))
    assert(c.entries == Seq("s2" -> Some(4), "s1" -> Some(12)))
    assert(c.covers("s1", Some(10)) && !c.covers("s2", Some(5)) && !c.covers("s3", Some(1)))
    assert(!c.add("s1", Some(3)), "a lower bound says nothing new")
    c.add("s3", Some(1))
    assert(c.entries.map(_._1) == Seq("s1", "s3") && c.forgotten == 1)
    val whole = new ClosedSet[String, Int](limit = 5)
    whole.add("a7", None)
    assert(whole.covers("a7", None) && !whole.covers("a8", None))
  }

  private val values = Gen.listOf(Gen.choose(-30L, 30L))

  test("property: intervals cover exactly the closed values, merged as far as they can be") {
    forAll(values) { vs =>
      val c = new ClosedIntervals(limit = Int.MaxValue)
      vs.foreach(c.add)
      (-35L to 35L).foreach(v => assert(c.covers(v) == vs.contains(v), s"$v of $vs: ${c.entries}"))
      c.entries.sliding(2).foreach {
        case Seq((_, hi), (lo, _)) => assert(lo > hi + 1, c.entries)
        case _ =>
      }
    }
  }

  test("property: with foreign values, own values are covered exactly; all own values make one interval") {
    forAll(values, Gen.choose(2, 5)) { (vs, n) =>
      def foreign(v: Long) = Math.floorMod(v, n.toLong) != 0
      val c = new ClosedIntervals(limit = Int.MaxValue, foreign, maxGap = 2L * n)
      val own = vs.filterNot(foreign)
      own.foreach(c.add)
      (-35L to 35L).foreach(v => assert(c.covers(v) == own.contains(v), s"$v of $own: ${c.entries}"))
      val all = new ClosedIntervals(limit = Int.MaxValue, foreign, maxGap = 2L * n)
      scala.util.Random.shuffle((-30L to 30L).filterNot(foreign)).foreach(all.add)
      assert(all.size == 1, all.entries)
    }
  }

  test("property: a bounded summary never covers a value that was not closed") {
    forAll(values, Gen.choose(1, 4)) { (vs, limit) =>
      val c = new ClosedIntervals(limit)
      vs.foreach(c.add)
      assert(c.size <= limit)
      (-35L to 35L).foreach(v => if (c.covers(v)) assert(vs.contains(v)))
      // the newest value is always remembered when it is the highest
      vs.lastOption.filter(v => vs.forall(_ <= v)).foreach(v => assert(c.covers(v)))
    }
  }

  test("property: a set with bounds covers what a plain map of highest bounds covers") {
    val adds = Gen.listOf(Gen.zip(Gen.choose(0, 5), Gen.option(Gen.choose(0, 10))))
    forAll(adds, Gen.choose(1, 8)) { (as, limit) =>
      val c = new ClosedSet[Int, Int](limit)
      val model = scala.collection.mutable.Map.empty[Int, Option[Int]]  // None: every value
      as.foreach { case (k, b) =>
        c.add(k, b)
        model(k) = (model.get(k), b) match {
          case (None, x) => x
          case (Some(None), _) | (_, None) => None
          case (Some(Some(x)), Some(y)) => Some(math.max(x, y))
        }
      }
      assert(c.size <= limit)
      for (k <- 0 to 6; v <- (0 to 11).map(Some(_)) :+ None) {
        val expected = model.get(k).exists(b => b.isEmpty || v.exists(x => b.exists(x <= _)))
        if (model.size <= limit) assert(c.covers(k, v) == expected, s"$k $v: ${c.entries} vs $model")
        else if (c.covers(k, v)) assert(expected, s"$k $v: ${c.entries} vs $model")
      }
    }
  }
}
