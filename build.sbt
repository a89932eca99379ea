// Punctuated: the Spark extension (Scala 2.13), cross-built for Spark 4.0, 4.1 and 4.2.
// The jar runs inside pyspark's JVM, so Spark and Scala come from there ("provided").
//
// Which Spark: `-Dspark.version=4.1` (a minor, looked up in project/spark-versions) or a
// full version (`-Dspark.version=4.1.3`), else the PUNCTUATED_SPARK_VERSION environment variable, else
// the default: the pyspark pinned in pyproject.toml (one place for the default version).
// Sources shared by every version live in jvm/src/main/scala; code whose Spark API differs
// between minors lives in shim directories (docs/spark-versions.md): jvm/src/{main,test}/
// scala-spark-<minor>/ for one minor, scala-spark-<minor>+/ for that minor and every later one
// (4.1+: 4.1 and 4.2, whose streaming internals share their packages), and
// scala-spark-<from>-<to>/ for a range (4.0-4.1: both plan a micro-batch again to describe it).
// A non-default version compiles into target/spark-<minor>/, so switching never clobbers
// the default build in target/.

import scala.io.Source

/** The default Spark version: the `pyspark==X.Y.Z` pin in pyproject.toml. */
lazy val defaultSparkVersion: String = {
  val pin = """"pyspark==([0-9][0-9.]*)"""".r
  val src = Source.fromFile("pyproject.toml")
  try pin.findFirstMatchIn(src.mkString).map(_.group(1)).getOrElse(
    sys.error("build.sbt: pyproject.toml has no \"pyspark==X.Y.Z\" dependency to take the default Spark version from"))
  finally src.close()
}

/** Supported minors: the full Spark version and the Scala version each builds with (project/spark-versions). */
lazy val sparkMinorTable: Map[String, (String, String)] = {
  val src = Source.fromFile("project/spark-versions")
  try src.getLines().map(_.trim).filter(l => l.nonEmpty && !l.startsWith("#"))
    .map(_.split("\\s+")).collect { case Array(minor, full, scala) => minor -> (full, scala) }.toMap
  finally src.close()
}
lazy val sparkMinors: Map[String, String] = sparkMinorTable.map { case (minor, (full, _)) => minor -> full }

val sparkVersion: String = {
  val asked = sys.props.get("spark.version").orElse(sys.env.get("PUNCTUATED_SPARK_VERSION")).map(_.trim).filter(_.nonEmpty)
  asked match {
    case None => defaultSparkVersion
    case Some(v) if v.count(_ == '.') == 1 => sparkMinors.getOrElse(v, sys.error(
      s"build.sbt: Spark $v is not a supported minor (spark.version / PUNCTUATED_SPARK_VERSION); " +
        s"supported: ${sparkMinors.keys.toSeq.sorted.mkString(", ")} (project/spark-versions)"))
    case Some(v) => v
  }
}
val sparkMinor: String = sparkVersion.split('.').take(2).mkString(".")
/**
 * The shim directories for this minor in `dir`: scala-spark-<minor> (that minor only),
 * scala-spark-<from>+ (from that minor on) and scala-spark-<from>-<to> (those minors and the
 * ones between), e.g. scala-spark-4.1+ for 4.1 and 4.2, scala-spark-4.0-4.1 for 4.0 and 4.1.
 */
def sparkShimDirs(dir: File): Seq[File] = {
  def num(minor: String): (Int, Int) = minor.split('.') match { case Array(a, b) => (a.toInt, b.toInt) }
  val ord = Ordering[(Int, Int)]
  val m = num(sparkMinor)
  val Shim = """scala-spark-(\d+\.\d+)(\+|-(\d+\.\d+))?""".r
  Option(dir.listFiles).toSeq.flatten.filter(_.isDirectory).filter(d => d.getName match {
    case Shim(from, null, _) => num(from) == m
    case Shim(from, "+", _)  => ord.lteq(num(from), m)
    case Shim(from, _, to)   => ord.lteq(num(from), m) && ord.lteq(m, num(to))
    case _                   => false
  }).sortBy(_.getName)
}
val isDefaultSpark: Boolean = sparkMinor == defaultSparkVersion.split('.').take(2).mkString(".")

