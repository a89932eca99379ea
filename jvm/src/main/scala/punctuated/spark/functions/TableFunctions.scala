package punctuated.spark.functions

import scala.util.Try

import org.apache.spark.sql.{AnalysisException, DataFrame, Row}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.types.{ArrayType, BooleanType, DataType, LongType, StringType}

import punctuated.checkpoint.MigrationRequests
import punctuated.conf.PunctuatedConf
import punctuated.errors.{PunctuatedAnalysisException, PunctuatedErrors}
import punctuated.input.DeclaredStreams
import punctuated.spark.PythonApi
import punctuated.spark.rules.{JoinSafety, SheddingSafety}

/**
 * SQL table functions that answer what the Python API asks the extension through Py4J, for
 * clients that have no Py4J: Spark Connect clients (Python, Scala, Go ...), `spark-sql`, JDBC.
 * Each takes string literals and returns a small table computed when the call is analysed
 * (nothing runs: a query given as text is only analysed, never executed):
 *
 * {{{
 *   SELECT * FROM punctuated_declarations('bids');           -- a table, read as a stream
 *   SELECT * FROM punctuated_declarations('SELECT * FROM STREAM(a) JOIN STREAM(b) ON a.id = b.auction');
 *   SELECT document FROM punctuated_describe('SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...');
 *   SELECT * FROM punctuated_check_safety('SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...');
 *   SELECT plans FROM punctuated_join_plan('<query id or name>');
 *   SELECT request FROM punctuated_migrate('<query id or name>', '((a ⋈ b) ⋈ c)');
 * }}}
 *
 *  - `punctuated_declarations(table or query)`: one row per distinct declaration the streams
 *    read (`table`, `schemes`, `marker`, `unique` as the table properties spell them, and `json`:
 *    the item `punctuated.declarations(df)` returns, [[PythonApi.declarationJson]]).
 *  - `punctuated_describe(query)`: one row, `document` ([[PythonApi.describe]], version 2,
 *    `docs/python-document.md`) and `streaming` (whether the query reads streams).
 *  - `punctuated_check_safety(query)`: one row, the verdict of the start-time check
 *    (`spark.punctuated.safety.mode`, Li et al. 2006, Theorems 1, 2 and 4; Tucker et al. 2003,
 *    §5.2): `safe` (whether `strict` would start it), `problems` (the sentences `start()` prints),
 *    `bounded` (unpurgeable inputs a shedding budget bounds), `mode`; shedding set where it would
 *    make results wrong fails with `start()`'s `PUNCTUATED_SHEDDING_UNSUPPORTED`. The suggestions (smallest
 *    sets of extra schemes) are the Python analysis's, from `punctuated_describe`'s document.
 *  - `punctuated_join_plan(query id or name)`: one row, `plans`: the JSON
 *    [[MigrationRequests.joinPlans]] gives for a running query of this session.
 *  - `punctuated_migrate(query id or name, plan)`: asks a running query of this session for a
 *    multi-way join plan from its next micro-batch on ([[MigrationRequests.request]]: a request
 *    file in its checkpoint); one row, `request` (its number) and `plan` (as asked). The one
 *    function that does something: asking again for the plan the newest request asks writes
 *    nothing, so analysing the call twice (as a Connect client may) asks once.
 *
 * A bad argument fails with `PUNCTUATED_TABLE_FUNCTION_ARGUMENT`, naming the function and the
 * fix; a bad declaration with `PUNCTUATED_INVALID_DECLARATION`, as when the stream is read.
 */
object TableFunctions {
  type Description = (FunctionIdentifier, ExpressionInfo, Seq[Expression] => LogicalPlan)

  val Declarations = "punctuated_declarations"
  val Describe = "punctuated_describe"
  val CheckSafety = "punctuated_check_safety"
  val JoinPlan = "punctuated_join_plan"
  val Migrate = "punctuated_migrate"

  private val QueryFix = "give one streaming query as a string literal, e.g. " +
    "'SELECT * FROM STREAM(a) JOIN STREAM(b) ON a.id = b.auction' (a quote inside " +
    "escaped with a backslash: \\')"

