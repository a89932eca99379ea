package punctuated.localfs

import java.nio.file.{Files, Path => NioPath}
import java.nio.file.attribute.PosixFilePermissions
import java.util.EnumSet

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{CreateFlag, FileContext, FileSystem, Options, Path, RawLocalFileSystem}
import org.apache.hadoop.fs.permission.FsPermission
import org.scalatest.funsuite.AnyFunSuite

import punctuated.compat.CheckpointFileManager

/**
 * The local file system without forked commands writes what Hadoop's own writes: the same
 * permissions (under the same umask), the same link status, the same checkpoint files; and the
 * test JVM's Hadoop configuration (`core-site.xml` of the test resources) picks it, so every
 * suite's state stores and checkpoints go through it.
 */
class ForklessLocalFileSystemSuite extends AnyFunSuite {

  private def withDir(body: NioPath => Unit): Unit = {
    val dir = Files.createTempDirectory("forkless")
    try body(dir) finally org.apache.commons.io.FileUtils.deleteDirectory(dir.toFile)
  }

  private def mode(p: NioPath): String = PosixFilePermissions.toString(Files.getPosixFilePermissions(p))

  test("the test JVM's Hadoop configuration picks it for FileSystem and FileContext") {
    val conf = new Configuration()
    assert(FileSystem.newInstance(new Path("file:///").toUri, conf).isInstanceOf[ForklessLocalFileSystem])
    assert(FileContext.getLocalFSFileContext(conf).getDefaultFileSystem.isInstanceOf[ForklessLocalFs])
  }

  test("posixPermissions: each action of user, group and other; none for the sticky bit") {
    import scala.jdk.CollectionConverters._
    def perms(octal: Int) = ForklessLocalFileSystem.posixPermissions(new FsPermission(octal.toShort))
      .map(s => PosixFilePermissions.toString(s.asScala.toSet.asJava))
    assert(perms(Integer.parseInt("644", 8)) === Some("rw-r--r--"))
    assert(perms(Integer.parseInt("755", 8)) === Some("rwxr-xr-x"))
    assert(perms(Integer.parseInt("731", 8)) === Some("rwx-wx--x"))
    assert(perms(0) === Some("---------"))
    assert(perms(Integer.parseInt("1777", 8)) === None)
  }

  test("files and directories get the permissions Hadoop's own file system gives them") {
    withDir { dir =>
      val conf = new Configuration()
      val hadoops = new RawLocalFileSystem()
      hadoops.initialize(new Path("file:///").toUri, conf)
      val ours = new ForklessRawLocalFileSystem()
      ours.initialize(new Path("file:///").toUri, conf)
      for ((name, fs) <- Seq("hadoop" -> hadoops, "ours" -> ours)) {
        fs.mkdirs(new Path(dir.resolve(s"$name-dir/sub").toString), new FsPermission("750"))
        fs.create(new Path(dir.resolve(s"$name-file").toString)).close()
        fs.create(new Path(dir.resolve(s"$name-exec").toString)).close()
        fs.setPermission(new Path(dir.resolve(s"$name-exec").toString), new FsPermission("711"))
      }
      for (suffix <- Seq("dir", "dir/sub", "file", "exec")) {
        assert(mode(dir.resolve(s"ours-$suffix")) === mode(dir.resolve(s"hadoop-$suffix")), suffix)
      }
      assert(mode(dir.resolve("ours-exec")) === "rwx--x--x")
    }
  }

  test("FileContext writes, renames over and reads back a checkpoint file as Hadoop's does") {
    withDir { dir =>
      val conf = new Configuration()
      val fc = FileContext.getLocalFSFileContext(conf)
      val file = new Path(dir.resolve("offsets/0").toUri)
      val tmp = new Path(dir.resolve("offsets/.0.tmp").toUri)
      fc.mkdir(file.getParent, FsPermission.getDirDefault, true)
      val out = fc.create(tmp, EnumSet.of(CreateFlag.CREATE, CreateFlag.OVERWRITE), Options.CreateOpts.createParent())
      out.write("v1".getBytes("UTF-8")); out.close()
      fc.rename(tmp, file, Options.Rename.OVERWRITE)
      val in = fc.open(file)
      try assert(new String(in.readAllBytes(), "UTF-8") === "v1") finally in.close()
      // the file and its checksum, written by the checksummed file system, with the umask applied
      assert(Files.exists(dir.resolve("offsets/.0.crc")))
      assert(mode(dir.resolve("offsets/0")) === "rw-r--r--")
      assert(mode(dir.resolve("offsets")) === "rwxr-xr-x")
      assert(!fc.getFileLinkStatus(file).isSymlink)
    }
  }

  test("Spark's checkpoint file manager writes atomically through it") {
    withDir { dir =>
      val manager = CheckpointFileManager.create(new Path(dir.toUri), new Configuration())
      manager.mkdirs(new Path(dir.resolve("commits").toUri))
      val out = manager.createAtomic(new Path(dir.resolve("commits/1").toUri), overwriteIfPossible = false)
      out.write(42); out.close()
      assert(Files.readAllBytes(dir.resolve("commits/1")).toSeq === Seq(42.toByte))
      assert(mode(dir.resolve("commits/1")) === "rw-r--r--")
    }
  }

  test("a symbolic link is still reported as one, with its target") {
    withDir { dir =>
      val target = Files.createFile(dir.resolve("target"))
      val link = Files.createSymbolicLink(dir.resolve("link"), target)
      val fs = new ForklessRawLocalFileSystem()
      fs.initialize(new Path("file:///").toUri, new Configuration())
      val status = fs.getFileLinkStatus(new Path(link.toString))
      assert(status.isSymlink)
      assert(status.getSymlink.toUri.getPath === target.toString)
      assert(!fs.getFileLinkStatus(new Path(target.toString)).isSymlink)
    }
  }
}
