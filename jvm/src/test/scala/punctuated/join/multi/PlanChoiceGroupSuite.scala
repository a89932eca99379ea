package punctuated.join.multi

import org.apache.spark.sql.DataFrame
import punctuated.compat.MemoryStream

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.KV
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.PunctuatedStreamTest
import punctuated.spark.rules.MultiJoinSafety

/**
 * [[PlanChoice.choose]] on a group as the planner forms it ([[MultiJoinGroups]]): the classes
 * and schemes [[MultiJoinSafety]] sees, the default statistics of the group's classes.
 */
class PlanChoiceGroupSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def stream(name: String, schemes: Option[String]): DataFrame = {
    val df = MemoryStream[KV].toDF().toDF(s"${name}_k", s"${name}_v", s"${name}_p")
    declare(df, name, schemes.toSeq.flatMap(s => Seq(Schemes -> s, Marker -> s"${name}_p")): _*)
  }

  /** a JOIN b ON a.k = b.k JOIN c ON b.v = c.v: the group, as planned. */
  private def group(a: Option[String], b: Option[String], c: Option[String]): MultiJoinGroup = {
    val (da, db, dc) = (stream("a", a), stream("b", b), stream("c", c))
    val df = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
    val conf = PunctuatedConf(spark.sessionState.conf)
    val groups = MultiJoinGroups.of(df.queryExecution.analyzed, conf.joinPlan, conf.emitPunctuations)
    assert(groups.size == 1, groups)
    groups.head
  }

  test("the chain as planned: the MJoin under the defaults, ((a ⋈ b) ⋈ c) when c's rows are many") {
    val g = group(Some("a_k"), Some("b_k; b_v"), Some("c_v"))
    val inputs = MultiJoinSafety.inputs(g)
    assert(inputs.map(_.classes) == Seq(Set(0), Set(0, 1), Set(1)))
    val defaults = PlanChoice.statistics(None, inputs)
    assert(PlanChoice.choose(inputs, defaults) == mjoin(3))
    val skew = defaults.copy(rate = Seq(1.0, 1.0, 10000.0), fanout = Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> 50.0), Map(1 -> 1.0)))
    val tree = PlanChoice.choose(inputs, skew)
    assert(tree == Join(Seq(Join(Seq(Input(0), Input(1))), Input(2))))
    assert(tree.text(inputs.map(_.name)) == "((a ⋈ b) ⋈ c)")
    assert(PlanCost.probeOrders(tree, skew) == Seq(Seq(1), Seq(0), Seq(0, 1)))
  }

  test("b punctuating k only: no plan is safe, the MJoin runs (warn mode)") {
    val g = group(Some("a_k"), Some("b_k"), Some("c_v"))
    val inputs = MultiJoinSafety.inputs(g)
    assert(PlanChoice.ranked(inputs, PlanChoice.statistics(None, inputs)).isEmpty)
    assert(PlanChoice.choose(inputs, PlanChoice.statistics(None, inputs)) == mjoin(3))
  }
}