  /** `punctuated_declarations(table or query)`. */
  val declarations: Description = function(Declarations,
    "_FUNC_(tableOrQuery) - the punctuation declarations of a table read as a stream, or of the " +
      "streams a query reads: table, schemes, marker, unique (as table properties) and json.",
    "> SELECT * FROM _FUNC_('bids');") { args =>
    val text = textArgument(Declarations, args)
    val df = tableOrQuery(Declarations, text)
    rows(Seq("table" -> StringType, "schemes" -> StringType, "marker" -> StringType,
        "unique" -> StringType, "json" -> StringType),
      PythonApi.declarationsOf(df).map { d =>
        val p = d.toProperties
        Row(d.table, p.get(punctuated.declaration.Declaration.Schemes).orNull, d.marker.orNull,
          p.get(punctuated.declaration.Declaration.Unique).orNull, PythonApi.declarationJson(d))
      })
  }

  /** `punctuated_describe(query)`. */
  val describe: Description = function(Describe,
    "_FUNC_(query) - the JSON document punctuated.check_safety reads for a query (version 2, " +
      "docs/python-document.md), and whether the query is streaming.",
    "> SELECT document FROM _FUNC_('SELECT * FROM STREAM(a) JOIN STREAM(b) ON a.id = b.auction');") { args =>
    val text = textArgument(Describe, args)
    val df = query(Describe, text)
    rows(Seq("document" -> StringType, "streaming" -> BooleanType),
      Seq(Row(PythonApi.describe(df), df.isStreaming)))
  }

  /** `punctuated_check_safety(query)`. */
  val checkSafety: Description = function(CheckSafety,
    "_FUNC_(query) - the start-time safety check's verdict on a streaming query: safe, problems, " +
      "bounded (by a shedding budget) and the safety mode.",
    "> SELECT safe, problems FROM _FUNC_('SELECT * FROM STREAM(a) JOIN STREAM(b) ON a.id = b.auction');") { args =>
    val text = textArgument(CheckSafety, args)
    val df = query(CheckSafety, text)
    if (!df.isStreaming) {
      throw PunctuatedErrors.tableFunctionArgument(CheckSafety, text,
        "is not a streaming query, so it holds no state to check",
        "read the tables as streams, with STREAM(table): SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...", None)
    }
    val plan = df.queryExecution.analyzed
    val conf = PunctuatedConf(df.sparkSession.sessionState.conf)
    val declared = DeclaredStreams.find(plan, caseSensitive = false).nonEmpty
    // shedding where results would be wrong: the error start() gives, whatever the mode
    if (declared) SheddingSafety.refuse(plan, conf)
    val (problems, bounded) = if (declared) JoinSafety.startProblems(plan, conf) else (Nil, Nil)
    rows(Seq("safe" -> BooleanType, "problems" -> ArrayType(StringType, containsNull = false),
        "bounded" -> ArrayType(StringType, containsNull = false), "mode" -> StringType),
      Seq(Row(problems.isEmpty, problems.map(_.message), bounded.map(_.message), conf.safetyMode)))
  }

  /** `punctuated_join_plan(query id or name)`. */
  val joinPlan: Description = function(JoinPlan,
    "_FUNC_(queryIdOrName) - the plans of a running query's multi-way joins, as JSON.",
    "> SELECT plans FROM _FUNC_('auction_query');") { args =>
    val text = textArgument(JoinPlan, args)
    rows(Seq("plans" -> StringType), Seq(Row(MigrationRequests.joinPlans(runningQuery(JoinPlan, text)))))
  }

  /** `punctuated_migrate(query id or name, plan)`. */
  val migrate: Description = function(Migrate,
    "_FUNC_(queryIdOrName, plan) - asks a running query's multi-way join for a plan ('mjoin', " +
      "'auto', or a join tree of its inputs' names) from its next micro-batch on: request, plan.",
    "> SELECT request FROM _FUNC_('auction_query', '((bids ⋈ auctions) ⋈ persons)');") { args =>
    val (name, plan) = args match {
      case Seq(q, p) => (textArgument(Migrate, Seq(q), MigrateFix), textArgument(Migrate, Seq(p), MigrateFix))
      case _ => throw PunctuatedErrors.tableFunctionArgument(Migrate, args.map(_.sql).mkString(", "),
        s"must be two constant strings (the query, the plan), not ${args.size} argument(s)", MigrateFix, None)
    }
    val query = runningQuery(Migrate, name)
    val number = try MigrationRequests.request(query, plan) catch {
      // the message says what does not fit and how to spell a plan that does
      case e: IllegalArgumentException => throw PunctuatedErrors.tableFunctionArgument(Migrate, s"$name', '$plan",
        s"cannot be applied: ${e.getMessage.stripSuffix(".")}", "ask for a plan of the query's multi-way join " +
          "as said, e.g. 'mjoin', 'auto' or a tree of its inputs' names", None)
    }
    rows(Seq("request" -> LongType, "plan" -> StringType), Seq(Row(number, plan.trim)))
  }

