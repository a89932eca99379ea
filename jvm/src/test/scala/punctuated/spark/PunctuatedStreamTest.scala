package punctuated.spark

import org.apache.spark.SparkConf
import org.apache.spark.sql.streaming.StreamTest

/**
 * Base of the extension's streaming suites: Spark's own streaming test kit (`testStream`,
 * `MemoryStream`, `AddData`, `CheckNewAnswer`, `StopStream`, `StartStream` ...) on a local
 * session that loads the extension exactly as users do, through `spark.sql.extensions`.
 */
trait PunctuatedStreamTest extends StreamTest {
  override protected def sparkConf: SparkConf = super.sparkConf
    .set("spark.sql.extensions", classOf[PunctuatedExtensions].getName)
    .set("spark.sql.shuffle.partitions", "2")
    .set("spark.sql.warehouse.dir", warehouse.getCanonicalPath)

  private lazy val warehouse = java.nio.file.Files.createTempDirectory("punctuated-warehouse").toFile

  /** Creates a parquet catalog table and drops it after `body`. */
  protected def withDeclaredTable(name: String, columns: String, properties: Map[String, String])(
      body: => Unit): Unit = {
    val props =
      if (properties.isEmpty) ""
      else properties.map { case (k, v) => s"'$k' = '$v'" }.mkString(" TBLPROPERTIES (", ", ", ")")
    sql(s"CREATE TABLE $name ($columns) USING parquet$props")
    try body finally sql(s"DROP TABLE IF EXISTS $name")
  }
}
