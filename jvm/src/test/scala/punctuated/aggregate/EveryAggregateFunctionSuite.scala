package punctuated.aggregate

import scala.util.Try

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.expr
import org.apache.spark.sql.streaming.OutputMode

import punctuated.declaration.Declaration._
import punctuated.spark.PunctuatedStreamTest

/** A row of every common type, grouped by `g` (punctuated by `g`). */
case class Sample(g: Option[Long], i: Option[Int], d: Option[Double], s: Option[String],
    b: Option[Boolean], is_punct: Boolean = false)

/**
 * "All of Spark's aggregate functions work" (README), shown: every function Spark 4.2 registers
 * in its `agg_funcs` group runs in one punctuated aggregation (append mode, no watermark) and
 * gives, per group, what the batch aggregation over the same rows gives.
 *
 * Each function gets the first argument list (from a short list of common shapes: a column of
 * each type, a column and a fraction, two columns, ...) that Spark's analyzer accepts in a
 * batch `GROUP BY`, or a call written for it. The functions not run (those merging other
 * aggregates' sketches, and non-aggregates listed with them) are listed with the reason; a
 * function Spark adds that fits no shape fails the test instead of passing silently.
 */
class EveryAggregateFunctionSuite extends PunctuatedStreamTest {
  import testImplicits._

  /** Argument lists tried in order. */
  private val Shapes = Seq("i", "d", "b", "s", "i, d", "d, i", "d, 0.5", "i, 0.5", "d, 0.5, 100", "s, ','",
    "i, 10", "s, 10", "d, 10", "i, 10, 10", "s, 12", "i, 12")

  /** Calls of their own: literals of their own, the WITHIN GROUP syntax, or read through an estimate. */
  private val Written = Map(
    "count_min_sketch" -> "count_min_sketch(i, 0.5D, 0.5D, 1)",
    "percentile_cont" -> "percentile_cont(0.5) WITHIN GROUP (ORDER BY d)",
    "percentile_disc" -> "percentile_disc(0.5) WITHIN GROUP (ORDER BY d)",
    // sketches whose bytes keep the arrival order of their items: compared by what they estimate
    "kll_sketch_agg_bigint" -> "kll_sketch_get_quantile_bigint(kll_sketch_agg_bigint(i), 0.5D)",
    "kll_sketch_agg_double" -> "kll_sketch_get_quantile_double(kll_sketch_agg_double(d), 0.5D)",
    "kll_sketch_agg_float" -> "kll_sketch_get_quantile_float(kll_sketch_agg_float(CAST(d AS FLOAT)), 0.5D)",
    "approx_top_k_accumulate" -> "approx_top_k_estimate(approx_top_k_accumulate(i), 2)")

  /**
   * Not run, and why: their input is another aggregate's output (a sketch or bitmap column, which
   * one aggregation cannot build and merge at once), or they are not aggregates of values.
   */
  private val NotRun = Map(
    "approx_top_k_combine" -> "merges approx_top_k_accumulate outputs",
    "bitmap_and_agg" -> "merges bitmap_construct_agg outputs",
    "bitmap_or_agg" -> "merges bitmap_construct_agg outputs",
    "hll_union_agg" -> "merges hll_sketch_agg outputs",
    "kll_merge_agg_bigint" -> "merges kll_sketch_agg_bigint outputs",
    "kll_merge_agg_double" -> "merges kll_sketch_agg_double outputs",
    "kll_merge_agg_float" -> "merges kll_sketch_agg_float outputs",
    "theta_intersection_agg" -> "merges theta_sketch_agg outputs",
    "theta_union_agg" -> "merges theta_sketch_agg outputs",
    "tuple_intersection_agg_double" -> "merges tuple_sketch_agg_double outputs",
    "tuple_intersection_agg_integer" -> "merges tuple_sketch_agg_integer outputs",
    "tuple_union_agg_double" -> "merges tuple_sketch_agg_double outputs",
    "tuple_union_agg_integer" -> "merges tuple_sketch_agg_integer outputs",
    "grouping" -> "a GROUPING SETS marker, not an aggregate of values",
    "grouping_id" -> "a GROUPING SETS marker, not an aggregate of values",
    "measure" -> "reads a metric view's measure; Spark evaluates it only there")

