package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BooleanType, LongType, StringType}
import org.scalatest.funsuite.AnyFunSuite

import punctuated.conf.PunctuatedConf
import punctuated.declaration.{Declaration, DeclarationResolver}

/**
 * [[PunctuatedInput]], the resolved declaration of one input, and its two operator views:
 * the join's [[InputSpec]] (row ordinals) and the aggregation's [[SourceLayout]] (kind
 * column positions) must read the same columns for the same schemes.
 */
class PunctuatedInputSuite extends AnyFunSuite {

  private val properties = Map(
    Declaration.Marker -> "p", Declaration.Schemes -> "auction; day<=", Declaration.Unique -> "bid")
  private val meta = DeclaredStreams.metadataFor("bids", properties)
  private val attrs: Seq[Attribute] = Seq(
    AttributeReference("p", BooleanType, nullable = true, meta)(),
    AttributeReference("auction", StringType, nullable = true, meta)(),
    AttributeReference("bid", StringType, nullable = true, meta)(),
    AttributeReference("day", LongType, nullable = true, meta)())
  private val Seq(p, auction, bid, day) = attrs
  private val declaration = DeclarationResolver.resolve("bids", properties,
    org.apache.spark.sql.catalyst.types.DataTypeUtils.fromAttributes(attrs))
  private val input = DeclaredStream(declaration, attrs).input(attrs.map(_.exprId).toSet)

  test("a declared stream's input: marker, schemes that reach, unique key in a join key") {
    assert(input.name == "bids")
    assert(input.columns == attrs.map(a => a.name -> a.exprId).toMap)
    assert(input.markerId.contains(p.exprId))
    assert(input.markerIds == Seq(p.exprId))
    assert(declaration.instantiableSchemes.forall(input.hasPunctuations))
    assert(input.uniqueKeyIds(Set(auction.exprId, bid.exprId)) == Set(bid.exprId))
    assert(input.uniqueKeyIds(Set(auction.exprId)).isEmpty)
    // without its marker among the visible columns only the unique key's punctuations reach
    val unmarked = DeclaredStream(declaration, attrs).input(attrs.tail.map(_.exprId).toSet)
    assert(unmarked.markerId.isEmpty)
    assert(declaration.instantiableSchemes.filter(unmarked.hasPunctuations) == declaration.unique.toSeq)
  }

  test("the join view: ordinals of the input's rows, schemes over the join key") {
    val spec = InputSpec.of(Some(input), Seq(auction, bid), attrs)
    assert(spec.name == "bids")
    assert(spec.markerOrdinal == 0)
    assert(spec.punctuationOrdinals.toSeq == Seq(0))
    assert(spec.dataOrdinals.toSeq == Seq(1, 2, 3))
    assert(spec.schemeNames == Seq("auction", "day<=", "bid"))
    assert(spec.schemes.map(_._1) == Seq(Set(1), Set(3), Set(2)))
    assert(spec.schemes.map(_._2) == Seq(Some(KeyScheme(Array(0))), None, Some(KeyScheme(Array(1)))))
    assert(spec.unique.contains(KeyScheme(Array(1))))
    assert(input.usable(Seq(auction, bid)).map(_._1.toString) == Seq("auction", "bid"))
    assert(InputSpec.of(None, Nil, attrs).markerOrdinal == -1)
  }

  test("the kind view reads the same columns for the same schemes as the join view") {
    val found = PunctuationSources.find(LocalRelation(attrs), caseSensitive = false).get
    assert(found.sources == Seq(FoundSource.of(DeclaredStream(declaration, attrs))))
    val (alias, layout, _) = KindColumn(Seq(auction, bid), found, PunctuatedConf(new SQLConf),
      useEqualities = false).get
    val kind = alias.child.asInstanceOf[PunctuationKind]
    val source = kind.sources.head
    assert(source.schemeNames == Seq("auction", "day<=", "bid"))
    assert(source.kinds.toSeq == Seq(1, PunctuationKind.Ignored, 2))
    assert(layout.closing == Seq(KeyScheme(Array(0)), KeyScheme(Array(1))))

    // positions of the kind column's children and ordinals of the join input, as columns
    def byPosition(i: Int) = kind.children(i).references.head.exprId
    val spec = InputSpec.of(Some(input), Seq(auction, bid), attrs)
    assert(byPosition(source.marker) == attrs(spec.markerOrdinal).exprId)
    assert(source.columns.toSeq.map(byPosition) == spec.dataOrdinals.toSeq.map(attrs(_).exprId))
    assert(source.decoder.schemes.map(_.map(byPosition)) == spec.schemes.map(_._1.map(attrs(_).exprId)))
    // each closing kind is the join's key scheme of the same declared scheme
    assert(source.kinds.toSeq.zip(spec.schemes.map(_._2)).collect { case (k, ks) if k > 0 => layout.closing(k - 1) -> ks }
      .forall { case (c, ks) => ks.contains(c) })
  }
}
