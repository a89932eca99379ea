package punctuated.spark

import org.apache.spark.sql.AnalysisException
import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.col

import punctuated.declaration.{AttributeKind, Declaration, DeclarationResolver}
import punctuated.input.{DeclaredStreams, PunctuationSources}
import punctuated.spark.rules.ReachingPunctuations

/**
 * Punctuation declarations on real catalog tables and streams: found by the extension's
 * rule on streaming relations, and every bad declaration rejected at analysis with a
 * message naming table, property and offending text.
 */
class DeclarationsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val bidsColumns = "auction BIGINT, bidder BIGINT, price DOUBLE, tags MAP<STRING, INT>, is_punct BOOLEAN"
  private val bidsDeclared = Map(Declaration.Schemes -> "auction; bidder, price<=", Declaration.Marker -> "is_punct")
  private val auctionsDeclared = Map(Declaration.Unique -> "id", Declaration.Marker -> "is_punct")

  test("a streaming join over declared parquet tables runs with the extension loaded") {
    withDeclaredTable("auctions", "id BIGINT, seller BIGINT, is_punct BOOLEAN", auctionsDeclared) {
      withDeclaredTable("bids", bidsColumns, bidsDeclared) {
        sql("INSERT INTO auctions VALUES (1, 10, false), (2, 11, false)")
        sql("INSERT INTO bids VALUES (1, 100, 5.0, NULL, false), (2, 101, 7.0, NULL, false)")
        val joined = spark.sql(
          "SELECT a.id, b.bidder FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction")
        val found = DeclaredStreams.find(joined.queryExecution.analyzed, caseSensitive = false)
        assert(found.map(_.declaration.table).sorted ==
          Seq("spark_catalog.default.auctions", "spark_catalog.default.bids"))
        val bids = found.find(_.declaration.table.endsWith("bids")).get.declaration
        assert(bids.schemes.map(_.toString) == Seq("auction", "bidder, price<="))
        assert(bids.marker.contains("is_punct"))

        testStream(joined)(
          ProcessAllAvailable(),
          CheckAnswer((1L, 100L), (2L, 101L)),
          Execute { _ => sql("INSERT INTO bids VALUES (1, 102, 9.0, NULL, false)") },
          ProcessAllAvailable(),
          CheckAnswer((1L, 100L), (2L, 101L), (1L, 102L)),
          // a micro-batch's plan still carries the declaration of the source that had new
          // data (a streaming LogicalRelation with the catalog table)
          AssertOnQuery { q =>
            DeclaredStreams.find(q.lastExecution.analyzed, caseSensitive = false)
              .map(_.declaration.table) == Seq("spark_catalog.default.bids")
          }
        )
      }
    }
  }

  private def rejected(properties: Map[String, String], condition: String, property: String,
      offending: String): Unit = {
    withDeclaredTable("bids", bidsColumns, properties) {
      val e = intercept[AnalysisException](spark.readStream.table("bids"))
      assert(e.getCondition == s"PUNCTUATED_INVALID_DECLARATION.$condition", e.getMessage)
      assert(e.getMessage.contains("spark_catalog.default.bids"), e.getMessage)
      assert(e.getMessage.contains(s"'$property'"), e.getMessage)
      assert(e.getMessage.contains(offending), e.getMessage)
      assert(e.getMessage.contains("Fix:"), e.getMessage)
      assert(e.getMessageParameters.get("offending") == offending)
      // the SQL form fails the same way
      val e2 = intercept[AnalysisException](sql("SELECT * FROM STREAM(bids)"))
      assert(e2.getCondition == e.getCondition)
    }
  }

  test("unknown column") {
    rejected(Map(Declaration.Schemes -> "auction; bidr", Declaration.Marker -> "is_punct"),
      "UNKNOWN_COLUMN", Declaration.Schemes, "bidr")
  }

  test("marker missing") {
    rejected(Map(Declaration.Schemes -> "auction"), "MARKER_MISSING", Declaration.Marker, "")
    rejected(Map(Declaration.Schemes -> "auction", Declaration.Marker -> "punct"),
      "MARKER_MISSING", Declaration.Marker, "punct")
  }

  test("marker not BOOLEAN") {
    rejected(Map(Declaration.Schemes -> "auction", Declaration.Marker -> "price"),
      "MARKER_NOT_BOOLEAN", Declaration.Marker, "price")
  }

  test("empty scheme") {
    rejected(Map(Declaration.Schemes -> "auction;;bidder", Declaration.Marker -> "is_punct"),
      "EMPTY_SCHEME", Declaration.Schemes, "auction;;bidder")
  }

  test("<= on an unordered type") {
    rejected(Map(Declaration.Schemes -> "tags<=", Declaration.Marker -> "is_punct"),
      "UNORDERED_RANGE", Declaration.Schemes, "tags<=")
  }

  test("unparsable text") {
    rejected(Map(Declaration.Schemes -> "auction bidder", Declaration.Marker -> "is_punct"),
      "MALFORMED", Declaration.Schemes, "auction bidder")
  }

  test("a declaration changed with ALTER TABLE is read on the next analysis") {
    withDeclaredTable("bids", bidsColumns, bidsDeclared) {
      spark.readStream.table("bids")
      sql("ALTER TABLE bids SET TBLPROPERTIES ('punctuated.schemes' = 'auction; bidder, day<=')")
      val e = intercept[AnalysisException](spark.readStream.table("bids"))
      assert(e.getCondition == "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN")
      assert(e.getMessage.contains("'day'"))
    }
  }

  test("batch reads of a declared table are not affected") {
    withDeclaredTable("bids", bidsColumns, Map(Declaration.Schemes -> "nosuch")) {
      sql("INSERT INTO bids VALUES (1, 100, 5.0, NULL, false)")
      checkAnswer(spark.table("bids").select("auction"), Seq(org.apache.spark.sql.Row(1L)))
    }
  }

  test("with_schemes metadata on a stream that is not a catalog table") {
    val input = MemoryStream[(Long, Long, Boolean)]
    val raw = input.toDF().toDF("auction", "bidder", "is_punct")
    def declare(props: Map[String, String]) = raw.select(raw.columns.map(c =>
      col(c).as(c, DeclaredStreams.metadataFor("bids_stream", props))).toIndexedSeq: _*)

    val declared = declare(Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct"))
    val projected = declared.filter(col("bidder") > 0).select("auction", "bidder", "is_punct")
    val found = DeclaredStreams.find(projected.queryExecution.analyzed, caseSensitive = false)
    assert(found.map(_.declaration) == Seq(DeclarationResolver.resolve("bids_stream",
      Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct"), declared.schema)))
    testStream(projected)(
      AddData(input, (1L, 10L, false), (2L, 0L, false)),
      CheckAnswer((1L, 10L, false)))

    val e = intercept[AnalysisException](declare(Map(Declaration.Schemes -> "aution",
      Declaration.Marker -> "is_punct")))
    assert(e.getCondition == "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_COLUMN")
    assert(e.getMessage.contains("Table bids_stream") && e.getMessage.contains("aution"))
  }

  test("a declared stream's schemes: all of them with a marker, else only its unique key") {
    val input = MemoryStream[(Long, Long, Boolean)]
    val raw = input.toDF().toDF("auction", "bidder", "is_punct")
    def declare(props: Map[String, String]) = raw.select(raw.columns.map(c =>
      col(c).as(c, DeclaredStreams.metadataFor("bids_stream", props))).toIndexedSeq: _*)
      .filter(col("bidder") > 0).select("bidder", "auction", "is_punct")
    val withMarker = declare(Map(Declaration.Schemes -> "auction; bidder<=",
      Declaration.Unique -> "auction, bidder", Declaration.Marker -> "is_punct"))
    val withoutMarker = declare(Map(Declaration.Unique -> "auction"))

    def names(schemes: Seq[Seq[(org.apache.spark.sql.catalyst.expressions.Attribute, AttributeKind)]]) =
      schemes.map(_.map { case (a, kind) => a.name -> kind.isRange })
    for ((df, expected) <- Seq(
        withMarker -> Seq(Seq("auction" -> false), Seq("bidder" -> true), Seq("auction" -> false, "bidder" -> false)),
        withoutMarker -> Seq(Seq("auction" -> false)))) {
      val plan = df.queryExecution.analyzed
      val declared = DeclaredStreams.find(plan, caseSensitive = false)
      assert(names(declared.flatMap(_.reachingSchemes.map(_._2))) == expected)
      // the operators' walk and the safety check's walk see the same schemes, same columns
      val sources = PunctuationSources.find(plan, caseSensitive = false).get.sources.flatMap(_.schemes.map(_._1))
      val reaching = ReachingPunctuations.of(plan, caseSensitive = false).schemes
      assert(names(sources) == expected)
      assert(reaching.map(_.map { case (a, r) => a.exprId -> r }) == sources.map(_.map { case (a, r) => a.exprId -> r }))
    }
  }

  test("punctuation rows no punctuated operator consumes never reach the results") {
    withDeclaredTable("bids", bidsColumns, bidsDeclared) {
      sql("INSERT INTO bids VALUES (1, 100, 5.0, NULL, false), (1, NULL, NULL, NULL, true)")
      testStream(spark.sql("SELECT auction, bidder FROM STREAM(bids)"))(
        ProcessAllAvailable(),
        CheckAnswer((1L, 100L)))
      testStream(spark.readStream.table("bids").dropDuplicates("auction", "bidder").select("auction"))(
        ProcessAllAvailable(),
        CheckAnswer(1L))
    }
    val input = MemoryStream[(Long, Option[Long], Boolean)]
    val raw = input.toDF().toDF("auction", "bidder", "is_punct")
    val declared = raw.select(raw.columns.map(c => col(c).as(c, DeclaredStreams.metadataFor("s",
      Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct")))).toIndexedSeq: _*)
    testStream(declared.select("auction", "bidder"))(
      AddData(input, (1L, Some(10L), false), (1L, None, true)),
      CheckAnswer((1L, Some(10L))))
  }

  test("queries without declarations plan as without the extension") {
    val input = MemoryStream[Int]
    val df = input.toDF().groupBy("value").count()
    assert(DeclaredStreams.find(df.queryExecution.analyzed, caseSensitive = false).isEmpty)
    testStream(df, org.apache.spark.sql.streaming.OutputMode.Complete())(
      AddData(input, 1, 2, 2),
      CheckAnswer((1, 1L), (2, 2L)))
  }
}
