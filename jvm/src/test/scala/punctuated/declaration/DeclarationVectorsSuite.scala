package punctuated.declaration

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, BindReferences, Expression, GenericInternalRow}
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BooleanType, StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.json4s._
import org.scalatest.funsuite.AnyFunSuite

import punctuated.TestVectors
import punctuated.TestVectors._
import punctuated.conf.PunctuatedConf
import punctuated.input.{DeclaredStreams, InputSpec, KindColumn, PunctuationDecoder, PunctuationKind, PunctuationSources, PunctuatedInput, RowDecoder}

/**
 * Declaration parsing, validation and punctuation rows against the shared vectors; each
 * punctuation row also through the decoding the join and the aggregation/deduplication run.
 */
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
            val kind = (a \ "kind").extract[String]
            SchemeAttribute((a \ "attr").extract[String], kind != "constant", kind == "range_at_least")
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
      // the same row as the operators read it, through the code each of them runs
      val (joinScheme, kindOf, kinds) = operatorsDecode(declaration, properties, columns, marker, row)
      if ((v \ "invalid").extractOpt[Boolean].contains(true)) {
        assert(decoded.isEmpty, decoded)
        assert(joinScheme.isEmpty, "the join's input decodes an invalid punctuation as valid")
        assert(kindOf == PunctuationKind.Invalid, s"the kind column gives $kindOf for an invalid punctuation")
      } else {
        val expected = punctuation(v \ "expect")
        assert(decoded.exists(samePunctuation(_, expected)), s"$decoded != $expected")
        // the scheme the expected punctuation instantiates (its non-wildcard attributes)
        val attributes = (v \ "expect").asInstanceOf[JObject].obj.collect {
          case (a, p) if (p \ "kind").extract[String] != "wildcard" =>
            // a range pattern with a lower bound only is an `attr>=` scheme's
            val range = (p \ "kind").extract[String] == "range"
            SchemeAttribute(a, range, range && (p \ "lo") != JNull && (p \ "hi") == JNull)
        }.toSet
        val scheme = declaration.instantiableSchemes.indexWhere(_.attributes.toSet == attributes)
        assert(scheme >= 0, s"no scheme with attributes $attributes")
        assert(joinScheme.contains(scheme), s"the join's input decodes scheme $joinScheme, expected $scheme")
        assert(kindOf == kinds(scheme), s"the kind column gives $kindOf, expected kind ${kinds(scheme)}")
      }
    }
  }

  /**
   * A row decoded by the join's input ([[InputSpec]] as the join's planner builds it) and by
   * the kind column of an aggregation or deduplication keyed by every data column (as their
   * rewrite builds it from the declared stream): the join's scheme index (None: invalid),
   * the row's kind, and the kind of each scheme.
   */
  private def operatorsDecode(declaration: Declaration, properties: Map[String, String],
      columns: Seq[String], marker: String, row: Map[String, Any]): (Option[Int], Int, Seq[Int]) = {
    val attrs = columns.map(c => AttributeReference(c, if (c == marker) BooleanType else StringType,
      nullable = true, DeclaredStreams.metadataFor("t", properties))())
    val internal = new GenericInternalRow(columns.map(c => row.getOrElse(c, null) match {
      case null => null
      case b: Boolean => b
      case other => UTF8String.fromString(other.toString)
    }).toArray[Any])

    val spec = InputSpec.of(
      Some(PunctuatedInput(declaration, columns.zip(attrs).map { case (c, a) => c -> a.exprId }.toMap)), Nil, attrs)
    assert(spec.isPunctuation(internal))
    val joinScheme = spec.decoder.scheme(internal.isNullAt) match {
      case RowDecoder.Invalid => None
      case i => Some(i)
    }
    assert(spec.schemeOf(internal) == joinScheme.map(spec.schemes(_)._2))

    val found = PunctuationSources.find(LocalRelation(attrs), caseSensitive = false).getOrElse(fail("no stream found"))
    val (alias, _, _) = KindColumn(attrs.filterNot(_.name == marker), found, PunctuatedConf(new SQLConf),
      useEqualities = false).getOrElse(fail("no kind column"))
    val kind = alias.child.asInstanceOf[PunctuationKind].copy(failOnInvalid = false)
    val kindOf = BindReferences.bindReference[Expression](kind, attrs).eval(internal).asInstanceOf[Int]
    (joinScheme, kindOf, kind.sources.head.kinds.toSeq)
  }
}
