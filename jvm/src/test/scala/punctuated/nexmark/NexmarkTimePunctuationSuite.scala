package punctuated.nexmark

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.functions.{col, count, max, window}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.OutputMode

import punctuated.spark.PunctuatedStreamTest

/**
 * The `nexmark` source's time punctuations (`timePunctuations=true`): every table declares
 * `dateTime<=` and ends each partition of a micro-batch with "no more rows with dateTime <= T",
 * T one microsecond before the time of the partition's end event; no later row is at or before
 * a bound; windowed aggregations over bids close every complete window with them.
 */
class NexmarkTimePunctuationSuite extends PunctuatedStreamTest {

  override protected def sparkConf = super.sparkConf.set(SQLConf.SESSION_LOCAL_TIMEZONE.key, "UTC")

  private val total = 20000L
  private val perBatch = 2000L
  private val opts = Map("totalEvents" -> total.toString, "eventsPerBatch" -> perBatch.toString,
    "numPartitions" -> "2", "punctuations" -> "true", "timePunctuations" -> "true", "seed" -> "3")

  private def read(table: String, options: Map[String, String] = opts): DataFrame =
    spark.readStream.format("nexmark").option("table", table).options(options).load()

  /** Runs a bounded stream to its end, punctuation rows included; its rows by micro-batch. */
  private def runBatches(df: DataFrame): Map[Long, Seq[Row]] =
    withSQLConf(punctuated.conf.PunctuatedConf.EmitPunctuations -> "true")(NexmarkStreams.batches(df))

  private def micros(r: Row): Long = {
    val t = r.getAs[java.sql.Timestamp]("dateTime")
    t.getTime * 1000L + (t.getNanos / 1000) % 1000
  }

  test("each table declares dateTime<= and ends every partition with its bound; no later row is at or before it") {
    for (table <- Seq("person", "auction", "bid")) withClue(s"$table: ") {
      val config = NexmarkConfig(NexmarkTableKind.parse(table), punctuations = true, timePunctuations = true)
      assert(new NexmarkTable(config).properties().get("punctuated.schemes").split(";").map(_.trim)
        .contains("dateTime<="))
      assert(NexmarkOffset.fingerprint(config)("timePunctuations") == "true")
      val batches = runBatches(read(table))
      assert(batches.keySet == (0L until total / perBatch).toSet)
      def isTime(r: Row) = r.getAs[Boolean]("is_punct") && !r.isNullAt(r.fieldIndex("dateTime"))
      batches.toSeq.sortBy(_._1).foreach { case (b, rows) =>
        val bounds = rows.filter(isTime).map(micros)
        assert(bounds.size == 2, s"batch $b: one bound per partition")
        // the second partition ends where the batch ends: the time of event (b + 1) * perBatch, - 1 µs
        assert(bounds.max == ((b + 1) * perBatch * 1000L / 10000L) * 1000L - 1L, s"batch $b")
        rows.filter(isTime).foreach(p => assert((0 until p.length - 1).filter(_ != p.fieldIndex("dateTime"))
          .forall(p.isNullAt), s"time punctuation with data: $p"))
        val later = batches.toSeq.filter(_._1 > b).flatMap(_._2).filterNot(_.getAs[Boolean]("is_punct"))
        assert(later.forall(r => micros(r) > bounds.max), s"a row after batch $b at or before its bound")
      }
      // the data rows are those of the stream without time punctuations
      val plain = runBatches(read(table, opts - "timePunctuations")).values.flatten
        .filterNot(_.getAs[Boolean]("is_punct")).map(_.toString).toSeq.sorted
      assert(batches.values.flatten.filterNot(_.getAs[Boolean]("is_punct")).map(_.toString).toSeq.sorted == plain)
    }
  }

