package punctuated.compat

import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.types.{StructField, StructType}

/**
 * A connector table that declares its `columns()` only. Spark 4.0's `Table.schema()` has no
 * default (4.1 derives it from `columns()`, and there `TableCompat` is `Table`), so on 4.0 it
 * is derived here the same way.
 */
trait TableCompat extends Table {
  override def schema(): StructType =
    StructType(columns().map(c => StructField(c.name, c.dataType, c.nullable)))
}
