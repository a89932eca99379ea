package punctuated.spark

import java.sql.Timestamp

import org.apache.spark.sql.catalyst.plans.QueryPlan
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.QueryExecution
import punctuated.compat.{MemoryStream, StreamExecution, StreamingQueryWrapper}
import org.apache.spark.sql.test.SharedSparkSession

/**
 * Queries that declare nothing plan exactly as without the extension: for every shape the
 * extension's rules match (stream-stream inner, comma, outer, semi and three-way joins, joins
 * under filters, aggregations, deduplications, DISTINCT, unions, stream-static joins, and
 * their batch counterparts), the analyzed, optimized and physical plans of a session with
 * `PunctuatedExtensions` equal those of a session without it — as trees with expression ids,
 * checkpoint paths and run ids normalised, and with the same column metadata.
 *
 * Streaming queries run one micro-batch in each session (the plans of interest are the
 * micro-batch's `IncrementalExecution`, where the optimizer and the physical rules run).
 *
 * {{{
 *   // FROM a, b WHERE a.k = b.k2 over undeclared streams: same Filter-over-Join in both sessions
 *   assertSamePlans("comma join", "SELECT * FROM a, b WHERE a.k = b.k2")
 * }}}
 */
class UndeclaredPlansSuite extends SharedSparkSession {
  import UndeclaredPlansSuite._

  override protected def sparkConf = super.sparkConf.set("spark.sql.shuffle.partitions", "2")

  /** Two sessions on the test's SparkContext, alike but for the extension. */
  private lazy val plain: SparkSession = SparkSession.builder().create()
  private lazy val extended: SparkSession =
    SparkSession.builder().withExtensions(new PunctuatedExtensions).create()

  test("the extended session runs the extension's rules, the plain one does not") {
    def names(s: SparkSession) = s.sessionState.analyzer.postHocResolutionRules.map(_.ruleName)
    assert(names(extended).exists(_.contains("MoveWhereEqualitiesIntoJoins")))
    assert(!names(plain).exists(_.contains("punctuated")))
  }

  /** Registers the undeclared streams a, b, c (and a static table s) in a session; returns their feeds. */
  private def register(s: SparkSession): Seq[MemoryStream[Row3]] = {
    import s.implicits._
    val streams = Seq.fill(3)(MemoryStream[Row3](implicitly[org.apache.spark.sql.Encoder[Row3]], s.sqlContext))
    val names = Seq(("a", "k", "v", "t"), ("b", "k2", "w", "t2"), ("c", "k3", "x", "t3"))
    streams.zip(names).foreach { case (m, (n, k, v, t)) =>
      m.toDF().toDF(k, v, t).withWatermark(t, "10 seconds").createOrReplaceTempView(n)
    }
    Seq((1, 1, new Timestamp(0L))).toDF("sk", "sv", "st").createOrReplaceTempView("s")
    streams
  }

  /** Each plan of a query execution, normalised, with its columns' metadata. */
  private def described(qe: QueryExecution): Seq[(String, String)] = Seq(
    "analyzed" -> (normalise(qe.analyzed.treeString) + "\nmetadata: " + metadata(qe.analyzed)),
    "optimized" -> (normalise(qe.optimizedPlan.treeString) + "\nmetadata: " + metadata(qe.optimizedPlan)),
    "physical" -> (normalise(qe.executedPlan.treeString) + "\nmetadata: " + metadata(qe.executedPlan)))

  /** The plans of one micro-batch of a streaming query (append mode, memory sink) in session `s`. */
  private def streamingPlans(s: SparkSession, query: String, mode: String): Seq[(String, String)] = {
    val feeds = register(s)
    val rows = (1 to 4).map(i => Row3(i % 2, i, new Timestamp(i * 1000L)))
    feeds.foreach(_.addData(rows: _*))   // before start: the first micro-batch reads all of them
    val q = s.sql(query).writeStream.format("memory").queryName(s"q${System.nanoTime()}")
      .outputMode(mode).start()
    try {
      q.processAllAvailable()
      val exec = q.asInstanceOf[StreamingQueryWrapper].streamingQuery.asInstanceOf[StreamExecution]
      ("start" -> normalise(exec.logicalPlan.treeString)) +: described(exec.lastExecution)
    } finally q.stop()
  }

  private def batchPlans(s: SparkSession, query: String): Seq[(String, String)] = {
    import s.implicits._
    Seq(("a", "k", "v"), ("b", "k2", "w"), ("c", "k3", "x")).foreach { case (n, k, v) =>
      (1 to 4).map(i => (i % 2, i)).toDF(k, v).createOrReplaceTempView(n)
    }
    val df = s.sql(query)
    df.collect()
    described(df.queryExecution)
  }

  private def assertSame(name: String, withExt: Seq[(String, String)], without: Seq[(String, String)]): Unit =
    withExt.zip(without).foreach { case ((what, e), (_, p)) =>
      assert(e == p, s"$name: the $what plan differs with the extension loaded:\n--- with\n$e\n--- without\n$p")
    }

