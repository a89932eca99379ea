package punctuated.join

import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, Expression, ExprId}

import punctuated.declaration.Scheme
import punctuated.input.{InputDeclaration, InputSpec, KeyScheme, RowDecoder}

/**
 * Which of an input's schemes can purge state of a given equi-join: those whose every
 * attribute is a join-key column (Li et al. 2006, §3.1: only punctuations on join attributes
 * cover all future partners of a stored tuple). One place for the planner, the operator and
 * the safety check.
 */
object KeySchemes {

  /** The key position of each join key that is a plain column, by its expression id. */
  def keyPositions(keys: Seq[Expression]): Map[ExprId, Int] =
    keys.zipWithIndex.collect { case (a: AttributeReference, i) => a.exprId -> i }.toMap

  /** The [[KeyScheme]] of `scheme`, if all its attributes are join-key columns. */
  def of(scheme: Scheme, decl: InputDeclaration, positions: Map[ExprId, Int]): Option[KeyScheme] = {
    val mapped = scheme.attributes.map(a => a -> decl.columns.get(a.name).flatMap(positions.get))
    if (mapped.exists(_._2.isEmpty) || scheme.attributes.count(_.isRange) > 1) None
    else {
      val constants = mapped.collect { case (a, Some(p)) if !a.isRange => p }.sorted.toArray
      val range = mapped.collectFirst { case (a, Some(p)) if a.isRange => p }
      Some(KeyScheme(constants, range))
    }
  }

  /** The purging schemes of an input (declared ones and the unique key). */
  def usable(decl: InputDeclaration, keys: Seq[Expression]): Seq[(Scheme, KeyScheme)] = {
    val positions = keyPositions(keys)
    decl.declaration.instantiableSchemes.flatMap(s => of(s, decl, positions).map(s -> _))
  }

  /** The runtime description of an input, in ordinals of its rows. */
  def inputSpec(decl: Option[InputDeclaration], keys: Seq[Expression], output: Seq[Attribute]): InputSpec =
    decl match {
      case None => InputSpec.undeclared(output.map(_.name))
      case Some(d) =>
        val ordinal = output.map(_.exprId).zipWithIndex.toMap
        def ordinalOf(column: String) = d.columns.get(column).flatMap(ordinal.get)
        val positions = keyPositions(keys)
        val marker = d.declaration.marker.flatMap(ordinalOf).getOrElse(-1)
        val decoder = RowDecoder.of(d.declaration, ordinalOf, output.indices)
        val schemes = decoder.schemes.zip(d.declaration.instantiableSchemes.map(of(_, d, positions)))
        InputSpec(
          name = d.declaration.table,
          markerOrdinal = marker,
          dataOrdinals = decoder.columns,
          schemes = schemes,
          schemeNames = d.declaration.instantiableSchemes.map(_.toString),
          unique = d.declaration.unique.flatMap(of(_, d, positions)),
          columnNames = output.map(_.name),
          punctuationOrdinals = decoder.markers,
          owners = d.declaration.derived.toSeq.flatMap(_.owners).flatMap { case (c, m) =>
            for (co <- ordinalOf(c); mo <- ordinalOf(m)) yield co -> mo }.toMap)
    }
}
