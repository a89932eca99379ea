package punctuated.spark

import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.col
import org.json4s._
import org.json4s.jackson.JsonMethods.{compact, render}

import punctuated.TestVectors
import punctuated.declaration.Declaration._
import punctuated.conf.PunctuatedConf
import punctuated.spark.rules.{JoinSafety, MultiJoinSafety}

/**
 * The start-time safety check agrees with the Python analysis (`punctuated.safety`, Li et al.
 * 2006, Theorems 1–4) on the shared vectors (`testdata/safety_vectors.json`): on every
 * two-stream query the same inputs are unpurgeable; on every tree of binary joins of three
 * to five streams (`spark_plans`), built here as DataFrame joins, each join's inputs are
 * purgeable exactly where `plan_verdicts(query, plan, "spark")` says so (an intermediate
 * input carries the key schemes both inputs of its join have), with
 * `spark.punctuated.join.plan=written`; and under `auto`, every query of three or more
 * streams (schemes of constants, ranges either way, two ranges in one scheme), written as a
 * left-deep tree, runs as one multi-way join
 * whose unpurgeable inputs are exactly the vector's `expected.unpurgeable` (Li et al. 2006,
 * Theorems 2/4: the query as one MJoin).
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
      // the tree of binary joins as written: no group runs as one multi-way join
      withSQLConf(PunctuatedConf.JoinPlan -> "written") {
        val (joined, _) = build(p \ "plan")
        val got = JoinSafety.verdicts(joined.queryExecution.analyzed).map(v => List(v.purgeable._1, v.purgeable._2))
        val expected = (p \ "purgeable").extract[List[List[Boolean]]]
        assert(got == expected, s"plan ${compact(render(p \ "plan"))}: JVM $got, Python vectors $expected")
      }
    }
  }

  /** Cases of three or more streams: candidates for one multi-way join. */
  private val multiWay = (TestVectors.load("safety_vectors.json") \ "cases").children.filter { c =>
    (c \ "streams").asInstanceOf[JObject].obj.size >= 3
  }

  /** Of them, those with a range scheme, and with a scheme of two ranges. */
  private def rangeSchemes(c: JValue): Seq[Int] =
    (c \ "schemes").extractOpt[Map[String, List[List[String]]]].getOrElse(Map.empty).values.flatten.toSeq
      .map(_.count(a => a.endsWith("<=") || a.endsWith(">="))).filter(_ > 0)

  /** Streams whose query runs as one multi-way join under `auto` (the rest: an input has two columns in one class). */
  private val grouped = new java.util.concurrent.atomic.AtomicInteger

  multiWay.foreach { c =>
    test(s"multi-way join safety vector (auto, Theorems 2/4): ${(c \ "name").extract[String]}") {
      val streams = (c \ "streams").extract[Map[String, List[String]]]
      val schemes = (c \ "schemes").extractOpt[Map[String, List[List[String]]]].getOrElse(Map.empty)
      val predicates = (c \ "predicates").extract[List[String]].map { text =>
        val Array(a, b) = text.split("=").map(_.trim)
        val Array(sa, aa) = a.split("\\.", 2)
        val Array(sb, ab) = b.split("\\.", 2)
        (sa, s"${sa}_$aa", sb, s"${sb}_$ab")
      }
      // left-deep in stream order, each next stream the first one joined with those before it
      val names = streams.keys.toSeq.sorted
      val dfs = names.map(n => n -> input(n, streams, schemes)).toMap
      def linked(done: Set[String], s: String) = predicates.exists { case (a, _, b, _) =>
        (done(a) && b == s) || (done(b) && a == s) }
      var done = Set(names.head)
      var joined = dfs(names.head)
      while (done.size < names.size) {
        val next = names.filterNot(done).find(linked(done, _)).getOrElse(fail(s"${names.filterNot(done)} joined with nothing"))
        val condition = predicates.collect {
          case (a, ca, b, cb) if done(a) && b == next => dfs(a)(ca) === dfs(b)(cb)
          case (a, ca, b, cb) if done(b) && a == next => dfs(b)(cb) === dfs(a)(ca)
        }.reduce(_ && _)
        joined = joined.join(dfs(next), condition)
        done += next
      }
      val plan = joined.queryExecution.analyzed
      val conf = PunctuatedConf(spark.sessionState.conf)
      assert(conf.joinPlan == "auto")
      val expected = (c \ "expected" \ "unpurgeable").extract[List[String]].sorted
      MultiJoinSafety.verdicts(plan, conf) match {
        case Seq(v) =>
          grouped.incrementAndGet()
          assert(v.inputs.sorted == names, v.inputs)
          val unpurgeable = v.inputs.zip(v.purgeable).collect { case (n, false) => n }.sorted
          assert(unpurgeable == expected, s"JVM (one multi-way join): $unpurgeable, Python vectors (Theorems 2/4): $expected")
          // the start-time check judges the group as a whole, none of its joins one by one
          assert(JoinSafety.verdicts(plan, conf).isEmpty)
          assert(JoinSafety.problems(plan, conf).map(_.input).distinct.sorted == expected)
        case Seq() =>
          // not a group: some input has two columns the predicates make equal (one class)
          val parent = scala.collection.mutable.Map.empty[String, String]
          def find(x: String): String = parent.get(x).filter(_ != x).map(find).getOrElse(x)
          predicates.foreach { case (_, ca, _, cb) => if (find(ca) != find(cb)) parent(find(cb)) = find(ca) }
          val classes = predicates.flatMap { case (_, ca, _, cb) => Seq(ca, cb) }.distinct.groupBy(find).values
          assert(classes.exists(cls => cls.map(_.takeWhile(_ != '_')).distinct.size < cls.size), classes)
        case more => fail(s"one query of joins, ${more.size} groups")
      }
    }
  }

  test("every multi-way vector runs as one multi-way join (none has two columns of an input in one class)") {
    assume(grouped.get > 0, "runs after the vector tests")
    assert(multiWay.size >= 30 && grouped.get == multiWay.size, s"${grouped.get} of ${multiWay.size}")
    assert(multiWay.count(rangeSchemes(_).nonEmpty) >= 5 && multiWay.count(rangeSchemes(_).exists(_ >= 2)) >= 4)
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
