package punctuated.checkpoint

import java.io.FileNotFoundException
import java.nio.charset.StandardCharsets

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import punctuated.compat.CheckpointFileManager
import punctuated.compat.StatefulOperatorStateInfo
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.internal.SQLConf

import punctuated.errors.PunctuatedErrors
import punctuated.state.DamagedCheckpoint

/**
 * The declarations a punctuated operator's state was written with, kept with the state:
 * one small JSON file per operator, written on the driver through Spark's
 * `CheckpointFileManager` (atomic, HDFS and object stores alike):
 *
 * {{{
 *   <checkpoint>/state/<operatorId>/_punctuated/declarations.json     an [[OperatorRecord]]
 *   <checkpoint>/state/<operatorId>/<partition>/<store>/...          the state (Spark's)
 * }}}
 *
 * [[verify]] runs where the operator is planned, for every micro-batch (one small read),
 * before any of its state stores is opened:
 *
 *  - no record, no state: a new query; the record is written;
 *  - no record, state (a checkpoint written before records existed): its store directories
 *    must be the ones the operator opens now (else it was written by Spark's own operator
 *    or an earlier layout, and is refused); the declarations it was written with are
 *    unknown and taken as the current ones, which are recorded;
 *  - a record equal to the current one: nothing to do;
 *  - a different record: [[Compatibility]] decides; a compatible change is recorded, an
 *    incompatible one fails with `PUNCTUATED_INCOMPATIBLE_CHECKPOINT` (if state exists).
 */
object CheckpointDeclarations {
  val DirName = "_punctuated"
  val FileName = "declarations.json"

  /**
   * The operators write state checkpoint format version 1 only (no per-store checkpoint ids):
   * version 2, which a query keeps from its first batch on, is refused before any store opens.
   */
  def requireFormatVersion1(info: StatefulOperatorStateInfo, operator: String): Unit = {
    val version = SQLConf.get.getConfString(PunctuatedErrors.CheckpointFormatVersionKey, "1").trim
    if (version != "1") throw PunctuatedErrors.unsupportedCheckpointFormat(info.operatorId, operator, version)
  }

  /** The operator's state directory. */
  def operatorDir(info: StatefulOperatorStateInfo): Path =
    new Path(info.checkpointLocation, info.operatorId.toString)

  def recordPath(info: StatefulOperatorStateInfo): Path =
    new Path(new Path(operatorDir(info), DirName), FileName)

  /**
   * Fails if the operator's checkpointed state cannot be followed under the declarations
   * in `now`; records `now` when it differs from the record.
   */
  def verify(info: StatefulOperatorStateInfo, now: OperatorRecord, hadoopConf: Configuration): Unit = {
    requireFormatVersion1(info, now.operator)
    DamagedCheckpoint.checkCommit(info.checkpointLocation, info.storeVersion, hadoopConf)
    val dir = operatorDir(info)
    val fm = CheckpointFileManager.create(dir, hadoopConf)
    val file = recordPath(info)
    def fail(problems: Seq[String], old: Option[OperatorRecord]) =
      throw PunctuatedErrors.incompatibleCheckpoint(info.operatorId, now.operator, dir.toString,
        problems, old.map(_.declarationText), now.declarationText, restore(old, now), reread = reread(old, now))
    val recorded = read(fm, file)
    if (recorded.isDefined) {
      val old = try OperatorRecord.fromJson(recorded.get) catch {
        case NonFatal(e) => fail(Seq(s"its record $file cannot be read (${e.getMessage})"), None)
      }
      if (old != now) {
        val problems = Compatibility.problems(old, now)
        if (problems.nonEmpty && hasState(fm, dir)) fail(problems, Some(old))
        write(fm, file, now)
      }
    } else {
      val problems = storeProblems(fm, dir, now)
      if (problems.nonEmpty) fail(problems, None)
      write(fm, file, now)
    }
  }

  /**
   * How the operator's state is hashed to partitions, if the checkpoint already holds it: the
   * record's `partitionedBy`, or the whole key (None) for state written before records; None
   * (outer) for a new checkpoint, which may choose.
   */
  def recordedPartitioning(info: StatefulOperatorStateInfo, hadoopConf: Configuration): Option[Option[Seq[Int]]] = {
    val dir = operatorDir(info)
    val fm = CheckpointFileManager.create(dir, hadoopConf)
    read(fm, recordPath(info)) match {
      case Some(text) => Some(scala.util.Try(OperatorRecord.fromJson(text).partitionedBy).getOrElse(None))
      case None => if (hasState(fm, dir)) Some(None) else None
    }
  }

