package punctuated.compat

import org.apache.spark.sql.AnalysisException

/**
 * An [[AnalysisException]] with an error class and an SQLSTATE of its own (Spark 4.1 and
 * later take the SQLSTATE as a constructor argument; 4.0 does not: `jvm/src/main/scala-spark-4.0`).
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
    messageParameters = messageParameters,
    sqlState = Some(sqlState))
