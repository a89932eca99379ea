package punctuated.join.multi

import punctuated.compat.MemoryStream
import org.apache.spark.sql.streaming.StreamingQuery

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.spark.PunctuatedStreamTest

/** A row of [[MultiJoinPlanningSuite]]'s streams: two columns and a marker. */
case class XY(x: Option[Long], y: Option[Long], p: Boolean = false)

/**
 * [[XY]] rows as the multi-way join suites write them: a data row, a punctuation on `x` or on
 * `y`, and a declared stream of them with its columns renamed.
 */
trait XYRows extends PunctuatedStreamTest {
  import testImplicits._

  protected def xy(x: Long, y: Long): XY = XY(Some(x), Some(y))
  protected def onX(x: Long): XY = XY(Some(x), None, p = true)
  protected def onY(y: Long): XY = XY(None, Some(y), p = true)

  /** A declared stream of two columns `x`, `y` (renamed), its marker `<name>_p`. */
  protected def stream(name: String, x: String, y: String, schemes: String): (MemoryStream[XY], org.apache.spark.sql.DataFrame) = {
    val s = MemoryStream[XY]
    (s, declare(s.toDF().selectExpr(s"x AS $x", s"y AS $y", s"p AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p"))
  }
}

/** The chain of three streams of [[XY]] rows the planning suites run. */
trait XYChain extends PunctuatedStreamTest {
  import testImplicits._

  /**
   * Streams a(k), b(k, v), c(v): a and c declare their key, b both columns; the query
   * `a ⋈ b ON a_k = b_k ⋈ c ON b_v = c_v` selecting (a_k, b_v, a_w, c_w).
   */
  protected def chain() = {
    val (a, b, c) = (MemoryStream[XY], MemoryStream[XY], MemoryStream[XY])
    def decl(s: MemoryStream[XY], n: String, x: String, y: String, schemes: String) =
      declare(s.toDF().selectExpr(s"x AS $x", s"y AS $y", s"p AS ${n}_p"), n, Schemes -> schemes, Marker -> s"${n}_p")
    val da = decl(a, "a", "a_k", "a_w", "a_k")
    val db = decl(b, "b", "b_k", "b_v", "b_k; b_v")
    val dc = decl(c, "c", "c_v", "c_w", "c_v")
    (a, b, c, da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
      .select(da("a_k"), db("b_v"), da("a_w"), dc("c_w")))
  }
}

/**
 * Which joins run as one multi-way join, and how it is planned: one
 * [[PunctuatedMultiJoinExec]] in place of the group's joins, a [[MultiJoinExchangeExec]] below
 * each input with the [[Hypercube]] the number of partitions gives; groups not formed where
 * [[MultiJoinGroups]] says so (`written`, two inputs, an outer join).
 */
class MultiJoinPlanningSuite extends XYChain {
  import testImplicits._

  private def planned(q: StreamingQuery) =
    q.asInstanceOf[punctuated.compat.StreamingQueryWrapper]
      .streamingQuery.lastExecution.executedPlan

  private def run(partitions: Int, plan: String)(check: org.apache.spark.sql.execution.SparkPlan => Unit): Unit =
    withSQLConf("spark.sql.shuffle.partitions" -> partitions.toString, PunctuatedConf.JoinPlan -> plan,
        PunctuatedConf.SafetyMode -> "warn",   // (the safety of chains is judged elsewhere)
        PunctuatedConf.ShareWeights -> "equal") {   // (the first batch's weights: MultiJoinShareWeightsSuite)
      val (a, b, c, joined) = chain()
      val q = joined.writeStream.format("memory").queryName(s"chain_${partitions}_$plan").start()
      try {
        a.addData(XY(Some(1), Some(10))); b.addData(XY(Some(1), Some(2))); c.addData(XY(Some(2), Some(20)))
        q.processAllAvailable()
        check(planned(q))
      } finally q.stop()
    }

  test("a chain over two keys runs as one multi-way join over hypercube cells") {
    for ((partitions, shares) <- Seq(1 -> Seq(1, 1), 2 -> Seq(2, 1), 4 -> Seq(2, 2), 7 -> Seq(7, 1))) {
      run(partitions, "auto") { plan =>
        val execs = plan.collect { case m: PunctuatedMultiJoinExec => m }
        assert(execs.size == 1, plan.treeString)
        assert(plan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.isEmpty, plan.treeString)
        val m = execs.head
        assert(m.inputs.map(_.spec.name) == Seq("a", "b", "c"))
        assert(m.inputs.map(_.classes) == Seq(Seq(0), Seq(0, 1), Seq(1)))
        assert(m.shares == shares, s"$partitions partitions")
        assert(m.children.forall(_.isInstanceOf[MultiJoinExchangeExec]), plan.treeString)
        assert(Seq("a_k", "b_v", "a_w", "c_w").forall(m.output.map(_.name).contains), m.output)
      }
    }
  }

  test("written keeps the tree of binary joins") {
    run(2, "written") { plan =>
      assert(plan.collect { case m: PunctuatedMultiJoinExec => m }.isEmpty, plan.treeString)
      assert(plan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.size == 2, plan.treeString)
    }
  }

