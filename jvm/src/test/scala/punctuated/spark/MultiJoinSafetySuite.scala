package punctuated.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import punctuated.compat.MemoryStream

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.join.KV

/**
 * Strict safety at `start()` judges a group of joins that runs as one multi-way join as one
 * operator (Li et al. 2006, Theorems 2/4), and every other join on its own (Theorem 1): the
 * chain a(k) ⋈ b(k, v) ⋈ c(v), which the tree of binary joins cannot purge, starts under
 * `spark.punctuated.join.plan=auto` and is refused under `written`; an unsafe multi-way join
 * is refused naming the input and the scheme that fixes it, applicable as printed.
 */
class MultiJoinSafetySuite extends PunctuatedStreamTest {
  import testImplicits._

  /** The streams a(k, v), b(k, v), c(k, v), each declared with `schemes` (None: undeclared). */
  private def stream(name: String, schemes: Option[String]): DataFrame = {
    val df = MemoryStream[KV].toDF().toDF(s"${name}_k", s"${name}_v", s"${name}_p")
    declare(df, name, schemes.toSeq.flatMap(s => Seq(Schemes -> s, Marker -> s"${name}_p")): _*)
  }

  /** a JOIN b ON a.k = b.k JOIN c ON b.v = c.v (the chain over two keys). */
  private def chain(a: Option[String], b: Option[String], c: Option[String]): DataFrame = {
    val (da, db, dc) = (stream("a", a), stream("b", b), stream("c", c))
    da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
  }

  /** start() of `df`: the error, or None when it started (stopped at once). */
  private def start(df: DataFrame): Option[AnalysisException] =
    try {
      df.writeStream.format("memory").queryName(s"q${System.nanoTime}").start().stop()
      None
    } catch { case e: AnalysisException => Some(e) }

  private def refused(df: DataFrame): String = start(df) match {
    case Some(e) =>
      assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
      e.getMessage
    case None => fail("start() accepted an unsafe query")
  }

  private val safeChain = () => chain(Some("a_k"), Some("b_k; b_v"), Some("c_v"))

  test("the chain a(k) ⋈ b(k, v) ⋈ c(v), b punctuating k and v: starts under auto (Theorem 2)") {
    assert(PunctuatedConf(spark.sessionState.conf).joinPlan == "auto")
    assert(start(safeChain()).isEmpty)
    withSQLConf(PunctuatedConf.JoinPlan -> "mjoin") { assert(start(safeChain()).isEmpty) }
  }

  test("the same chain under written: the tree of binary joins is refused, as before") {
    withSQLConf(PunctuatedConf.JoinPlan -> "written") {
      val text = refused(safeChain())
      assert(text.contains("input c") && text.contains("(a ⋈ b)") && !text.contains("multi-way"), text)
    }
  }

  test("an unsafe multi-way join is refused naming the input, the missing scheme and the fix") {
    // b punctuates k only: c reaches nothing (no input has a scheme on v but c)
    val text = refused(chain(Some("a_k"), Some("b_k"), Some("c_v")))
    val line = text.split("\n").find(_.contains("The state of input c of the multi-way join")).getOrElse(fail(text))
    assert(line.contains("of a, b, c ON a_k = b_k AND b_v = c_v") && line.contains("Theorems 2/4") &&
      line.contains("never reach a, b") && line.contains("input b has no punctuation scheme on b_v") &&
      line.contains("punctuated.with_schemes(df, schemes=[\"b_k\", \"b_v\"], marker=\"b_p\"") &&
      line.contains("spark.punctuated.safety.mode=warn"), line)
    // a and b reach every input: only c is named
    assert(!text.contains("The state of input a ") && !text.contains("The state of input b "), text)
    // the fix as printed: b declares b_k; b_v -> the chain starts
    assert(start(safeChain()).isEmpty)
  }

  test("an undeclared input of a multi-way join: named, and the scheme it lacks is on itself") {
    // a undeclared: nothing reaches a (a has no scheme) -> b and c are never purged, a is
    val text = refused(chain(None, Some("b_k; b_v"), Some("c_v")))
    Seq("b", "c").foreach { n =>
      val line = text.split("\n").find(_.contains(s"The state of input $n of the multi-way join")).getOrElse(fail(text))
      assert(line.contains("input a has no punctuation scheme on a_k") &&
        line.contains("punctuated.with_schemes(df, schemes=[\"a_k\"]"), line)
    }
    assert(!text.contains("The state of input a of"), text)
  }

  test("warn: the unsafe multi-way join runs and the problem is logged; off: not checked") {
    for (mode <- Seq("warn", "off")) withSQLConf(PunctuatedConf.SafetyMode -> mode) {
      val logs = new LogAppender("safety warning")
      withLogAppender(logs) {
        assert(start(chain(Some("a_k"), Some("b_k"), Some("c_v"))).isEmpty, mode)
      }
      val warned = logs.loggingEvents.map(_.getMessage.getFormattedMessage)
        .filter(_.contains("The state of input c of the multi-way join"))
      assert(warned.size == (if (mode == "warn") 1 else 0), s"$mode: $warned")
    }
  }

  test("a star of three streams on one key is a group too, judged by Theorem 2") {
    val (da, db, dc) = (stream("a", Some("a_k")), stream("b", Some("b_k")), stream("c", None))
    val star = da.join(db, da("a_k") === db("b_k")).join(dc, da("a_k") === dc("c_k"))
    val text = refused(star)
    // c punctuates nothing: nothing reaches c; a and b are never purged, c is
    assert(text.contains("The state of input a of the multi-way join") &&
      text.contains("The state of input b of the multi-way join") &&
      !text.contains("The state of input c of"), text)
    val declared = stream("c", Some("c_k"))
    assert(start(da.join(db, da("a_k") === db("b_k")).join(declared, da("a_k") === declared("c_k"))).isEmpty)
  }

  test("reachability, unpurgeable inputs and the smallest fix on class sets (Def. 9)") {
    import punctuated.spark.rules.MultiJoinSafety.{fix, reach, unpurgeable, Input}
    // chain a{0} - b{0,1} - c{1}: b closes 0 only, c closes 1
    val chain = Seq(Input("a", Set(0), Seq(Set(0))), Input("b", Set(0, 1), Seq(Set(0))), Input("c", Set(1), Seq(Set(1))))
    assert(reach(chain, 0) == Set(0, 1, 2) && reach(chain, 2) == Set(2))
    assert(unpurgeable(chain) == Seq(2))
    assert(fix(chain, 2) == Seq((1, 1)))                       // b closing 1: c reaches b, then a
    // a generalized scheme (Theorem 4): c closes (0, 1) together, reachable once both are bound
    val gen = Seq(Input("a", Set(0), Seq(Set(0))), Input("b", Set(1), Seq(Set(1))),
      Input("c", Set(0, 1), Seq(Set(0, 1))))
    assert(reach(gen, 0) == Set(0)) // from a only class 0 is bound: c's (0, 1) waits for b's 1
    assert(unpurgeable(gen) == Seq(0, 1) && reach(gen, 2) == Set(0, 1, 2))
    // a star of three on one class, nobody punctuating: one scheme is not enough, two are
    val star = Seq(Input("a", Set(0), Nil), Input("b", Set(0), Nil), Input("c", Set(0), Nil))
    assert(unpurgeable(star) == Seq(0, 1, 2))
    assert(fix(star, 0) == Seq((1, 0), (2, 0)))
  }
}
