package punctuated.state

import java.io.DataInputStream
import java.util.zip.CRC32

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.{SparkException, SparkThrowable}
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId

import punctuated.errors.PunctuatedErrors

/**
 * Damaged checkpoints, said clearly: what Spark's state store and commit log report
 * unhelpfully, explained with the file that is damaged and what to do.
 *
 * Two cases need it (see docs/clusters.md, "Damaged checkpoints"):
 *  - a state file cut short (HDFS `<v>.delta` / `<v>.snapshot`, RocksDB `<v>.zip`): Spark
 *    fails with `CANNOT_LOAD_STATE_STORE.UNCATEGORIZED` "An error occurred during loading
 *    state.", naming no file. [[opening]] wraps a store's opening: on a load failure it looks
 *    at the store's directory for the files whose length disagrees with their checksum file
 *    (`.<name>.crc`, which Hadoop's local and checksummed file systems write beside every
 *    file: its length and CRC-32s) and names them — only after a failure, so opening costs nothing more.
 *  - a commit file deleted by hand with its checksum left (`commits/.<b>.crc` without
 *    `commits/<b>`): Spark reruns batch b, cannot write its commit over the stale checksum and
 *    blames "multiple streaming queries concurrently using" the checkpoint. [[checkCommit]],
 *    called where every punctuated operator is planned, fails before the batch runs.
 *
 * {{{
 *   state/0/0/left-punctuated-rows/6.delta cut in half, restart:
 *   [PUNCTUATED_DAMAGED_CHECKPOINT] Cannot load state store 'left-punctuated-rows' (operator 0,
 *   partition 0, version 7) of the checkpoint file:/tmp/q/checkpoint:
 *     - damaged: file:/tmp/q/checkpoint/state/0/0/left-punctuated-rows/6.delta (134 bytes:
 *       chunk 0 disagrees with its checksum)
 *   To continue: restore the damaged file(s) from a backup of the checkpoint; otherwise ...
 * }}}
 */
object DamagedCheckpoint {

  /** Spark's error classes of a state store that could not be loaded. */
  private val LoadFailures = Seq("CANNOT_LOAD_STATE_STORE")

  /** State files of a store directory: `<version>.<kind>`. */
  private val StateFile = """(\d+)\.(delta|snapshot|zip|changelog)""".r

  /**
   * Opens a state store with `open`; if Spark cannot load it, fails with an error naming the
   * checkpoint, the store, the damaged files found and the fix (Spark's error is the cause and
   * its message is kept).
   *
   * @param id      the store
   * @param version the version being loaded
   */
  def opening[T](id: StateStoreProviderId, version: Long, hadoopConf: Configuration)(open: => T): T =
    try open catch {
      case NonFatal(e) if loadFailure(e) => throw damagedStore(id, version, hadoopConf, e)
    }

  private def loadFailure(e: Throwable): Boolean =
    causes(e).exists {
      case s: SparkThrowable => Option(s.getCondition).exists(c => LoadFailures.exists(c.startsWith))
      case _ => false
    }

  private def causes(e: Throwable): Seq[Throwable] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(20).toSeq

  private def damagedStore(id: StateStoreProviderId, version: Long, hadoopConf: Configuration,
      e: Throwable): SparkException = {
    val storeId = id.storeId
    val dir = storeId.storeCheckpointLocation()
    val damaged = Try(mismatched(dir, version, hadoopConf)).getOrElse(Nil)
    val named = causes(e).flatMap(c => Option(c.getMessage)).filter(m =>
      m.contains("Checksum error") || m.contains("does not exist") || m.contains("Stream ended prematurely"))
      .map(_.linesIterator.next()).distinct
    val root = new Path(storeId.checkpointRootLocation).getParent
    PunctuatedErrors.damagedCheckpoint(
      s"Cannot load state store '${storeId.storeName}' (operator ${storeId.operatorId}, partition " +
        s"${storeId.partitionId}, version $version) of the checkpoint $root",
      (if (damaged.nonEmpty) damaged.map(d => s"damaged: $d")
       else Seq(s"no file of $dir disagrees with its checksum file")) ++ named.map(m => s"cause: $m"),
      "restore the damaged file(s) from a backup of the checkpoint; otherwise the state is lost: start " +
        "the query on a new checkpoint location (it reprocesses its sources from where they start)", e)
  }

