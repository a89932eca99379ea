package punctuated.spark.rules

import org.apache.spark.sql.catalyst.plans.Inner
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Deduplicate, Distinct, Join, LogicalPlan}

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.input.PunctuationColumns

/**
 * What load shedding (`spark.punctuated.shedding.maxStateRows`, Das, Gehrke and Riedewald
 * 2005) means for safety: a binary punctuated join, and a multi-way join, sheds rows so that
 * each partition holds at most the budget, so its state is bounded even where punctuations
 * could never purge it — at the price of partial results (a subset of the exact result).
 *
 *  - [[refuse]]: shedding is refused where results would be wrong, not merely partial: an
 *    outer, semi or anti join (a null-padded or unmatched row would be emitted for a row whose
 *    partner was shed), and a join whose output an aggregation or deduplication reads (a
 *    count over a subset is a false count, not a partial one); a multi-way join under the
 *    `parallel_track` migration strategy (its count of the old plan's rows would be false).
 *  - [[split]]: with shedding on, the unpurgeable inputs of the binary punctuated (inner) joins
 *    and of the multi-way joins are bounded by the budget: `strict` safety accepts them and
 *    logs that results may be partial ([[CheckJoinSafety]]); `punctuated.check_safety` reports them the same way.
 *
 * Example: with `maxStateRows=100000`, `a JOIN b ON a.k = b.k` where only `a` punctuates `k`
 * runs in `strict` mode (b's purgeable, a's bounded by the budget) and logs a warning;
 * `a LEFT JOIN b ...` fails with `PUNCTUATED_SHEDDING_UNSUPPORTED`.
 */
object SheddingSafety {

  /** The binary joins our operator runs (a declared input) that are not grouped into a multi-way join. */
  private def punctuatedJoins(plan: LogicalPlan, conf: PunctuatedConf): Seq[JoinSafety.Verdict] =
    JoinSafety.verdicts(plan, conf).filter(v => PunctuationColumns.find(v.join.condition).isDefined)

  private def describe(v: JoinSafety.Verdict): String =
    s"the ${v.join.joinType.sql} join of ${v.left} and ${v.right} ON ${v.join.condition.map(_.sql).getOrElse("true")}"

  /** Fails if shedding is set and the query has a binary punctuated join that cannot shed soundly. */
  def refuse(plan: LogicalPlan, conf: PunctuatedConf): Unit = if (conf.shedding.enabled) {
    val joins = punctuatedJoins(plan, conf)
    joins.find(_.join.joinType != Inner).foreach { v =>
      throw PunctuatedErrors.sheddingUnsupported(describe(v),
        "an outer, semi or anti join emits rows (null-padded or unmatched) that would be false once " +
          "a partner was shed")
    }
    val groups = MultiJoinSafety.verdicts(plan, conf)
    groups.headOption.filter(_ => conf.migrationStrategy == "parallel_track").foreach { g =>
      throw PunctuatedErrors.sheddingUnsupported(describe(g),
        s"${PunctuatedConf.MigrationStrategy}=parallel_track runs two plans side by side over shared state " +
          "and counts the old plan's rows to know when it may go, which shed rows would falsify",
        Some(s"Fix: set ${PunctuatedConf.MigrationStrategy} to jisc (the default) or moving_state, or unset " +
          s"${PunctuatedConf.SheddingMaxStateRows}."))
    }
    def reads(op: LogicalPlan): Option[String] =
      joins.find(v => op.exists(_ eq v.join)).map(describe)
        .orElse(groups.find(g => op.exists(o => g.group.joins.exists(_ eq o))).map(describe))
    plan.foreach {
      case op @ (_: Aggregate | _: Deduplicate | _: Distinct) if op.isStreaming =>
        reads(op).foreach { what =>
          throw PunctuatedErrors.sheddingUnsupported(what,
            s"its output is read by ${op.nodeName.toLowerCase} ${op.simpleString(200).take(200)}, " +
              "whose results over a shed subset would be wrong (a count or a distinct set of a subset), " +
              "not merely partial")
        }
      case _ =>
    }
  }

  private def describe(g: MultiJoinSafety.Verdict): String =
    s"the multi-way join of ${g.inputs.mkString(", ")}"

  /**
   * The problems of `problems` that the budget bounds (inputs of binary punctuated inner joins,
   * with shedding on) and the others: (bounded, unbounded).
   */
  def split(plan: LogicalPlan, conf: PunctuatedConf): (Seq[JoinSafety.Problem], Seq[JoinSafety.Problem]) = {
    val all = JoinSafety.problems(plan, conf)
    if (!conf.shedding.enabled) (Nil, all)
    else {
      // binary inner joins, and the multi-way joins (inner joins only)
      val bounded = punctuatedJoins(plan, conf).filter(_.join.joinType == Inner).flatMap(_.problems) ++
        MultiJoinSafety.verdicts(plan, conf).flatMap(_.problems)
      (bounded, all.filterNot(bounded.contains))
    }
  }

  /** The warning logged (and reported by `check_safety`) for problems the budget bounds. */
  def warning(bounded: Seq[JoinSafety.Problem], conf: PunctuatedConf): String =
    s"Punctuated: load shedding (${PunctuatedConf.SheddingMaxStateRows}=${conf.shedding.maxStateRows.get}, " +
      s"policy ${conf.shedding.policy}) bounds state that punctuations can never purge; results may be " +
      s"partial (a subset of the exact result).\n${bounded.map(_.message).mkString("\n")}"
}