  /** Every function, in the order `PunctuatedExtensions` injects them. */
  val all: Seq[Description] = Seq(declarations, describe, checkSafety, joinPlan, migrate)

  private val MigrateFix = "give the query's id (query.id) or name and the plan as strings, e.g. " +
    "punctuated_migrate('auction_query', '((bids ⋈ auctions) ⋈ persons)'), or 'mjoin' or 'auto'"

  /** A running query of this session, by its id, run id or name. */
  private def runningQuery(function: String, text: String): org.apache.spark.sql.streaming.StreamingQuery = {
    val running = SparkSession.active.streams.active
    running.find(q => q.id.toString == text || q.runId.toString == text || q.name == text)
      .getOrElse(throw PunctuatedErrors.tableFunctionArgument(function, text,
        s"names no running query of this session (running: ${running.map(q => Option(q.name)
          .getOrElse(q.id.toString)).mkString(", ").ifEmpty("none")})",
        "give the id (query.id) or the name of a query started in this session", None))
  }

  private implicit class Empty(s: String) {
    def ifEmpty(other: String): String = if (s.isEmpty) other else s
  }

  private def function(name: String, usage: String, examples: String)(
      build: Seq[Expression] => LogicalPlan): Description =
    (FunctionIdentifier(name),
      new ExpressionInfo(getClass.getCanonicalName, null, name, usage, "\n    Examples:\n      " + examples + "\n  "),
      build)

  /** The one string literal a function takes. */
  private def textArgument(function: String, args: Seq[Expression], fix: String = QueryFix): String = args match {
    case Seq(e) if e.foldable && e.dataType == StringType =>
      Option(e.eval()).map(_.toString).getOrElse(throw PunctuatedErrors.tableFunctionArgument(
        function, "NULL", "is NULL", fix, None))
    case _ =>
      throw PunctuatedErrors.tableFunctionArgument(function, args.map(_.sql).mkString(", "),
        s"must be one constant string, not ${args.size} argument(s) of type(s) " +
          args.map(_.dataType.simpleString).mkString(", "), fix, None)
  }

  /** A table name (read as a stream), else a query. */
  private def tableOrQuery(function: String, text: String): DataFrame = {
    val session = SparkSession.active
    val isName = Try(session.sessionState.sqlParser.parseMultipartIdentifier(text.trim)).isSuccess
    if (!isName) query(function, text)
    else analysed(function, text, s"names a table Spark cannot read as a stream",
      "give a catalog table's name or a query") {
      session.readStream.table(text.trim)
    }
  }

  /**
   * `text` analysed as one query: anything else (`DROP`, `INSERT`, `SET`, several statements) is
   * refused before anything runs.
   */
  private def query(function: String, text: String): DataFrame = {
    val session = SparkSession.active
    val parser = session.sessionState.sqlParser
    val stripped = text.trim.stripSuffix(";").trim
    if (Try(parser.parseQuery(stripped)).isFailure) {
      Try(parser.parsePlan(text)) match {
        case scala.util.Success(plan) => throw PunctuatedErrors.tableFunctionArgument(function, text,
          s"is a ${plan.getClass.getSimpleName} statement, not a query; it was not run", QueryFix, None)
        case scala.util.Failure(e) => throw PunctuatedErrors.tableFunctionArgument(function, text,
          "is not one statement Spark can parse", QueryFix, Some(e))
      }
    }
    analysed(function, text, "is a query Spark cannot analyse",
      "correct the query (table and column names, STREAM(table) for streams)") {
      session.sql(stripped)
    }
  }

  /** `body`'s DataFrame, analysed; Spark's analysis errors are wrapped to name the function. */
  private def analysed(function: String, text: String, problem: String, fix: String)(
      body: => DataFrame): DataFrame =
    try {
      val df = body
      df.queryExecution.assertAnalyzed()
      df
    } catch {
      case e: PunctuatedAnalysisException => throw e
      // the extension's own errors (a bad declaration) as when the stream is read
      case e: AnalysisException if Option(e.getCondition).exists(_.startsWith("PUNCTUATED_")) => throw e
      case e: AnalysisException => throw PunctuatedErrors.tableFunctionArgument(function, text, problem, fix, Some(e))
    }

  private def rows(columns: Seq[(String, DataType)], values: Seq[Row]): LogicalPlan =
    LocalRelation.fromExternalRows(
      columns.map { case (n, t) => AttributeReference(n, t, nullable = t != BooleanType)() }, values)
}
