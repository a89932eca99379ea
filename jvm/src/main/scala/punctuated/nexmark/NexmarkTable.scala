package punctuated.nexmark

import java.util

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.connector.catalog.{Column, SupportsRead, TableCapability}
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import punctuated.compat.TableCompat

/**
 * One NEXMark stream. With `punctuations=true` (and `declare`, the default) its table
 * properties carry its punctuation declaration, so Punctuated's rules see it without a
 * `with_schemes` call.
 */
final class NexmarkTable(val config: NexmarkConfig) extends TableCompat with SupportsRead {

  override def name(): String = s"nexmark.${config.table.name}"

  override def columns(): Array[Column] =
    NexmarkSchemas.schema(config).fields.map(f => Column.create(f.name, f.dataType, f.nullable))

  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(TableCapability.MICRO_BATCH_READ)

  override def properties(): util.Map[String, String] =
    (if (config.punctuations && config.declare) NexmarkSchemas.declaration(config)
     else Map.empty[String, String]).asJava

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new Scan {
    override def readSchema(): StructType = NexmarkSchemas.schema(config)
    override def description(): String = s"nexmark ${config.table.name}"
    override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream =
      new NexmarkMicroBatchStream(config)
  }
}
