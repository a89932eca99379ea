package punctuated.join.multi

import org.apache.spark.sql.types.{BinaryType, IntegerType, LongType, StructType}

import punctuated.state.StoreNamespace

/**
 * Where the state of one input of [[PunctuatedMultiJoinExec]] lives in the checkpoint,
 * derived from its input number alone, so that the operator, its state-metadata record and
 * the tools reading a checkpoint back never disagree. The names do not depend on the plan
 * the group runs with: the leaf state of input `i` is the same whichever inputs are joined
 * first.
 *
 * {{{
 *   input  rows store            namespaces of punctuated-meta (StoreNamespace)
 *                                held whole-key  held partial-key  closed values
 *   i      input<i>-mjoin-rows   3 i             3 i + 1           3 i + 2
 * }}}
 *
 * An inner node of a tree plan that is not its root ([[MultiJoinPlan.intermediates]]) keeps
 * its combinations in one rows store named by the inputs it covers ([[node]]), laid out as
 * an input's (a *virtual input*: [[MultiJoinState]]); it holds no punctuations, so it has no
 * namespace of `punctuated-meta`:
 * {{{
 *   node covering inputs 0 and 1     inputs-0-1-mjoin-rows
 * }}}
 *
 * The multi-way join numbers its namespaces on its own (it never shares an operator id with
 * a binary join: a checkpoint of one cannot be continued by the other).
 *
 * Example: `MultiJoinLayout.of(2) == MultiJoinLayout("input2-mjoin-rows", 6, 7, 8)`.
 *
 * @param rowsStore    the store of the input's rows ([[MultiJoinState]])
 * @param wholeKey     namespace of its held punctuations that bind every class of its key
 * @param partialKey   namespace of its held punctuations that bind some of its classes
 * @param closedValues namespace of its closed-values summaries ([[punctuated.state.ClosedKeys]])
 */
final case class MultiJoinLayout(rowsStore: String, wholeKey: Int, partialKey: Int, closedValues: Int)

object MultiJoinLayout {
  /** The layout of input `number` (0 .. n-1). */
  def of(number: Int): MultiJoinLayout = {
    require(number >= 0, s"input number $number")
    MultiJoinLayout(s"input$number-mjoin-rows", 3 * number, 3 * number + 1, 3 * number + 2)
  }

  /** The stores of a multi-way join of `inputs` inputs: each input's rows, then `punctuated-meta`. */
  def storeNames(inputs: Int): Seq[String] = (0 until inputs).map(of(_).rowsStore) :+ StoreNamespace.StoreName

  /**
   * The stores of a multi-way join running `plan`: each input's rows, each intermediate
   * node's rows (bottom-up), then `punctuated-meta`. For the MJoin, [[storeNames]].
   */
  def storeNames(plan: MultiJoinPlan.Join): Seq[String] = {
    val n = plan.inputs.size
    ((0 until n).map(of(_).rowsStore) ++ MultiJoinPlan.intermediates(plan).map(j => node(j.inputs))) :+
      StoreNamespace.StoreName
  }

  /**
   * The stores of a multi-way join whose checkpoint has the rows stores of the nodes
   * `nodeStores` (each by the inputs it covers: those of the plan of its first batch, which
   * stay open under every later plan, see [[MultiJoinMigration]]): each input's rows, those
   * nodes' rows, then `punctuated-meta`.
   */
  def storeNames(inputs: Int, nodeStores: Seq[Seq[Int]]): Seq[String] =
    ((0 until inputs).map(of(_).rowsStore) ++ nodeStores.map(node)) :+ StoreNamespace.StoreName

  /**
   * The namespace of `punctuated-meta` keeping the rows of a node covering `inputs` that has
   * no rows store of its own (a node of a plan migrated to: [[MultiJoinMigration]]), laid out
   * as a rows store: `nodeNamespace(Seq(0, 1)) == (1 << 20) + 3` (the inputs as a bit mask,
   * above every input's namespaces).
   */
  def nodeNamespace(inputs: Seq[Int]): Int = (1 << 20) + inputs.map(1 << _).sum

