package punctuated.spark

import org.apache.spark.sql.Row
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration

/**
 * Batch reads of a declared catalog table: punctuation rows are not data, so a batch query
 * leaves them out by default and answers as the streaming query over the same rows does,
 * while streaming reads of the table still hand them to the punctuated operators.
 */
class BatchReadsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val columns = "auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN"
  private val declared = Map(Declaration.Schemes -> "auction", Declaration.Marker -> "is_punct")

  /** Two bids on auction 1, its punctuation, and a punctuation-shaped row with a NULL marker (data). */
  private def withBids(body: => Unit): Unit = withDeclaredTable("bids", columns, declared) {
    sql("INSERT INTO bids VALUES (1, 100, 5.0, false), (1, 101, 7.0, false), " +
      "(1, NULL, NULL, true), (2, NULL, NULL, NULL)")
    body
  }

  test("a batch read leaves punctuation rows out: count(*) is the streaming answer") {
    withBids {
      assert(sql("SELECT count(*) FROM bids").head().getLong(0) == 3L)
      assert(spark.table("bids").count() == 3L)
      assert(spark.read.table("bids").where("is_punct").isEmpty)
      // a row shaped like a punctuation whose marker is NULL is data
      checkAnswer(sql("SELECT auction, bidder, is_punct FROM bids WHERE bidder IS NULL"),
        Seq(Row(2L, null, null)))
      // views and subqueries read the table the same way
      sql("CREATE OR REPLACE TEMPORARY VIEW bids_view AS SELECT * FROM bids")
      try assert(sql("SELECT count(*) FROM bids_view").head().getLong(0) == 3L)
      finally sql("DROP VIEW bids_view")
      assert(sql("SELECT count(*) FROM bids WHERE auction IN (SELECT auction FROM bids WHERE bidder IS NULL)")
        .head().getLong(0) == 1L)
      // the streaming query over the same rows gets the same data rows
      testStream(sql("SELECT auction, bidder FROM STREAM(bids)"))(
        ProcessAllAvailable(),
        CheckAnswer((1L, Some(100L)), (1L, Some(101L)), (2L, None)))
    }
  }

  test("a streaming read still hands the punctuations to the operators") {
    withBids {
      // the punctuation of auction 1 closes its group: emitted once, in append mode
      testStream(sql("SELECT auction, count(*) AS bids FROM STREAM(bids) GROUP BY auction"),
        OutputMode.Append())(
        ProcessAllAvailable(),
        CheckAnswer((1L, 2L)))
    }
  }

  test("spark.punctuated.batch.includePunctuations=true keeps them") {
    withBids {
      withSQLConf(PunctuatedConf.BatchIncludePunctuations -> "true") {
        assert(sql("SELECT count(*) FROM bids").head().getLong(0) == 4L)
        checkAnswer(spark.table("bids").where("is_punct").select("auction"), Seq(Row(1L)))
      }
      withSQLConf(PunctuatedConf.BatchIncludePunctuations -> "sometimes") {
        val e = intercept[IllegalArgumentException](sql("SELECT count(*) FROM bids"))
        assert(e.getMessage.contains(PunctuatedConf.BatchIncludePunctuations) &&
          e.getMessage.contains("true, false"), e.getMessage)
      }
    }
  }

  test("writes are unaffected: INSERT stores punctuation rows, a copy by SELECT gets data only") {
    withBids {
      sql("INSERT INTO bids VALUES (2, NULL, NULL, true)")
      sql("INSERT INTO bids SELECT auction, bidder, price, is_punct FROM bids WHERE auction = 1")
      withSQLConf(PunctuatedConf.BatchIncludePunctuations -> "true") {
        checkAnswer(sql("SELECT auction, count(*) FROM bids WHERE is_punct GROUP BY auction"),
          Seq(Row(1L, 1L), Row(2L, 1L)))
      }
      assert(sql("SELECT count(*) FROM bids").head().getLong(0) == 5L)
      withTable("bids_copy") {
        sql("CREATE TABLE bids_copy USING parquet AS SELECT * FROM bids")
        assert(spark.table("bids_copy").where("is_punct").isEmpty)
      }
    }
  }

  test("a table without a marker, or whose marker is no BOOLEAN column, is read whole") {
    withDeclaredTable("bids", columns, Map(Declaration.Unique -> "auction")) {
      sql("INSERT INTO bids VALUES (1, NULL, NULL, true)")
      assert(spark.table("bids").count() == 1L)
    }
    withDeclaredTable("bids", columns, Map(Declaration.Schemes -> "auction", Declaration.Marker -> "price")) {
      sql("INSERT INTO bids VALUES (1, NULL, 1.0, true)")
      assert(spark.table("bids").count() == 1L)
    }
  }
}
