package punctuated.join

import scala.collection.mutable

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference, GenericInternalRow, JoinedRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.types.{BooleanType, StructType}

import punctuated.input.KeyScheme
import punctuated.input.{InputSpec, PunctuationReplicatingExchangeExec}

/**
 * One input of a [[PunctuatedSymmetricHashJoinExec]] in one task, by number: what the task
 * knows and collects per input, so that the join's logic is written once for every input
 * (`inputs(i)` and `inputs(other(i))`) instead of once per side.
 *
 * {{{
 *   plan      number, declaration (spec), join keys, columns, partitioning, replicated?
 *                                                                      (JoinInputPlan)
 *   state     its rows, held punctuations, range index, closed values    (JoinInputState)
 *   batch     this batch's new punctuations, the whole keys it closed now
 *   helpers   key projection, stored-row layout (columns + matched), a row of NULLs
 * }}}
 *
 * Example: in `PunctuatedJoinTask`, a row of input `i` is joined with
 * `inputs(other(i)).state.rowsWithKey(key)` and stored in `inputs(i).state` unless
 * `inputs(other(i))` closed its key.
 *
 * @param plan          the input as planned
 * @param state         its state in this partition
 * @param partitionWide this batch's partition-wide punctuations of the input, gathered on the
 *                      driver (empty for a replicated input: they come in its rows)
 */
private[join] final class JoinInput(
    plan: JoinInputPlan,
    val state: JoinInputState,
    partitionWide: Array[(KeyScheme, UnsafeRow)]) {

  def number: Int = plan.number
  def spec: InputSpec = plan.spec
  def replicated: Boolean = plan.replicated
  def output: Seq[Attribute] = plan.output
  def keys: Seq[org.apache.spark.sql.catalyst.expressions.Expression] = plan.keys
  val keyLength: Int = plan.keys.length
  val inputSchema: StructType = DataTypeUtils.fromAttributes(output)

  /** Rows are handled in the stored layout: the input's columns, then `matched`. */
  val valueAttrs: Seq[Attribute] = output :+ AttributeReference(s"_matched$number", BooleanType)()
  val keyProj: UnsafeProjection = UnsafeProjection.create(plan.keys, output)
  /** The input's part of a null-padded output row. */
  val nullRow: GenericInternalRow = new GenericInternalRow(valueAttrs.size)
  private val view = new JoinedRow
  private val unmatched = new GenericInternalRow(Array[Any](false))

  /** An input row in the stored layout with `matched` false, as a view (copy to keep). */
  def unmatchedView(row: InternalRow): InternalRow = view(row, unmatched)

  /** This batch's punctuations of the input (applied at the end of the batch). */
  val newPunctuations: mutable.ArrayBuffer[KeyPunctuation] =
    mutable.ArrayBuffer.from(partitionWide.map { case (s, k) => state.punctuationFor(s, k) })

  /**
   * Whole join keys the input closed in this batch (its punctuations and unique keys). Inputs
   * are processed in order: a row of a later input with a key an earlier one closed has met
   * every row of it it ever will, so it is not stored (as if it had come in the next batch,
   * when the punctuation is held), instead of being stored and purged at the end of the batch.
   */
  val closedNow: mutable.HashSet[UnsafeRow] = mutable.HashSet.empty[UnsafeRow]

  /** For a replicated input: the partition Spark's hash partitioning gives a row (its home). */
  lazy val homePartition: InternalRow => Int = PunctuationReplicatingExchangeExec.homeOf(
    plan.partitioning.asInstanceOf[HashPartitioning], output)

  /** The row's columns as `(name=value, ...)`, for error messages. */
  def render(row: InternalRow): String = inputSchema.fields.indices.map { i =>
    val v = if (row.isNullAt(i)) "NULL" else row.get(i, inputSchema(i).dataType)
    s"${inputSchema(i).name}=$v"
  }.mkString("(", ", ", ")")
}
