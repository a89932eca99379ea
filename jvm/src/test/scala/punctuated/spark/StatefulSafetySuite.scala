package punctuated.spark

import org.apache.spark.sql.{AnalysisException, DataFrame}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.{count, sum}
import org.apache.spark.sql.streaming.OutputMode

import punctuated.declaration.Declaration._
import punctuated.join.{Auction, Bid}
import punctuated.join.JoinTestData._

/**
 * Strict safety at `start()` judges every stateful operator by the punctuations that reach it
 * (Tucker et al. 2003, §5.2 and Table 3): aggregations and deduplications over a join's output
 * or a range scheme included, with our error before Spark's output-mode one; and every fix it
 * prints is applicable as printed.
 */
class StatefulSafetySuite extends PunctuatedStreamTest {
  import testImplicits._

  private val Orders = "order_id BIGINT, customer BIGINT, amount DOUBLE, is_punct BOOLEAN"
  private val Shipments = "order_id BIGINT, carrier STRING, is_punct BOOLEAN"
  private val ByOrder = Map(Schemes -> "order_id", Marker -> "is_punct")

  /** start() of `df` in `mode`: the error, or None when it started (stopped at once). */
  private def start(df: DataFrame, mode: String = "append"): Option[AnalysisException] =
    try {
      df.writeStream.format("memory").queryName(s"q${System.nanoTime}").outputMode(mode).start().stop()
      None
    } catch { case e: AnalysisException => Some(e) }

  private def refused(df: DataFrame, mode: String = "append"): String = start(df, mode) match {
    case Some(e) =>
      assert(e.getCondition == "PUNCTUATED_UNSAFE_QUERY", e.getMessage)
      e.getMessage
    case None => fail(s"start() in $mode mode accepted an unsafe query")
  }

  /** The statements of a printed fix (`ALTER TABLE ... ADD COLUMNS (...)`, `ALTER TABLE ... SET TBLPROPERTIES (...)`). */
  private def printedStatements(message: String): Seq[String] =
    "ALTER TABLE \\S+ (ADD COLUMNS \\([^)]*\\)|SET TBLPROPERTIES \\((?:'[^']*' = '[^']*'(?:, )?)+\\))".r
      .findAllIn(message).toSeq

  test("join then GROUP BY a column no punctuation leaving the join closes: refused, append and update") {
    withDeclaredTable("orders", Orders, ByOrder) {
      withDeclaredTable("shipments", Shipments, ByOrder) {
        val join = "FROM STREAM(orders) o JOIN STREAM(shipments) s ON o.order_id = s.order_id"
        for (mode <- Seq("append", "update")) {
          val text = refused(sql(s"SELECT o.customer, count(*) AS n $join GROUP BY o.customer"), mode)
          assert(text.contains("GROUP BY customer") && text.contains("order_id") &&
            text.contains("both its inputs close"), text)
        }
        // grouped by the join key both inputs punctuate: the join passes its punctuations on
        assert(start(sql(s"SELECT o.order_id, count(*) AS n $join GROUP BY o.order_id")).isEmpty)
      }
    }
  }

  test("an unsafe aggregation over a declared stream in append mode gets our error, not Spark's") {
    val bids = MemoryStream[Bid]
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    val text = refused(b.groupBy("bidder").agg(sum("price")), "append")
    assert(text.contains("GROUP BY bidder") && !text.contains("STREAMING_OUTPUT_MODE"), text)
  }

  test("deduplication whose keys no punctuation closes is refused (dropDuplicates and DISTINCT)") {
    val bids = MemoryStream[Bid]
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    for (mode <- Seq("append", "update")) {
      val text = refused(b.dropDuplicates("bidder"), mode)
      assert(text.contains("deduplication dropDuplicates bidder"), text)
    }
    b.createOrReplaceTempView("declared_bids")
    val text = refused(sql("SELECT DISTINCT bidder FROM declared_bids"), "update")
    assert(text.contains("deduplication DISTINCT bidder"), text)
    // closed keys: accepted
    assert(start(b.dropDuplicates("auction", "bidder")).isEmpty)
  }

  test("a range scheme on one join input, a constant on the other, then GROUP BY: refused, naming both") {
    val (auctions, bids) = (MemoryStream[Auction], MemoryStream[Bid])
    val a = declare(auctions.toDF(), "auctions", Schemes -> "id", Marker -> "is_punct")
    val b = declare(bids.toDF(), "bids", Schemes -> "auction<=", Marker -> "is_punct")
    val text = refused(a.join(b, a("id") === b("auction")).groupBy(a("id")).agg(count("*")))
    assert(text.contains("GROUP BY id") && text.contains("auction<=") && text.contains("auctions closes (id)"), text)
  }

  test("the same range scheme on both join inputs: the join passes it on and the aggregation emits") {
    val (auctions, bids) = (MemoryStream[Auction], MemoryStream[Bid])
    val a = declare(auctions.toDF(), "auctions", Schemes -> "id<=", Marker -> "is_punct")
    val b = declare(bids.toDF(), "bids", Schemes -> "auction<=", Marker -> "is_punct")
    val perAuction = a.join(b, a("id") === b("auction")).groupBy(a("id")).agg(count("*").as("n"))
    testStream(perAuction, OutputMode.Append())(
      AddData(auctions, auction(1, 10), auction(2, 11)),
      AddData(bids, bid(1, 100, 5.0), bid(1, 101, 6.0), bid(2, 100, 1.0)),
      CheckNewAnswer(),
      AddData(auctions, closeAuction(1)),
      AddData(bids, closeBids(1)),
      CheckNewAnswer((1L, 2L)))
  }