  private val streamingShapes = Seq(
    ("inner join", "SELECT * FROM a JOIN b ON a.k = b.k2", "append"),
    ("comma join with WHERE", "SELECT * FROM a, b WHERE a.k = b.k2 AND a.v > 0", "append"),
    ("three-way comma join", "SELECT a.k, a.v, b.w, c.x FROM a, b, c WHERE a.k = b.k2 AND b.k2 = c.k3", "append"),
    ("three-way join", "SELECT a.k, a.v, b.w, c.x FROM a JOIN b ON a.k = b.k2 JOIN c ON b.w = c.x", "append"),
    ("join under filters", "SELECT * FROM (SELECT * FROM a WHERE v > 1) x JOIN (SELECT * FROM b WHERE w < 9) y " +
      "ON x.k = y.k2", "append"),
    ("left outer join", "SELECT * FROM a LEFT JOIN b ON a.k = b.k2 AND a.t = b.t2", "append"),
    ("full outer join", "SELECT * FROM a FULL JOIN b ON a.k = b.k2 AND a.t = b.t2", "append"),
    ("left semi join", "SELECT * FROM a LEFT SEMI JOIN b ON a.k = b.k2 AND a.t = b.t2", "append"),
    ("stream-static join", "SELECT * FROM a JOIN s ON a.k = s.sk", "append"),
    ("aggregation", "SELECT k, count(*), sum(v) FROM a GROUP BY k", "update"),
    ("aggregation over a join", "SELECT k, t, count(*) FROM a JOIN b ON a.k = b.k2 AND a.t = b.t2 GROUP BY k, t",
      "append"),
    ("deduplication", "SELECT * FROM a", "dedup"),
    ("distinct", "SELECT DISTINCT k, v FROM a", "update"),
    ("union distinct", "SELECT k, v FROM a UNION SELECT k2, w FROM b", "update"),
    ("union all with filters", "SELECT k, v FROM a WHERE v > 1 UNION ALL SELECT k2, w FROM b", "append"))

  streamingShapes.foreach { case (name, query, mode) =>
    test(s"streaming $name: same plans with and without the extension") {
      def run(s: SparkSession) =
        if (mode == "dedup") {
          val feeds = register(s)
          feeds.head.addData(Row3(1, 1, new Timestamp(0L)), Row3(1, 1, new Timestamp(0L)))
          val q = s.table("a").dropDuplicates("k", "v").writeStream.format("memory")
            .queryName(s"q${System.nanoTime()}").outputMode("append").start()
          try {
            q.processAllAvailable()
            val exec = q.asInstanceOf[StreamingQueryWrapper].streamingQuery.asInstanceOf[StreamExecution]
            ("start" -> normalise(exec.logicalPlan.treeString)) +: described(exec.lastExecution)
          } finally q.stop()
        } else streamingPlans(s, query, mode)
      assertSame(name, run(extended), run(plain))
    }
  }

  private val batchShapes = Seq(
    ("inner join", "SELECT * FROM a JOIN b ON a.k = b.k2"),
    ("comma join with WHERE", "SELECT * FROM a, b WHERE a.k = b.k2"),
    ("three-way comma join", "SELECT * FROM a, b, c WHERE a.k = b.k2 AND b.k2 = c.k3"),
    ("left outer join", "SELECT * FROM a LEFT JOIN b ON a.k = b.k2"),
    ("aggregation", "SELECT k, count(*) FROM a GROUP BY k"),
    ("distinct and union", "SELECT k, v FROM a UNION SELECT k2, w FROM b"),
    ("filter", "SELECT * FROM a WHERE v > 1"))

  batchShapes.foreach { case (name, query) =>
    test(s"batch $name: same plans with and without the extension") {
      assertSame(name, batchPlans(extended, query), batchPlans(plain, query))
    }
  }
}

object UndeclaredPlansSuite {
  case class Row3(k: Int, v: Int, t: Timestamp)

  private val Uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}".r
  private val Path = "file:[^\\s,\\])]+".r
  private val Id = "#(\\d+)".r
  private val QueryName = "q\\d{6,}".r
  private val Instance = "@[0-9a-f]{4,}".r
  private val PlanId = "plan_id=\\d+".r

  /**
   * A plan's text with what differs between two sessions running the same query replaced:
   * expression ids renumbered in order of appearance, run ids, checkpoint paths, query names,
   * object hashes (`MemoryStreamingWrite@1a2b3c`), exchange plan ids.
   */
  def normalise(tree: String): String = {
    val ids = scala.collection.mutable.LinkedHashMap.empty[String, Int]
    val renumbered = Id.replaceAllIn(tree, m => "#" + ids.getOrElseUpdate(m.group(1), ids.size))
    val named = QueryName.replaceAllIn(Path.replaceAllIn(Uuid.replaceAllIn(renumbered, "<uuid>"), "<path>"), "<query>")
    PlanId.replaceAllIn(Instance.replaceAllIn(named, "@<instance>"), "plan_id=<n>")
  }

  /** The distinct column metadata anywhere in a plan (the extension's flags would show here). */
  def metadata[T <: QueryPlan[T]](plan: QueryPlan[T]): String =
    plan.collect { case p => p.output.map(_.metadata.json) }.flatten.filter(_ != "{}").distinct.sorted.mkString(", ")
}