  test("auctionPunctuations=false: the bid stream punctuates and declares dateTime<= only, the same bids") {
    val config = NexmarkConfig(NexmarkTableKind.Bid, punctuations = true, timePunctuations = true,
      auctionPunctuations = false)
    assert(new NexmarkTable(config).properties().get("punctuated.schemes") == "dateTime<=")
    assert(new NexmarkTable(config.copy(auctionPunctuations = true)).properties().get("punctuated.schemes") ==
      "auction; dateTime<=")
    assert(NexmarkOffset.fingerprint(config)("auctionPunctuations") == "false")
    val without = runBatches(read("bid", opts + ("auctionPunctuations" -> "false")))
    val withThem = runBatches(read("bid"))
    def punct(rows: Iterable[Row]) = rows.filter(_.getAs[Boolean]("is_punct"))
    def isTime(r: Row) = !r.isNullAt(r.fieldIndex("dateTime"))
    // every punctuation is a time punctuation, the same ones; the auction punctuations are gone
    assert(punct(without.values.flatten).forall(isTime))
    assert(punct(without.values.flatten).map(_.toString).toSeq.sorted ==
      punct(withThem.values.flatten).filter(isTime).map(_.toString).toSeq.sorted)
    assert(punct(withThem.values.flatten).exists(r => !isTime(r)))
    // the same bids in the same micro-batches
    assert(without.keySet == withThem.keySet)
    without.keys.foreach { b =>
      def data(rows: Seq[Row]) = rows.filterNot(_.getAs[Boolean]("is_punct")).map(_.toString).sorted
      assert(data(without(b)) == data(withThem(b)), s"batch $b")
    }
    // without time punctuations the bid stream would have no scheme: refused, naming the fix
    val e = intercept[IllegalArgumentException](NexmarkConfig(NexmarkTableKind.Bid, punctuations = true,
      auctionPunctuations = false))
    assert(e.getMessage.contains("auctionPunctuations = false needs timePunctuations = true"))
  }

  test("a checkpoint written before auctionPunctuations was recorded: a restart with it false is refused") {
    val checkpoint = java.nio.file.Files.createTempDirectory("nexmark-old-ckpt").toFile
    def run(total: Long, options: (String, String)*): Unit = {
      val q = read("bid", opts ++ Map("totalEvents" -> total.toString) ++ options)
        .writeStream.format("noop").option("checkpointLocation", checkpoint.getCanonicalPath)
        .trigger(org.apache.spark.sql.streaming.Trigger.AvailableNow()).start()
      try q.awaitTermination() finally q.stop()
    }
    run(6000L)
    // the offsets as the version before the option wrote them: the same options but that one
    val recorded = "\"auctionPunctuations\":\"true\","
    val offsets = new java.io.File(checkpoint, "offsets").listFiles().filter(_.getName.forall(_.isDigit))
    assert(offsets.nonEmpty)
    offsets.foreach { f =>
      val text = new String(java.nio.file.Files.readAllBytes(f.toPath), "UTF-8")
      assert(text.contains(recorded), text)
      java.nio.file.Files.write(f.toPath, text.replace(recorded, "").getBytes("UTF-8"))
    }
    new java.io.File(checkpoint, "offsets").listFiles().filter(_.getName.endsWith(".crc")).foreach(_.delete())
    // the bid stream then always punctuated auctions: without them the rows would differ
    val e = intercept[Exception](run(10000L, "auctionPunctuations" -> "false"))
    val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")
    assert(messages.contains("NEXMARK_OPTIONS_CHANGED"), messages)
    assert(messages.contains("option auctionPunctuations is false") &&
      messages.contains("auctionPunctuations = true"), messages)
    // with the options it was written with, the stream goes on, and records the option again
    run(10000L)
    val last = new java.io.File(checkpoint, "offsets").listFiles().filter(_.getName.forall(_.isDigit))
      .maxBy(_.getName.toLong)
    assert(!offsets.map(_.getName).contains(last.getName))
    assert(new String(java.nio.file.Files.readAllBytes(last.toPath), "UTF-8").contains(recorded))
  }

  test("a windowed aggregation over bids closes every window the stream has passed, in append mode") {
    val maxPerWindow = read("bid").groupBy(window(col("dateTime"), "200 milliseconds"))
      .agg(count("*").as("bids"), max("price").as("top"))
      .select(col("window.start"), col("bids"), col("top"))
    val plain = read("bid", opts - "timePunctuations" - "punctuations")
    val lastMs = total * 1000L / 10000L   // the time of the first event after the stream
    val expected = {
      val rows = runBatches(plain).values.flatten.toSeq
      rows.groupBy(r => r.getAs[java.sql.Timestamp]("dateTime").getTime / 200L * 200L)
        .filter { case (start, _) => start + 200L <= lastMs }
        .map { case (start, rs) => Row(new java.sql.Timestamp(start), rs.size.toLong, rs.map(_.getAs[Long]("price")).max) }
        .toSeq
    }
    assert(expected.size == lastMs / 200L)
    testStream(maxPerWindow, OutputMode.Append())(
      StartStream(),
      ProcessAllAvailable(),
      AssertOnQuery("the punctuated aggregation holds no window the stream has passed") { q =>
        punctuatedProgress(q).numRowsTotal == 0
      },
      CheckAnswerRows(expected, lastOnly = false, isSorted = false))
  }
}
