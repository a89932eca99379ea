package punctuated.compat

import org.apache.spark.sql.SparkSessionExtensions

/**
 * SQL that Spark 4.1 reads and 4.0 does not (`FROM STREAM(t)`; the 4.0 side,
 * `jvm/src/main/scala-spark-4.0`, adds a rule for it): on 4.1 and later nothing to add.
 */
object SqlCompat {
  def inject(extensions: SparkSessionExtensions): Unit = ()
}
