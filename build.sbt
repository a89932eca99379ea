// Punctuated: the Spark extension (Scala 2.13, one pinned Spark 4.x).
// Spark versions must match the pyspark pinned in pyproject.toml: the jar runs
// inside that pyspark's JVM, so Spark and Scala come from there ("provided").

val sparkVersion = "4.2.0"

ThisBuild / organization := "io.punctuated"
ThisBuild / version      := "0.1.0"
ThisBuild / scalaVersion := "2.13.18"

lazy val root = (project in file("."))
  .settings(
    name := "punctuated",
    Compile / scalaSource       := baseDirectory.value / "jvm" / "src" / "main" / "scala",
    Compile / resourceDirectory := baseDirectory.value / "jvm" / "src" / "main" / "resources",
    Test / scalaSource          := baseDirectory.value / "jvm" / "src" / "test" / "scala",
    Test / resourceDirectory    := baseDirectory.value / "jvm" / "src" / "test" / "resources",
    // Shared JSON test vectors (read by scalatest and pytest alike).
    Test / unmanagedResourceDirectories += baseDirectory.value / "testdata",
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
