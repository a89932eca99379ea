package punctuated.dedup

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, GreaterThan, If, IsNotNull, Literal}
import org.apache.spark.sql.catalyst.plans.logical.{Deduplicate, Distinct, Filter, LogicalPlan, Project}
import org.apache.spark.sql.types.MetadataBuilder

import punctuated.conf.PunctuatedConf
import punctuated.input.{KindColumn, PunctuationSources, PunctuationTag, RewrittenOperators, TimeKeys, Watermarks}

/**
 * The analyzer's rewrite of a streaming deduplication over punctuated input (Tucker et al.
 * 2003, Table 2, duplicate elimination: *keep* a seen key until punctuations match all its
 * future rows, then forget it; *propagate* the punctuations). `dropDuplicates(cols)` is a
 * `Deduplicate`; `DISTINCT` and `UNION` (distinct) are `Distinct`, which Spark would run as an
 * aggregation: over punctuated input it becomes the deduplication of all columns, which emits
 * each row the first time it is seen instead of waiting.
 *
 * {{{
 *   Deduplicate(keys, input)
 *   ==>
 *   Project(input.*)
 *     Filter(punctuation_tag(kind) IS NOT NULL)         -- keeps `kind`
 *     Deduplicate(keys, Project(input.*, punctuation_kind(...) AS kind))   -- its state step is
 *                                                                            PunctuatedDeduplicateExec
 * }}}
 *
 * A key computed from a time column by an expression that never decreases with it (`day =
 * to_date(ts)`, a window's start: [[TimeKeys]]) is closed by a range scheme `ts<=` on that
 * column, through a key filled with the bound on punctuation rows (see `timeKeys`).
 *
 * Worked example (bids schemes "auction"; `dropDuplicates("auction", "bidder")`):
 * {{{
 *   batch 0: (1, 100), (1, 100), (1, 101)   -> emits (1, 100), (1, 101); keys seen: 2
 *   batch 1: (1, 100), punctuation 1        -> (1, 100) is a duplicate; auction 1 closed: keys seen: 0
 * }}}
 */
object PunctuatedDeduplicates {

  def rewrite(plan: LogicalPlan, conf: PunctuatedConf, caseSensitive: Boolean): Option[LogicalPlan] = {
    val (keys, child) = plan match {
      case Deduplicate(k, c) => (k, c)
      case Distinct(c) => (c.output, c)
      case _ => return None
    }
    if (!child.isStreaming || keys.isEmpty || keys.size >= 24 || isRewritten(child)) return None
    val found = PunctuationSources.find(child, caseSensitive).getOrElse(return None)
    // keys a range on a time column closes through a monotone expression of it (to_date(ts),
    // a window's start: TimeKeys), with the bound to fill them with on punctuation rows
    val ranges = found.sources.flatMap(_.schemes.flatMap(_._1.collect { case (at, punctuated.declaration.AttributeKind.AtMost) => at }))
    val onTime = TimeKeys.closing(keys, TimeKeys.definitions(found.plan), ranges)
    val (declaredKind, _, _) = KindColumn(keys, found, conf, useEqualities = false,
      ranges = at => onTime.get(at.exprId).map(_._1)).getOrElse(return None)
    // a watermark on a key column forgets keys too (next to the declared schemes, never alone)
    val (kindAlias, _) = Watermarks.closingKinds(declaredKind, found.plan, Watermarks.keyColumn(keys))
    val withKind = Project(found.plan.output :+ kindAlias, found.plan)
    val (dedupKeys, input) = timeKeys(keys, onTime.values.toMap, kindAlias.toAttribute, withKind)
    // an always-true filter on the kind column keeps the optimizer from pruning it, and its
    // tag carries the kind's layout to the physical rule
    val keep = IsNotNull(PunctuationTag(kindAlias))
    Some(Project(child.output, Filter(keep, Deduplicate(dedupKeys, input))))
  }

  /**
   * The keys closed on time replaced by `k' = if(kind > 0, bound(ts), k)`: equal to `k` on data
   * rows, the bound on a punctuation row (`ts<=c` closes every key `<= bound(c)`, as the
   * operator closes any range), computed in a projection over `input`; flagged
   * [[TimeKeys.ClosedOnTime]] for the safety check. Unchanged when no key is closed on time.
   *
   * {{{
   *   dropDuplicates("user", "day"), day = to_date(ts), schemes "ts<="
   *   punctuation ts <= 2026-01-01 23:59:59.999999  ->  day' = 2026-01-01: closes that day and before
   * }}}
   */
  private def timeKeys(keys: Seq[Attribute], filled: Map[Int, Expression], kind: Attribute,
      input: LogicalPlan): (Seq[Attribute], LogicalPlan) =
    if (filled.isEmpty) (keys, input)
    else {
      val aliases = keys.zipWithIndex.collect { case (k, i) if filled.contains(i) =>
        val md = new MetadataBuilder().withMetadata(k.metadata).putBoolean(TimeKeys.ClosedOnTime, true).build()
        i -> Alias(If(GreaterThan(kind, Literal(0)), filled(i), k), k.name)(explicitMetadata = Some(md))
      }.toMap
      (keys.indices.map(i => aliases.get(i).map(_.toAttribute).getOrElse(keys(i))),
        Project(input.output ++ aliases.values, input))
    }

  /** Is this the input of an already rewritten deduplication? */
  def isRewritten(plan: LogicalPlan): Boolean = RewrittenOperators.isDeduplicateInput(plan)
}
