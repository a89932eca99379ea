package punctuated.input

import scala.collection.mutable.ArrayBuffer

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, NamedExpression}

import punctuated.conf.PunctuatedConf
import punctuated.declaration.AttributeKind

/**
 * The `punctuation_kind` column of a punctuated operator keyed by `keys` (an aggregation's
 * grouping columns, a deduplication's key): which of its input streams' schemes close a key
 * (Tucker et al. 2003, Table 2: a punctuation whose pattern is a wildcard outside the key
 * columns matches every future row of the keys it names), each one a kind.
 *
 * {{{
 *   keys (auction, bidder); bids schemes "auction; bidder, day<="
 *     "auction"          -> kind 1: KeyScheme(constants [0])   closes (a, *)
 *     "bidder, day<="    -> ignored (day is not a key column)
 *   keys (day, price); schemes "day<=, price<="
 *     "day<=, price<="   -> kind 1: KeyScheme([], 0<=, 1<=)    closes the keys within its region
 * }}}
 */
object KindColumn {

  /**
   * The column, the layout and the key positions a punctuation fills through a join
   * equality (not from its own column), or None when no scheme closes a key.
   *
   * @param useEqualities let punctuations on columns equal by a join close key columns
   * @param ranges  the key position a range on this (non-key) attribute closes through a
   *                time expression (`window(ts, ...)`, `date_trunc(unit, ts)`: see
   *                [[TimeKeys]]); such positions are also returned as filled
   */
  def apply(keys: Seq[Attribute], found: FoundSources, conf: PunctuatedConf,
      useEqualities: Boolean, ranges: Attribute => Option[Int] = _ => None): Option[(Alias, AggregateLayout, Set[Int])] = {
    val equal = if (useEqualities) found.equal else Nil
    def position(attr: Attribute): Option[Int] =
      PunctuationSources.equalTo(attr, equal).iterator
        .map(e => keys.indexWhere(_.exprId == e.exprId)).find(_ >= 0)

    // closing key schemes (kind = index + 1), and each source scheme's kind
    val closing = ArrayBuffer.empty[(KeyScheme, String, Int)]
    val substituted = scala.collection.mutable.Set.empty[Int]
    val kinds: Seq[Seq[Int]] = found.sources.map(source => source.schemes.map { case (attrs, text) =>
      // a time expression closes on `ts<=` only (TimeKeys: groups end at increasing times)
      val ps = attrs.map { case (at, kind) =>
        position(at).orElse(if (kind == AttributeKind.AtMost) ranges(at) else None).map(p => (p, kind.isRange, at))
      }
      if (ps.exists(_.isEmpty) || ps.flatten.map(_._1).distinct.size != ps.size) {
        PunctuationKind.Ignored
      } else {
        // ranges in the scheme's order: (key position, >=); several close a region (RangeBounds)
        val ranges = attrs.zip(ps.flatten).collect { case ((_, k), (p, true, _)) => (p, k == AttributeKind.AtLeast) }
          .sortBy(_._1)
        val ks = KeyScheme(ps.flatten.collect { case (p, false, _) => p }.sorted.toArray, ranges.toIndexedSeq)
        ps.flatten.foreach { case (p, _, at) => if (keys(p).exprId != at.exprId) substituted += p }
        // under a union, each branch's schemes are kinds of their own (setCombine)
        closing.indexWhere(c => c._1 == ks && c._3 == source.branch) match {
          case -1 if closing.size < PunctuationKind.MaxKinds => closing += ((ks, text, source.branch)); closing.size
          case -1 => PunctuationKind.Ignored
          case i => i + 1
        }
      }
    })
    if (closing.isEmpty) return None

    val implied = found.sources.zip(kinds).flatMap { case (s, ks) =>
      s.unique.toSeq.flatMap(u => s.schemes.indexWhere(_._1.map(_._1) == u) match {
        case -1 => None
        case i if ks(i) > 0 && u.forall(x => keys.exists(_.exprId == x.exprId)) => Some(ks(i))
        case _ => None
      })
    }.distinct

    // the punctuation_kind column
    val children = ArrayBuffer.empty[Expression]
    def child(e: Expression): Int = children.indexWhere(_.semanticEquals(e)) match {
      case -1 => children += e; children.size - 1
      case i => i
    }
    val layouts = found.sources.zip(kinds).map { case (s, ks) => SourceLayout.of(s, ks, child) }
    val layout = AggregateLayout(closing.map(_._1).toSeq, closing.map(_._2).toSeq, closing.map(_._3).toSeq, implied,
      NamedExpression.newExprId, found.sources.map(_.name).distinct)
    val kindAlias = Alias(PunctuationKind(children.toSeq, layouts, layout, conf.failOnInvalidPunctuations),
      PunctuationKind.ColumnName)()
    Some((kindAlias, layout, substituted.toSet))
  }
}
