package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf
import org.scalactic.source
import org.scalatest.Tag

/**
 * A suite on RocksDB state stores: mixed into a suite's `...RocksDBSuite` subclass, it runs
 * the suite's tests again with Spark's RocksDB state store provider (the suite itself runs on
 * the default HDFS-backed one); a subclass may run a subset of the suite's runs, or of its tests
 * ([[onRocksDB]]).
 *
 * {{{
 *   class PunctuatedJoinRocksDBSuite extends PunctuatedJoinSuite with OnRocksDB
 * }}}
 */
trait OnRocksDB extends PunctuatedStreamTest {
  override protected def sparkConf: SparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")

  /**
   * Whether the suite's test `name` runs on RocksDB too (every test by default). A suite whose
   * other tests repeat a case on more partition counts, or check what does not depend on the
   * state store (a plan's choice, an error), keeps the tests that store, purge and restart from
   * the checkpoint: what the provider does differently. (The suites must fit CI's time:
   * benchmarks/results/ci_time.md.) `PUNCTUATED_ROCKSDB_ALL_TESTS=1 scripts/sbt test` runs
   * every test on RocksDB anyway.
   */
  protected def onRocksDB(name: String): Boolean = true

  /**
   * For [[onRocksDB]]: the tests whose names say they restart from a checkpoint or compare a
   * run with the batch answer (random interleavings, a seed): the state store's whole cycle of
   * puts, purges, commits and reloads.
   */
  protected def restartsOrBatchAnswers(name: String): Boolean = OnRocksDB.RestartsOrBatchAnswers.findFirstIn(name).isDefined

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit pos: source.Position): Unit =
    if (sys.env.contains("PUNCTUATED_ROCKSDB_ALL_TESTS") || onRocksDB(testName)) {
      super.test(testName, testTags: _*)(testFun)(pos)
    }
}

object OnRocksDB {
  /** Test names of [[OnRocksDB.restartsOrBatchAnswers]]. */
  val RestartsOrBatchAnswers: scala.util.matching.Regex =
    "(?i)restart|checkpoint|random|seed|batch answer|batch join|exactly once".r
}
