package punctuated.join

import org.apache.spark.sql.catalyst.InternalRow

import punctuated.input.{InputSpec, PartitionWideRows}

/**
 * A join input's rows that its [[punctuated.input.PunctuationReplicatingExchangeExec]] sends
 * to every partition: punctuations of a scheme that does not fix the whole join key (a
 * range, a prefix), and those of the input's range scheme on a time band's column.
 *
 * @param spec       the input's declaration (which rows are punctuations, of what scheme)
 * @param keyLength  number of join-key columns (a scheme fixing all of them is not replicated)
 * @param bandScheme the index of the input's range scheme on a join's time band column
 *                   ([[TimeBand.schemes]])
 */
final case class JoinPartitionWideRows(spec: InputSpec, keyLength: Int, bandScheme: Option[Int] = None)
  extends PartitionWideRows {

  override def isPartitionWide(row: InternalRow): Boolean =
    spec.isPunctuation(row) && (spec.schemeOf(row).flatten.exists(!_.isWholeKey(keyLength)) ||
      bandScheme.exists(_ == TimeBandJoin.schemeIndex(spec, row)))
}
