package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, EqualNullSafe, Literal, Not}
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.LogicalRelation
import org.apache.spark.sql.types.BooleanType

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration

/**
 * Post-hoc resolution rule: a *batch* read of a declared catalog table (`spark.read.table`,
 * `SELECT ... FROM bids`, a view over it, the static side of a stream-static join) leaves
 * the table's punctuation rows out, with `NOT (marker <=> true)` right above the relation,
 * so that a batch answer (`count(*)`) is the streaming one: punctuations are not data
 * (Tucker et al. 2003, §3: a punctuation is a predicate over the stream, not a tuple of it).
 * A row whose marker is NULL or false is data.
 *
 * Only batch relations: the micro-batches of a streaming read scan the same table as a
 * `LogicalRelation` that `isStreaming`, and its punctuations are the operators' input. Writes
 * are untouched (an INSERT's target is no child of the plan). The marker is the one of the
 * `punctuated.marker` property when it names a BOOLEAN column; the rest of the declaration is
 * validated by streaming reads only, so a batch read never fails on it.
 * `spark.punctuated.batch.includePunctuations=true` keeps the punctuation rows.
 */
case class DropPunctuationsFromBatchReads(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = {
    val conf = session.sessionState.conf
    def marker(node: LogicalPlan): Option[Attribute] = node match {
      case r: LogicalRelation if !r.isStreaming =>
        r.catalogTable.flatMap(_.properties.get(Declaration.Marker)).flatMap { name =>
          r.output.find(a => conf.resolver(a.name, name.trim) && a.dataType == BooleanType)
        }
      case _ => None
    }
    def drops(parent: LogicalPlan, m: Attribute): Boolean = parent match {  // idempotence
      case Filter(Not(EqualNullSafe(a: Attribute, Literal(true, _))), _) => a.exprId == m.exprId
      case _ => false
    }
    def wrap(parent: Option[LogicalPlan], node: LogicalPlan): LogicalPlan =
      marker(node).filterNot(m => parent.exists(drops(_, m)))
        .map(m => Filter(Not(EqualNullSafe(m, Literal.TrueLiteral)), node)).getOrElse(node)

    val declared = plan.collectWithSubqueries { case n if marker(n).isDefined => n }.nonEmpty
    if (!declared || PunctuatedConf(conf).batchIncludePunctuations) plan
    else AnalysisHelper.allowInvokingTransformsInAnalyzer {
      val rewritten = plan.transformDownWithSubqueries {
        case p if p.children.exists(c => marker(c).exists(m => !drops(p, m))) =>
          p.withNewChildren(p.children.map(c => wrap(Some(p), c)))
      }
      wrap(None, rewritten)
    }
  }
}
