package punctuated.spark.rules

import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{EventTimeWatermark, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.streaming.WriteToStream

import punctuated.join.{InputDeclaration, KeySchemes, PunctuationColumns}
import punctuated.spark.{DeclaredStreams, PunctuatedConf, PunctuatedErrors}

/**
 * Check rule run when a streaming query starts (its plan is then rooted at `WriteToStream`):
 * in a query that reads at least one declared stream, every stream-stream join state must be
 * purgeable (Li et al. 2006, Theorem 1 for a binary join: an input's stored rows can be
 * purged iff the *other* input has a punctuation scheme on join attributes). By
 * `spark.punctuated.safety.mode`: `strict` fails `start()` naming the unpurgeable input,
 * the scheme that would fix it and how; `warn` logs the same text; `off` checks nothing.
 *
 * First cut: each join on its own. An input that is itself a join's output carries no
 * declaration here, so a multi-way join needs `warn` (the Python analysis,
 * `punctuated.check_safety`, covers chained purges across joins).
 */
case class CheckJoinSafety(session: SparkSession) extends (LogicalPlan => Unit) with Logging {

  override def apply(plan: LogicalPlan): Unit = plan match {
    case w: WriteToStream =>
      val mode = PunctuatedConf(session.sessionState.conf).safetyMode
      if (mode != "off" && DeclaredStreams.find(w.inputQuery, caseSensitive = false).nonEmpty) {
        val problems = JoinSafety.problems(w.inputQuery) ++ AggregateSafety.problems(w.inputQuery)
        if (problems.nonEmpty) {
          val text = problems.map(_.message).mkString("\n")
          if (mode == "strict") throw PunctuatedErrors.unsafeQuery(text)
          logWarning(s"Punctuated: the query's state will grow without bound.\n$text")
        }
      }
    case _ =>
  }
}

/** Per-join purgeability, one place for the check and its messages. */
object JoinSafety {

  /** A join input whose state can never be purged, and the sentence saying how to fix it. */
  final case class Problem(input: String, message: String)

  /** One problem per unpurgeable join input. */
  def problems(plan: LogicalPlan): Seq[Problem] = {
    val watermarked = plan.exists(_.isInstanceOf[EventTimeWatermark])
    plan.collect {
      case j @ ExtractEquiJoinKeys(_, leftKeys, rightKeys, _, _, left, right, _)
          if left.isStreaming && right.isStreaming =>
        PunctuationColumns.find(j.asInstanceOf[Join].condition) match {
          case Some(mark) =>
            val lName = name(mark.left, left, "left")
            val rName = name(mark.right, right, "right")
            val on = leftKeys.zip(rightKeys).map { case (l, r) => s"${l.sql} = ${r.sql}" }.mkString(" AND ")
            def missing(stored: String, other: String, otherDecl: Option[InputDeclaration],
                otherKeys: Seq[Expression]) = {
              val usable = otherDecl.toSeq.flatMap(d => KeySchemes.usable(d, otherKeys))
                .filter { case (s, _) => otherDecl.exists(_.hasPunctuations(s)) }
              if (usable.nonEmpty) None
              else Some(Problem(stored, {
                val keyCols = otherKeys.map(_.sql).mkString(", ")
                s"The state of input $stored of the join ON $on can never be purged: input " +
                  s"$other has no punctuation scheme on its join key ($keyCols) whose punctuations " +
                  s"reach the join. Fix: declare one on $other, e.g. ALTER TABLE $other SET " +
                  s"TBLPROPERTIES ('punctuated.schemes' = '${otherKeys.map(k => plain(k)).mkString(", ")}', " +
                  "'punctuated.marker' = '<BOOLEAN column>'), or 'punctuated.unique' if that is a key " +
                  s"of $other; or set ${PunctuatedConf.SafetyMode}=warn to run anyway."
              }))
            }
            (missing(lName, rName, mark.right, rightKeys) ++ missing(rName, lName, mark.left, leftKeys)).toSeq
          case None if !watermarked =>
            Seq(Problem("both inputs", s"The stream-stream join ON ${j.asInstanceOf[Join].condition.map(_.sql).getOrElse("true")} " +
              "reads no declared input: both inputs' state grows without bound. Fix: declare " +
              "punctuation schemes on its inputs (TBLPROPERTIES 'punctuated.schemes' or " +
              "'punctuated.unique') or use a watermark."))
          case None => Nil
        }
    }.flatten
  }

  private def plain(e: Expression): String = e match {
    case a: Attribute => a.name
    case other => other.sql
  }

  private def name(decl: Option[InputDeclaration], input: LogicalPlan, side: String): String =
    decl.map(_.declaration.table.split('.').last).getOrElse {
      input.collectLeaves().filter(_.isStreaming).map(punctuated.spark.JoinGraph.shortName)
        .distinct.mkString(", ") match {
        case "" => s"$side input"
        case names => s"$names ($side input)"
      }
    }
}
