package punctuated.spark

import org.apache.spark.SparkEnv
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.internal.SQLConf

import punctuated.compat.StreamExecution

/**
 * Checks that our operators reach their tasks without the plan below them. A stateful
 * operator's tasks get the operator with their closure; an operator that kept its children
 * would bring every operator below it, down to the scans, into every task of its stage.
 * Ours keep their children on the driver (`@transient`) and what runs in the tasks asks them
 * for their columns only.
 *
 * Example (in a suite's script):
 * {{{
 *   StartStream(additionalConfs = interpreted), AddData(...), CheckNewAnswer(...),
 *   NoWholeStageCodegen,
 *   ShippedWithoutChildren(ours, "PunctuatedSymmetricHashJoinExec")
 * }}}
 */
trait TaskClosureChecks extends PunctuatedStreamTest {

  /** Whole-stage code generation off: Spark's operators above ours run interpreted in the tasks. */
  protected val interpreted: Map[String, String] = Map(SQLConf.WHOLESTAGE_CODEGEN_ENABLED.key -> "false")

  protected def NoWholeStageCodegen = AssertOnQuery("no whole-stage code generation") { q =>
    q.lastExecution.executedPlan.collect { case w if w.nodeName.startsWith("WholeStageCodegen") => w }.isEmpty
  }

  /**
   * The operators `ours` picks from the last plan are exactly `names`, and each ships (is
   * serialized as a task's closure is) without the scan below it, comes back with no
   * children, and with its columns. At least one of their children, serialized, does carry
   * the scan: what the operator would have shipped with them.
   */
  protected def ShippedWithoutChildren(ours: PartialFunction[SparkPlan, SparkPlan], names: String*) =
    AssertOnQuery(s"${names.mkString(", ")} shipped without their children") { (q: StreamExecution) =>
      val plan = q.lastExecution.executedPlan
      val found = plan.collect(ours)
      assert(found.map(_.getClass.getSimpleName).toSet == names.toSet, plan.treeString)
      val scan = plan.collectLeaves().head.getClass.getSimpleName
      assert(found.exists(_.children.exists(c => mentions(serialized(c), scan))), s"$scan not found in a child")
      found.foreach { p =>
        val bytes = serialized(p)
        assert(!mentions(bytes, scan), s"${p.nodeName} ships the plan below it ($scan)")
        val copy = SparkEnv.get.closureSerializer.newInstance()
          .deserialize[SparkPlan](java.nio.ByteBuffer.wrap(bytes), getClass.getClassLoader)
        assert(Option(copy.children).forall(_.forall(_ == null)), p.nodeName)
        assert(copy.output == p.output, p.nodeName)
      }
      true
    }

  private def serialized(o: AnyRef): Array[Byte] = {
    val buffer = SparkEnv.get.closureSerializer.newInstance().serialize(o)
    val bytes = new Array[Byte](buffer.remaining())
    buffer.get(bytes)
    bytes
  }

  private def mentions(bytes: Array[Byte], text: String): Boolean =
    new String(bytes, "ISO-8859-1").contains(text)
}
