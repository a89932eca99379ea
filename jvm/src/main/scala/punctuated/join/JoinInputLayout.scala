package punctuated.join

/**
 * Where the state of one join input lives in the checkpoint, derived from its input number
 * by one function ([[JoinInputLayout.of]]), so that the names never drift apart between the
 * operator, its state-metadata record and the tools that read it back.
 *
 * A binary join's inputs keep the names and namespace numbers their checkpoints have always
 * had (input 0 was called `left`, input 1 `right`):
 * {{{
 *   input  rows store                  namespaces of the shared store (StoreNamespace)
 *                                      whole-key  partition-wide  range index  closed  index entries
 *   0      left-punctuated-rows        0          1               2            6       8
 *   1      right-punctuated-rows       3          4               5            7       9
 *   n >= 2 input<n>-punctuated-rows    10 + 5 (n - 2) + 0 ... 4, in the same order
 * }}}
 *
 * Example: `JoinInputLayout.of(1).closedValues == 7`, `JoinInputLayout.of(0).rowsStore ==
 * "left-punctuated-rows"`.
 *
 * @param name           the input's name in store names (`left`, `right`, `input2` ...)
 * @param wholeKey       namespace of its held whole-key punctuations
 * @param partitionWide  namespace of its held partition-wide punctuations (a key prefix, a range)
 * @param rangeIndex     namespace of its range index ([[RangeIndex]])
 * @param closedValues   namespace of its closed-values summaries ([[ClosedKeys]])
 * @param indexEntries   namespace of its range-index entry count
 */
final case class JoinInputLayout(name: String, wholeKey: Int, partitionWide: Int, rangeIndex: Int,
    closedValues: Int, indexEntries: Int) {
  /** The store of the input's rows. */
  def rowsStore: String = s"$name-punctuated-rows"
}

object JoinInputLayout {
  /** Namespaces per input in the first block (held whole-key, partition-wide, range index). */
  private val PerInput = 3

  /** The layout of input `number` (0: a binary join's left input, 1: its right one). */
  def of(number: Int): JoinInputLayout = {
    require(number >= 0, s"input number $number")
    if (number < 2) {
      // the first three namespaces of both inputs, then (added later, so that checkpoints
      // written before keep their layout) both inputs' closed values, then index counts
      val first = number * PerInput
      JoinInputLayout(if (number == 0) "left" else "right", first, first + 1, first + 2,
        2 * PerInput + number, 2 * PerInput + 2 + number)
    } else {
      val first = 2 * PerInput + 4 + 5 * (number - 2)
      JoinInputLayout(s"input$number", first, first + 1, first + 2, first + 3, first + 4)
    }
  }
}
