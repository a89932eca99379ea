package punctuated.join

import org.apache.spark.sql.execution.streaming.operators.stateful.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}

/** The custom metrics of the contract ("Metrics"), shown in `lastProgress` and the UI. */
object PunctuatedJoinMetrics {
  val PunctuationsReceived = "numPunctuationsReceived"
  val RowsPurged = "numRowsPurged"
  val PunctuationsHeld = "numPunctuationsHeld"
  val LateRowsDropped = "numLateRowsDropped"
  val InvalidPunctuationsDropped = "numInvalidPunctuationsDropped"
  val StateRowsScanned = "numStateRowsScanned"
  val ClosedValuesRemembered = "numClosedValuesRemembered"
  val ClosedValuesForgotten = "numClosedValuesForgotten"
  val RangeIndexEntries = "numRangeIndexEntries"

  val all: Seq[StatefulOperatorCustomMetric] = Seq(
    StatefulOperatorCustomSumMetric(PunctuationsReceived, "number of punctuations received"),
    StatefulOperatorCustomSumMetric(RowsPurged, "number of rows purged by punctuations"),
    StatefulOperatorCustomSumMetric(PunctuationsHeld, "number of punctuations held"),
    StatefulOperatorCustomSumMetric(LateRowsDropped, "number of late rows dropped"),
    StatefulOperatorCustomSumMetric(InvalidPunctuationsDropped, "number of invalid punctuations dropped"),
    StatefulOperatorCustomSumMetric(StateRowsScanned, "number of stored rows read by purges"),
    StatefulOperatorCustomSumMetric(ClosedValuesRemembered, "number of closed-value entries remembered for late rows"),
    StatefulOperatorCustomSumMetric(ClosedValuesForgotten, "number of closed-value entries forgotten (over the limit)"),
    StatefulOperatorCustomSumMetric(RangeIndexEntries, "number of range-index entries (join keys per indexed scheme)"))
}

/** Runs once after the wrapped iterator is exhausted. */
private[join] class CompletingIterator[T](it: Iterator[T], onComplete: () => Unit) extends Iterator[T] {
  private var done = false
  override def hasNext: Boolean = {
    val more = it.hasNext
    if (!more && !done) { done = true; onComplete() }
    more
  }
  override def next(): T = it.next()
}

