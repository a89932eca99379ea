package punctuated.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import punctuated.compat.{MemoryStream, StreamingQueryWrapper}
import org.apache.spark.sql.internal.SQLConf
import org.json4s.jackson.JsonMethods.parse

import punctuated.checkpoint.MigrationRequests
import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration
import punctuated.join.multi.XY

/**
 * The SQL table functions of [[punctuated.spark.functions.TableFunctions]] on a real session
 * with declared parquet tables: each gives what the Python API gets through Py4J
 * ([[PythonApi]]) for the same query, the start-time check's verdict for `check_safety`, a running
 * query's join plan; undeclared tables give no declaration; bad texts fail naming the function
 * and run nothing. [[TableFunctionsRocksDBSuite]] runs the same on RocksDB.
 */
class TableFunctionsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val auction =
    "SELECT a.id AS auction, a.category, count(*) AS bids, sum(b.price) AS total " +
      "FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction GROUP BY a.id, a.category"

  private def withAuctionTables(body: => Unit): Unit =
    withDeclaredTable("auctions", "id BIGINT, seller BIGINT, category INT, is_punct BOOLEAN",
      Map(Declaration.Unique -> "id", Declaration.Marker -> "is_punct")) {
      withDeclaredTable("bids", "auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN",
        Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct")) {
        withDeclaredTable("persons", "id BIGINT, name STRING", Map.empty)(body)
      }
    }

  private def quoted(text: String) = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

  private def failure(call: String): AnalysisException = intercept[AnalysisException](sql(call).collect())

  test("punctuated_declarations: a declared table by name, and the streams of a query, as Py4J gives them") {
    withAuctionTables {
      val byName = sql("SELECT * FROM punctuated_declarations('bids')").collect()
      assert(byName.map(r => (r.getString(0), r.getString(1), r.getString(2), r.getString(3))).toSeq ==
        Seq(("spark_catalog.default.bids", "auction", "is_punct", null)))
      val json = PythonApi.declarations(spark.readStream.table("bids"))
      assert(parse(json) == parse(byName.map(_.getString(4)).mkString("[", ",", "]")))

      val ofQuery = sql(s"SELECT table, unique, json FROM punctuated_declarations(${quoted(auction)})").collect()
      assert(ofQuery.map(_.getString(0)).toSet == Set("spark_catalog.default.auctions", "spark_catalog.default.bids"))
      assert(ofQuery.find(_.getString(0).endsWith("auctions")).get.getString(1) == "id")
      assert(parse(ofQuery.map(_.getString(2)).mkString("[", ",", "]")) ==
        parse(PythonApi.declarations(sql(auction))))
    }
  }

  test("punctuated_declarations: an undeclared table has none; a bad declaration fails as when read") {
    withAuctionTables {
      assert(sql("SELECT * FROM punctuated_declarations('persons')").collect().isEmpty)
      sql("ALTER TABLE persons SET TBLPROPERTIES ('punctuated.unique' = 'nope')")
      val e = failure("SELECT * FROM punctuated_declarations('persons')")
      assert(e.getCondition == "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN", e.getMessage)
      assert(e.getMessage.contains("nope") && e.getMessage.contains("spark_catalog.default.persons"), e.getMessage)
    }
  }

  test("punctuated_describe: the document check_safety reads, and whether the query streams") {
    withAuctionTables {
      val row = sql(s"SELECT document, streaming FROM punctuated_describe(${quoted(auction)})").head()
      assert(parse(row.getString(0)) == parse(PythonApi.describe(sql(auction))))
      assert((parse(row.getString(0)) \ "version").values == BigInt(2))
      assert(row.getBoolean(1))
      val batch = sql("SELECT streaming FROM punctuated_describe('SELECT * FROM bids')").head()
      assert(!batch.getBoolean(0))
    }
  }

  test("punctuated_check_safety: the start-time verdict, the problems start() prints in strict mode") {
    withAuctionTables {
      val safe = sql(s"SELECT safe, problems, bounded, mode FROM punctuated_check_safety(${quoted(auction)})").head()
      assert(safe.getBoolean(0) && safe.getSeq[String](1).isEmpty && safe.getSeq[String](2).isEmpty)
      assert(safe.getString(3) == "strict")

      // bids(auction) ⋈ persons ON bidder: neither input punctuates the join key
      val unsafe = "SELECT * FROM STREAM(bids) b JOIN STREAM(persons) p ON b.bidder = p.id"
      val verdict = sql(s"SELECT safe, problems FROM punctuated_check_safety(${quoted(unsafe)})").head()
      assert(!verdict.getBoolean(0))
      val problems = verdict.getSeq[String](1)
      assert(problems.nonEmpty)
      val started = intercept[AnalysisException] {
        sql(unsafe).writeStream.format("memory").queryName("unsafe_join").start()
      }
      assert(started.getCondition == "PUNCTUATED_UNSAFE_QUERY")
      problems.foreach(p => assert(started.getMessage.contains(p), s"$p not in ${started.getMessage}"))

      // shedding where results would be wrong: start()'s own error
      withSQLConf(PunctuatedConf.SheddingMaxStateRows -> "10") {
        val outer = "SELECT * FROM STREAM(auctions) a LEFT JOIN STREAM(bids) b ON a.id = b.auction"
        val shed = failure(s"SELECT * FROM punctuated_check_safety(${quoted(outer)})")
        assert(shed.getCondition == "PUNCTUATED_SHEDDING_UNSUPPORTED", shed.getMessage)
      }

      // no declared input: start() checks nothing, so nothing is unsafe
      val plain = "SELECT * FROM STREAM(persons) p JOIN STREAM(persons) q ON p.id = q.id"
      assert(sql(s"SELECT safe FROM punctuated_check_safety(${quoted(plain)})").head().getBoolean(0))
    }
  }

  test("bad arguments fail naming the function and the fix, and run nothing") {
    withAuctionTables {
      val drop = failure("SELECT * FROM punctuated_describe('DROP TABLE bids')")
      assert(drop.getCondition == "PUNCTUATED_TABLE_FUNCTION_ARGUMENT", drop.getMessage)
      assert(drop.getMessage.contains("punctuated_describe('DROP TABLE bids')"), drop.getMessage)
      assert(drop.getMessage.contains("not a query; it was not run"), drop.getMessage)
      assert(spark.catalog.tableExists("bids"))

      val syntax = failure("SELECT * FROM punctuated_check_safety('SELEC * FROM STREAM(bids)')")
      assert(syntax.getCondition == "PUNCTUATED_TABLE_FUNCTION_ARGUMENT", syntax.getMessage)
      assert(syntax.getMessage.contains("punctuated_check_safety") && syntax.getMessage.contains("Fix:"))

      val missing = failure("SELECT * FROM punctuated_describe('SELECT * FROM STREAM(no_such_table)')")
      assert(missing.getCondition == "PUNCTUATED_TABLE_FUNCTION_ARGUMENT", missing.getMessage)
      assert(missing.getMessage.contains("cannot analyse") && missing.getMessage.contains("no_such_table"))

      val noTable = failure("SELECT * FROM punctuated_declarations('no_such_table')")
      assert(noTable.getMessage.contains("punctuated_declarations('no_such_table')"), noTable.getMessage)

      val batch = failure("SELECT * FROM punctuated_check_safety('SELECT * FROM bids')")
      assert(batch.getMessage.contains("not a streaming query") && batch.getMessage.contains("STREAM(table)"))

      val two = failure("SELECT * FROM punctuated_describe('SELECT 1', 'SELECT 2')")
      assert(two.getMessage.contains("must be one constant string, not 2 argument(s)"), two.getMessage)
      val number = failure("SELECT * FROM punctuated_describe(42)")
      assert(number.getMessage.contains("type(s) int"), number.getMessage)
    }
  }

  /** Streams a, b, c of [[XY]] rows declaring their `x`, joined `a_x = b_x` and `b_y = c_x`. */
  private def chainOfThree() = {
    def stream(name: String): (MemoryStream[XY], DataFrame) = {
      val s = MemoryStream[XY]
      (s, declare(s.toDF().selectExpr(s"x AS ${name}_x", s"y AS ${name}_y", s"p AS ${name}_p"), name,
        Declaration.Schemes -> s"${name}_x", Declaration.Marker -> s"${name}_p"))
    }
    val (a, da) = stream("a")
    val (b, db) = stream("b")
    val (c, dc) = stream("c")
    (a, b, c, da.join(db, da("a_x") === db("b_x")).join(dc, db("b_y") === dc("c_x")))
  }

  test("punctuated_join_plan: a running query's multi-way join plan, by id or name") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.SafetyMode -> "warn",
        PunctuatedConf.JoinPlan -> "mjoin") {
      val (a, b, c, joined) = chainOfThree()
      testStream(joined)(
        MultiAddData(a -> Seq(XY(Some(1), Some(1))), b -> Seq(XY(Some(1), Some(2))), c -> Nil),
        CheckNewAnswer(),
        AssertOnQuery("the function's plans are MigrationRequests.joinPlans") { q =>
          val expected = MigrationRequests.joinPlans(new StreamingQueryWrapper(q))
          val got = sql(s"SELECT plans FROM punctuated_join_plan('${q.id}')").head().getString(0)
          assert(parse(got) == parse(expected))
          assert((parse(got) \\ "inputs").children.nonEmpty, got)
          true
        })
      val e = failure("SELECT * FROM punctuated_join_plan('no-such-query')")
      assert(e.getMessage.contains("names no running query"), e.getMessage)
    }
  }

  test("punctuated_migrate: a running query's next plan, asked once however often the call is analysed; bad requests fail naming the fix") {
    withSQLConf(SQLConf.SHUFFLE_PARTITIONS.key -> "1", PunctuatedConf.SafetyMode -> "warn",
        PunctuatedConf.JoinPlan -> "mjoin") {
      val (a, b, c, joined) = chainOfThree()
      def migrate(q: punctuated.compat.StreamExecution, plan: String) =
        sql(s"SELECT request, plan FROM punctuated_migrate('${q.id}', ${quoted(plan)})")
      // the plan of the query's one multi-way join, as joinPlans gives it: the MJoin is the
      // flat list of its inputs, a tree nested lists
      def planNow(q: punctuated.compat.StreamExecution) = {
        val plans = parse(MigrationRequests.joinPlans(new StreamingQueryWrapper(q)))
        org.json4s.jackson.JsonMethods.compact(plans.children.head \ "plan")
      }
      testStream(joined)(
        MultiAddData(a -> Seq(XY(Some(1), Some(1))), b -> Seq(XY(Some(1), Some(2))), c -> Nil),
        CheckNewAnswer(),
        AssertOnQuery("a tree asked for twice: one request") { q =>
          assert(planNow(q) == "[0,1,2]", planNow(q))
          val df = migrate(q, "((a ⋈ b) ⋈ c)")
          assert(df.collect().map(r => (r.getLong(0), r.getString(1))).toSeq == Seq((0L, "((a ⋈ b) ⋈ c)")))
          assert(df.collect().head.getLong(0) == 0L)          // analysed and run again: the same request
          assert(migrate(q, "((a ⋈ b) ⋈ c)").head().getLong(0) == 0L)
          true
        },
        MultiAddData(a -> Nil, b -> Nil, c -> Seq(XY(Some(2), Some(5)))),
        CheckNewAnswer((1L, 1L, false, 1L, 2L, false, 2L, 5L, false)),
        AssertOnQuery("the tree runs; bad requests write nothing") { q =>
          assert(planNow(q) == "[[0,1],2]", planNow(q))
          val unfit = intercept[AnalysisException](migrate(q, "((a ⋈ c) ⋈ b)").collect())
          assert(unfit.getCondition == "PUNCTUATED_TABLE_FUNCTION_ARGUMENT", unfit.getMessage)
          assert(unfit.getMessage.contains("does not fit the multi-way join of a, b, c") &&
            unfit.getMessage.contains("Fix:"), unfit.getMessage)
          val unknown = failure("SELECT * FROM punctuated_migrate('no-such-query', 'mjoin')")
          assert(unknown.getMessage.contains("names no running query"), unknown.getMessage)
          val one = failure(s"SELECT * FROM punctuated_migrate('${q.id}')")
          assert(one.getMessage.contains("must be two constant strings"), one.getMessage)
          assert(migrate(q, "auto").head().getLong(0) == 1L)   // the next request's number
          true
        })
    }
  }
}

class TableFunctionsRocksDBSuite extends TableFunctionsSuite with OnRocksDB
