package punctuated

import java.io.File

import scala.io.Source

import org.scalatest.funsuite.AnyFunSuite

/**
 * The packages of `jvm/src/main/scala/punctuated` form layers: each package may refer only
 * to the packages below it, so there is no import loop and every operator package stands on
 * the shared input model alone.
 *
 * {{{
 *   model, conf                       the punctuation model; the settings
 *   localfs                           Hadoop's local file system without forked commands
 *   declaration                       declarations as written, resolved against a schema
 *   errors                            every error text (analysis and runtime)
 *   input                             a punctuated input: what reaches an operator, how a row decodes
 *   state                             what punctuated operators keep, and how they report it
 *   join | aggregate | dedup          the operators (none refers to another)
 *   checkpoint                        the operators' checkpoint records
 *   spark                             the extension: rules, planner hooks, Python entry points
 * }}}
 *
 * A reference is an `import punctuated.x...` or a qualified `punctuated.x.` in code
 * (comments and string literals do not count). The sources read are those of the build;
 * another tree can be checked with the environment variable `PUNCTUATED_SOURCES` (its
 * `punctuated` source directory).
 */
class PackageLayersSuite extends AnyFunSuite {
  import PackageLayersSuite._

  private lazy val root: File = sys.env.get("PUNCTUATED_SOURCES").map(new File(_)).getOrElse {
    Iterator.iterate(new File(".").getAbsoluteFile)(_.getParentFile).takeWhile(_ != null)
      .map(new File(_, "jvm/src/main/scala/punctuated")).find(_.isDirectory)
      .getOrElse(fail("jvm/src/main/scala/punctuated not found above the working directory"))
  }

  private lazy val references: Seq[Reference] = PackageLayersSuite.references(root)

  test("the sources are found and refer to other packages") {
    assert(references.exists(r => r.from == "spark" && r.to == "declaration"), references.take(5))
  }

  test("every package has a layer") {
    val unplaced = packagesOf(root).filterNot(Allowed.contains)
    assert(unplaced.isEmpty, s"packages without a layer in PackageLayersSuite.Allowed: $unplaced")
  }

  test("a package refers only to the packages below it") {
    val wrong = references.filterNot(allowed)
    assert(wrong.isEmpty, wrong.map(_.toString).distinct.sorted.mkString("\n", "\n", ""))
  }

  test("no import loop between packages") {
    val edges = references.map(r => r.from -> r.to).distinct
    assert(cycle(edges).isEmpty, s"loop: ${cycle(edges).mkString(" -> ")}")
  }

  test("the checker finds a loop and a reference upwards") {
    val sources = Map(
      "aggregate/A.scala" -> "package punctuated.aggregate\n\nimport punctuated.dedup.D\n",
      "dedup/D.scala" -> ("package punctuated.dedup\n\n// punctuated.spark.X in a comment\n" +
        "object D { val a = punctuated.aggregate.A; val s = \"punctuated.join.X\" }\n"))
    val refs = sources.toSeq.flatMap { case (path, text) => referencesIn(path, text) }
    assert(refs.map(r => r.from -> r.to).toSet == Set("aggregate" -> "dedup", "dedup" -> "aggregate"))
    assert(cycle(refs.map(r => r.from -> r.to)).nonEmpty)
    assert(!refs.forall(allowed))
  }
}

object PackageLayersSuite {

  /** A reference from a package to another one, in a source file. */
  final case class Reference(from: String, to: String, name: String, file: String) {
    override def toString: String = s"$from -> $to ($name in $file)"
  }

  // `compat` (Spark's moved internals per Spark version, in jvm/src/main/scala-spark-*) refers to
  // no package of ours: every layer may use it
  private val Base = Set("model", "conf", "compat")
  private val Declared = Base + "declaration"
  private val Errors = Declared + "errors"
  private val Input = Errors + "input"
  private val State = Input + "state"
  private val Operators = Set("join", "aggregate", "dedup")

  /** The packages each package may refer to: the layers below it. */
  val Allowed: Map[String, Set[String]] = Map(
    "model" -> Set.empty[String],
    "conf" -> Set.empty[String],
    "compat" -> Set.empty[String],
    "localfs" -> Set.empty[String],
    "declaration" -> Base,
    "errors" -> Declared,
    "input" -> Errors,
    "state" -> Input,
    "join" -> State,
    "aggregate" -> State,
    "dedup" -> State,
    "checkpoint" -> (State ++ Operators),
    "nexmark" -> Declared,
    "spark" -> (State ++ Operators ++ Set("checkpoint", "nexmark")))

  def allowed(r: Reference): Boolean = Allowed.get(r.from).exists(_.contains(r.to))

  def packagesOf(root: File): Seq[String] =
    Option(root.listFiles).toSeq.flatten.filter(_.isDirectory).map(_.getName).sorted

  def references(root: File): Seq[Reference] = {
    def files(dir: File): Seq[File] = Option(dir.listFiles).toSeq.flatten.flatMap { f =>
      if (f.isDirectory) files(f) else if (f.getName.endsWith(".scala")) Seq(f) else Nil
    }
    val prefix = root.getPath.length + 1
    files(root).flatMap { f =>
      val src = Source.fromFile(f, "UTF-8")
      try referencesIn(f.getPath.substring(prefix), src.mkString) finally src.close()
    }
  }

  /** Comments and string literals removed (triple-quoted, interpolated and plain). */
  def code(text: String): String =
    text.replaceAll("(?s)/\\*.*?\\*/", " ")
      .replaceAll("(?s)\"\"\".*?\"\"\"", "\"\"")
      .replaceAll("\"(?:[^\"\\\\\\n]|\\\\.)*\"", "\"\"")
      .replaceAll("//[^\\n]*", " ")

  private val Import = """import\s+punctuated\.([a-z]+)((?:\.[a-z]+)*)\.(\{[^}]*\}|\w+)""".r
  private val Qualified = """(?<![\w.])punctuated\.([a-z]+)((?:\.[a-z]+)*)\.([A-Z_]\w*|_)""".r

  /** The references of one file (`path` relative to the `punctuated` directory). */
  def referencesIn(path: String, text: String): Seq[Reference] = {
    val from = path.takeWhile(_ != '/')
    val body = code(text)
    val imports = Import.findAllMatchIn(body).flatMap { m =>
      m.group(3).stripPrefix("{").stripSuffix("}").split(",").map(_.trim.takeWhile(_ != ' '))
        .filter(_.nonEmpty).map(n => Reference(from, m.group(1), n, path))
    }.toSeq
    val qualified = Qualified.findAllMatchIn(Import.replaceAllIn(body, ""))
      .map(m => Reference(from, m.group(1), m.group(3), path)).toSeq
    (imports ++ qualified).filter(r => r.to != r.from)
  }

  /** A cycle of the directed graph, as its packages in order, or empty. */
  def cycle(edges: Seq[(String, String)]): Seq[String] = {
    val next = edges.groupBy(_._1).map { case (k, v) => k -> v.map(_._2).distinct }
    def from(path: List[String]): Option[List[String]] =
      next.getOrElse(path.head, Nil).iterator.map { n =>
        if (path.contains(n)) Some((n :: path.takeWhile(_ != n) ::: List(n)).reverse)
        else from(n :: path)
      }.collectFirst { case Some(c) => c }
    next.keys.toSeq.sorted.iterator.map(k => from(List(k))).collectFirst { case Some(c) => c }.getOrElse(Nil)
  }
}
