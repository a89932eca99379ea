package punctuated.spark.rules

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, EqualNullSafe, ExprId, Literal, Not}
import org.apache.spark.sql.catalyst.plans.logical.{AnalysisHelper, Filter, Join, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.streaming.WriteToStream

import punctuated.conf.PunctuatedConf
import punctuated.input.{DeclaredStreams, PunctuationColumns, PunctuationKind}

/**
 * Post-hoc resolution rule, applied to the whole query when it starts (its plan is then
 * rooted at `WriteToStream`): punctuation rows of a declared stream that no punctuated
 * operator consumes are removed right where the stream enters the plan, with
 * `NOT (marker <=> true)`, so that they never reach another operator or the sink as data
 * rows (user contract: "Punctuation rows never appear in a query's results"). A stream is
 * consumed when a punctuated join's mark or a punctuated aggregation's kind column
 * references its marker column. With
 * `spark.punctuated.emitPunctuations=true`, a stream whose marker column is in the results
 * keeps its punctuation rows (the contract: results then carry the marker column).
 *
 * It runs at start, not on every DataFrame: DataFrames are analysed piece by piece
 * (`readStream.table("bids")` alone, then the join), and only the whole query says whether
 * a join consumes the punctuations.
 */
case class DropUnconsumedPunctuations(session: SparkSession) extends Rule[LogicalPlan] {

  override def apply(plan: LogicalPlan): LogicalPlan = plan match {
    case w: WriteToStream if w.inputQuery.isStreaming && PunctuatedPlans.involved(w.inputQuery) =>
      val query = w.inputQuery
      val consumed: Set[ExprId] = query.collect {
        case j: Join => PunctuationColumns.find(j.condition).toSeq
          .flatMap(m => m.left.toSeq ++ m.right).flatMap(_.markerId)
      }.flatten.toSet ++ query.flatMap(_.expressions).flatMap(_.collect {
        case k: PunctuationKind => k.references.map(_.exprId)   // a punctuated aggregation's input
      }).flatten
      // with emitPunctuations=true, punctuations reaching the results with their marker stay
      val emitted: Set[ExprId] =
        if (PunctuatedConf(session.sessionState.conf).emitPunctuations) query.output.map(_.exprId).toSet
        else Set.empty
      val markers = DeclaredStreams.find(query, session.sessionState.conf.caseSensitiveAnalysis)
        .flatMap(s => s.declaration.marker.flatMap(m => s.output.find(_.name == m)))
        .filterNot(m => consumed.contains(m.exprId) || emitted.contains(m.exprId)).map(_.exprId).toSet
      if (markers.isEmpty) w
      else AnalysisHelper.allowInvokingTransformsInAnalyzer {
        // the node that introduces a marker column: a source, or a with_schemes projection
        def introduced(node: LogicalPlan): Option[Attribute] =
          node.output.find(a => markers.contains(a.exprId) &&
            !node.children.exists(_.outputSet.contains(a)))
        def drops(p: LogicalPlan, m: Attribute) = p match {   // already filtered (idempotence)
          case Filter(Not(EqualNullSafe(a: Attribute, Literal(true, _))), _) => a.exprId == m.exprId
          case _ => false
        }
        def wrap(parent: Option[LogicalPlan], node: LogicalPlan): LogicalPlan =
          introduced(node).filterNot(m => parent.exists(drops(_, m)))
            .map(m => Filter(Not(EqualNullSafe(m, Literal.TrueLiteral)), node)).getOrElse(node)
        val rewritten = query.transformDown {
          case p if p.children.exists(c => introduced(c).exists(m => !drops(p, m))) =>
            p.withNewChildren(p.children.map(c => wrap(Some(p), c)))
        }
        val top = wrap(None, rewritten)
        if (top eq query) w else w.copy(inputQuery = top)
      }
    case other => other
  }
}
