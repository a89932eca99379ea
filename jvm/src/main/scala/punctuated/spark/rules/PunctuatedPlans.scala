package punctuated.spark.rules

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.catalyst.expressions.{Alias, AttributeReference, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.StreamingRelationV2
import org.apache.spark.sql.catalyst.trees.TreeNode
import org.apache.spark.sql.execution.datasources.LogicalRelation
import punctuated.compat.StreamingRelation
import org.apache.spark.sql.types.Metadata

import punctuated.declaration.Declaration
import punctuated.input.DeclaredStreams

/**
 * The guard every rule of the extension applies first: a plan with no declared input and none
 * of the extension's expressions is returned as it is, so that a query that declares nothing
 * is analyzed, optimized and planned exactly as without the extension (and pays one walk of
 * its tree per rule, no more).
 *
 * {{{
 *   // FROM a, b WHERE a.k = b.k2, neither stream declared: every rule returns the plan unchanged
 *   if (!PunctuatedPlans.involved(plan)) plan else rewrite(plan)
 * }}}
 */
object PunctuatedPlans {

  /** Attribute metadata keys the extension writes (declarations and its check flags). */
  private val MetadataKeys = Seq(DeclaredStreams.MetadataKey, PunctuateStreamingJoins.Flag,
    punctuated.aggregate.PunctuatedAggregates.CheckFlag)

  /**
   * Does the plan read a declared stream or table (catalog properties, `with_schemes`
   * metadata), or carry an expression of the extension (a join's mark, a kind column, a tag)?
   */
  def involved(plan: LogicalPlan): Boolean = plan.exists(node => declaresAt(node) || ours(node))

  /** Does a (logical or physical) plan carry an expression or flagged column of the extension? */
  def ours[T <: TreeNode[T]](plan: TreeNode[T]): Boolean =
    plan.exists(_.asInstanceOf[TreeNode[_]] match {
      case q: org.apache.spark.sql.catalyst.plans.QueryPlan[_] => q.expressions.exists(_.exists(isOurs))
      case _ => false
    })

  private def isOurs(e: Expression): Boolean = e match {
    case a: AttributeReference => flagged(a.metadata)
    case a: Alias => a.explicitMetadata.exists(flagged)
    case other => other.getClass.getName.startsWith("punctuated.")
  }

  private def flagged(m: Metadata): Boolean = MetadataKeys.exists(m.contains)

  /** A relation with declaration properties, or a leaf whose columns carry `with_schemes` metadata. */
  private def declaresAt(node: LogicalPlan): Boolean = node match {
    case r: StreamingRelation => r.dataSource.catalogTable.exists(t => Declaration.isDeclared(t.properties))
    case r: LogicalRelation => r.catalogTable.exists(t => Declaration.isDeclared(t.properties))
    case r: StreamingRelationV2 => Declaration.isDeclared(r.table.properties().asScala)
    case leaf if leaf.children.isEmpty => leaf.output.exists(a => flagged(a.metadata))
    case _ => false
  }
}
