package punctuated.join.multi

import org.apache.spark.sql.internal.SQLConf
import org.scalatest.funsuite.AnyFunSuite

import punctuated.conf.PunctuatedConf
import punctuated.join.multi.MultiJoinPlan._
import punctuated.spark.rules.PunctuatedMultiJoinReplan

/**
 * `auto` re-planning with hysteresis ([[PunctuatedMultiJoinReplan]]): under statistics that
 * flip, the plan switches only when the best plan's cost is below (1 - threshold) times the
 * current plan's, and settings are checked with messages naming them.
 */
class PlanReplanSuite extends AnyFunSuite {
  // a(k) ⋈ b(k, v) ⋈ c(v): classes 0 = k, 1 = v
  private val chain = Seq(Set(0), Set(0, 1), Set(1))
  private val defaults = MultiJoinStatistics.default(3, chain)
  private val abC = Join(Seq(Join(Seq(Input(0), Input(1))), Input(2)))
  // c arrives 10000 times faster and b's rows fan out 50 by v: (a ⋈ b) pays off
  private val skew = defaults.copy(rate = Seq(1.0, 1.0, 10000.0),
    fanout = Seq(Map(0 -> 1.0), Map(0 -> 1.0, 1 -> 50.0), Map(1 -> 1.0)))

  test("statistics that flip: the MJoin -> (a ⋈ b) under skew, kept when the saving is under the threshold") {
    // costs: MJoin 6000 vs ((a ⋈ b) ⋈ c) 7010 under the defaults; 1000004 vs 500016 under skew
    assert(PunctuatedMultiJoinReplan.replan(mjoin(3), abC, skew, 0.2) == abC)
    // back to the defaults: the MJoin is cheaper by 14%, under the 20% threshold: no flapping
    assert(PunctuatedMultiJoinReplan.replan(abC, mjoin(3), defaults, 0.2) == abC)
    // a 10% threshold lets the 14% saving switch back
    assert(PunctuatedMultiJoinReplan.replan(abC, mjoin(3), defaults, 0.1) == mjoin(3))
    // the same plan stays
    assert(PunctuatedMultiJoinReplan.replan(abC, abC, skew, 0.0) == abC)
  }

  test("replanEvery and replanThreshold: defaults 10 and 0.2; bad values name the setting") {
    val conf = new SQLConf
    assert(PunctuatedConf(conf).replanEvery == 10 && PunctuatedConf(conf).replanThreshold == 0.2)
    conf.setConfString(PunctuatedConf.ReplanEvery, "0")
    assert(PunctuatedConf(conf).replanEvery == 0)
    conf.setConfString(PunctuatedConf.ReplanEvery, "-1")
    val e = intercept[IllegalArgumentException](PunctuatedConf(conf))
    assert(e.getMessage.contains(PunctuatedConf.ReplanEvery), e.getMessage)
    conf.setConfString(PunctuatedConf.ReplanEvery, "5")
    conf.setConfString(PunctuatedConf.ReplanThreshold, "1.5")
    val t = intercept[IllegalArgumentException](PunctuatedConf(conf))
    assert(t.getMessage.contains(PunctuatedConf.ReplanThreshold), t.getMessage)
    conf.setConfString(PunctuatedConf.ReplanThreshold, "0.3")
    assert(PunctuatedConf(conf).replanThreshold == 0.3)
    conf.setConfString(PunctuatedConf.MigrationStrategy, "parallel")
    val s = intercept[IllegalArgumentException](PunctuatedConf(conf))
    assert(s.getMessage.contains(PunctuatedConf.MigrationStrategy), s.getMessage)
  }
}
