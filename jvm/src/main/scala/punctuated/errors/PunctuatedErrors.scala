package punctuated.errors

import org.apache.spark.SparkException
import org.apache.spark.sql.AnalysisException

import punctuated.compat.AnalysisExceptionCompat
import punctuated.conf.PunctuatedConf
import punctuated.declaration.{DeclarationError, DeclarationException}

/**
 * Errors the extension raises, analysis and runtime ones in one place. Analysis errors are in Spark's shape: an [[AnalysisException]] whose error class
 * is `PUNCTUATED_*` (`getCondition`), with message parameters and an SQLSTATE, so that
 * PySpark raises `pyspark.errors.AnalysisException` carrying the same fields.
 */
class PunctuatedAnalysisException(
    message: String,
    condition: String,
    parameters: Map[String, String],
    state: String,
    cause: Option[Throwable] = None)
  extends AnalysisExceptionCompat(
    message = message,
    cause = cause,
    errorClass = condition,
    messageParameters = parameters,
    sqlState = state) {
  override def getSqlState: String = state
}

object PunctuatedErrors {

  /** SQLSTATE 42K0I: "SQL config / option or property not found or invalid" class of errors. */
  private val InvalidDeclarationState = "42K0I"

  /** SQLSTATE 0A000: feature not supported (a plan whose state cannot be bounded). */
  def unsafeQuery(text: String): AnalysisException =
    new PunctuatedAnalysisException(
      s"[PUNCTUATED_UNSAFE_QUERY] The query's state could never be purged " +
        s"(${PunctuatedConf.SafetyMode}=strict):\n$text",
      "PUNCTUATED_UNSAFE_QUERY", Map("details" -> text), "0A000")

  /**
   * SQLSTATE 42K03 (as Spark's `STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA`): a
   * restart whose declarations the checkpointed state of an operator cannot follow
   * (`punctuated.checkpoint.Compatibility`), raised before any state store is opened.
   *
   * @param problems what the state could not follow, one sentence each
   * @param old      the declarations the state was written with (None: not recorded)
   * @param now      the query's declarations
   * @param restore  the recorded declarations of the inputs that changed, to declare again
   * @param setting  a setting that continues the state (`spark.punctuated.join.plan=written`)
   * @param reread   the columns the state holds for inputs declared as before, for a query to read again
   */
  def incompatibleCheckpoint(operatorId: Long, operator: String, location: String, problems: Seq[String],
      old: Option[String], now: String, restore: Option[String], setting: Option[String] = None,
      reread: Option[String] = None): AnalysisException = {
    val fix = setting.map(s => s"run the query with $s (which continues the state), or ").getOrElse("") +
      restore.map(r => s"declare again what the state was written with ($r), or ").getOrElse("") +
      reread.map(r => s"make the query read the columns the state holds ($r; a checkpoint written by a build " +
        "before joins read only their columns holds every column of a declared input), or ").getOrElse("") +
      "start the query from a new checkpoint location (it then starts with empty state, reading its sources " +
      "from their starting offsets)"
    val message = s"[$IncompatibleCheckpoint] The checkpointed state of operator $operatorId ($operator, " +
      s"$location) cannot be resumed with the query's declarations:\n" +
      problems.map(p => s"  - $p").mkString("\n") +
      s"\nCheckpoint written with: ${old.getOrElse("(not recorded)")}\nNow declared: $now\nFix: $fix."
    new PunctuatedAnalysisException(message, IncompatibleCheckpoint,
      Map("operatorId" -> operatorId.toString, "operator" -> operator, "location" -> location,
        "problems" -> problems.mkString("; "), "old" -> old.getOrElse(""), "new" -> now, "fix" -> fix),
      "42K03")
  }

  val IncompatibleCheckpoint = "PUNCTUATED_INCOMPATIBLE_CHECKPOINT"

