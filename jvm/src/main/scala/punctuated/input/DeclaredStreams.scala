package punctuated.input

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.execution.datasources.LogicalRelation
import punctuated.compat.StreamingRelation
import org.apache.spark.sql.types.{Metadata, MetadataBuilder}

import punctuated.declaration.{AttributeKind, Declaration, DeclarationResolver, Scheme}

/**
 * A stream that carries a punctuation declaration, where it enters a logical plan.
 *
 * @param declaration the resolved declaration
 * @param output      the attributes of the stream at the node that declares it
 */
final case class DeclaredStream(declaration: Declaration, output: Seq[Attribute]) {

  /** The stream's column spelled `name` (the declaration spells names as its schema does). */
  def attribute(name: String): Option[Attribute] = output.find(_.name == name)

  /** Its marker column, if it declares one. */
  def markerAttribute: Option[Attribute] = declaration.marker.flatMap(attribute)

  /**
   * The stream as a [[PunctuatedInput]] of an operator that sees the columns `visible`: its
   * declared columns among them, by name.
   */
  def input(visible: Set[ExprId]): PunctuatedInput =
    PunctuatedInput(declaration, output.filter(a => visible.contains(a.exprId)).map(a => a.name -> a.exprId).toMap)

  /** Its unique key's columns, if it declares one. */
  def uniqueAttributes: Option[Seq[Attribute]] = declaration.unique.map(_.names.flatMap(attribute))

  /**
   * The schemes a punctuation of this stream can instantiate where it is declared, each
   * with its columns and "is a range" flags: every instantiable scheme when the stream has
   * a marker column, else only its unique key (a data row implies that punctuation; no
   * row can carry another). Schemes whose columns are not all in [[output]] are left out.
   *
   * Without a marker the declaration has no declared schemes (the resolver refuses
   * `punctuated.schemes` without `punctuated.marker`), so the only instantiable scheme is
   * the unique key: keeping "the scheme equal to the unique key" and "the scheme on the
   * unique key's columns" select the same one. The test is by scheme equality, which does
   * not depend on how names resolve to columns.
   *
   * {{{
   *   // marker `p`, schemes "a; b<=", unique "k"  => (a), (b, range), (k)
   *   // no marker, unique "k"                       => (k)
   * }}}
   */
  def reachingSchemes: Seq[(Scheme, Seq[(Attribute, AttributeKind)])] = {
    val hasMarker = markerAttribute.isDefined
    declaration.instantiableSchemes.filter(sc => hasMarker || declaration.unique.contains(sc))
      .map(sc => sc -> sc.attributes.map(a => attribute(a.name).map(_ -> a.kind)))
      .collect { case (sc, attrs) if attrs.forall(_.isDefined) => sc -> attrs.flatten }
  }
}

/**
 * Finds the punctuation declarations of the streams a plan reads. Two forms (user contract):
 *
 *  - table properties of a catalog table read as a stream (`readStream.table`, SQL
 *    `STREAM(t)`): v1 tables appear as `StreamingRelation` (and, in each micro-batch's plan,
 *    as a streaming `LogicalRelation` with the same catalog table), v2 tables as
 *    `StreamingRelationV2`;
 *  - column metadata attached by `punctuated.with_schemes(df, ...)`: every column of the
 *    stream carries, under the key [[MetadataKey]], the same three properties plus the
 *    stream's name. It is read at the node where it first appears (walking up).
 *
 * Resolution throws the declaration's error (see [[punctuated.declaration.DeclarationResolver]]).
 */
object DeclaredStreams {

  /** Column-metadata key of the `with_schemes` form. */
  val MetadataKey = "punctuated"
  /** Inside it, the stream's name for messages. */
  val StreamNameKey = "punctuated.stream"

  def find(plan: LogicalPlan, caseSensitive: Boolean): Seq[DeclaredStream] = {
    val found = Seq.newBuilder[DeclaredStream]
    plan.foreachUp { node =>
      fromRelation(node, caseSensitive).foreach(found += _)
      val below = node.children.flatMap(c => metadataDeclarations(c.output)).toSet
      metadataDeclarations(node.output).filterNot(below.contains).foreach { props =>
        val name = props.getOrElse(StreamNameKey,
          node.output.map(_.name).mkString("stream(", ", ", ")"))
        found += DeclaredStream(resolve(name, props - StreamNameKey, node.output, caseSensitive), node.output)
      }
    }
    found.result().distinct
  }

  /**
   * The stream declared at this node — a catalog relation, or the node where `with_schemes`
   * metadata first appears — whose columns all are the node's own (none from below), if any.
   */
  def declaredAt(node: LogicalPlan, caseSensitive: Boolean): Option[DeclaredStream] = {
    val below = node.children.flatMap(_.output).map(_.exprId).toSet
    find(node, caseSensitive).find { s =>
      s.output.nonEmpty && s.output.forall(a => node.output.exists(_.exprId == a.exprId)) &&
        !s.output.exists(a => below.contains(a.exprId))
    }
  }

  private def fromRelation(node: LogicalPlan, caseSensitive: Boolean): Option[DeclaredStream] = {
    val named: Option[(String, Map[String, String])] = node match {
      case r: StreamingRelation =>
        r.dataSource.catalogTable.map(t => t.identifier.unquotedString -> t.properties)
      case r: LogicalRelation if r.isStreaming =>
        r.catalogTable.map(t => t.identifier.unquotedString -> t.properties)
      case r: StreamingRelationV2 =>
        Some(r.identifier.map(_.toString).getOrElse(r.sourceName) -> r.table.properties().asScala.toMap)
      case _ => None
    }
    named.collect { case (name, props) if Declaration.isDeclared(props) =>
      DeclaredStream(resolve(name, props, node.output, caseSensitive), node.output)
    }
  }

  private def resolve(name: String, props: collection.Map[String, String],
      output: Seq[Attribute], caseSensitive: Boolean): Declaration =
    DeclarationResolver.resolve(name, props, DataTypeUtils.fromAttributes(output), caseSensitive)

  /** The distinct `with_schemes` declarations carried by these attributes. */
  def metadataDeclarations(attrs: Seq[Attribute]): Seq[Map[String, String]] =
    attrs.iterator.filter(_.metadata.contains(MetadataKey)).map { a =>
      val m = a.metadata.getMetadata(MetadataKey)
      (Declaration.PropertyKeys :+ StreamNameKey).filter(m.contains).map(k => k -> m.getString(k)).toMap
    }.toSeq.distinct

  /** The metadata `with_schemes` attaches, for JVM callers and tests. */
  def metadataFor(name: String, properties: Map[String, String]): Metadata = {
    val inner = new MetadataBuilder()
    (properties + (StreamNameKey -> name)).foreach { case (k, v) => inner.putString(k, v) }
    new MetadataBuilder().putMetadata(MetadataKey, inner.build()).build()
  }
}
