package punctuated.spark

import org.apache.spark.sql.execution.streaming.runtime.MemoryStream
import org.apache.spark.sql.functions.col
import org.json4s._
import org.json4s.jackson.JsonMethods.{compact, render}

import punctuated.TestVectors
import punctuated.declaration.Declaration._
import punctuated.spark.rules.JoinSafety

/**
 * The start-time safety check agrees with the Python analysis (`punctuated.safety`, Li et al.
 * 2006, Theorems 1–4) on the shared vectors (`testdata/safety_vectors.json`): on every
 * two-stream query the same inputs are unpurgeable; on every tree of binary joins of three
 * to five streams (`spark_plans`), built here as DataFrame joins, each join's inputs are
 * purgeable exactly where `plan_verdicts(query, plan, "spark")` says so (an intermediate
 * input carries the key schemes both inputs of its join have).
 */
class SafetyVectorsSuite extends PunctuatedStreamTest {
  import TestVectors.formats

  private val cases = (TestVectors.load("safety_vectors.json") \ "cases").children.filter { c =>
    (c \ "streams").asInstanceOf[JObject].obj.size == 2 &&
      (c \ "predicates").children.nonEmpty
  }

  test("there are two-stream vectors") { assert(cases.size >= 10) }

  private def input(name: String, streams: Map[String, List[String]],
      schemes: Map[String, List[List[String]]]) = {
    val attrs = streams(name)
    val raw = attrs.foldLeft(MemoryStream[Int](testImplicits.newIntEncoder, spark.sqlContext).toDF()) { (df, a) =>
      df.withColumn(s"${name}_$a", col("value"))
    }.withColumn(s"${name}__p", col("value") === 0).drop("value")
    val decl = schemes.get(name).filter(_.nonEmpty).map { ss =>
      // each scheme once: a declaration rejects a repeated one (DUPLICATE_SCHEME); the
      // random vectors may list one twice, which means the same set of schemes
      Seq(Schemes -> ss.distinctBy(_.toSet).map(_.map(a => s"${name}_$a").mkString(", ")).mkString("; "),
        Marker -> s"${name}__p")
    }.getOrElse(Nil)
    declare(raw, name, decl: _*)   // named even without schemes, for the messages
  }

  private val trees = (TestVectors.load("safety_vectors.json") \ "cases").children.flatMap { c =>
    (c \ "spark_plans").children.zipWithIndex.map { case (p, i) => (c, p, i) }
  }

  test("there are vectors of join trees") { assert(trees.size >= 100) }

  trees.foreach { case (c, p, i) =>
    test(s"join tree safety vector: ${(c \ "name").extract[String]} #$i") {
      val streams = (c \ "streams").extract[Map[String, List[String]]]
      val schemes = (c \ "schemes").extractOpt[Map[String, List[List[String]]]].getOrElse(Map.empty)
      val predicates = (c \ "predicates").extract[List[String]].map { text =>
        val Array(a, b) = text.split("=").map(_.trim)
        val Array(sa, aa) = a.split("\\.", 2)
        val Array(sb, ab) = b.split("\\.", 2)
        (sa, s"${sa}_$aa", sb, s"${sb}_$ab")
      }
      def build(plan: JValue): (org.apache.spark.sql.DataFrame, Set[String]) = plan match {
        case JString(s) => (input(s, streams, schemes), Set(s))
        case JArray(List(l, r)) =>
          val ((dl, sl), (dr, sr)) = (build(l), build(r))
          val condition = predicates.collect {
            case (a, ca, b, cb) if sl(a) && sr(b) => dl(ca) === dr(cb)
            case (a, ca, b, cb) if sl(b) && sr(a) => dl(cb) === dr(ca)
          }.reduce(_ && _)
          (dl.join(dr, condition), sl ++ sr)
        case other => fail(s"not a binary plan: $other")
      }
      val (joined, _) = build(p \ "plan")
      val got = JoinSafety.verdicts(joined.queryExecution.analyzed).map(v => List(v.purgeable._1, v.purgeable._2))
      val expected = (p \ "purgeable").extract[List[List[Boolean]]]
      assert(got == expected, s"plan ${compact(render(p \ "plan"))}: JVM $got, Python vectors $expected")
    }
  }

  cases.foreach { c =>
    test(s"two-stream safety vector: ${(c \ "name").extract[String]}") {
      val streams = (c \ "streams").extract[Map[String, List[String]]]
      val schemes = (c \ "schemes").extractOpt[Map[String, List[List[String]]]].getOrElse(Map.empty)
      val Seq(s1, s2) = streams.keys.toSeq.sorted
      val (l, r) = (input(s1, streams, schemes), input(s2, streams, schemes))
      val condition = (c \ "predicates").extract[List[String]].map { p =>
        val Array(a, b) = p.split("=").map(_.trim)
        val Array(sa, aa) = a.split("\\.", 2)
        val Array(sb, ab) = b.split("\\.", 2)
        def ref(s: String, at: String) = (if (s == s1) l else r)(s"${s}_$at")
        ref(sa, aa) === ref(sb, ab)
      }.reduce(_ && _)
      val joined = l.join(r, condition)
      val unpurgeable = JoinSafety.problems(joined.queryExecution.analyzed).map(_.input).distinct.sorted
      val expected = (c \ "expected" \ "unpurgeable").extract[List[String]].sorted
      assert(unpurgeable == expected,
        s"JVM: $unpurgeable, Python vectors: $expected")
    }
  }
}