  /**
   * SQLSTATE 55019 (as Spark's `STREAMING_UNFINISHED_REPARTITION_DETECTED`): a start on a
   * checkpoint whose newest batch Spark's offline state repartitioning wrote and could not
   * finish, because it cannot rewrite punctuated operators' state
   * (`punctuated.checkpoint.UnfinishedRepartition`), raised at `start()` before Spark's own
   * error, which asks for a retry that fails the same way.
   *
   * @param batch     the uncommitted batch the repartitioning wrote
   * @param before    the shuffle partitions the state has (the last committed batch's)
   * @param after     those the repartitioning asked for
   * @param operators the query's punctuated operators, as `aggregation of bids`
   * @param offsets   the batch's offsets file, and its checksum file, to delete
   * @param stateFiles how many files of the batch's state version the repartitioning wrote
   */
  def unfinishedRepartition(checkpoint: String, batch: Long, before: String, after: String, operators: Seq[String],
      offsets: String, checksum: String, stateFiles: Int): AnalysisException = {
    val version = batch + 1
    val state = if (stateFiles == 0) "" else s", and under $checkpoint/state the $stateFiles files of state version " +
      s"$version that the repartitioning wrote (named $version.zip, $version.delta, $version.changelog or " +
      s"$version.snapshot), with their .crc files"
    val fix = s"delete $offsets (and $checksum, if present)$state; then start the query again: it continues after batch " +
      s"${batch - 1} with $before partitions, exactly once; for $after partitions, start the query from a new " +
      "checkpoint location (it then starts with empty state, reading its sources from their starting offsets)"
    val message = s"[$UnfinishedRepartition] The newest batch ($batch) of checkpoint $checkpoint was written by " +
      s"Spark's offline state repartitioning ($before -> $after shuffle partitions) and never committed: the " +
      s"repartitioning cannot rewrite the state of punctuated operators (${operators.mkString("; ")}), so it " +
      s"stopped, and retrying it fails the same way. The state is as batch ${batch - 1} left it.\nFix: $fix."
    new PunctuatedAnalysisException(message, UnfinishedRepartition,
      Map("checkpoint" -> checkpoint, "batch" -> batch.toString, "before" -> before, "after" -> after,
        "operators" -> operators.mkString("; "), "fix" -> fix), "55019")
  }

  val UnfinishedRepartition = "PUNCTUATED_UNFINISHED_REPARTITION"

  /**
   * SQLSTATE 0A000 (feature not supported): the query asks for a state checkpoint format
   * the punctuated operators do not write (`spark.sql.streaming.stateStore.checkpointFormatVersion`),
   * raised where the operator is planned, before any of its state stores is opened.
   */
  def unsupportedCheckpointFormat(operatorId: Long, operator: String, version: String): AnalysisException = {
    val message = s"[$UnsupportedCheckpointFormat] Operator $operatorId ($operator) cannot keep its state in " +
      s"state checkpoint format version $version (${CheckpointFormatVersionKey}=$version): punctuated " +
      s"operators write format version 1 only. Fix: run the query with $CheckpointFormatVersionKey=1 " +
      "(the default) from a new checkpoint location; a checkpoint written in version 2 keeps that version."
    new PunctuatedAnalysisException(message, UnsupportedCheckpointFormat,
      Map("operatorId" -> operatorId.toString, "operator" -> operator, "version" -> version), "0A000")
  }

  val UnsupportedCheckpointFormat = "PUNCTUATED_UNSUPPORTED_CHECKPOINT_FORMAT"
  val CheckpointFormatVersionKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"

  /**
   * Runtime error `PUNCTUATED_INVALID_PUNCTUATION` (`spark.punctuated.invalidPunctuations=fail`):
   * a punctuation row that instantiates none of its stream's schemes, raised in the task
   * that reads it by every punctuated operator.
   *
   * {{{
   *   invalidPunctuation("(auction=NULL, bidder=3)", "bids", Seq("auction"))
   * }}}
   *
   * @param row     the row, as `(column=value, ...)`
   * @param stream  its stream's name
   * @param schemes the stream's schemes as declared
   */
  def invalidPunctuation(row: String, stream: String, schemes: Seq[String]): SparkException =
    new SparkException(
      s"[PUNCTUATED_INVALID_PUNCTUATION] Punctuation row $row of $stream instantiates none " +
        s"of its schemes (${schemes.mkString("; ")}): a punctuation row sets exactly the " +
        "attributes of one scheme and leaves the other columns NULL. " +
        s"Set ${PunctuatedConf.InvalidPunctuations}=drop to drop such rows instead.")

  /**
   * Runtime error `PUNCTUATED_LATE_ROW` (`spark.punctuated.lateRows=fail`): a data row that
   * arrived after a punctuation matching it (the stream is not grammatical, Tucker et al.
   * 2003, §3).
   *
   * {{{
   *   lateRow("Row (auction=7) of bids arrived after bids punctuated its key")
   * }}}
   *
   * @param what which row arrived after which punctuation, in the operator's terms
   */
  def lateRow(what: String): SparkException =
    new SparkException(
      s"[PUNCTUATED_LATE_ROW] $what (the stream is not grammatical). " +
        s"Set ${PunctuatedConf.LateRows}=drop to drop late rows instead.")

