package punctuated.input

import org.apache.spark.{Partitioner, ShuffleDependency, SparkEnv}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BindReferences, Expression, InterpretedUnsafeProjection, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, Partitioning}
import org.apache.spark.sql.execution.{ShuffledRowRDD, SparkPlan, UnaryExecNode, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.util.MutablePair

/**
 * The shuffle below a punctuated operator whose punctuations may concern every partition: a
 * join input's schemes with a range (`seller<=`: "no more auctions by sellers up to 1041") or
 * fixing a prefix of the join key, an aggregation's range schemes (`hour<=`). It replaces
 * Spark's own `ShuffleExchangeExec(HashPartitioning(keys, n))` there (same partitioning
 * object):
 *
 * {{{
 *        input partitions                          operator partitions (n = 3)
 *   row (seller=1017, ...)        --hash-->        [p1]                 as Spark's exchange
 *   punctuation (seller<=1041)    --every-->       [p0] [p1] [p2]       one copy each
 *   punctuation (id=1017), whole key --hash-->     [p1]                 as a data row
 * }}}
 *
 * A data row, and a punctuation of a scheme fixing the whole key, goes to the partition
 * Spark's hash partitioning names, so the state of a key stays where it has always been; a
 * row that [[PartitionWideRows]] calls partition-wide goes to every partition. Each operator
 * partition thus reads, in the same micro-batch and the same stage, every punctuation that
 * can purge its state (Tucker et al. 2003, §5: a punctuation must reach the state it
 * matches), without a job that gathers them first. The operator's task recognises the *home*
 * copy (the one the hash names, [[PunctuationReplicatingExchangeExec.partitionOf]]) to apply
 * whatever else the row carries (its data, when a partial aggregation merged it with data
 * of the same group; its whole-key meaning) and to count it once.
 *
 * @param partitioning the hash partitioning of Spark's exchange it replaces
 * @param wide         which rows go to every partition
 * @param child        the input below the shuffle (transient: the operators above ship this node
 *                     with their tasks — Spark's aggregation refers to itself from its generated
 *                     code — and its child would carry the whole plan below to every task)
 */
case class PunctuationReplicatingExchangeExec(
    partitioning: HashPartitioning,
    wide: PartitionWideRows,
    @transient child: SparkPlan) extends UnaryExecNode {

  // kept on the driver: operators above may ask for it in their tasks, which get no child
  private val childOutput = child.output
  override def output: Seq[Attribute] = childOutput
  override def outputPartitioning: Partitioning = partitioning
  override def nodeName: String = "PunctuationReplicatingExchange"

  private lazy val writeMetrics = SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  private lazy val readMetrics = SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  override lazy val metrics = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "numReplicatedPunctuations" -> SQLMetrics.createMetric(sparkContext, "number of punctuation copies")
  ) ++ readMetrics ++ writeMetrics

  protected override def doExecute(): RDD[InternalRow] = {
    val n = partitioning.numPartitions
    val target = PunctuationReplicatingExchangeExec.partitionOf(partitioning, child.output)
    val partitionWide = wide
    val copies = longMetric("numReplicatedPunctuations")
    // as Spark's exchange: rows are copied only for a shuffle writer that keeps them
    val copy = !PunctuationReplicatingExchangeExec.serializesAtOnce(n)
    val rows = child.execute().mapPartitions { iter =>
      new PunctuationReplicatingExchangeExec.Routed(iter, n, target(), partitionWide, copies, copy)
    }
    val dependency = new ShuffleDependency[Int, InternalRow, InternalRow](
      rows, new PunctuationReplicatingExchangeExec.PartitionIdPassthrough(n),
      new UnsafeRowSerializer(child.output.size, longMetric("dataSize")),
      shuffleWriterProcessor = ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics))
    new ShuffledRowRDD(dependency, readMetrics)
  }

  override protected def withNewChildInternal(newChild: SparkPlan): SparkPlan = copy(child = newChild)
}

object PunctuationReplicatingExchangeExec {

  /** A factory (per task) of the partition Spark's hash partitioning gives a row. */
  def partitionOf(partitioning: HashPartitioning, output: Seq[Attribute]): () => InternalRow => Int = {
    val expr: Expression = partitioning.partitionIdExpression
    () => {
      val proj = UnsafeProjection.create(Seq(expr), output)
      row => proj(row).getInt(0)
    }
  }

  /**
   * [[partitionOf]] for the few rows a task asks about (the copies of partition-wide
   * punctuations it receives): the expression interpreted, so that the task does not generate
   * a projection for a handful of rows.
   */
  def homeOf(partitioning: HashPartitioning, output: Seq[Attribute]): InternalRow => Int = {
    val proj = InterpretedUnsafeProjection.createProjection(
      Seq(BindReferences.bindReference(partitioning.partitionIdExpression, output)))
    row => proj(row).getInt(0)
  }

  /**
   * Does the shuffle writer serialize each record as it is written (Spark's sort-based shuffle
   * below 2^24 partitions: `ShuffleExchangeExec.needToCopyObjectsBeforeShuffle`)? Then rows
   * need no copy.
   */
  def serializesAtOnce(numPartitions: Int): Boolean = {
    val manager = SparkEnv.get.conf.get("spark.shuffle.manager", "sort").toLowerCase(java.util.Locale.ROOT)
    Set("sort", "tungsten-sort", "org.apache.spark.shuffle.sort.sortshufflemanager").contains(manager) &&
      numPartitions <= (1 << 24)
  }

  /**
   * The shuffle's records of one input partition: each row once, to the partition `partitionOf`
   * names, or `n` times (partitions 0 to n - 1) when `wide` calls it partition-wide; no object
   * per row (Spark's exchange reuses one pair the same way when the writer serializes each
   * record at once, else `copy` copies the row).
   *
   * {{{
   *   rows r1 (hash 1), p (partition-wide), r2 (hash 0), n = 2  ->  (1, r1), (0, p), (1, p), (0, r2)
   * }}}
   */
  final class Routed(
      rows: Iterator[InternalRow],
      n: Int,
      partitionOf: InternalRow => Int,
      wide: PartitionWideRows,
      copies: SQLMetric,
      copy: Boolean) extends Iterator[Product2[Int, InternalRow]] {
    private val pair = new MutablePair[Int, InternalRow]()
    // a partition-wide row whose copies are not all sent yet, and the next copy's partition
    private var replicated: InternalRow = null
    private var nextCopy = 0

    override def hasNext: Boolean = replicated != null || rows.hasNext

    override def next(): Product2[Int, InternalRow] = {
      if (replicated != null) {
        val row = replicated
        val p = nextCopy
        nextCopy += 1
        if (nextCopy == n) replicated = null
        record(p, row)
      } else {
        val row = rows.next()
        if (wide.isPartitionWide(row)) {
          copies += n
          if (n > 1) { replicated = row; nextCopy = 1 }
          record(0, row)
        } else record(partitionOf(row), row)
      }
    }

    private def record(p: Int, row: InternalRow): Product2[Int, InternalRow] =
      if (copy) (p, row.copy()) else pair.update(p, row)
  }

  /** Sends a record to the partition its key names (the key is the partition id). */
  final class PartitionIdPassthrough(override val numPartitions: Int) extends Partitioner {
    override def getPartition(key: Any): Int = key.asInstanceOf[Int]
  }
}

/**
 * Which rows of an input a [[PunctuationReplicatingExchangeExec]] sends to every partition:
 * the punctuations whose match is not confined to one partition's keys.
 */
trait PartitionWideRows extends Serializable {
  def isPartitionWide(row: InternalRow): Boolean
}
