package punctuated.spark

import org.apache.spark.sql.SparkSessionExtensions

class PunctuatedExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = ()
}
