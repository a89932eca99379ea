package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf

/**
 * A suite on RocksDB state stores: mixed into a suite's `...RocksDBSuite` subclass, it runs
 * every test of the suite again with Spark's RocksDB state store provider (the suite itself
 * runs on the default HDFS-backed one):
 *
 * {{{
 *   class PunctuatedJoinRocksDBSuite extends PunctuatedJoinSuite with OnRocksDB
 * }}}
 */
trait OnRocksDB extends PunctuatedStreamTest {
  override protected def sparkConf: SparkConf = OnRocksDB.conf(super.sparkConf)
}

object OnRocksDB {
  val Provider = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

  /** `conf` with Spark's RocksDB state store provider. */
  def conf(conf: SparkConf): SparkConf = conf.set(SQLConf.STATE_STORE_PROVIDER_CLASS.key, Provider)
}
