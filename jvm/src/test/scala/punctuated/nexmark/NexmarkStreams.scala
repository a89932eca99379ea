package punctuated.nexmark

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}

/** Helpers of the `nexmark` source's suites. */
object NexmarkStreams {
  /** Runs a bounded stream to its end; its rows by micro-batch (as the session's settings emit them). */
  def batches(df: DataFrame): Map[Long, Seq[Row]] = {
    val batches = new ConcurrentHashMap[Long, Seq[Row]]()
    val q = df.writeStream.foreachBatch { (b: DataFrame, id: Long) =>
      batches.put(id, b.collect().toSeq)
      ()
    }.start()
    try q.processAllAvailable() finally q.stop()
    batches.asScala.toMap
  }
}
