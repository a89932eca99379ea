package punctuated.compat

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.analysis.{UnresolvedAttribute, UnresolvedRelation, UnresolvedTableValuedFunction}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * SQL that Spark 4.1 reads and 4.0 does not (on 4.1 and later `inject` adds nothing):
 * `FROM STREAM(t)`, a streaming read of table `t`. Spark 4.0 parses it as a call of a table
 * function `stream` whose argument is a column `t`, and fails with `UNRESOLVED_COLUMN`; the
 * rule below makes it the streaming read of `t` that 4.1 parses it to.
 */
object SqlCompat {
  def inject(extensions: SparkSessionExtensions): Unit =
    extensions.injectResolutionRule(_ => StreamTableSyntax)
}

/** `STREAM(t)`, parsed by Spark 4.0 as a table function call: the streaming read of table `t`. */
object StreamTableSyntax extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperatorsUp {
    case f: UnresolvedTableValuedFunction if f.name.size == 1 && f.name.head.equalsIgnoreCase("stream") &&
        f.functionArgs.size == 1 && f.functionArgs.head.isInstanceOf[UnresolvedAttribute] =>
      val table = f.functionArgs.head.asInstanceOf[UnresolvedAttribute].nameParts
      UnresolvedRelation(table, CaseInsensitiveStringMap.empty, isStreaming = true)
  }
}