ThisBuild / organization := "io.punctuated"
ThisBuild / version      := "0.1.0"
// The Scala of this Spark minor's pyspark jars (project/spark-versions): a jar compiled by a
// newer 2.13 compiler may call library methods that an older scala-library lacks.
ThisBuild / scalaVersion := sparkMinorTable.get(sparkMinor).map(_._2).getOrElse(sys.error(
  s"build.sbt: Spark $sparkMinor is not a supported minor; supported: ${sparkMinors.keys.toSeq.sorted.mkString(", ")} (project/spark-versions)"))

lazy val root = (project in file("."))
  .settings(
    name := "punctuated",
    Compile / scalaSource       := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "jvm" / "src" / "main" / "resources",
    Test / scalaSource          := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / resourceDirectory    := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    // Shared JSON test vectors (read by scalatest and pytest alike).
    Test / unmanagedResourceDirectories += baseDirectory.value / "testdata",
    // Shims for this minor (only where Spark's API differs; sparkShimDirs above).
    Compile / unmanagedSourceDirectories ++= sparkShimDirs(baseDirectory.value / "jvm" / "src" / "main"),
    Test / unmanagedSourceDirectories    ++= sparkShimDirs(baseDirectory.value / "jvm" / "src" / "test"),
    // Compiled output of a non-default Spark apart from the default build's.
    target := (if (isDefaultSpark) baseDirectory.value / "target" else baseDirectory.value / "target" / s"spark-$sparkMinor"),
    // The Spark version the jar was built for, read by the Python package's version check.
    Compile / resourceGenerators += Def.task {
      val f = (Compile / resourceManaged).value / "punctuated" / "build.properties"
      IO.write(f, s"spark.version=$sparkVersion\nspark.minor=$sparkMinor\npunctuated.version=${version.value}\n")
      Seq(f)
    }.taskValue,
    javacOptions ++= Seq("--release", "17"),
    scalacOptions ++= Seq("-release", "17", "-deprecation", "-feature", "-unchecked"),
    libraryDependencies ++= Seq(
      "org.apache.spark" %% "spark-sql"      % sparkVersion % "provided",
      "org.apache.spark" %% "spark-core"     % sparkVersion % "provided",
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % "provided",
      // Spark's streaming test kit (StreamTest, MemoryStream, SharedSparkSession).
      "org.apache.spark" %% "spark-sql"      % sparkVersion % "test" classifier "tests",
      "org.apache.spark" %% "spark-core"     % sparkVersion % "test" classifier "tests",
      "org.apache.spark" %% "spark-catalyst" % sparkVersion % "test" classifier "tests",
      "org.apache.spark" %% "spark-sql-api"  % sparkVersion % "test" classifier "tests",
      "org.scalatest"    %% "scalatest"      % "3.2.19"     % "test",
      "org.scalatestplus" %% "scalacheck-1-18" % "3.2.19.0" % "test"
    ),
    Test / fork := true,
    Test / parallelExecution := false,
    Test / javaOptions ++= Seq(
      "-Xmx4g",
      // The client compiler only: the suites run thousands of short queries, each with its own
      // generated classes, and the server compiler's threads took about a fifth of the test JVM's
      // CPU (JFR: 42,000 compilations in 4.5 minutes) for no shorter run. With it off the same
      // suites took the same time and 21 % less CPU, which CI's busy 2 cores need
      // (benchmarks/results/ci_time.md).
      "-XX:TieredStopAtLevel=1",
      "-XX:+IgnoreUnrecognizedVMOptions",
      "--add-opens=java.base/java.lang=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.invoke=ALL-UNNAMED",
      "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
      "--add-opens=java.base/java.io=ALL-UNNAMED",
      "--add-opens=java.base/java.net=ALL-UNNAMED",
      "--add-opens=java.base/java.nio=ALL-UNNAMED",
      "--add-opens=java.base/java.util=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
      "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens=java.base/sun.nio.cs=ALL-UNNAMED",
      "--add-opens=java.base/sun.security.action=ALL-UNNAMED",
      "--add-opens=java.base/sun.util.calendar=ALL-UNNAMED",
      "-Djdk.reflect.useDirectMethodHandle=false",
      "-Dio.netty.tryReflectionSetAccessible=true",
      "-Dspark.ui.enabled=false"
    ),
    Test / testOptions += Tests.Argument(TestFrameworks.ScalaTest, "-oD"),
    // The assembly holds the extension and its own dependencies, not Spark/Scala.
    assembly / assemblyJarName := "punctuated-assembly.jar",
    assembly / assemblyOption ~= (_.withIncludeScala(false)),
    assembly / test := {}
  )
