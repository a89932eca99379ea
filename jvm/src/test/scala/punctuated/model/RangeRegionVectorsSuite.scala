package punctuated.model

import scala.util.Random

import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors
import punctuated.TestVectors._

/**
 * [[RangeRegion]] against the shared vectors (`testdata/range_region_vectors.json`, read by
 * pytest too) and against its definition (Tucker et al. 2003, Table 1, setMatch): a point is
 * closed iff some added punctuation's corner is at or above it in every range attribute.
 */
class RangeRegionVectorsSuite extends AnyFunSuite {
  private val vectors = TestVectors.load("range_region_vectors.json")

  private def orders(v: JValue): IndexedSeq[Ordering[Any]] =
    (v \ "directions").extract[Seq[String]].map {
      case "<=" => valueOrdering
      case ">=" => valueOrdering.reverse
    }.toIndexedSeq
  private def points(v: JValue): Seq[IndexedSeq[Any]] = v.children.map(_.children.map(value).toIndexedSeq)
  private def same(a: Seq[IndexedSeq[Any]], b: Seq[IndexedSeq[Any]]): Boolean =
    a.size == b.size && a.forall(x => b.exists(y => x.zip(y).forall { case (p, q) => valueOrdering.equiv(p, q) }))

  (vectors \ "regions").children.foreach { v =>
    test(s"region: ${(v \ "name").extract[String]}") {
      val region = RangeRegion.of(orders(v), points(v \ "add"))
      assert(same(region.corners, points(v \ "corners")), region)
      (v \ "covers").children.foreach { c =>
        val point = c.children.head.children.map(value).toIndexedSeq
        assert(region.covers(point) == c.children(1).extract[Boolean], s"$region covers $point")
      }
    }
  }

  (vectors \ "unions").children.foreach { v =>
    test(s"union: ${(v \ "name").extract[String]}") {
      val a = RangeRegion.of(orders(v), points(v \ "a"))
      val b = RangeRegion.of(orders(v), points(v \ "b"))
      val union = a.union(b)
      assert(same(union.corners, points(v \ "corners")), union)
      assert(a.contains(b) == (v \ "a_contains_b").extract[Boolean])
      assert(union.contains(a) == (v \ "union_contains_a").extract[Boolean] && union.contains(b))
      assert(same(union.corners, b.union(a).corners))
      val both = a.intersect(b)
      assert(same(both.corners, points(v \ "intersection")), both)
      assert(a.contains(both) && b.contains(both))
    }
  }

  test("every vector group is read") {
    assert((vectors \ "regions").children.nonEmpty && (vectors \ "unions").children.nonEmpty)
  }

  test("a region is the union of the added down-sets, described by maximal corners (random cases)") {
    val random = new Random(7)
    (1 to 300).foreach { _ =>
      val k = 1 + random.nextInt(3)
      val reversed = IndexedSeq.fill(k)(random.nextBoolean())
      val ords: IndexedSeq[Ordering[Any]] =
        reversed.map(r => if (r) valueOrdering.reverse else valueOrdering)
      def draw(lo: Int, hi: Int): IndexedSeq[Any] = IndexedSeq.fill(k)(BigDecimal(lo + random.nextInt(hi - lo + 1)))
      val added = Seq.fill(random.nextInt(9))(draw(0, 6))
      val region = RangeRegion.of(ords, added)
      def below(p: IndexedSeq[Any], c: IndexedSeq[Any]) = p.indices.forall(i => ords(i).lteq(p(i), c(i)))
      Seq.fill(20)(draw(-1, 7)).foreach { p =>
        assert(region.covers(p) == added.exists(below(p, _)), s"$p after $added")
      }
      assert(region.corners.forall(a => region.corners.forall(b => (a eq b) || !below(a, b))), region)
      val other = RangeRegion.of(ords, Seq.fill(random.nextInt(5))(draw(0, 6)))
      val both = region.intersect(other)
      Seq.fill(20)(draw(-1, 7)).foreach { p =>
        assert(both.covers(p) == (region.covers(p) && other.covers(p)), s"$p: $region and $other")
      }
    }
  }

  test("NULL values are covered by nothing and close nothing") {
    val region = RangeRegion.of(IndexedSeq(valueOrdering, valueOrdering), Seq(IndexedSeq(BigDecimal(5), BigDecimal(5))))
    assert(!region.covers(IndexedSeq(null, BigDecimal(1))))
    assert(region.add(IndexedSeq(null, BigDecimal(9))) eq region)
  }
}