  test("the fix printed for a table without a declaration is applicable: applied, start() accepts") {
    withDeclaredTable("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN",
        Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", "auction BIGINT, bidder BIGINT, is_punct BOOLEAN", Map.empty) {
        val query = "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction"
        val text = refused(sql(query))
        assert(!text.contains("(right input) SET") && !text.contains("ALTER TABLE bids (") , text)
        val fix = printedStatements(text)
        assert(fix == Seq("ALTER TABLE spark_catalog.default.bids SET TBLPROPERTIES " +
          "('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')"), text)
        fix.foreach(sql)
        assert(start(sql(query)).isEmpty)
      }
    }
  }

  test("the fix printed for a declared table keeps its schemes and marker; one without BOOLEAN column gets one") {
    withDeclaredTable("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN",
        Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", "auction BIGINT, bidder BIGINT, closed BOOLEAN",
          Map(Schemes -> "bidder", Marker -> "closed")) {
        val query = "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction"
        val text = refused(sql(query))
        val fix = printedStatements(text)
        assert(fix == Seq("ALTER TABLE spark_catalog.default.bids SET TBLPROPERTIES " +
          "('punctuated.schemes' = 'bidder; auction', 'punctuated.marker' = 'closed')"), text)
        fix.foreach(sql)
        assert(start(sql(query)).isEmpty)
      }
    }
    withDeclaredTable("sales", "shop BIGINT, amount DOUBLE", Map(Unique -> "shop")) {
      val text = refused(sql("SELECT amount, count(*) FROM STREAM(sales) GROUP BY amount"), "update")
      val fix = printedStatements(text)
      assert(fix == Seq("ALTER TABLE spark_catalog.default.sales ADD COLUMNS (is_punct BOOLEAN)",
        "ALTER TABLE spark_catalog.default.sales SET TBLPROPERTIES ('punctuated.schemes' = 'amount', " +
          "'punctuated.marker' = 'is_punct', 'punctuated.unique' = 'shop')"), text)
      fix.foreach(sql)
      assert(start(sql("SELECT amount, count(*) FROM STREAM(sales) GROUP BY amount"), "update").isEmpty)
    }
  }

  test("a join key that is an expression: no ALTER TABLE naming the expression, a sentence saying what can") {
    withDeclaredTable("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN",
        Map(Schemes -> "seller", Marker -> "is_punct")) {
      withDeclaredTable("bids", "auction BIGINT, bidder BIGINT, is_punct BOOLEAN",
          Map(Schemes -> "auction", Marker -> "is_punct")) {
        val text = refused(sql("SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id + 1 = b.auction"))
        assert(!text.contains("'punctuated.schemes' = '(") && text.contains("no declaration can make punctuations close"),
          text)
      }
    }
  }

  test("the fix printed for a DataFrame stream is a with_schemes call, not an ALTER TABLE") {
    val bids = MemoryStream[Bid]
    val people = MemoryStream[(Long, String, Boolean)]
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    val p = people.toDF().toDF("pid", "name", "gone")
    val text = refused(b.join(p, b("bidder") === p("pid")))
    assert(text.contains("punctuated.with_schemes(df, schemes=[\"pid\"], marker=\"gone\"") &&
      !text.contains("ALTER TABLE"), text)
    // applied to the DataFrame as it enters the join, bids' state is purged
    val declared = declare(p, "people", Schemes -> "pid", Marker -> "gone")
    val text2 = refused(b.join(declared, b("bidder") === declared("pid")))   // bids never close bidder
    assert(!text2.contains("input bids of"), text2)
  }

  test("a chain of three streams: no ALTER TABLE for the join above, which no declaration fixes; the static join does") {
    // the tree of binary joins as written (a multi-way join is judged by MultiJoinSafetySuite)
    withSQLConf(punctuated.conf.PunctuatedConf.JoinPlan -> "written") {
      withDeclaredTable("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN",
          Map(Unique -> "id", Marker -> "is_punct")) {
        withDeclaredTable("bids", "auction BIGINT, bidder BIGINT, is_punct BOOLEAN",
            Map(Schemes -> "auction", Marker -> "is_punct")) {
          withDeclaredTable("people", "pid BIGINT, name STRING", Map.empty) {
            val text = refused(sql("SELECT * FROM STREAM(people) p JOIN STREAM(auctions) a ON p.pid = a.seller " +
              "JOIN STREAM(bids) b ON a.id = b.auction"))
            val upper = text.split("\n").find(_.contains("The state of input bids of")).getOrElse(fail(text))
            assert(upper.contains("is the output of a join") && upper.contains("as a static table") &&
              !upper.contains("ALTER TABLE"), upper)
            // the people stream joined last, as a static table: no state for it, and the query starts
            assert(start(sql("SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction " +
              "JOIN people p ON p.pid = a.seller")).isEmpty)
          }
        }
      }
    }
  }
}