  /**
   * Runtime error `PUNCTUATED_DAMAGED_CHECKPOINT`: a checkpoint whose files were damaged
   * ([[punctuated.state.DamagedCheckpoint]]), said with the files and the fix.
   *
   * @param what     what cannot be read, naming the checkpoint
   * @param findings the damaged files found, and the causes' own words
   * @param fix      what the user can do
   * @param cause    Spark's error (null: none)
   */
  def damagedCheckpoint(what: String, findings: Seq[String], fix: String, cause: Throwable): SparkException =
    new SparkException(
      s"[PUNCTUATED_DAMAGED_CHECKPOINT] $what:\n" + findings.map(f => s"  - $f").mkString("\n") +
        s"\nTo continue: $fix (docs/clusters.md, \"Damaged checkpoints\")." +
        Option(cause).map(c => s"\nSpark's error: ${c.getMessage}").getOrElse(""), cause)

  def invalidDeclaration(e: DeclarationException): AnalysisException = {
    val error: DeclarationError = e.error
    new PunctuatedAnalysisException(
      error.message,
      error.errorClass,
      Map("table" -> error.table, "property" -> error.property,
        "text" -> DeclarationError.shorten(error.text), "offending" -> DeclarationError.shorten(error.offending)),
      InvalidDeclarationState,
      Some(e))
  }

  /**
   * Load shedding (`spark.punctuated.shedding.maxStateRows`) is set for a query whose results
   * would then be wrong, not merely partial (SQLSTATE 0A000, feature not supported).
   *
   * {{{
   *   sheddingUnsupported("the LEFT OUTER join ON a.id = b.auction",
   *     "an outer join would emit null-padded rows for rows whose partner was shed")
   * }}}
   *
   * @param what   the operator, as the query spells it
   * @param reason why shedding would make its results wrong
   */
  def sheddingUnsupported(what: String, reason: String, fix: Option[String] = None): AnalysisException = {
    val text = s"[PUNCTUATED_SHEDDING_UNSUPPORTED] Load shedding " +
      s"(${PunctuatedConf.SheddingMaxStateRows}) is set, but $what cannot shed rows: $reason. " +
      fix.getOrElse("Shedding keeps results a subset of the exact result only for inner stream-stream joins whose " +
        s"output no aggregation or deduplication reads. Fix: unset ${PunctuatedConf.SheddingMaxStateRows} " +
        "for this query, or rewrite it as an inner join whose partial output is acceptable.")
    new PunctuatedAnalysisException(text, "PUNCTUATED_SHEDDING_UNSUPPORTED",
      Map("operator" -> what, "reason" -> reason), "0A000")
  }

  /**
   * A `punctuated_*` SQL table function (`punctuated.spark.functions.TableFunctions`) got an
   * argument it cannot use (SQLSTATE 42K09, wrong argument): not one string literal, text that is
   * not one query (a statement it would have to run), a query Spark cannot analyse, or a query
   * that is not streaming where a stream is needed.
   *
   * {{{
   *   tableFunctionArgument("punctuated_describe", "DROP TABLE bids",
   *     "is a DropTable statement, not a query; it was not run",
   *     "give the streaming query itself, e.g. SELECT ... FROM STREAM(a) JOIN STREAM(b) ON ...", None)
   * }}}
   *
   * @param function the function's name
   * @param text     the argument as given (quoted, shortened to 200 characters)
   * @param problem  what is wrong with it
   * @param fix      what to give instead
   * @param cause    Spark's error, when analysis failed
   */
  def tableFunctionArgument(function: String, text: String, problem: String, fix: String,
      cause: Option[Throwable]): AnalysisException = {
    val shown = DeclarationError.shorten(text)
    new PunctuatedAnalysisException(
      s"[PUNCTUATED_TABLE_FUNCTION_ARGUMENT] $function('$shown'): the argument $problem. Fix: $fix." +
        cause.map(c => s"\nSpark's error: ${c.getMessage}").getOrElse(""),
      "PUNCTUATED_TABLE_FUNCTION_ARGUMENT",
      Map("function" -> function, "text" -> shown, "problem" -> problem), "42K09", cause)
  }
}
