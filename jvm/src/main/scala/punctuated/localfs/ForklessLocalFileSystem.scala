package punctuated.localfs

import java.net.URI
import java.nio.file.{FileSystems, Files}
import java.nio.file.attribute.PosixFilePermission

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumFs, DelegateToFileSystem, FileStatus, FsConstants, FsServerDefaults, LocalFileSystem, Path,
  RawLocalFileSystem}
import org.apache.hadoop.fs.local.LocalConfigKeys
import org.apache.hadoop.fs.permission.{FsAction, FsPermission}

/**
 * Hadoop's local file system without forked shell commands, for Spark on one machine
 * (`local[*]` masters: tests, laptops, the benchmarks when asked).
 *
 * Without Hadoop's native library (a pip-installed PySpark has none), `RawLocalFileSystem` forks
 * `chmod` for every file and directory it creates and `readlink` for every rename through
 * `FileContext` — Spark's checkpoint file manager renames each state-store delta, offset and commit
 * file it writes. A streaming micro-batch with three state stores over two partitions spawns
 * dozens of processes (`strace` of one of our join suites: 9,765 spawns for 23 tests), each a few
 * milliseconds of a large JVM's time. This class does the same two things through `java.nio`:
 * POSIX permissions set in-process, symbolic links found by `Files.isSymbolicLink`. Everything else
 * is Hadoop's own code: the checksummed `LocalFileSystem` over it, the same files on disk.
 *
 * {{{
 *   spark.hadoop.fs.file.impl                    punctuated.localfs.ForklessLocalFileSystem
 *   spark.hadoop.fs.AbstractFileSystem.file.impl punctuated.localfs.ForklessLocalFs
 * }}}
 *
 * Where the default file system has no POSIX view (Windows) or a permission has the sticky bit,
 * it falls back to Hadoop's own code.
 */
class ForklessRawLocalFileSystem extends RawLocalFileSystem {

  override def setPermission(p: Path, permission: FsPermission): Unit =
    ForklessLocalFileSystem.posixPermissions(permission) match {
      case Some(perms) => Files.setPosixFilePermissions(pathToFile(p).toPath, perms)
      case None => super.setPermission(p, permission)
    }

  /**
   * The status of `f` without following a symbolic link. Hadoop's own reads the link target with a
   * forked `readlink` first (given the qualified `file:/...` string, it finds no link even where
   * there is one); here a path that is not a link is the file's own status, a link Hadoop's answer.
   */
  override def getFileLinkStatus(f: Path): FileStatus =
    if (Files.isSymbolicLink(pathToFile(f).toPath)) super.getFileLinkStatus(f) else getFileStatus(f)
}

/** The checksummed local file system (`fs.file.impl`) over [[ForklessRawLocalFileSystem]]. */
class ForklessLocalFileSystem extends LocalFileSystem(new ForklessRawLocalFileSystem)

object ForklessLocalFileSystem {

  private lazy val posixAvailable: Boolean =
    FileSystems.getDefault.supportedFileAttributeViews().contains("posix")

  /**
   * `permission` as the set `java.nio` takes, or `None` where it cannot say it (no POSIX view, or
   * the sticky bit). Example: `rw-r--r--` (0644) is `{OWNER_READ, OWNER_WRITE, GROUP_READ,
   * OTHERS_READ}`.
   */
  def posixPermissions(permission: FsPermission): Option[java.util.Set[PosixFilePermission]] = {
    if (!posixAvailable || permission.getStickyBit) return None
    val perms = java.util.EnumSet.noneOf(classOf[PosixFilePermission])
    def add(action: FsAction, read: PosixFilePermission, write: PosixFilePermission,
        execute: PosixFilePermission): Unit = {
      if (action.implies(FsAction.READ)) perms.add(read)
      if (action.implies(FsAction.WRITE)) perms.add(write)
      if (action.implies(FsAction.EXECUTE)) perms.add(execute)
    }
    import PosixFilePermission._
    add(permission.getUserAction, OWNER_READ, OWNER_WRITE, OWNER_EXECUTE)
    add(permission.getGroupAction, GROUP_READ, GROUP_WRITE, GROUP_EXECUTE)
    add(permission.getOtherAction, OTHERS_READ, OTHERS_WRITE, OTHERS_EXECUTE)
    Some(perms)
  }
}

/** The raw local file system for `FileContext` (what Hadoop's `RawLocalFs` is), without forks. */
class ForklessRawLocalFs(uri: URI, conf: Configuration)
    extends DelegateToFileSystem(uri, new ForklessRawLocalFileSystem, conf, FsConstants.LOCAL_FS_URI.getScheme,
      false) {
  def this(conf: Configuration) = this(FsConstants.LOCAL_FS_URI, conf)
  override def getUriDefaultPort: Int = -1
  override def getServerDefaults(f: Path): FsServerDefaults = LocalConfigKeys.getServerDefaults()
  @deprecated("as Hadoop's", "") override def getServerDefaults(): FsServerDefaults =
    LocalConfigKeys.getServerDefaults()
  override def isValidName(src: String): Boolean = true
}

/** The checksummed local file system for `FileContext` (`fs.AbstractFileSystem.file.impl`). */
class ForklessLocalFs(uri: URI, conf: Configuration) extends ChecksumFs(new ForklessRawLocalFs(uri, conf)) {
  def this(conf: Configuration) = this(FsConstants.LOCAL_FS_URI, conf)
}
