package punctuated.checkpoint

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{AnalysisException, DataFrame}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.errors.{PunctuatedAnalysisException, PunctuatedErrors}
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * Restarts from a checkpoint with the declarations changed by ALTER TABLE between runs
 * (real catalog tables read as streams, HDFS-backed state store;
 * [[CheckpointDeclarationsRocksDBSuite]] runs the same on RocksDB): the declarations the
 * state was written with are recorded with it; a change the state cannot follow fails
 * before any state store is opened, naming old, new and the fix; compatible ones work.
 */
class CheckpointDeclarationsSuite extends PunctuatedStreamTest {
  import testImplicits._

  private val auctionColumns = "id BIGINT, seller BIGINT, is_punct BOOLEAN"
  private val bidColumns = "auction BIGINT, bidder BIGINT, price DOUBLE, is_punct BOOLEAN"
  private val readingColumns = "sensor BIGINT, hour INT, temp DOUBLE, is_punct BOOLEAN, is_end BOOLEAN"

  private def newCheckpoint(): String = Files.createTempDirectory("punctuated-ckpt").toFile.getCanonicalPath

  private def auctionJoin(): DataFrame = spark.sql(
    "SELECT a.id, b.bidder, b.price FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction")

  /**
   * Rows written to a table the query reads. A file source's trigger that listed the files
   * before the insert can end a `processAllAvailable` early, so the insert waits for one
   * (a failure is left to the next action); the next check's own wait then sees the rows.
   */
  private def insert(table: String, rows: String*) = Execute(s"INSERT INTO $table") { q =>
    sql(s"INSERT INTO $table VALUES ${rows.mkString(", ")}")
    try q.processAllAvailable() catch { case scala.util.control.NonFatal(_) => }
  }

  /** Every file of the operator's partitions (its stores), with its length. */
  private def stateFiles(checkpoint: String, operator: Int = 0): Map[String, Long] = {
    val dir = new File(checkpoint, s"state/$operator")
    def walk(f: File): Seq[File] = if (f.isDirectory) f.listFiles().toSeq.flatMap(walk) else Seq(f)
    dir.listFiles().toSeq.filter(_.getName.forall(_.isDigit)).flatMap(walk)
      .map(f => dir.toPath.relativize(f.toPath).toString -> f.length()).toMap
  }

  private def record(checkpoint: String, operator: Int = 0): OperatorRecord = OperatorRecord.fromJson(
    new String(Files.readAllBytes(new File(checkpoint,
      s"state/$operator/${CheckpointDeclarations.DirName}/${CheckpointDeclarations.FileName}").toPath), "UTF-8"))


