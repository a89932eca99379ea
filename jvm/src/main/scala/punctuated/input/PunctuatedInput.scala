package punctuated.input

import org.apache.spark.sql.catalyst.expressions.{AttributeReference, Expression, ExprId}

import punctuated.declaration.{Declaration, Scheme}

/**
 * The resolved declaration of one input of a punctuated operator: the stream's (or, for a
 * join's output read by another join, the derived) declaration, with each declared column
 * tied to the expression id it has in the plan. It is built once, where a declaration is
 * resolved ([[DeclaredStream.input]] for a declared stream, [[PunctuationColumns]] for the
 * inputs of a join in any later plan), and the operators' views of it are derived from it:
 * [[InputSpec.of]] for a join (ordinals of the input's rows, schemes over the join key).
 *
 * {{{
 *   // bids: marker p, schemes "auction", unique "bid"; columns by id in the plan
 *   val in = PunctuatedInput(bidsDeclaration, Map("p" -> p.exprId, "auction" -> a.exprId, "bid" -> b.exprId))
 *   in.markerId                         // Some(p.exprId)
 *   in.keyScheme(auctionScheme, Map(a.exprId -> 0))   // Some(KeyScheme([0]))
 * }}}
 *
 * @param declaration the input's declaration
 * @param columns     declared column name → expression id of that column in the plan
 */
final case class PunctuatedInput(declaration: Declaration, columns: Map[String, ExprId]) {

  /** The input's name, for messages. */
  def name: String = declaration.table

  /** The input's own marker column: its output punctuations set it (None for a derived input). */
  def markerId: Option[ExprId] = declaration.marker.flatMap(columns.get)

  /** Every column whose true value marks a punctuation row of this input. */
  def markerIds: Seq[ExprId] = declaration.markers.flatMap(columns.get)

  /** Do punctuations of this scheme of this input reach the operator (marker rows, or a unique key's)? */
  def hasPunctuations(scheme: Scheme): Boolean =
    markerIds.nonEmpty || declaration.unique.contains(scheme)

  /**
   * The unique key's column ids, if every one of them is among `keys` (a join's key columns
   * on this input); empty otherwise. A data row of such an input closes its key (Li et al.
   * 2006, §3.1: a punctuation on join attributes).
   */
  def uniqueKeyIds(keys: Set[ExprId]): Set[ExprId] =
    declaration.unique.flatMap { u =>
      val ids = u.names.map(columns.get)
      if (ids.nonEmpty && ids.forall(_.exists(keys.contains))) Some(ids.flatten.toSet) else None
    }.getOrElse(Set.empty)

  /**
   * The [[KeyScheme]] of `scheme` over key `positions` (column id → key position), if all its
   * attributes are key columns (Li et al. 2006, §3.1: only punctuations on join attributes
   * cover all future partners of a stored tuple). Its ranges keep the scheme's order.
   */
  def keyScheme(scheme: Scheme, positions: Map[ExprId, Int]): Option[KeyScheme] = {
    val mapped = scheme.attributes.map(a => a -> columns.get(a.name).flatMap(positions.get))
    if (mapped.exists(_._2.isEmpty)) None
    else {
      val constants = mapped.collect { case (a, Some(p)) if !a.isRange => p }.sorted.toArray
      // ranges by key position: the same scheme over the same key, whatever order it was written in
      val ranges = mapped.collect { case (a, Some(p)) if a.isRange => (p, a.atLeast) }.sortBy(_._1)
      Some(KeyScheme(constants, ranges.toIndexedSeq))
    }
  }

  /** The purging schemes over these keys (declared ones and the unique key). */
  def usable(keys: Seq[Expression]): Seq[(Scheme, KeyScheme)] = {
    val positions = PunctuatedInput.keyPositions(keys)
    declaration.instantiableSchemes.flatMap(s => keyScheme(s, positions).map(s -> _))
  }
}

object PunctuatedInput {
  /** The key position of each key that is a plain column, by its expression id. */
  def keyPositions(keys: Seq[Expression]): Map[ExprId, Int] =
    keys.zipWithIndex.collect { case (a: AttributeReference, i) => a.exprId -> i }.toMap
}
