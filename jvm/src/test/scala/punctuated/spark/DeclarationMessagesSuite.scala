package punctuated.spark

import org.apache.spark.sql.AnalysisException

import punctuated.declaration.Declaration
import punctuated.input.DeclaredStreams

/**
 * The declaration errors a new user meets on real catalog tables: a misspelt property, a
 * name that needs backquotes, schemes that repeat or cannot purge, a huge property value.
 */
class DeclarationMessagesSuite extends PunctuatedStreamTest {

  private val columns = "auction BIGINT, bidder BIGINT, day INT, price DOUBLE, is_punct BOOLEAN"

  private def rejected(properties: Map[String, String], condition: String, columns: String = columns)
      : AnalysisException =
    withDeclaredTableResult(properties, columns) {
      val e = intercept[AnalysisException](spark.readStream.table("bids"))
      assert(e.getCondition == s"PUNCTUATED_INVALID_DECLARATION.$condition", e.getMessage)
      assert(e.getMessage.contains("spark_catalog.default.bids") && e.getMessage.contains("Fix:"),
        e.getMessage)
      e
    }

  private def withDeclaredTableResult[T](properties: Map[String, String], columns: String)(body: => T): T = {
    var result: Option[T] = None
    withDeclaredTable("bids", columns, properties) { result = Some(body) }
    result.get
  }

  test("a misspelt property is reported as unknown, with the nearest known one") {
    val e = rejected(Map("punctuated.scheme" -> "auction", Declaration.Marker -> "is_punct"), "UNKNOWN_PROPERTY")
    assert(e.getMessage.contains("'punctuated.scheme'"), e.getMessage)
    assert(e.getMessage.contains("did you mean 'punctuated.schemes'"), e.getMessage)
    assert(e.getMessage.contains("punctuated.schemes, punctuated.marker, punctuated.unique"), e.getMessage)
    assert(e.getMessage.contains("UNSET TBLPROPERTIES ('punctuated.scheme')"), e.getMessage)
    // alone it still counts as a declaration (it was silently ignored)
    val alone = rejected(Map("punctuated.uniqe" -> "auction"), "UNKNOWN_PROPERTY")
    assert(alone.getMessage.contains("did you mean 'punctuated.unique'"), alone.getMessage)
    // the SQL form fails the same way
    withDeclaredTable("bids", columns, Map("punctuated.markr" -> "is_punct")) {
      val e2 = intercept[AnalysisException](sql("SELECT * FROM STREAM(bids)"))
      assert(e2.getCondition == "PUNCTUATED_INVALID_DECLARATION.UNKNOWN_PROPERTY")
    }
  }

  test("a name that is not plain is to be backquoted; a backquote in a name is doubled") {
    val e = rejected(Map(Declaration.Schemes -> "prénom", Declaration.Marker -> "is_punct"), "MALFORMED",
      "`prénom` STRING, is_punct BOOLEAN")
    assert(e.getMessage.contains("backquote it: `prénom`"), e.getMessage)
    withDeclaredTable("bids", "`prénom` STRING, `a``b` BIGINT, is_punct BOOLEAN",
        Map(Declaration.Schemes -> "`prénom`; `a``b`<=", Declaration.Marker -> "is_punct")) {
      val found = DeclaredStreams.find(spark.readStream.table("bids").queryExecution.analyzed, caseSensitive = false)
      assert(found.map(_.declaration.schemes.map(_.toString)) == Seq(Seq("`prénom`", "`a``b`<=")))
    }
  }

  test("a scheme declared twice, two schemes over the same columns; two ranges in one scheme are fine") {
    val twice = rejected(Map(Declaration.Schemes -> "auction; bidder; auction", Declaration.Marker -> "is_punct"),
      "DUPLICATE_SCHEME")
    assert(twice.getMessage.contains("scheme 3 'auction' repeats scheme 1"), twice.getMessage)
    val ambiguous = rejected(Map(Declaration.Schemes -> "auction, day<=; auction, day",
      Declaration.Marker -> "is_punct"), "AMBIGUOUS_SCHEMES")
    assert(ambiguous.getMessageParameters.get("offending") == "auction, day")
    withDeclaredTable("bids", columns, Map(Declaration.Schemes -> "day<=, price>=", Declaration.Marker -> "is_punct")) {
      val found = DeclaredStreams.find(spark.readStream.table("bids").queryExecution.analyzed, caseSensitive = false)
      assert(found.map(_.declaration.schemes.map(_.toString)) == Seq(Seq("day<=, price>=")))
    }
  }

  test("a 160,000-character property is not echoed whole") {
    val huge = "auction, " + ("bidder" * 26667).take(160000 - 9)
    assert(huge.length == 160000)
    val e = rejected(Map(Declaration.Schemes -> huge, Declaration.Marker -> "is_punct"), "UNKNOWN_COLUMN")
    // ours: the property's start and its length
    assert(e.getSimpleMessage.length < 2000, e.getSimpleMessage.length)
    assert(e.getSimpleMessage.contains("… (160000 characters)"), e.getSimpleMessage)
    // Spark 4.0 and 4.1 append the analysed plan to getMessage, whose table node lists every
    // table property in full (Spark's rendering, docs/declarations.md); 4.2 does not
    if (!Seq("4.0.", "4.1.").exists(org.apache.spark.SPARK_VERSION.startsWith)) {
      assert(e.getMessage.length < 2000, e.getMessage.length)
    }
    assert(e.getMessageParameters.get("text").length < 300)
  }
}