  /**
   * The state files of `dir` up to `version` whose content disagrees with their checksum file
   * (as `path (n bytes: why)`), oldest first. Read only after a load failed.
   *
   * A checksum file is an 8-byte header (`crc\0`, bytes per checksum) and a CRC-32 per chunk
   * of that many bytes: a file of `n` bytes has `ceil(n / bytesPerChecksum)` of them.
   */
  def mismatched(dir: Path, version: Long, hadoopConf: Configuration): Seq[String] = {
    val fs = dir.getFileSystem(hadoopConf)
    val raw = fs match { case c: org.apache.hadoop.fs.ChecksumFileSystem => c.getRawFileSystem; case f => f }
    if (!raw.exists(dir)) return Nil
    raw.listStatus(dir).toSeq.flatMap { s =>
      s.getPath.getName match {
        case StateFile(v, _) if v.toLong <= version =>
          val crc = new Path(dir, s".${s.getPath.getName}.crc")
          if (!raw.exists(crc)) None
          else disagreement(raw, s.getPath, s.getLen, crc).map(why => (v.toLong, s"${s.getPath} (${s.getLen} bytes: $why)"))
        case _ => None
      }
    }.sortBy(_._1).map(_._2)
  }

  /** How `file` disagrees with its checksum file `crc` (None: it agrees, or `crc` is not one). */
  private def disagreement(fs: FileSystem, file: Path, length: Long, crc: Path): Option[String] = {
    val sums = new DataInputStream(fs.open(crc))
    try {
      val magic = new Array[Byte](4)
      sums.readFully(magic)
      val bpc = sums.readInt()
      if (new String(magic, "ISO-8859-1") != "crc\u0000" || bpc <= 0) return None
      val chunks = (fs.getFileStatus(crc).getLen - 8) / 4
      if ((length + bpc - 1) / bpc != chunks) {
        return Some(s"its checksum file describes ${(chunks - 1) * bpc + 1} to ${chunks * bpc} bytes")
      }
      val in = new DataInputStream(fs.open(file))
      try {
        val buf = new Array[Byte](bpc)
        var chunk = 0L
        var left = length
        while (left > 0) {
          val len = math.min(left, bpc.toLong).toInt
          in.readFully(buf, 0, len)
          val c = new CRC32()
          c.update(buf, 0, len)
          if (c.getValue.toInt != sums.readInt()) return Some(s"chunk $chunk disagrees with its checksum")
          left -= len
          chunk += 1
        }
        None
      } finally in.close()
    } catch {
      case NonFatal(e) => Some(s"cannot be checked: ${e.getMessage}")
    } finally sums.close()
  }

  /**
   * Fails before batch `batchId` runs if its commit's checksum file is left without the commit
   * (`commits/.<b>.crc`, no `commits/<b>`): Spark would rerun the batch and then fail to write
   * the commit, blaming a concurrent query.
   *
   * @param stateLocation the query's state directory (`<checkpoint>/state`)
   */
  def checkCommit(stateLocation: String, batchId: Long, hadoopConf: Configuration): Unit = {
    val commits = new Path(new Path(stateLocation).getParent, "commits")
    val fs = commits.getFileSystem(hadoopConf)
    val raw = fs match { case c: org.apache.hadoop.fs.ChecksumFileSystem => c.getRawFileSystem; case f => f }
    val crc = new Path(commits, s".$batchId.crc")
    if (raw.exists(crc) && !raw.exists(new Path(commits, batchId.toString))) {
      throw PunctuatedErrors.damagedCheckpoint(
        s"The checkpoint ${commits.getParent} has the checksum file $crc but not the commit file " +
          s"${new Path(commits, batchId.toString)} it belongs to",
        Seq("a commit file was deleted without its checksum file: Spark would run batch " +
          s"$batchId again and then fail to write its commit (reporting a concurrent query)"),
        s"delete $crc as well (batch $batchId then runs again and commits once: the file sink and " +
          "foreachBatch by batch id keep the output exact), or restore the commit file from a backup", null)
    }
  }
}
