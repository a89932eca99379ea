package punctuated.state

import punctuated.compat.{StatefulOperatorCustomMetric, StatefulOperatorCustomSumMetric}

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
  val TimeIndexBuckets = "numTimeIndexBuckets"

  val all: Seq[StatefulOperatorCustomMetric] = Seq(
    StatefulOperatorCustomSumMetric(PunctuationsReceived, "number of punctuations received"),
    StatefulOperatorCustomSumMetric(RowsPurged, "number of rows purged by punctuations"),
    StatefulOperatorCustomSumMetric(PunctuationsHeld, "number of punctuations held"),
    StatefulOperatorCustomSumMetric(LateRowsDropped, "number of late rows dropped"),
    StatefulOperatorCustomSumMetric(InvalidPunctuationsDropped, "number of invalid punctuations dropped"),
    StatefulOperatorCustomSumMetric(StateRowsScanned, "number of stored rows read by purges"),
    StatefulOperatorCustomSumMetric(ClosedValuesRemembered, "number of closed-value entries remembered for late rows"),
    StatefulOperatorCustomSumMetric(ClosedValuesForgotten, "number of closed-value entries forgotten (over the limit)"),
    StatefulOperatorCustomSumMetric(RangeIndexEntries, "number of range-index entries (join keys per indexed scheme)"),
    StatefulOperatorCustomSumMetric(TimeIndexBuckets, "number of time-index buckets (stored entries of a time-band join's index)"))
}