  test("shares: one class is Spark's hash partitioning; two inputs lacking a class split the cells") {
    assert(Hypercube.choose(5, Seq(Seq(0), Seq(0), Seq(0)), 1).shares == Seq(5))
    assert(Hypercube.choose(4, Seq(Seq(0), Seq(0, 1), Seq(1)), 2).shares == Seq(2, 2))
    assert(Hypercube.choose(7, Seq(Seq(0), Seq(0, 1), Seq(1)), 2).shares == Seq(7, 1))
    // a cycle a(x, y), b(y, z), c(z, x): each input lacks one class
    assert(Hypercube.choose(8, Seq(Seq(0, 1), Seq(1, 2), Seq(0, 2)), 3).shares == Seq(2, 2, 2))
    val cube = Hypercube(IndexedSeq(2, 3))
    assert((0 until 6).forall(c => cube.cell(cube.coordinates(c)) == c))
    assert(cube.cellsAgreeing(Map(0 -> 1)) == Seq(1, 3, 5))
    assert(cube.cellsAgreeing(Map(1 -> 2)) == Seq(4, 5))
    assert(cube.cellsAgreeing(Map(0 -> 1, 1 -> 2)) == Seq(5))
    assert(cube.replication(Seq(1)) == 2)
  }

  test("a value's coordinate in a class of share n is Spark's hash partition among n") {
    import org.apache.spark.sql.types.LongType
    val coordinate = Hypercube.coordinate(4, LongType)
    val spark4 = org.apache.spark.sql.functions.pmod(org.apache.spark.sql.functions.hash($"id"), org.apache.spark.sql.functions.lit(4))
    val expected = spark.range(0, 50).select($"id", spark4).collect().map(r => r.getLong(0) -> r.getInt(1)).toMap
    assert((0L until 50L).forall(v => coordinate(v) == expected(v)))
  }

  test("five inputs sharing a column, constraint propagation on: planned with one mark per join, no copies") {
    // Spark infers a copy of each join's mark per substitution of equal columns, and each join
    // above adds the copies of those below it: before the mark's canonical form left its
    // columns out, five inputs all joined on `c` overflowed the stack while optimizing
    withSQLConf("spark.sql.shuffle.partitions" -> "2", PunctuatedConf.JoinPlan -> "mjoin",
        PunctuatedConf.SafetyMode -> "warn", "spark.sql.constraintPropagation.enabled" -> "true") {
      val streams = (0 until 5).map(_ => MemoryStream[XY])
      val inputs = streams.zipWithIndex.map { case (s, i) =>
        declare(s.toDF().selectExpr(s"x AS c$i", s"y AS k$i", s"p AS p$i"), s"in$i",
          Schemes -> s"c$i; c$i, k$i", Marker -> s"p$i")
      }
      val joined = (1 until 5).foldLeft(inputs(0)) { (acc, j) =>
        acc.join(inputs(j), inputs(j)(s"c$j") === inputs(j - 1)(s"c${j - 1}") &&
          inputs(j)(s"k$j") === inputs(0)("k0"))
      }.select(inputs.map(d => d(d.columns.head)): _*)
      val q = joined.writeStream.format("memory").queryName("five_on_c").start()
      try {
        streams.foreach(_.addData(XY(Some(1), Some(2))))
        q.processAllAvailable()
        val optimized = q.asInstanceOf[punctuated.compat.StreamingQueryWrapper].streamingQuery.lastExecution.optimizedPlan
        val marks = optimized.collect { case j: org.apache.spark.sql.catalyst.plans.logical.Join =>
          j.condition.toSeq.flatMap(_.collect { case m: punctuated.input.PunctuationColumns => m }).size
        }
        assert(marks == Seq.fill(4)(1), optimized.treeString)
        assert(spark.table("five_on_c").count() == 1)
      } finally q.stop()
    }
  }

  test("a time band between two of three streams keeps the tree of binary joins, which its band purges") {
    withSQLConf("spark.sql.shuffle.partitions" -> "1", PunctuatedConf.JoinPlan -> "auto") {
      val streams = (0 until 3).map(_ => MemoryStream[punctuated.join.StampedRow])
      val Seq(a, b, c) = streams.zipWithIndex.map { case (s, i) =>
        declare(s.toDF().selectExpr(s"k AS k$i", s"ts AS ts$i", s"v AS v$i", s"p AS p$i"), s"in$i",
          Schemes -> s"k$i; ts$i<=", Marker -> s"p$i")
      }
      val joined = a.join(b, a("k0") === b("k1") &&
          b("ts1").between(a("ts0"), a("ts0") + org.apache.spark.sql.functions.expr("INTERVAL 5 MINUTES")))
        .join(c, a("k0") === c("k2")).select(a("k0"), b("v1"), c("v2"))
      val q = joined.writeStream.format("memory").queryName("band_of_three").start()
      try {
        val t = java.sql.Timestamp.valueOf("2026-01-01 12:00:00")
        streams.foreach(_.addData(punctuated.join.StampedRow(Some(1), Some(t), Some(1))))
        q.processAllAvailable()
        val plan = q.asInstanceOf[punctuated.compat.StreamingQueryWrapper].streamingQuery.lastExecution.executedPlan
        assert(plan.collect { case m: PunctuatedMultiJoinExec => m }.isEmpty, plan.treeString)
        assert(plan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.size == 2, plan.treeString)
        assert(spark.table("band_of_three").count() == 1)
      } finally q.stop()
    }
  }
}