  /** Functions whose value depends on the order rows reach them: compared as sorted values. */
  private val OrderDependent = Set("first", "first_value", "last", "last_value", "any_value", "collect_list",
    "array_agg", "listagg", "string_agg", "collect_set", "max_by", "min_by", "mode", "percentile_disc", "median")

  private val rows = Seq(
    Sample(Some(1), Some(3), Some(1.5), Some("a"), Some(true)),
    Sample(Some(1), Some(5), Some(2.5), Some("bb"), Some(false)),
    Sample(Some(1), Some(5), Some(-4.0), Some("c"), Some(true)),
    Sample(Some(2), Some(7), Some(0.25), Some("dd"), Some(true)),
    Sample(Some(2), None, None, None, None),
    Sample(Some(2), Some(11), Some(8.0), Some("a"), Some(false)))

  private def aggregateFunctions: Seq[String] =
    FunctionRegistry.builtin.listFunction().map(_.funcName).distinct.sorted.filter { name =>
      FunctionRegistry.builtin.lookupFunction(FunctionIdentifier(name)).exists(_.getGroup == "agg_funcs")
    }

  /** `f`'s call: [[Written]], else with the first of [[Shapes]] that a batch GROUP BY accepts. */
  private def callOf(batch: DataFrame, f: String): Option[String] =
    Written.get(f).orElse(Shapes.map(a => s"$f($a)")
      .find(c => Try(batch.groupBy("g").agg(expr(c)).queryExecution.assertAnalyzed()).isSuccess))

  private def comparable(f: String, v: Any): String = v match {
    case s: scala.collection.Seq[_] if OrderDependent(f) => s.map(String.valueOf).sorted.mkString("[", ",", "]")
    case b: Array[Byte] => b.mkString("bytes(", ",", ")")
    case other => String.valueOf(other)
  }

  test("every aggregate function Spark registers gives the batch answer, group by group") {
    val batch = rows.toDF().drop("is_punct")
    val functions = aggregateFunctions
    assert(functions.size > 50, s"Spark's registry lists ${functions.size} aggregate functions")
    val calls = functions.filterNot(NotRun.contains).map(f => f -> callOf(batch, f))
    val uncalled = calls.collect { case (f, None) => f }
    assert(uncalled.isEmpty, s"no call for the aggregate functions ${uncalled.mkString(", ")}: add a shape or a " +
      "written call, or say in NotRun why they are not run")
    val run = calls.collect { case (f, Some(c)) => (f, c) }
    val columns = run.map { case (f, c) => expr(c).as(s"r_$f") }
    val expected = batch.groupBy("g").agg(columns.head, columns.tail: _*).collect()
      .map(r => r.getLong(0) -> r).toMap

    val input = MemoryStream[Sample]
    val df = declare(input.toDF(), "samples", Schemes -> "g", Marker -> "is_punct")
    val query = df.groupBy("g").agg(columns.head, columns.tail: _*)
    testStream(query, OutputMode.Append())(
      AddData(input, rows.take(3): _*),
      CheckNewAnswer(),
      AddData(input, rows.drop(3) :+ Sample(Some(1), None, None, None, None, is_punct = true): _*),
      AssertOnQuery("group 1 final, as in batch") { q => q.processAllAvailable(); check(q.sink, run, expected, Set(1L)); true },
      AddData(input, Sample(Some(2), None, None, None, None, is_punct = true)),
      AssertOnQuery("group 2 final, as in batch") { q => q.processAllAvailable(); check(q.sink, run, expected, Set(1L, 2L)); true })
    info(s"${run.size} aggregate functions compared; not run: ${NotRun.keys.toSeq.sorted.mkString(", ")}")
  }

  private def check(sink: Any, run: Seq[(String, String)], expected: Map[Long, Row], groups: Set[Long]): Unit = {
    val out = sink.asInstanceOf[org.apache.spark.sql.execution.streaming.sources.MemorySink].allData
    assert(out.map(_.getLong(0)).sorted == groups.toSeq.sorted, s"groups out: ${out.map(_.getLong(0))}")
    val differ = for {
      row <- out
      ((f, call), c) <- run.zipWithIndex.map { case (fc, k) => fc -> (k + 1) }
      want = expected(row.getLong(0)).get(c)
      if comparable(f, row.get(c)) != comparable(f, want)
    } yield s"$call for g=${row.getLong(0)}: ${comparable(f, row.get(c))} (batch: ${comparable(f, want)})"
    assert(differ.isEmpty, differ.mkString("\n"))
  }
}