  /** Has any micro-batch stored state for this operator (in partition 0)? */
  private def hasState(fm: CheckpointFileManager, dir: Path): Boolean = storesWithState(fm, dir).nonEmpty

  /**
   * The stores of partition 0 that hold state (versions, not only Spark's schema files,
   * which its start-time check writes for the operator it planned, ours or not). Spark
   * keeps the default store's files in the partition directory itself (RocksDB: with an
   * `SSTs` directory), other stores in a directory of their name.
   */
  private[checkpoint] def storesWithState(fm: CheckpointFileManager, dir: Path): Seq[String] = {
    val partition = new Path(dir, "0")
    def visible(p: Path) = fm.list(p).toSeq.filterNot(s => s.getPath.getName.startsWith(".") ||
      s.getPath.getName.startsWith("_"))
    if (!fm.exists(partition)) Nil
    else {
      val (stores, own) = visible(partition).partition(s => s.isDirectory && s.getPath.getName != "SSTs")
      (if (own.nonEmpty) Seq(StateStoreId.DEFAULT_STORE_NAME) else Nil) ++
        stores.filter(s => visible(s.getPath).nonEmpty).map(_.getPath.getName)
    }
  }

  /**
   * A checkpoint without a record: the stores holding state in partition 0 against the ones
   * the operator opens, and its layout — records came with every operator's layout 1, so a
   * checkpoint without one holds layout 1, which a later layout must not misread.
   */
  private def storeProblems(fm: CheckpointFileManager, dir: Path, now: OperatorRecord): Seq[String] = {
    val found = storesWithState(fm, dir)
    if (found.isEmpty) return Nil
    val foreign = found.filterNot(now.stores.contains)
    val missing = now.stores.filterNot(found.contains)
    val writtenBy =
      if (foreign.nonEmpty) Seq(s"the checkpoint holds state stores ${foreign.map(s => s"'$s'").mkString(", ")} " +
        s"that ${now.operator} does not use: it was written by Spark's own operator (a query run without " +
        "the extension or without declarations) or by an earlier state layout of Punctuated")
      else Nil
    val lacking = missing.map(s => s"the operator now needs state store '$s', which the checkpoint does not have")
    val layout =
      if (foreign.nonEmpty || now.layoutVersion == StateLayouts.BeforeRecords) Nil
      else Seq(s"the checkpoint has no record of its declarations: it was written by a version of " +
        s"Punctuated from before records, whose ${now.operator} state layout (${StateLayouts.BeforeRecords}) " +
        s"this version cannot read (it writes layout ${now.layoutVersion})")
    writtenBy ++ lacking ++ layout
  }

  /** What to declare again: the recorded declarations of the inputs that changed. */
  private def restore(old: Option[OperatorRecord], now: OperatorRecord): Option[String] =
    old.map { o =>
      o.inputs.zipWithIndex.collect {
        case (i, k) if !now.inputs.lift(k).exists(_.declaredAs(i)) => s"${i.table}: ${i.properties}"
      }.mkString("; ")
    }.filter(_.nonEmpty)

  /**
   * The inputs declared as before whose stored columns differ: which columns a join stores
   * follows the columns the query reads (docs/joins.md, "Which columns the join carries"), so
   * a query that reads the columns it read before continues the state.
   */
  private def reread(old: Option[OperatorRecord], now: OperatorRecord): Option[String] =
    old.map { o =>
      o.inputs.zip(now.inputs).collect {
        case (i, n) if n.declaredAs(i) && i.columns != n.columns =>
          s"${i.table}: ${i.columns.mkString(", ")}"
      }.mkString("; ")
    }.filter(_.nonEmpty)

  /** The record's text, if there is one: one request per micro-batch (no existence check first). */
  private[checkpoint] def read(fm: CheckpointFileManager, file: Path): Option[String] = {
    val in = try fm.open(file) catch { case _: FileNotFoundException => return None }
    try Some(new String(in.readAllBytes(), StandardCharsets.UTF_8)) finally in.close()
  }

  private def write(fm: CheckpointFileManager, file: Path, record: OperatorRecord): Unit = {
    fm.mkdirs(file.getParent)
    val out = fm.createAtomic(file, overwriteIfPossible = true)
    try {
      out.write(record.toJson.getBytes(StandardCharsets.UTF_8))
      out.close()
    } catch {
      case NonFatal(e) => out.cancel(); throw e
    }
  }
}
