package punctuated.join.multi

import org.scalatest.funsuite.AnyFunSuite

import punctuated.checkpoint.PlanRecord
import punctuated.join.multi.MultiJoinPlan._

class PlanCostSuite extends AnyFunSuite {
  // a(k) ⋈ b(k, v) ⋈ c(v): classes 0 = k, 1 = v
  private val chain = Seq(Set(0), Set(0, 1), Set(1))
  private val defaults = MultiJoinStatistics.default(3, chain)
  private val abC = Join(Seq(Join(Seq(Input(0), Input(1))), Input(2)))

  test("the worked example: the MJoin 6000, ((a ⋈ b) ⋈ c) 7010 under the defaults") {
    // MJoin: each input's 1000 rows build 1 + 1 partial results
    assert(PlanCost.cost(mjoin(3), defaults) == 6000.0)
    // (a ⋈ b): 1000 + 1000 probes, 2000 writes, 0.01 x 1000 rows; root: 2000 + 1000 probes
    assert(PlanCost.cost(abC, defaults) == 4010.0 + 3000.0)
    // child order carries no meaning
    assert(PlanCost.cost(Join(Seq(Input(2), Join(Seq(Input(1), Input(0))))), defaults) == 7010.0)
  }

  test("skewed statistics: c's rows probe the stored (a ⋈ b) once instead of b, then a") {
    val skew = defaults.copy(rate = Seq(1.0, 1.0, 10000.0), fanout = Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> 50.0), Map(1 -> 1.0)))
    // (a ⋈ b): 1 + 1 probes, 2 writes, 10 memory; root: (a ⋈ b)'s 2 rows probe c (2), c's 10000 rows
    // meet 50 combinations each (500000)
    assert(PlanCost.cost(abC, skew) == 14.0 + 500002.0)
    // MJoin: c's rows build 50 (b) + 50 (then a) partials, a's 1 + 1, b's 1 + 1
    assert(PlanCost.cost(mjoin(3), skew) == 1000000.0 + 4.0)
  }

  test("probe orders: greedy, connected, smallest fan-out first, ties to the earlier child") {
    assert(PlanCost.probeOrder(mjoin(3), 0, defaults) == Seq(1, 2)) // c shares nothing with a: after b
    assert(PlanCost.probeOrder(mjoin(3), 2, defaults) == Seq(1, 0))
    assert(PlanCost.probeOrder(mjoin(3), 1, defaults) == Seq(0, 2))
    val cheapC = defaults.copy(fanout = Seq(Map(0 -> 5.0), Map(0 -> 1.0, 1 -> 1.0), Map(1 -> 0.5)))
    assert(PlanCost.probeOrder(mjoin(3), 1, cheapC) == Seq(2, 0))
    assert(PlanCost.probeOrders(mjoin(3), cheapC) == Seq(Seq(1, 2), Seq(2, 0), Seq(1, 0)))
    // a tree: a and b meet each other at (a ⋈ b), c meets both at the root
    assert(PlanCost.probeOrders(abC, defaults) == Seq(Seq(1), Seq(0), Seq(0, 1)))
    assert(PlanCost.probeOrder(abC, 1, defaults) == Seq(0))
  }

  test("statistics: defaults, JSON both ways, the Python form") {
    assert(defaults.rate == Seq(1000.0, 1000.0, 1000.0) && defaults.stored == defaults.rate)
    assert(defaults.classes(1) == Set(0, 1) && defaults.fan(1, 1) == 1.0 && defaults.fan(0, 7) == 1.0)
    assert(defaults.toJson == """{"rate":[1000.0,1000.0,1000.0],"stored":[1000.0,1000.0,1000.0],""" +
      """"fanout":[{"0":1.0},{"0":1.0,"1":1.0},{"1":1.0}]}""")
    assert(MultiJoinStatistics.fromJson(defaults.toJson) == defaults)
    assert(MultiJoinStatistics.fromJson("""{"rate":[1,2],"stored":[3,4.5],"fanout":[{"0":2},{"0":0.5}]}""") ==
      MultiJoinStatistics(Seq(1.0, 2.0), Seq(3.0, 4.5), Seq(Map(0 -> 2.0), Map(0 -> 0.5))))
    intercept[IllegalArgumentException](MultiJoinStatistics(Seq(1.0), Seq(1.0, 2.0), Seq(Map.empty)))
  }

  test("a plan record carries the statistics its plan was chosen with; older records read without") {
    val r = PlanRecord("mjoin", Seq("a", "b", "c"), Seq(Seq(0, 1), Seq(1, 2)), Seq(Seq("a.k", "b.k"), Seq("b.v", "c.v")),
      Seq(2, 2), Seq(Seq(1, 2), Seq(0, 2), Seq(1, 0)), statistics = Some(defaults))
    assert(PlanRecord.fromJson(r.toJson) == r)
    assert(r.toJson.contains(""""statistics":{"rate":[1000.0,1000.0,1000.0]"""))
    val old = r.copy(statistics = None)
    assert(!old.toJson.contains("statistics") && PlanRecord.fromJson(old.toJson) == old)
    val written = """{"formatVersion":1,"kind":"mjoin","inputs":["a","b","c"],"classes":[[0,1],[1,2]],""" +
      """"classColumns":[["a.k","b.k"],["b.v","c.v"]],"shares":[2,2],"probeOrders":[]}"""
    assert(PlanRecord.fromJson(written).statistics.isEmpty)
  }
}
