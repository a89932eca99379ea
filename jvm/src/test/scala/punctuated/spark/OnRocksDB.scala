package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf

/**
 * A suite on RocksDB state stores: mixed into a suite's `...RocksDBSuite` subclass, it runs
 * the suite's tests again with Spark's RocksDB state store provider (the suite itself runs on
 * the default HDFS-backed one); a subclass may run a subset of the suite's runs.
 *
 * {{{
 *   class PunctuatedJoinRocksDBSuite extends PunctuatedJoinSuite with OnRocksDB
 * }}}
 */
trait OnRocksDB extends PunctuatedStreamTest {
  override protected def sparkConf: SparkConf = super.sparkConf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key,
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
}
