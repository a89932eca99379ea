package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf
import org.scalactic.source
import org.scalatest.Tag

/**
 * A suite on RocksDB state stores: mixed into a suite's `...RocksDBSuite` subclass, it runs
 * the suite's tests again with Spark's RocksDB state store provider (the suite itself runs on
 * the default HDFS-backed one), all but those tagged [[NotOnRocksDB]]. A subclass may also
 * run fewer of the suite's runs (its partition counts, seeds, budgets: a `protected def` of
 * the suite).
 *
 * {{{
 *   class PunctuatedJoinRocksDBSuite extends PunctuatedJoinSuite with OnRocksDB
 * }}}
 */
trait OnRocksDB extends PunctuatedStreamTest {
  override protected def sparkConf: SparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit pos: source.Position): Unit =
    if (OnRocksDB.allTests || !testTags.contains(NotOnRocksDB)) {
      super.test(testName, testTags: _*)(testFun)(pos)
    }
}

object OnRocksDB {
  /** `PUNCTUATED_ROCKSDB_ALL_TESTS=1 scripts/sbt test`: the tests tagged [[NotOnRocksDB]] too. */
  def allTests: Boolean = sys.env.contains("PUNCTUATED_ROCKSDB_ALL_TESTS")
}

/**
 * A test its suite's RocksDB variant ([[OnRocksDB]]) skips, for CI's time
 * (benchmarks/results/ci_time.md): what it checks does not depend on the state store provider
 * (a plan, an error, a metric's meaning), or the variant's untagged tests put the same operator
 * through the provider's whole cycle (stores, purges, restarts from the checkpoint, the batch
 * answer). An untagged test runs on both providers; `PUNCTUATED_ROCKSDB_ALL_TESTS=1` runs the
 * tagged ones on RocksDB too.
 *
 * {{{
 *   test("grouping columns no scheme closes: start() fails in strict mode", NotOnRocksDB) { ... }
 * }}}
 */
object NotOnRocksDB extends Tag("punctuated.NotOnRocksDB")
