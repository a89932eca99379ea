package punctuated.join.multi

import org.scalatest.funsuite.AnyFunSuite

import punctuated.checkpoint.PlanRecord
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.rules.MultiJoinSafety
import punctuated.spark.rules.MultiJoinSafety.{Input => In}

class PlanChoiceSuite extends AnyFunSuite {
  private def stats(inputs: Seq[In]) = MultiJoinStatistics.default(inputs.map(_.classes))
  private def text(inputs: Seq[In], p: Join) = p.text(inputs.map(_.name))

  // a(k) ⋈ b(k, v) ⋈ c(v), every input punctuating its columns
  private val chain = Seq(In("a", Set(0), Seq(Set(0))), In("b", Set(0, 1), Seq(Set(0), Set(1))), In("c", Set(1), Seq(Set(1))))
  // Li et al. 2006, Fig. 3/5: S1(A, B), S2(B, C), S3(C, A); S1 punctuates B, S2 C, S3 A
  private val cycle = Seq(In("s1", Set(0, 2), Seq(Set(0))), In("s2", Set(0, 1), Seq(Set(1))), In("s3", Set(1, 2), Seq(Set(2))))
  private def star(n: Int) = (0 until n).map(i => In(s"s$i", Set(0), Seq(Set(0))))

  /** Every node's children are connected, every node purgeable (Theorems 1/3, schemes propagated). */
  private def assertSafe(inputs: Seq[In], p: Join): Unit = {
    def virtual(q: MultiJoinPlan) = {
      val xs = q.inputs.map(inputs)
      In(xs.map(_.name).mkString, xs.flatMap(_.classes).toSet, xs.flatMap(_.schemes))
    }
    def check(j: Join): Unit = {
      val children = j.children.map(virtual)
      assert(MultiJoinSafety.unpurgeable(children).isEmpty, s"${text(inputs, p)} at ${j.text(inputs.map(_.name))}")
      j.children.foreach { case c: Join => check(c); case _ => }
    }
    check(p)
  }

  test("chain: the MJoin under the defaults; every ranked plan safe, cheapest first, costs as PlanCost says") {
    val s = stats(chain)
    assert(PlanChoice.choose(chain, s) == mjoin(3))
    val ranked = PlanChoice.ranked(chain, s, limit = 10)
    assert(ranked.map(r => text(chain, r.plan)) == Seq("(a ⋈ b ⋈ c)", "((a ⋈ b) ⋈ c)", "(a ⋈ (b ⋈ c))"))
    assert(ranked.map(_.cost) == Seq(6000.0, 7010.0, 7010.0))
    assert(ranked.map(_.intermediates) == Seq(0, 1, 1))
    ranked.foreach { r => assertSafe(chain, r.plan); assert(r.cost == PlanCost.cost(r.plan, s)) }
    // (a ⋈ c) shares no class: no cross product is ever planned
    assert(!ranked.exists(r => intermediates(r.plan).exists(_.inputs == Seq(0, 2))))
  }

  test("a left-deep tree wins on skewed statistics: c's many rows reuse the stored (a ⋈ b)") {
    val skew = stats(chain).copy(rate = Seq(1.0, 1.0, 10000.0), fanout = Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> 50.0), Map(1 -> 1.0)))
    assert(PlanChoice.choose(chain, skew) == Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))))
    assert(PlanChoice.ranked(chain, skew).map(_.cost).take(2) == Seq(500016.0, 1000004.0))
  }

  test("cycle (Li et al. 2006, Fig. 7): the MJoin is the only safe plan, whatever the statistics") {
    val skew = stats(cycle).copy(rate = Seq(50000.0, 1.0, 1.0), fanout = Seq(Map(0 -> 1.0, 2 -> 1.0), Map(0 -> 100.0, 1 -> 100.0), Map(1 -> 1.0, 2 -> 1.0)))
    Seq(stats(cycle), skew).foreach { s =>
      assert(PlanChoice.ranked(cycle, s, limit = 100).map(_.plan) == Seq(mjoin(3)))
      assert(PlanChoice.choose(cycle, s) == mjoin(3))
    }
    // a binary tree over the cycle is not safe: (s1 ⋈ s2) never purges s1 (s2 has no scheme on B)
    intercept[org.scalatest.exceptions.TestFailedException](assertSafe(cycle, Join(Seq(Join(Seq(Input(0), Input(1))), Input(2)))))
  }

  test("star on one key: the MJoin up to four inputs, a bushy tree from five; a fast input gets its own leaf") {
    Seq(3, 4).foreach(n => assert(PlanChoice.choose(star(n), stats(star(n))) == mjoin(n)))
    val five = star(5)
    val chosen = PlanChoice.choose(five, stats(five))
    assert(text(five, chosen) == "((s0 ⋈ s1 ⋈ s2) ⋈ (s3 ⋈ s4))")
    assert(PlanCost.cost(chosen, stats(five)) == 18020.0 && PlanCost.cost(mjoin(5), stats(five)) == 20000.0)
    val fast = stats(star(3)).copy(rate = Seq(100000.0, 1000.0, 1000.0))
    assert(text(star(3), PlanChoice.choose(star(3), fast)) == "(s0 ⋈ (s1 ⋈ s2))")
    PlanChoice.ranked(five, stats(five), limit = 20).foreach(r => assertSafe(five, r.plan))
  }

  test("an unsafe group (warn mode) runs the MJoin; so does one of more inputs than the search takes") {
    val unsafe = Seq(In("a", Set(0), Seq(Set(0))), In("b", Set(0), Nil), In("c", Set(0), Nil))
    assert(PlanChoice.ranked(unsafe, stats(unsafe)).isEmpty)
    assert(PlanChoice.choose(unsafe, stats(unsafe)) == mjoin(3))
    val big = star(PlanChoice.MaxInputs + 1)
    assert(PlanChoice.choose(big, stats(big)) == mjoin(big.size))
  }

  test("the statistics a choice starts from: the recorded plan's, else the defaults") {
    val recorded = stats(chain).copy(rate = Seq(1.0, 2.0, 3.0))
    val record = PlanRecord("mjoin", Seq("a", "b", "c"), Seq(Seq(0, 1), Seq(1, 2)), Seq(Seq("a.k", "b.k"), Seq("b.v", "c.v")),
      Seq(1, 1), statistics = Some(recorded))
    assert(PlanChoice.statistics(record.statistics, chain) == recorded)
    assert(PlanChoice.statistics(record.copy(statistics = None).statistics, chain) == stats(chain))
    assert(PlanChoice.statistics(None, chain) == stats(chain))
    assert(PlanChoice.statistics(record.statistics, star(4)) == stats(star(4)))
    val otherClasses = chain.updated(2, chain(2).copy(classes = Set(0, 1)))
    assert(PlanChoice.statistics(record.statistics, otherClasses) == stats(otherClasses))
  }
}
