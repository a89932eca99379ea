package punctuated.declaration

import org.apache.spark.sql.types.StructType
import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors
import punctuated.TestVectors._

/** Declaration parsing, validation and punctuation rows against the shared vectors. */
class DeclarationVectorsSuite extends AnyFunSuite {
  private val vectors = TestVectors.load("punctuation_vectors.json")

  private def schema(v: JValue): StructType = StructType.fromDDL(
    (v \ "schema").children.map(c => c.extract[List[String]]).map { case List(n, t) => s"`${n.replace("`", "``")}` $t" }
      .mkString(", "))

  private def props(v: JValue): Map[String, String] = (v \ "properties").extract[Map[String, String]]

  (vectors \ "declarations").children.foreach { v =>
    test(s"declaration: ${(v \ "name").extract[String]}") {
      val table = (v \ "table").extract[String]
      def run() = DeclarationResolver.resolve(table, props(v), schema(v))
      v \ "error" match {
        case JNothing =>
          val d = run()
          val expected = v \ "expect"
          val schemes = (expected \ "schemes").children.map(_.children.map { a =>
            SchemeAttribute((a \ "attr").extract[String], (a \ "kind").extract[String] == "range")
          })
          assert(d.schemes.map(_.attributes) == schemes)
          assert(d.marker == (expected \ "marker").extractOpt[String])
          assert(d.unique.toList.flatMap(_.names) == (expected \ "unique").extract[List[String]])
        case error =>
          val e = intercept[DeclarationException](run()).error
          assert(e.condition.toString == (error \ "condition").extract[String], e.message)
          assert(e.property == (error \ "property").extract[String], e.message)
          assert(e.offending == (error \ "offending").extract[String], e.message)
          assert(e.table == table)
          assert(e.message.contains(s"Table $table") && e.message.contains(e.property), e.message)
          val text = props(v).get(e.property)
          Seq(text.map(t => s"= '%s'" -> t), Some("'%s'" -> e.offending)).flatten.filter(_._2.nonEmpty)
            .foreach { case (shown, echoed) =>
              if (echoed.length <= DeclarationError.MaxEcho) {
                assert(e.message.contains(shown.format(echoed)), e.message)
              } else {   // long text is shortened: its start and its length
                assert(!e.message.contains(echoed))
                assert(e.message.contains(shown.format(
                  echoed.take(DeclarationError.MaxEcho) + s"… (${echoed.length} characters)")), e.message)
              }
            }
          (error \ "message_contains").extractOpt[List[String]].getOrElse(Nil).foreach { expected =>
            assert(e.message.contains(expected), e.message)
          }
          assert(e.message.length < 3 * DeclarationError.MaxEcho + 1000, e.message)
      }
    }
  }

  (vectors \ "punctuation_rows").children.foreach { v =>
    test(s"punctuation row: ${(v \ "name").extract[String]}") {
      val columns = (v \ "columns").extract[List[String]]
      val marker = (v \ "marker").extract[String]
      val properties = Map(Declaration.Schemes -> (v \ "schemes").extract[String],
        Declaration.Marker -> marker) ++ (v \ "unique").extractOpt[String].map(Declaration.Unique -> _)
      // Types do not matter for decoding; every data column is a STRING here.
      val ddl = columns.map(c => if (c == marker) s"$c BOOLEAN" else s"$c STRING").mkString(", ")
      val declaration = DeclarationResolver.resolve("t", properties, StructType.fromDDL(ddl))
      val row = (v \ "row").asInstanceOf[JObject].obj.map { case (k, x) => k -> value(x) }.toMap
      val decoded = new PunctuationDecoder(declaration, columns).decode(row)
      if ((v \ "invalid").extractOpt[Boolean].contains(true)) assert(decoded.isEmpty, decoded)
      else {
        val expected = punctuation(v \ "expect")
        assert(decoded.exists(samePunctuation(_, expected)), s"$decoded != $expected")
      }
    }
  }
}
