package punctuated.join.multi

import org.scalatest.funsuite.AnyFunSuite

import punctuated.join.multi.MultiJoinPlan._

class MultiJoinPlanSuite extends AnyFunSuite {
  private val names = Seq("a", "b", "c", "d")

  test("the notation of the Python package, both ways") {
    val p = Join(Seq(Join(Seq(Input(0), Input(1))), Input(2), Input(3)))
    assert(p.text(names) == "((a ⋈ b) ⋈ c ⋈ d)")
    assert(parse("((a ⋈ b) ⋈ c ⋈ d)", names) == p)
    assert(parse("(A, B), c, d", names) == p)
    assert(parse("((a JOIN b) JOIN c JOIN d)", names) == p)
    assert(fromJValue(p.toJValue) == p)
  }

  test("kinds, intermediate nodes and canonical order") {
    assert(kind(mjoin(3)) == "mjoin")
    val ld = leftDeep(Seq(2, 0, 1))
    assert(ld.text(names) == "((c ⋈ a) ⋈ b)")
    assert(kind(ld) == "tree")
    assert(intermediates(ld).map(_.inputs) == Seq(Seq(0, 2)))
    assert(ld.canonical.text(names) == "((a ⋈ c) ⋈ b)")
    val bushy = Join(Seq(Join(Seq(Input(0), Input(1))), Join(Seq(Input(2), Input(3)))))
    assert(intermediates(bushy).map(_.inputs) == Seq(Seq(0, 1), Seq(2, 3)))
  }

  test("a text that is not a plan of the inputs names them") {
    Seq("((a ⋈ b) ⋈ c)", "((a ⋈ b) ⋈ c ⋈ d ⋈ a)", "((a ⋈ e) ⋈ c ⋈ d)", "((a ⋈ b) ⋈ c ⋈ d", "()").foreach { t =>
      val e = intercept[IllegalArgumentException](parse(t, names))
      assert(e.getMessage.contains(s"'$t' is not a join plan of the inputs a, b, c, d"), e.getMessage)
    }
  }
}
