package punctuated.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.json4s._

import punctuated.TestVectors
import punctuated.spark.rules.StatefulSafety

/**
 * The start-time check judges aggregations and deduplications as `punctuated.check_safety`
 * does: the shared vectors `testdata/stateful_safety_vectors.json` (also run by
 * `tests/test_stateful_safety_vectors.py`) give, per query, the verdict on each stateful
 * operator over declared streams (Tucker et al. 2003, §5.2: closed iff a punctuation that
 * reaches it has all its attributes among the keys). Here each query is judged by
 * [[StatefulSafety.verdicts]], the rule `start()` enforces, and started in strict mode:
 * `start()` refuses exactly the queries whose verdict is unsafe, naming their keys.
 *
 * {{{
 *   {"query": "SELECT customer, sum(amount) FROM STREAM(orders) GROUP BY customer",
 *    "output_mode": "update",
 *    "expect": {"safe": false,
 *               "operators": [{"operator": "aggregation", "keys": ["customer"], "closed": false}]}}
 * }}}
 */
class StatefulSafetyVectorsSuite extends PunctuatedStreamTest {
  import TestVectors.formats

  private val vectors = TestVectors.load("stateful_safety_vectors.json")
  private val tables = (vectors \ "tables").asInstanceOf[JObject].obj.map { case (name, t) =>
    (name, (t \ "columns").extract[String], (t \ "properties").extract[Map[String, String]])
  }
  private val cases = (vectors \ "cases").children

  test("there are safe and unsafe vectors") {
    val safe = cases.map(c => (c \ "expect" \ "safe").extract[Boolean])
    assert(safe.count(identity) >= 5 && safe.count(!_) >= 5)
  }

  /** All the vectors' tables exist while `body` runs. */
  private def withTables(body: => Unit): Unit =
    tables.foldRight(() => body) { case ((name, columns, props), inner) =>
      () => withDeclaredTable(name, columns, props)(inner())
    }()

  /** start() in strict mode: the error's condition and message, or None when it started. */
  private def start(df: DataFrame, mode: String): Option[AnalysisException] =
    try {
      df.writeStream.format("memory").queryName(s"v${System.nanoTime}").outputMode(mode).start().stop()
      None
    } catch { case e: AnalysisException => Some(e) }

  cases.foreach { c =>
    test(s"stateful safety vector: ${(c \ "name").extract[String]}") {
      val expected = (c \ "expect" \ "operators").children.map { o =>
        ((o \ "operator").extract[String], (o \ "keys").extract[List[String]], (o \ "closed").extract[Boolean])
      }
      val safe = (c \ "expect" \ "safe").extract[Boolean]
      withTables {
        withSQLConf("spark.punctuated.safety.mode" -> "strict") {
          val df = sql((c \ "query").extract[String])
          val verdicts = StatefulSafety.verdicts(df.queryExecution.analyzed)
          assert(verdicts.map(v => (v.operator, v.keys.toList, v.problem.isEmpty)) == expected)
          start(df, (c \ "output_mode").extract[String]) match {
            case None => assert(safe, "start() accepted a query the vector says is unsafe")
            case Some(e) =>
              assert(!safe && e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
              expected.filterNot(_._3).flatMap(_._2).foreach(k => assert(e.getMessage.contains(k), e.getMessage))
          }
        }
      }
    }
  }
}