  /**
   * The namespace of `punctuated-meta` keeping a node's completion state while a plan
   * migration leaves it incomplete ([[MultiJoinCompletion]]): its marks, pending values and
   * status. `marksNamespace(Seq(0, 1)) == (1 << 21) + 3`.
   */
  def marksNamespace(inputs: Seq[Int]): Int = (1 << 21) + inputs.map(1 << _).sum

  /**
   * The namespace of `punctuated-meta` where, while a `parallel_track` migration runs the old
   * plan beside the new one ([[ParallelTrack]]), the new plan keeps its own rows of the unit
   * covering `inputs` (new rows only): an input's shadow (one input) or a copy of a node both
   * plans have, laid out as a rows store. `parallelNamespace(Seq(1)) == (1 << 22) + 2`.
   */
  def parallelNamespace(inputs: Seq[Int]): Int = (1 << 22) + inputs.map(1 << _).sum

  /**
   * The namespace of `punctuated-meta` with a `parallel_track` migration's status in a cell
   * ([[ParallelTrack]]): key 0 -> (switch batch, old plan as JSON); the next namespace holds
   * the old rows left per input (key i -> count).
   */
  val parallelStatus: Int = 1 << 23

  /**
   * The namespace of `punctuated-meta` with input `number`'s distinct-value counters in a cell
   * ([[MultiJoinState.distinctValuesOf]]): key c (a class of the input) -> the distinct values
   * of c among its stored rows; key -1 -> present once the counters are exact.
   * `distinctNamespace(2) == (1 << 24) + 2`.
   */
  def distinctNamespace(number: Int): Int = (1 << 24) + number

  /**
   * The namespace of `punctuated-meta` with load shedding's frequency estimator of input
   * `number`'s values of class `c` in a cell ([[MultiJoinShedder]]; above the binary join's
   * `(1 << 25) + i`): `sheddingNamespace(1, 2) == (1 << 26) + 258`.
   */
  def sheddingNamespace(number: Int, c: Int): Int = (1 << 26) + (number << 8) + c

  /**
   * The namespace of `punctuated-meta` with load shedding's row count of the unit covering
   * `inputs` (an input, or a node) in a cell, as of the batch that wrote it
   * ([[MultiJoinShedder]]): `sheddingCounts(Seq(0, 1)) == (1 << 27) + 3`.
   */
  def sheddingCounts(inputs: Seq[Int]): Int = (1 << 27) + inputs.map(1 << _).sum

  /**
   * The namespace of `punctuated-meta` with input `number`'s range index in a cell: its
   * distinct stored keys listed by the other inputs' range schemes on its classes
   * ([[punctuated.join.RangeIndex]]), so that a range punctuation (`v<=7`) finds the keys it
   * can make purgeable by look-ups; the next namespace holds the index's entry count.
   * `rangeIndexNamespace(2) == (1 << 28) + 4`.
   */
  def rangeIndexNamespace(number: Int): Int = (1 << 28) + 2 * number

  private val NodePrefix = "inputs-"
  private val RowsSuffix = "-mjoin-rows"

  /** The rows store of an intermediate node covering `inputs`: `node(Seq(0, 1)) == "inputs-0-1-mjoin-rows"`. */
  def node(inputs: Seq[Int]): String = {
    require(inputs.size >= 2, s"a node covers two or more inputs: $inputs")
    inputs.sorted.mkString(NodePrefix, "-", RowsSuffix)
  }

  /** The inputs a node's rows store covers (None: not a node's store): the inverse of [[node]]. */
  def nodeInputs(store: String): Option[Seq[Int]] =
    if (!store.startsWith(NodePrefix) || !store.endsWith(RowsSuffix)) None
    else {
      val parts = store.stripPrefix(NodePrefix).stripSuffix(RowsSuffix).split('-').toSeq
      val numbers = parts.flatMap(_.toIntOption)
      if (numbers.size == parts.size && numbers.size >= 2 && store == node(numbers)) Some(numbers) else None
    }

  /**
   * The key of every rows store: one entry per stored row and class of the input, the class
   * value as the bytes of a one-field UnsafeRow, `slot` 0 .. n-1 over that value's n rows.
   */
  val RowKeySchema: StructType = new StructType()
    .add("class", IntegerType, nullable = false)
    .add("value", BinaryType, nullable = false)
    .add("slot", LongType, nullable = false)
}
