package punctuated.dedup

import org.apache.spark.sql.catalyst.expressions.IsNotNull
import org.apache.spark.sql.catalyst.plans.logical.{Deduplicate, Distinct, Filter, LogicalPlan, Project}

import punctuated.conf.PunctuatedConf
import punctuated.input.{KindColumn, PunctuationSources, PunctuationTag, RewrittenOperators, Watermarks}

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
    val (declaredKind, _, _) = KindColumn(keys, found, conf, useEqualities = false).getOrElse(return None)
    // a watermark on a key column forgets keys too (next to the declared schemes, never alone)
    val (kindAlias, _) = Watermarks.closingKinds(declaredKind, found.plan, Watermarks.keyColumn(keys))
    val input = Project(found.plan.output :+ kindAlias, found.plan)
    // an always-true filter on the kind column keeps the optimizer from pruning it, and its
    // tag carries the kind's layout to the physical rule
    val keep = IsNotNull(PunctuationTag(kindAlias))
    Some(Project(child.output, Filter(keep, Deduplicate(keys, input))))
  }

  /** Is this the input of an already rewritten deduplication? */
  def isRewritten(plan: LogicalPlan): Boolean = RewrittenOperators.isDeduplicateInput(plan)
}
