package punctuated.join

import org.apache.spark.{Partitioner, ShuffleDependency, SparkEnv}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, Partitioning}
import org.apache.spark.sql.execution.{ShuffledRowRDD, SparkPlan, UnaryExecNode, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.execution.metric.{SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.util.MutablePair

import punctuated.input.InputSpec

/**
 * The shuffle below an input of [[PunctuatedSymmetricHashJoinExec]] whose punctuations may
 * concern every partition: schemes with a range (`seller<=`: "no more auctions by sellers up
 * to 1041") or fixing a prefix of the join key. It replaces Spark's own
 * `ShuffleExchangeExec(HashPartitioning(keys, n))` there (same partitioning object):
 *
 * {{{
 *        input partitions                          join partitions (n = 3)
 *   row (seller=1017, ...)        --hash-->        [p1]                 as Spark's exchange
 *   punctuation (seller<=1041)    --every-->       [p0] [p1] [p2]       one copy each
 *   punctuation (id=1017), whole key --hash-->     [p1]                 as a data row
 * }}}
 *
 * A data row, and a punctuation of a scheme fixing the whole key, goes to the partition
 * Spark's hash partitioning names, so the state of a key stays where it has always been; a
 * punctuation row of a partition-wide scheme goes to every partition. Each join partition
 * thus reads, in the same micro-batch and the same stage, every punctuation that can purge its
 * state (Tucker et al. 2003, §5: a punctuation must reach the state it matches), without a
 * job that gathers them first. The join's task recognises its *home* copy (the one the hash
 * names) to apply the row's whole-key meaning and count it once.
 *
 * @param partitioning the hash partitioning of Spark's exchange it replaces
 * @param spec         the input's declaration (which rows are punctuations, of what scheme)
 * @param keyLength    number of join-key columns (a scheme fixing all of them is not replicated)
 * @param child        the input below the shuffle
 * @param bandScheme   the index of the input's range scheme on a join's time band column
 *                     ([[TimeBand.schemes]]): its punctuations go to every partition too
 */
case class PunctuationReplicatingExchangeExec(
    partitioning: HashPartitioning,
    spec: InputSpec,
    keyLength: Int,
    child: SparkPlan,
    bandScheme: Option[Int] = None) extends UnaryExecNode {

  override def output: Seq[Attribute] = child.output
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
    val (inputSpec, keys, onBand) = (spec, keyLength, bandScheme)
    val copies = longMetric("numReplicatedPunctuations")
    // as Spark's exchange: rows are copied only for a shuffle writer that keeps them
    val copy = !PunctuationReplicatingExchangeExec.serializesAtOnce(n)
    val rows = child.execute().mapPartitions { iter =>
      val partitionOf = target()
      val pair = new MutablePair[Int, InternalRow]()
      def record(p: Int, row: InternalRow): Product2[Int, InternalRow] =
        if (copy) (p, row.copy()) else pair.update(p, row)
      iter.flatMap { row =>
        if (PunctuationReplicatingExchangeExec.isPartitionWide(inputSpec, keys, row, onBand)) {
          copies += n
          Iterator.tabulate(n)(p => record(p, row))
        } else Iterator.single(record(partitionOf(row), row))
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
   * Does the shuffle writer serialize each record as it is written (Spark's sort-based shuffle
   * below 2^24 partitions: `ShuffleExchangeExec.needToCopyObjectsBeforeShuffle`)? Then rows
   * need no copy.
   */
  def serializesAtOnce(numPartitions: Int): Boolean = {
    val manager = SparkEnv.get.conf.get("spark.shuffle.manager", "sort").toLowerCase(java.util.Locale.ROOT)
    Set("sort", "tungsten-sort", "org.apache.spark.shuffle.sort.sortshufflemanager").contains(manager) &&
      numPartitions <= (1 << 24)
  }

  /** Is this row a punctuation of a scheme that does not fix the whole join key? */
  def isPartitionWide(spec: InputSpec, keyLength: Int, row: InternalRow,
      bandScheme: Option[Int] = None): Boolean =
    spec.isPunctuation(row) && (spec.schemeOf(row).flatten.exists(!_.isWholeKey(keyLength)) ||
      bandScheme.exists(_ == TimeBandJoin.schemeIndex(spec, row)))

  /** Sends a record to the partition its key names (the key is the partition id). */
  final class PartitionIdPassthrough(override val numPartitions: Int) extends Partitioner {
    override def getPartition(key: Any): Int = key.asInstanceOf[Int]
  }
}
