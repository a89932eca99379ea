package punctuated.join.multi

import org.apache.spark.ShuffleDependency
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.{Partitioning, UnknownPartitioning}
import org.apache.spark.sql.execution.{ShuffledRowRDD, SparkPlan, UnaryExecNode, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.{SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.sql.types.DataType
import org.apache.spark.util.MutablePair

import punctuated.input.PunctuationReplicatingExchangeExec

/**
 * The shuffle below one input of a multi-way join: sends each row to the cells of the
 * [[Hypercube]] it belongs to (a data row: every cell agreeing with its class values; a
 * punctuation: every cell agreeing with the classes it binds). It replaces Spark's exchanges
 * below the group's joins, which partition each join's inputs by that join's key only.
 *
 * {{{
 *   input b(k, v) of a(k) ⋈ b(k, v) ⋈ c(v), shares (k: 2, v: 2)
 *     row (k = 7, v = 3)              -> cell (h(7), h'(3))              1 copy
 *     punctuation (k = 7, v = NULL)   -> cells (h(7), 0), (h(7), 1)      2 copies
 *     row of b whose unique key is k  -> its own cell, and every cell (h(7), *) for the
 *                                        punctuation its key implies     2 copies
 *     invalid or non-purging punctuation -> cell 0                         1 copy
 * }}}
 *
 * The operator's task knows which copy is a row's own (its *home* cell: the one agreeing on
 * every class of the row) and which only carries its implied punctuation.
 *
 * Metrics: `numInputRows` (rows read) and `numRoutedRows` (copies sent): their ratio is the
 * input's replication factor (one class: 1).
 *
 * @param input      the input (its declaration, key columns and their classes)
 * @param classTypes the data type of each attribute class
 * @param shares     the hypercube's shares
 * @param child      the input's plan
 */
case class MultiJoinExchangeExec(
    input: MultiJoinInputSpec,
    classTypes: Seq[DataType],
    shares: Seq[Int],
    child: SparkPlan) extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output
  override def outputPartitioning: Partitioning = UnknownPartitioning(shares.product)
  override def nodeName: String = "MultiJoinExchange"

  private lazy val writeMetrics = SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  private lazy val readMetrics = SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  override lazy val metrics = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "numInputRows" -> SQLMetrics.createMetric(sparkContext, "number of input rows"),
    "numRoutedRows" -> SQLMetrics.createMetric(sparkContext, "number of rows sent to cells")
  ) ++ readMetrics ++ writeMetrics

  protected override def doExecute(): RDD[InternalRow] = {
    val cube = Hypercube(shares.toIndexedSeq)
    val n = cube.numCells
    val in = input
    val types = classTypes
    val (read, routed) = (longMetric("numInputRows"), longMetric("numRoutedRows"))
    val copy = !PunctuationReplicatingExchangeExec.serializesAtOnce(n)
    val output = child.output
    val rows = child.execute().mapPartitions { iter =>
      val route = new MultiJoinExchangeExec.Router(in, types, cube, output)
      val pair = new MutablePair[Int, InternalRow]()
      def record(p: Int, row: InternalRow): Product2[Int, InternalRow] =
        if (copy) (p, row.copy()) else pair.update(p, row)
      iter.flatMap { row =>
        val cells = route(row)
        read += 1
        routed += cells.size
        cells.iterator.map(record(_, row))
      }
    }
    val dependency = new ShuffleDependency[Int, InternalRow, InternalRow](
      rows, new PunctuationReplicatingExchangeExec.PartitionIdPassthrough(n),
      new UnsafeRowSerializer(child.output.size, longMetric("dataSize")),
      shuffleWriterProcessor = ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics))
    new ShuffledRowRDD(dependency, readMetrics)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}

object MultiJoinExchangeExec {

  /**
   * Which of an input's key positions a row pins (the cells it goes to are those agreeing with
   * it there; the shares do not matter): a data row pins all of them — a row of a unique key
   * narrower than the input's classes pins the key only, as it also carries the punctuation its
   * key implies to every cell agreeing on the key (its home cell among them); a punctuation
   * pins the positions its scheme binds; `None`: cell 0 alone (a valid punctuation that purges
   * nothing, or an invalid one). [[MultiJoinShareWeights]] counts rows by it to weigh the shares.
   *
   * Example: b(k, v) with a unique key on k: row (7, 3) pins Seq(0); a punctuation (k = 7,
   * v = NULL) of scheme `k` pins Seq(0); without the unique key the row pins Seq(0, 1).
   */
  final class Pins(input: MultiJoinInputSpec) extends (InternalRow => Option[Seq[Int]]) {
    private val all: Option[Seq[Int]] = Some(input.classes.indices)
    private val unique: Option[Option[Seq[Int]]] =
      input.spec.unique.map(_.constants.toSeq).filter(_.size < input.classes.size).map(Some(_))

    def apply(row: InternalRow): Option[Seq[Int]] =
      if (input.spec.isPunctuation(row)) {
        input.spec.schemeOf(row) match {
          case Some(Some(scheme)) => Some(scheme.constants.toSeq)
          case _ => None
        }
      } else unique.getOrElse(all)
  }

  /**
   * Where one input's rows go, and which copy is a data row's home (one per task: it reuses
   * rows). Also used by the operator's task to tell a row's home copy from the copies that only
   * carry its unique key's implied punctuation.
   */
  final class Router(input: MultiJoinInputSpec, classTypes: Seq[DataType], cube: Hypercube,
      output: Seq[Attribute]) {
    private val keyProj = UnsafeProjection.create(input.keys, output)
    private val coordinate = input.classes.map(c => Hypercube.coordinate(cube.shares(c), classTypes(c)))
    // typed readers (a generic `get(i, type)` looks the type up per call)
    private val keyGetters = input.keys.map(k => InternalRow.getAccessor(k.dataType, nullable = true)).toArray

    /** The coordinate of each of the input's classes (class -> coordinate) for these key positions. */
    def coordinatesOf(row: InternalRow, positions: Seq[Int]): Map[Int, Int] = {
      val key = keyProj(row)
      val out = Map.newBuilder[Int, Int]
      positions.foreach(p => out += input.classes(p) -> coordinate(p)(keyGetters(p)(key, p)))
      out.result()
    }

    private val allPositions = input.classes.indices
    private val pins = new MultiJoinExchangeExec.Pins(input)

    /** The cells a row goes to: every cell agreeing with it on the key positions it pins. */
    def apply(row: InternalRow): Seq[Int] = pins(row) match {
      case Some(positions) => cube.cellsAgreeing(coordinatesOf(row, positions))
      case None => Seq(0)
    }

    /** Is `cell` the home of this data row (the cell agreeing with it on all its classes)? */
    def isHome(row: InternalRow, cellCoordinates: IndexedSeq[Int]): Boolean =
      coordinatesOf(row, allPositions).forall { case (c, x) => cellCoordinates(c) == x }
  }
}
