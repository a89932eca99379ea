package punctuated.compat

import org.apache.spark.sql.AnalysisException

/**
 * An [[AnalysisException]] with an error class and an SQLSTATE of its own. Spark 4.0's
 * AnalysisException takes no SQLSTATE (4.1 added it: `jvm/src/main/scala-spark-4.1+`), so on
 * 4.0 the SQLSTATE is only what the subclass's `getSqlState` returns.
 */
abstract class AnalysisExceptionCompat(
    message: String,
    cause: Option[Throwable],
    errorClass: String,
    messageParameters: Map[String, String],
    sqlState: String)
  extends AnalysisException(
    message = message,
    cause = cause,
    errorClass = Some(errorClass),
    messageParameters = messageParameters)
