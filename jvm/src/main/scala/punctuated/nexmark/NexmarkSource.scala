package punctuated.nexmark

import java.util

import org.apache.spark.sql.connector.catalog.{Table, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A NEXMark source for Structured Streaming: `spark.readStream.format("nexmark")
 * .option("table", "bid").load()` reads the bids (or `person`, `auction`) of a deterministic
 * NEXMark event sequence (Tucker, Tufte, Papadimos, Maier, "NEXMark – A Benchmark for
 * Queries over Data Streams"), generated as the reference generator of Apache Beam's
 * `sdks/java/testing/nexmark` does, with optional punctuations. Options, schemas and the
 * deviations from the reference: `docs/nexmark.md`.
 */
final class NexmarkSource extends TableProvider with DataSourceRegister {

  override def shortName(): String = "nexmark"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    NexmarkSchemas.schema(NexmarkConfig(options))

  override def getTable(schema: StructType, partitioning: Array[Transform],
      properties: util.Map[String, String]): Table =
    new NexmarkTable(NexmarkConfig(new CaseInsensitiveStringMap(properties)))
}
