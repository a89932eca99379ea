package punctuated.checkpoint

import scala.io.Source
import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.AnalysisException
import org.json4s._
import org.json4s.jackson.JsonMethods.parse

import punctuated.compat.CheckpointFileManager
import punctuated.errors.PunctuatedErrors

/**
 * A checkpoint that Spark's offline state repartitioning (Spark 4.2,
 * `spark._streamingCheckpointManager.repartition(checkpoint, n)`) left unfinished, found when a
 * query with punctuated operators starts on it.
 *
 * The tool writes the next batch's offsets with the new number of shuffle partitions first,
 * then rewrites each operator's state through the `statestore` reader, and commits last. It
 * knows Spark's operators' key layouts only, and cannot read a punctuated operator's stores
 * (it stops with `STDS_FAILED_TO_READ_STATE_SCHEMA`), so it leaves the offsets of a batch no
 * commit follows. Spark then refuses every restart (`STREAMING_UNFINISHED_REPARTITION_DETECTED`)
 * and asks for the repartitioning to be retried, which fails the same way. The state the last
 * committed batch left is untouched (the tool writes the next version, which the batch's
 * rerun writes anew), so deleting the uncommitted offsets file and the state files of the
 * batch's version continues the query with its old number of partitions, exactly once. This
 * check says so, at `start()`, before Spark's.
 *
 * {{{
 *   offsets/5   "spark.sql.shuffle.partitions":"2"    commits/5
 *   offsets/6   "spark.sql.shuffle.partitions":"4"    (no commits/6)   -> Some(Found(6, "2", "4"))
 * }}}
 *
 * It is Spark's own test (`OfflineStateRepartitionUtils.isRepartitionBatch`: the newest batch
 * uncommitted, and its number of shuffle partitions not its predecessor's; a restarted query
 * always runs with the partitions its checkpoint recorded, so nothing else changes it).
 */
object UnfinishedRepartition {

  /** The uncommitted batch the tool wrote, and the shuffle partitions before and in it. */
  final case class Found(batch: Long, before: String, after: String)

  private val PartitionsKey = "spark.sql.shuffle.partitions"

  /**
   * Refuses a start on a checkpoint the offline repartitioning left unfinished, naming its
   * uncommitted offsets file and the punctuated operators it could not rewrite.
   *
   * @param checkpoint the query's resolved checkpoint location
   * @param operators  its punctuated operators, as `aggregation of bids` (for the message)
   */
  def check(checkpoint: String, operators: Seq[String], hadoopConf: Configuration): Option[AnalysisException] =
    find(new Path(checkpoint), hadoopConf).map { f =>
      val offsets = new Path(new Path(checkpoint, "offsets"), f.batch.toString)
      PunctuatedErrors.unfinishedRepartition(checkpoint, f.batch, f.before, f.after, operators, offsets.toString,
        new Path(offsets.getParent, s".${f.batch}.crc").toString,
        stateFilesOf(new Path(checkpoint), f.batch + 1, hadoopConf).size)
    }

  /**
   * The files of state version `version` under the checkpoint's `state` directory, with their
   * checksum files: those the repartitioning wrote for the batch it did not commit (the batch's
   * rerun writes them anew; on RocksDB with changelog checkpointing it writes a changelog, and
   * the repartitioning's snapshot would stay, one the query never wrote).
   *
   * {{{
   *   state/0/0/7.zip, state/0/2/7.zip, state/1/0/left-punctuated-rows/7.delta, ...
   *   (version 7; not 17.zip nor SST files; Hadoop's local file system lists no .crc files)
   * }}}
   */
  def stateFilesOf(checkpoint: Path, version: Long, hadoopConf: Configuration): Seq[Path] = {
    val state = new Path(checkpoint, "state")
    val fs = state.getFileSystem(hadoopConf)
    if (!fs.exists(state)) return Nil
    val name = s"""^\\.?$version(_[^.]+)?\\.(zip|delta|snapshot|changelog)(\\.crc)?$$""".r
    val files = fs.listFiles(state, true)
    Iterator.continually(files).takeWhile(_.hasNext).map(_.next().getPath)
      .filter(p => name.pattern.matcher(p.getName).matches()).toSeq
  }

  /** The unfinished repartitioning batch of this checkpoint, if its newest batch is one. */
  def find(checkpoint: Path, hadoopConf: Configuration): Option[Found] = {
    val offsets = new Path(checkpoint, "offsets")
    val fm = CheckpointFileManager.create(offsets, hadoopConf)
    if (!fm.exists(offsets)) return None
    val batches = fm.list(offsets).map(_.getPath.getName).flatMap(n => Try(n.toLong).toOption)
    if (batches.isEmpty) return None
    val newest = batches.max
    if (newest == 0 || fm.exists(new Path(new Path(checkpoint, "commits"), newest.toString))) return None
    def partitions(batch: Long): Option[String] = partitionsIn(fm, new Path(offsets, batch.toString))
    for {
      after <- partitions(newest)
      before <- partitions(newest - 1)
      if before != after
    } yield Found(newest, before, after)
  }

  /** The shuffle partitions an offsets file records (its metadata line's conf), if any. */
  private def partitionsIn(fm: CheckpointFileManager, file: Path): Option[String] =
    if (!fm.exists(file)) None
    else Try {
      val in = fm.open(file)
      try Source.fromInputStream(in, "UTF-8").getLines().drop(1).take(1).toList
      finally in.close()
    }.toOption.flatMap(_.headOption).flatMap { line =>
      Try(parse(line) \ "conf" \ PartitionsKey).toOption.collect { case JString(n) => n }
    }
}