  /** The refusal: our error class, naming what changed and both fixes. */
  private def refused(mentions: String*)(e: Throwable): Unit = {
    val a = e.asInstanceOf[AnalysisException]
    assert(a.getCondition == PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
    (mentions :+ "new checkpoint location").foreach(m => assert(a.getMessage.contains(m), s"'$m' in ${a.getMessage}"))
  }

  test("join: a scheme changed from constant to range is refused before the state is touched; reverting resumes") {
    withDeclaredTable("auctions", auctionColumns, Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", bidColumns, Map(Schemes -> "auction", Marker -> "is_punct")) {
        val checkpoint = newCheckpoint()
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("auctions", "(1, 10, false)", "(2, 11, false)"),
          insert("bids", "(1, 100, 5.0, false)", "(2, 100, 3.0, false)", "(3, 101, 1.0, false)"),
          CheckNewAnswer((1L, 100L, 5.0), (2L, 100L, 3.0)),
          // auctions 1 and 2 (their unique key held), bid 3 waiting for its auction
          AssertPunctuatedState(rows = 3, punctuations = 2),
          StopStream)
        sql("ALTER TABLE bids SET TBLPROPERTIES ('punctuated.schemes' = 'auction<=')")
        val before = stateFiles(checkpoint)
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("bids", "(3, NULL, NULL, true)"),
          ExpectFailure[PunctuatedAnalysisException](refused(
            "bids (right): scheme 'auction' no longer purges", "auctions (left): the other input's scheme 'auction<=' needs a range index",
            "Checkpoint written with: spark_catalog.default.auctions (left)",
            // only the input whose declaration changed is to be declared again
            "schemes 'auction<='", "declare again what the state was written with (spark_catalog.default.bids: " +
              "schemes 'auction', marker 'is_punct'), or start")))
        assert(stateFiles(checkpoint) == before, "the refused run wrote state")

        // the fix the error names: the old declaration back
        sql("ALTER TABLE bids SET TBLPROPERTIES ('punctuated.schemes' = 'auction')")
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("auctions", "(3, 12, false)"),
          CheckNewAnswer((3L, 101L, 1.0)),
          // bids closed 3 (the punctuation of the refused run), then auction 3 came: both gone
          AssertPunctuatedState(rows = 2, punctuations = 2))
        val recorded = record(checkpoint)
        assert(recorded.operator == "punctuatedSymmetricHashJoin")
        assert(recorded.inputs.map(i => (i.table, i.marker, i.unique, i.schemes)) == Seq(
          ("spark_catalog.default.auctions", Some("is_punct"), Some("id"), Nil),
          ("spark_catalog.default.bids", Some("is_punct"), None, Seq("auction"))), recorded)
      }
    }
  }

  test("join: a changed unique key is refused") {
    // auctions' unique key becomes (id, seller), which is not the join key: unsafe, warned
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
    withDeclaredTable("auctions", auctionColumns, Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", bidColumns, Map(Schemes -> "auction", Marker -> "is_punct")) {
        val checkpoint = newCheckpoint()
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("auctions", "(1, 10, false)"),
          CheckNewAnswer(),
          StopStream)
        sql("ALTER TABLE auctions SET TBLPROPERTIES ('punctuated.unique' = 'id, seller')")
        val before = stateFiles(checkpoint)
        // the declaration also reorders the columns stored for auctions: Spark's own state
        // schema check refuses that first, with its message; without it, ours names all
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint,
            additionalConfs = Map(SQLConf.STATE_SCHEMA_CHECK_ENABLED.key -> "false")),
          insert("bids", "(1, 100, 5.0, false)"),
          ExpectFailure[PunctuatedAnalysisException](refused(
            "spark_catalog.default.auctions (left): unique key 'id' is now 'id, seller'",
            "scheme 'id' no longer purges", "the rows stored for it have columns (is_punct BOOLEAN, id BIGINT",
            "declare again what the state was written with (spark_catalog.default.auctions: no schemes, " +
              "marker 'is_punct', unique 'id')")))
        assert(stateFiles(checkpoint) == before, "the refused run wrote state")
      }
    }
    }
  }

  test("join: an added scheme is accepted, purges from then on, results exact; an unchanged one resumes") {
    // auctions declare no scheme on the join key at first: their rows are never purged (warn)
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      withDeclaredTable("auctions", auctionColumns, Map(Schemes -> "seller", Marker -> "is_punct")) {
        withDeclaredTable("bids", bidColumns, Map(Schemes -> "auction", Marker -> "is_punct")) {
          val checkpoint = newCheckpoint()
          testStream(auctionJoin())(
            StartStream(checkpointLocation = checkpoint),
            insert("auctions", "(1, 10, false)", "(2, 11, false)"),
            insert("bids", "(1, 100, 5.0, false)", "(2, 101, 6.0, false)"),
            CheckNewAnswer((1L, 100L, 5.0), (2L, 101L, 6.0)),
            AssertPunctuatedState(rows = 4, punctuations = 0),
            StopStream,
            // unchanged declaration: resumes
            StartStream(checkpointLocation = checkpoint),
            insert("bids", "(2, 102, 7.0, false)"),
            CheckNewAnswer((2L, 102L, 7.0)),
            AssertPunctuatedState(rows = 5, punctuations = 0),
            StopStream)

          sql("ALTER TABLE auctions SET TBLPROPERTIES ('punctuated.schemes' = 'seller; id')")
          testStream(auctionJoin())(
            StartStream(checkpointLocation = checkpoint),
            // "no more auctions with id 1": bid (1, 100) can meet no partner any more
            insert("auctions", "(1, NULL, true)"),
            CheckNewAnswer(),
            AssertPunctuatedState(rows = 4, punctuations = 1),
            insert("bids", "(1, NULL, NULL, true)", "(2, 103, 8.0, false)"),
            CheckNewAnswer((2L, 103L, 8.0)),
            // auction 1 purged by the bids' punctuation, both closed 1: released
            AssertPunctuatedState(rows = 4, punctuations = 0))
          assert(record(checkpoint).inputs.head.schemes == Seq("seller", "id"))
        }
      }
    }
  }

  test("a checkpoint without a record: a join's (layout 1) is refused, an aggregation's resumed and recorded; one of Spark's own join is refused") {
    withDeclaredTable("auctions", auctionColumns, Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", bidColumns, Map(Schemes -> "auction", Marker -> "is_punct")) {
        val checkpoint = newCheckpoint()
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("auctions", "(1, 10, false)"),
          CheckNewAnswer(),
          StopStream)
        // as written before records existed, when joins stored rows in layout 1
        org.apache.commons.io.FileUtils.deleteDirectory(new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}"))
        val before = stateFiles(checkpoint)
        testStream(auctionJoin())(
          StartStream(checkpointLocation = checkpoint),
          insert("bids", "(1, 100, 5.0, false)"),
          ExpectFailure[PunctuatedAnalysisException](refused("no record of its declarations",
            "state layout (1)", "writes layout 2", "(not recorded)")))
        assert(stateFiles(checkpoint) == before, "the refused run wrote state")
      }
    }
    // an aggregation's layout is still the one of before records: resumed, then recorded
    withDeclaredTable("readings", readingColumns, Map(Schemes -> "hour<=", Marker -> "is_punct")) {
      val checkpoint = newCheckpoint()
      def hottest() = spark.sql("SELECT hour, max(temp) AS top FROM STREAM(readings) GROUP BY hour")
      testStream(hottest(), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(1, 9, 20.0, false, false)"),
        CheckNewAnswer(),
        StopStream)
      org.apache.commons.io.FileUtils.deleteDirectory(new File(checkpoint, s"state/0/${CheckpointDeclarations.DirName}"))
      testStream(hottest(), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(NULL, 9, NULL, true, NULL)"),
        CheckNewAnswer((9, 20.0)))
      assert(record(checkpoint).kinds == Seq(KeyedScheme("hour<=", "0<=")))
    }
    // the same tables undeclared: Spark's own join writes the checkpoint
    withDeclaredTable("auctions", auctionColumns, Map.empty) {
      withDeclaredTable("bids", bidColumns, Map.empty) {
        val checkpoint = newCheckpoint()
        val all = "SELECT * FROM STREAM(auctions) a JOIN STREAM(bids) b ON a.id = b.auction"
        testStream(spark.sql(all))(
          StartStream(checkpointLocation = checkpoint),
          insert("auctions", "(1, 10, false)"),
          CheckNewAnswer(),
          StopStream)
        sql("ALTER TABLE auctions SET TBLPROPERTIES ('punctuated.unique' = 'id', 'punctuated.marker' = 'is_punct')")
        sql("ALTER TABLE bids SET TBLPROPERTIES ('punctuated.schemes' = 'auction', 'punctuated.marker' = 'is_punct')")
        val before = stateFiles(checkpoint)
        // refused at start(), before Spark's own state checks (which would name schemas)
        val e = intercept[AnalysisException] {
          spark.sql(all).writeStream.format("noop")
            .option("checkpointLocation", checkpoint).start()
        }
        refused("left-keyToNumValues", "written by Spark's own operator", "(not recorded)",
          "remove the declarations to resume it")(e)
        assert(stateFiles(checkpoint) == before, "the refused run wrote state")
      }
    }
  }

  test("aggregation: an unchanged declaration resumes; a changed marker column is refused") {
    withDeclaredTable("readings", readingColumns, Map(Schemes -> "hour<=", Marker -> "is_punct")) {
      val checkpoint = newCheckpoint()
      def hottest() = spark.sql("SELECT hour, max(temp) AS top FROM STREAM(readings) GROUP BY hour")
      testStream(hottest(), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(1, 9, 20.0, false, false)", "(1, 10, 21.0, false, false)"),
        CheckNewAnswer(),
        insert("readings", "(NULL, 9, NULL, true, NULL)"),
        CheckNewAnswer((9, 20.0)),
        StopStream)
      testStream(hottest(), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(2, 9, 30.0, false, false)", "(NULL, 10, NULL, true, NULL)"),
        CheckNewAnswer((10, 21.0)),
        AssertCounted("numLateRowsDropped", 1),
        StopStream)

      sql("ALTER TABLE readings SET TBLPROPERTIES ('punctuated.marker' = 'is_end')")
      val before = stateFiles(checkpoint)
      testStream(hottest(), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(NULL, 11, NULL, true, NULL)"),
        ExpectFailure[PunctuatedAnalysisException](refused("marker column 'is_punct' is now 'is_end'",
          "(spark_catalog.default.readings: schemes (then the unique key, if any) 'hour<=', marker 'is_punct')")))
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")
      assert(record(checkpoint).kinds == Seq(KeyedScheme("hour<=", "0<=")))
    }
  }

  test("deduplication: an unchanged declaration resumes; closing schemes keep their numbers, new ones come after") {
    withDeclaredTable("readings", readingColumns, Map(Schemes -> "hour<=", Marker -> "is_punct")) {
      val checkpoint = newCheckpoint()
      def seen() = spark.readStream.table("readings").dropDuplicates("sensor", "hour").select("sensor", "hour")
      testStream(seen())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(1, 9, 1.0, false, false)", "(1, 9, 2.0, false, false)", "(2, 10, 3.0, false, false)"),
        CheckNewAnswer((1L, 9), (2L, 10)),
        StopStream,
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(NULL, 9, NULL, true, NULL)", "(2, 10, 4.0, false, false)", "(3, 10, 1.0, false, false)"),
        CheckNewAnswer((3L, 10)),
        AssertPunctuatedState(rows = 2, punctuations = 2),   // "hour <= 9", held by both partitions
        StopStream)

      // 'sensor' before 'hour<=' would renumber the held range punctuation's scheme
      sql("ALTER TABLE readings SET TBLPROPERTIES ('punctuated.schemes' = 'sensor; hour<=')")
      val before = stateFiles(checkpoint)
      testStream(seen())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(4, 11, 1.0, false, false)"),
        ExpectFailure[PunctuatedAnalysisException](refused("closing scheme 1 was 'hour<=', now 'sensor'")))
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")

      // after it: accepted; the held range still drops late rows, the new scheme closes keys
      sql("ALTER TABLE readings SET TBLPROPERTIES ('punctuated.schemes' = 'hour<=; sensor')")
      testStream(seen())(
        StartStream(checkpointLocation = checkpoint),
        insert("readings", "(5, 9, 1.0, false, false)", "(4, 12, 1.0, false, false)"),
        CheckNewAnswer((4L, 11), (4L, 12)),
        AssertCounted("numLateRowsDropped", 1),
        insert("readings", "(4, NULL, NULL, true, NULL)"),
        CheckNewAnswer(),
        // sensor 4's keys forgotten; (2, 10) and (3, 10) remain; "hour <= 9" in both partitions
        AssertPunctuatedState(rows = 2, punctuations = 2))
      assert(record(checkpoint).kinds.map(_.text) == Seq("hour<=", "sensor"))
    }
  }

  /**
   * The declarations removed between runs: the operator Spark now plans is its own, over state
   * ours wrote. Refused before any state is touched, naming the operator, what the state was
   * written with and both fixes.
   */
  private def undeclaredRestart(query: () => DataFrame, mode: OutputMode, run: StreamAction*)(
      undeclare: => Unit, mentions: String*): Unit = {
    val checkpoint = newCheckpoint()
    testStream(query(), mode)(StartStream(checkpointLocation = checkpoint) +: run :+ StopStream: _*)
    undeclare
    val before = stateFiles(checkpoint)
    val e = intercept[AnalysisException] {
      query().writeStream.format("noop").outputMode(mode)
        .option("checkpointLocation", checkpoint).start()
    }
    refused((mentions :+ "written by a punctuated" :+ "restore the declarations"): _*)(e)
    assert(stateFiles(checkpoint) == before, "the refused run wrote state")
  }

  test("join: a declared checkpoint restarted with the declarations removed is refused") {
    withDeclaredTable("auctions", auctionColumns, Map(Unique -> "id", Marker -> "is_punct")) {
      withDeclaredTable("bids", bidColumns, Map(Schemes -> "auction", Marker -> "is_punct")) {
        undeclaredRestart(auctionJoin _, OutputMode.Append(),
          insert("auctions", "(1, 10, false)"), CheckNewAnswer())(
          {
            sql("ALTER TABLE auctions UNSET TBLPROPERTIES ('punctuated.unique', 'punctuated.marker')")
            sql("ALTER TABLE bids UNSET TBLPROPERTIES ('punctuated.schemes', 'punctuated.marker')")
          },
          "symmetricHashJoin", "spark_catalog.default.auctions (left)", "unique 'id'")
      }
    }
  }

  test("aggregation and deduplication: a declared checkpoint restarted undeclared is refused") {
    withDeclaredTable("readings", readingColumns, Map(Schemes -> "hour<=", Marker -> "is_punct")) {
      def undeclare() = sql("ALTER TABLE readings UNSET TBLPROPERTIES ('punctuated.schemes', 'punctuated.marker')")
      def redeclare() = sql("ALTER TABLE readings SET TBLPROPERTIES ('punctuated.schemes' = 'hour<=', 'punctuated.marker' = 'is_punct')")
      undeclaredRestart(() => spark.sql("SELECT hour, count(*) AS n FROM STREAM(readings) GROUP BY hour"),
        OutputMode.Update(), insert("readings", "(1, 9, 20.0, false, false)"), CheckNewAnswer((9, 1L)))(
        undeclare(), "stateStoreSave", "spark_catalog.default.readings", "'hour<='")
      redeclare()
      undeclaredRestart(() => spark.readStream.table("readings").dropDuplicates("sensor", "hour").select("sensor", "hour"),
        OutputMode.Append(), insert("readings", "(1, 9, 1.0, false, false)"), CheckNewAnswer((1L, 9)))(
        undeclare(), "dedupe", "spark_catalog.default.readings", "'hour<='")
    }
  }

  test("aggregation and deduplication: a checkpoint of Spark's own operator restarted declared is refused") {
    withDeclaredTable("readings", readingColumns, Map.empty) {
      def declare() = sql("ALTER TABLE readings SET TBLPROPERTIES ('punctuated.schemes' = 'hour<=', 'punctuated.marker' = 'is_punct')")
      def undeclare() = sql("ALTER TABLE readings UNSET TBLPROPERTIES ('punctuated.schemes', 'punctuated.marker')")
      val queries = Seq[(() => DataFrame, OutputMode, StreamAction)](
        (() => spark.sql("SELECT hour, count(*) AS n FROM STREAM(readings) GROUP BY hour"), OutputMode.Update(),
          CheckNewAnswer((9, 1L))),
        (() => spark.readStream.table("readings").dropDuplicates("sensor", "hour").select("sensor", "hour"),
          OutputMode.Append(), CheckNewAnswer((1L, 9))))
      queries.foreach { case (query, mode, answer) =>
        val checkpoint = newCheckpoint()
        testStream(query(), mode)(
          StartStream(checkpointLocation = checkpoint),
          insert("readings", "(1, 9, 20.0, false, false)"),
          answer,
          StopStream)
        declare()
        val before = stateFiles(checkpoint)
        val e = intercept[AnalysisException] {
          query().writeStream.format("noop").outputMode(mode).option("checkpointLocation", checkpoint).start()
        }
        refused("'default'", "written by Spark's own operator", "(not recorded)", "remove the declarations")(e)
        assert(stateFiles(checkpoint) == before, "the refused run wrote state")
        undeclare()
        sql("TRUNCATE TABLE readings")
      }
    }
  }
}

class CheckpointDeclarationsRocksDBSuite extends CheckpointDeclarationsSuite with OnRocksDB
