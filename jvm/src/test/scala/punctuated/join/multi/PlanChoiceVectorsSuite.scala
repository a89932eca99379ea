package punctuated.join.multi

import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors
import punctuated.spark.rules.MultiJoinSafety

/**
 * The shared plan-choice vectors (`testdata/plan_choice_vectors.json`, also run by pytest
 * against `safe_plans`): on every case, [[PlanChoice.choose]] — the code `auto` runs — picks
 * the plan the file names, [[PlanCost]] gives it the file's cost and probe orders, and the
 * ranking's first plans are the file's.
 */
class PlanChoiceVectorsSuite extends AnyFunSuite {
  private val cases = (TestVectors.load("plan_choice_vectors.json") \ "cases").children

  private def ints(v: JValue): Seq[Int] = v.children.map { case JInt(i) => i.toInt; case o => fail(s"not an int: $o") }
  private def num(v: JValue): Double = v match {
    case JDouble(d) => d
    case JInt(i) => i.toDouble
    case o => fail(s"not a number: $o")
  }
  private def str(v: JValue): String = v match { case JString(s) => s; case o => fail(s"not a string: $o") }

  test("the file has 50+ cases: trees, MJoins, unsafe queries, 3 to 6 inputs") {
    assert(cases.size >= 50)
    val kinds = cases.map(c => str(c \ "expect" \ "kind"))
    assert(kinds.count(_ == "tree") >= 10 && kinds.count(_ == "mjoin") >= 10)
    assert(cases.count(c => (c \ "expect" \ "safe") == JBool(false)) >= 5)
    assert(Set(3, 4, 5, 6).subsetOf(cases.map(c => (c \ "inputs").children.size).toSet))
  }

  cases.foreach { c =>
    test(s"vector: ${str(c \ "name")}") {
      val inputs = (c \ "inputs").children.map { i =>
        MultiJoinSafety.Input(str(i \ "name"), ints(i \ "classes").toSet, (i \ "schemes").children.map(ints(_).toSet))
      }
      val stats = MultiJoinStatistics.fromJValue(c \ "statistics")
      assert(MultiJoinStatistics.fromJson(stats.toJson) == stats)
      assert(inputs.indices.forall(i => stats.classes(i) == inputs(i).classes))
      val expect = c \ "expect"
      val names = inputs.map(_.name)
      val chosen = PlanChoice.choose(inputs, stats)
      assert(chosen.text(names) == str(expect \ "plan"))
      assert(chosen == chosen.canonical)
      assert(MultiJoinPlan.kind(chosen) == str(expect \ "kind"))
      assert(PlanCost.cost(chosen, stats) == num(expect \ "cost"))
      assert(PlanCost.probeOrders(chosen, stats) == (expect \ "probeOrders").children.map(ints))
      val ranked = PlanChoice.ranked(inputs, stats, limit = 3)
      assert(ranked.map(r => (r.plan.text(names), r.cost)) ==
        (expect \ "ranked").children.map(r => (str(r \ "plan"), num(r \ "cost"))))
      assert(ranked.nonEmpty == ((expect \ "safe") == JBool(true)))
      ranked.foreach(r => assert(r.cost == PlanCost.cost(r.plan, stats)))
    }
  }
}
