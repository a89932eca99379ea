package punctuated.join

import punctuated.compat.MemoryStream

import punctuated.declaration.Declaration._
import punctuated.spark.PunctuatedStreamTest

/** Rows of streams whose key columns are NOT NULL (a Scala Long: non-nullable). */
case class KeyedA(k: Long, v: Option[String], p: Boolean = false)
case class KeyedB(k: Long, w: Option[Long], p: Boolean = false)
case class KeyedC(w: Long, x: Option[String], p: Boolean = false)

class NonNullableOutputPunctuationSuite extends PunctuatedStreamTest {
  import testImplicits._

  override protected def sparkConf = super.sparkConf
    .set(punctuated.conf.PunctuatedConf.JoinPlan, "written")
    .set(punctuated.conf.PunctuatedConf.SafetyMode, "warn")

  test("a join of NOT NULL key columns passes its output punctuations to the join above") {
    val (a, b, c) = (MemoryStream[KeyedA], MemoryStream[KeyedB], MemoryStream[KeyedC])
    val da = declare(a.toDF().selectExpr("k AS a_k", "v AS a_v", "p AS a_p"), "a", Schemes -> "a_k", Marker -> "a_p")
    val db = declare(b.toDF().selectExpr("k AS b_k", "w AS b_w", "p AS b_p"), "b", Schemes -> "b_k; b_w", Marker -> "b_p")
    val dc = declare(c.toDF().selectExpr("w AS c_w", "x AS c_x", "p AS c_p"), "c", Schemes -> "c_w", Marker -> "c_p")
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_w") === dc("c_w"))
      .select(da("a_k"), db("b_w"), dc("c_x"))
    testStream(joined)(
      AddData(a, KeyedA(1, Some("a1"))),
      AddData(b, KeyedB(1, Some(10))),
      AddData(c, KeyedC(10, Some("c1"))),
      CheckNewAnswer((1L, 10L, "c1")),
      AddData(a, KeyedA(1, None, p = true)),
      AddData(b, KeyedB(1, None, p = true)),
      CheckNewAnswer(),
      AddData(c, KeyedC(10, Some("c2"))),
      CheckNewAnswer((1L, 10L, "c2")))
  }
}
