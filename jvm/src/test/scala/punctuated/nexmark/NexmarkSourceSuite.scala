package punctuated.nexmark

import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.Trigger
import org.apache.spark.sql.types._

import punctuated.spark.PunctuatedStreamTest

/** The `nexmark` source, read by real streaming queries. */
class NexmarkSourceSuite extends PunctuatedStreamTest {

  private def read(table: String, options: (String, String)*): DataFrame =
    spark.readStream.format("nexmark").option("table", table).options(options.toMap).load()

  private var queries = 0

  // The source's own rows, punctuations included: they reach results with emitPunctuations.
  private def emitting[T](body: => T): T =
    withSQLConf(punctuated.conf.PunctuatedConf.EmitPunctuations -> "true")(body)

  /** Runs a bounded stream to its end into a memory sink; all its rows. */
  private def runAll(df: DataFrame): Seq[Row] = emitting {
    queries += 1
    val name = s"nexmark_$queries"
    val q = df.writeStream.format("memory").queryName(name).start()
    try q.processAllAvailable() finally q.stop()
    spark.table(name).collect().toSeq
  }

  /** Runs a bounded stream to its end; its rows by micro-batch. */
  private def runBatches(df: DataFrame): Map[Long, Seq[Row]] = emitting(NexmarkStreams.batches(df))

  private def sorted(rows: Seq[Row]): Seq[String] = rows.map(_.toString).sorted
  private def millis(r: Row, field: String): Long = r.getAs[java.sql.Timestamp](field).getTime

  test("schemas follow the reference model; punctuations add is_punct") {
    def fields(df: DataFrame) = df.schema.fields.map(f => f.name -> f.dataType).toSeq
    assert(fields(read("person")) == Seq("id" -> LongType, "name" -> StringType,
      "emailAddress" -> StringType, "creditCard" -> StringType, "city" -> StringType,
      "state" -> StringType, "dateTime" -> TimestampType, "extra" -> StringType))
    assert(fields(read("auction")) == Seq("id" -> LongType, "itemName" -> StringType,
      "description" -> StringType, "initialBid" -> LongType, "reserve" -> LongType,
      "dateTime" -> TimestampType, "expires" -> TimestampType, "seller" -> LongType,
      "category" -> LongType, "extra" -> StringType))
    assert(fields(read("bid")) == Seq("auction" -> LongType, "bidder" -> LongType,
      "price" -> LongType, "channel" -> StringType, "url" -> StringType,
      "dateTime" -> TimestampType, "extra" -> StringType))
    for (t <- Seq("person", "auction", "bid")) {
      val withMarker = read(t, "punctuations" -> "true").schema
      assert(withMarker.last == StructField("is_punct", BooleanType, nullable = false))
      assert(withMarker.fields.init.toSeq == read(t).schema.fields.toSeq.map(f =>
        // a punctuation row sets only its scheme's column (bids: auction; people, auctions: id)
        if (f.name != (if (t == "bid") "auction" else "id")) f.copy(nullable = true) else f))
    }
    // by full class name too
    val byClass = spark.readStream.format(classOf[NexmarkSource].getName)
      .option("table", "bid").load()
    assert(byClass.schema == read("bid").schema)
    val e = intercept[IllegalArgumentException](read("bids"))
    assert(e.getMessage.contains("person, auction, bid"))
  }

  test("the same seed gives the same rows, whatever the batching; another seed others") {
    val opts = Seq("totalEvents" -> "3000", "seed" -> "7", "punctuations" -> "true")
    val a = runAll(read("bid", opts :+ ("eventsPerBatch" -> "500"): _*))
    val b = runAll(read("bid", opts ++ Seq("eventsPerBatch" -> "1300", "numPartitions" -> "3"): _*))
    assert(a.nonEmpty)
    assert(sorted(a) == sorted(b))
    val c = runAll(read("bid", "totalEvents" -> "3000", "seed" -> "8", "punctuations" -> "true"))
    assert(sorted(a) != sorted(c))
    for (t <- Seq("person", "auction")) {
      assert(sorted(runAll(read(t, "totalEvents" -> "3000", "seed" -> "3"))) ==
        sorted(runAll(read(t, "totalEvents" -> "3000", "seed" -> "3", "eventsPerBatch" -> "700"))))
    }
  }

  test("people, auctions and bids come in the proportion 1:3:46") {
    val opts = Seq("totalEvents" -> "5000", "eventsPerBatch" -> "1234")
    assert(runAll(read("person", opts: _*)).size == 100)
    assert(runAll(read("auction", opts: _*)).size == 300)
    assert(runAll(read("bid", opts: _*)).size == 4600)
  }

  test("ids count from 1000 and increase with event time") {
    val opts = Seq("totalEvents" -> "5000", "eventsPerBatch" -> "999", "numPartitions" -> "3")
    def ids(rows: Seq[Row]) = rows.sortBy(r => (millis(r, "dateTime"), r.getAs[Long]("id")))
      .map(_.getAs[Long]("id"))
    val people = runAll(read("person", opts: _*))
    assert(ids(people) == (1000L until 1100L))
    val auctions = runAll(read("auction", opts: _*))
    assert(ids(auctions) == (1000L until 1300L))
    // event time: event n at floor(n * 1000 / eventsPerSecond) ms; person k is event 50 k
    assert(people.map(r => millis(r, "dateTime") -> r.getAs[Long]("id")).toSet ==
      (0 until 100).map(k => (k * 50L * 1000L / 10000L) -> (1000L + k)).toSet)
    val sellers = auctions.map(_.getAs[Long]("seller"))
    assert(sellers.forall(s => s >= 1000L && s < 1100L + PersonGenerator.PersonIdLead))
    assert(auctions.map(_.getAs[Long]("category")).toSet.subsetOf((10L to 14L).toSet))
  }

  test("eventsPerSecond and baseTime set event time; Trigger.AvailableNow reads to the end") {
    val people = runAll(read("person", "totalEvents" -> "1000", "eventsPerSecond" -> "1000",
      "baseTime" -> "1700000000000"))
    assert(people.map(r => millis(r, "dateTime")).sorted ==
      (0 until 20).map(k => 1700000000000L + k * 50L))
    val batches = new ConcurrentHashMap[Long, Long]()
    val q = read("auction", "totalEvents" -> "2500", "eventsPerBatch" -> "1000").writeStream
      .trigger(Trigger.AvailableNow())
      .foreachBatch { (b: DataFrame, id: Long) => batches.put(id, b.count()); () }
      .start()
    assert(q.awaitTermination(streamingTimeout.toMillis))
    assert(batches.asScala.toMap == Map(0L -> 60L, 1L -> 60L, 2L -> 30L))
  }

  test("every bid is on an existing auction, within its [dateTime, expires]") {
    val opts = Seq("totalEvents" -> "20000", "eventsPerBatch" -> "3000", "seed" -> "11")
    val auctions = runAll(read("auction", opts: _*)).map { r =>
      r.getAs[Long]("id") -> (millis(r, "dateTime"), millis(r, "expires"))
    }.toMap
    val bids = runAll(read("bid", opts: _*))
    assert(bids.size == 20000 / 50 * 46)
    bids.foreach { b =>
      val (created, expires) = auctions.getOrElse(b.getAs[Long]("auction"),
        fail(s"bid on an auction that does not exist: $b"))
      val t = millis(b, "dateTime")
      assert(created <= t && t <= expires, s"bid $b outside its auction [$created, $expires]")
    }
    // hot auctions: many bids share few auctions, as in the reference
    val perAuction = bids.groupBy(_.getAs[Long]("auction")).values.map(_.size)
    assert(perAuction.max > 10 * bids.size / auctions.size)
    assert(bids.map(_.getAs[String]("channel")).toSet.intersect(Channels.HotChannels.toSet).nonEmpty)
  }

  test("punctuations: one per expired auction, in the batch its expiry passes, after its bids") {
    val total = 20000L
    val perBatch = 1000L
    val opts = Seq("totalEvents" -> total.toString, "eventsPerBatch" -> perBatch.toString,
      "seed" -> "5")
    val batches = runBatches(read("bid", opts :+ ("punctuations" -> "true"): _*))
    assert(batches.keySet == (0L until total / perBatch).toSet)
    val rows = batches.toSeq.flatMap { case (id, rs) => rs.map(id -> _) }
    val (puncts, bids) = rows.partition(_._2.getAs[Boolean]("is_punct"))
    puncts.foreach { case (_, p) =>
      assert((1 until p.length - 1).forall(p.isNullAt), s"punctuation with data: $p")
    }
    // the data rows are those of the stream without punctuations
    assert(sorted(bids.map(b => Row(b._2.toSeq.init: _*))) ==
      sorted(runAll(read("bid", opts: _*))))

    val auctions = runAll(read("auction", opts: _*)).map(r => r.getAs[Long]("id") -> millis(r, "expires"))
    val lastEventTime = (total - 1) * 1000L / 10000L
    val expired = auctions.filter(_._2 < lastEventTime).toMap
    val punctuated = puncts.map { case (batch, p) => p.getAs[Long]("auction") -> batch }
    assert(punctuated.map(_._1).distinct.size == punctuated.size, "an auction punctuated twice")
    assert(punctuated.map(_._1).toSet == expired.keySet)
    assert(expired.size > auctions.size / 2)
    val punctBatch = punctuated.toMap
    expired.foreach { case (id, expires) =>
      // the first event after the expiry: floor(n * 1000 / 10000) > expires
      val firstAfter = (expires + 1) * 10L
      assert(punctBatch(id) == firstAfter / perBatch, s"auction $id expiring at $expires")
    }
    bids.foreach { case (batch, b) =>
      punctBatch.get(b.getAs[Long]("auction")).foreach { pb =>
        assert(batch <= pb, s"bid $b in batch $batch after its auction's punctuation in $pb")
      }
    }
  }

  test("stop and restart from a checkpoint gives exactly the rows of an uninterrupted run") {
    val opts = Seq("totalEvents" -> "20000", "eventsPerBatch" -> "1000", "punctuations" -> "true",
      "seed" -> "9")
    val expected = runAll(read("bid", opts: _*))
    val checkpoint = java.nio.file.Files.createTempDirectory("nexmark-ckpt").toFile.getCanonicalPath
    var beforeStop = 0L
    emitting(testStream(read("bid", opts: _*))(
      StartStream(Trigger.ProcessingTime(100), checkpointLocation = checkpoint),
      AssertOnQuery("a few batches done") { q =>
        eventually(timeout(streamingTimeout)) {
          assert(q.lastProgress != null && q.lastProgress.batchId >= 2)
        }
        true
      },
      StopStream,
      AssertOnQuery("stopped mid-stream") { q =>
        beforeStop = q.recentProgress.map(_.numInputRows).sum
        beforeStop > 0 && beforeStop < expected.size
      },
      StartStream(checkpointLocation = checkpoint),
      ProcessAllAvailable(),
      CheckAnswerRows(expected, lastOnly = false, isSorted = false)))
  }

  test("offsets record the generator options; bare-number offsets of old checkpoints are still read") {
    val config = NexmarkConfig(NexmarkTableKind.Bid, seed = 7L, punctuations = true)
    val offset = NexmarkOffset(1200L, config)
    val read = NexmarkOffset.fromJson(offset.json())
    assert(read == offset && read.options == NexmarkOffset.fingerprint(config))
    assert(read.options("seed") == "7" && read.options("table") == "bid")
    val old = NexmarkOffset.fromJson("1200")
    assert(old.events == 1200L && old.options.isEmpty)
    NexmarkOffset.check(old, config)                       // nothing recorded: nothing to compare
    NexmarkOffset.check(read, config.copy(eventsPerBatch = 10L, numPartitions = 5, totalEvents = Some(9L)))
    val e = intercept[IllegalStateException](NexmarkOffset.check(read, config.copy(baseTime = 5L)))
    assert(e.getMessage.contains("baseTime is 5") && e.getMessage.contains("baseTime = 0"))
    intercept[IllegalArgumentException](NexmarkOffset.fromJson("{\"options\":{}}"))
  }

  test("a restart with other generator options against the checkpoint fails, naming option, values and fix") {
    val checkpoint = java.nio.file.Files.createTempDirectory("nexmark-ckpt").toFile.getCanonicalPath
    def run(total: String, options: (String, String)*): Unit = {
      val q = read("bid", Seq("totalEvents" -> total, "eventsPerBatch" -> "1000", "seed" -> "9") ++ options: _*)
        .writeStream.format("noop").option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow()).start()
      try q.awaitTermination() finally q.stop()
    }
    run("3000")
    // batching and partitioning may change, and the stream may go on further
    run("5000", "eventsPerBatch" -> "700", "numPartitions" -> "3")
    val e = intercept[Exception](run("8000", "seed" -> "10"))
    val messages = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).map(_.getMessage).mkString("\n")
    assert(messages.contains("NEXMARK_OPTIONS_CHANGED"), messages)
    assert(messages.contains("option seed is 10") && messages.contains("seed = 9"), messages)
    assert(messages.contains("new checkpoint location"), messages)
  }

  test("streams of one seed agree: a punctuated join of auctions and bids forgets its state") {
    val opts = Seq("totalEvents" -> "10000", "eventsPerBatch" -> "2000", "punctuations" -> "true")
    val auctions = read("auction", opts: _*)
    val bids = read("bid", opts: _*)
    val joined = auctions.join(bids, auctions("id") === bids("auction"))
      .select(auctions("id"), bids("bidder"), bids("price"), bids("dateTime"))
    val expected = {
      val a = runAll(read("auction", opts: _*)).map(_.getAs[Long]("id")).toSet
      runAll(read("bid", opts: _*)).filterNot(_.getAs[Boolean]("is_punct"))
        .filter(b => a.contains(b.getAs[Long]("auction")))
        .map(b => Row(b.getAs[Long]("auction"), b.getAs[Long]("bidder"), b.getAs[Long]("price"),
          b.getAs[java.sql.Timestamp]("dateTime")))
    }
    assert(expected.size == 10000 / 50 * 46)
    testStream(joined)(
      StartStream(),
      ProcessAllAvailable(),
      AssertOnQuery("planned with the punctuated join, state bounded by the open auctions") { q =>
        val p = punctuatedProgress(q)
        assert(p.numRowsTotal < 300, p.json)
        true
      },
      CheckAnswerRows(expected, lastOnly = false, isSorted = false))
  }

  test("point seller punctuations: declared `seller`, recorded in offsets; a person-auction join keeps the last 1000 people") {
    val config = NexmarkConfig(NexmarkTableKind.Auction, punctuations = true,
      sellerPunctuations = SellerPunctuations.Point)
    assert(new NexmarkTable(config).properties().get("punctuated.schemes") == "seller")
    assert(new NexmarkTable(config.copy(sellerPunctuations = SellerPunctuations.Range))
      .properties().get("punctuated.schemes") == "seller<=")
    // `true` stays the range variant, recorded as before; `point` is recorded as such
    assert(NexmarkOffset.fingerprint(config)("sellerPunctuations") == "point")
    assert(NexmarkOffset.fingerprint(config.copy(sellerPunctuations = SellerPunctuations.Range))(
      "sellerPunctuations") == "true")
    val e = intercept[IllegalStateException](NexmarkOffset.check(NexmarkOffset(10L, config),
      config.copy(sellerPunctuations = SellerPunctuations.Range)))
    assert(e.getMessage.contains("sellerPunctuations = point"))
    assert(intercept[IllegalArgumentException](read("auction", "sellerPunctuations" -> "points"))
      .getMessage.contains("false, true (= range), range, point"))

    val opts = Seq("totalEvents" -> "150000", "eventsPerBatch" -> "25000", "punctuations" -> "true")
    val auctions = read("auction", opts :+ ("sellerPunctuations" -> "point"): _*)
    val people = read("person", opts: _*)
    val joined = auctions.join(people, auctions("seller") === people("id"))
      .select(auctions("id"), people("id"), people("name"))
    val expected = {
      val names = runAll(read("person", "totalEvents" -> "150000"))
        .map(r => r.getAs[Long]("id") -> r.getAs[String]("name")).toMap
      runAll(read("auction", "totalEvents" -> "150000")).flatMap { a =>
        val s = a.getAs[Long]("seller")
        names.get(s).map(n => Row(a.getAs[Long]("id"), s, n))
      }
    }
    assert(expected.size > 8000)
    testStream(joined)(
      StartStream(),
      ProcessAllAvailable(),
      AssertOnQuery("people purged once no auction can name them: the last 1000 people stay") { q =>
        val p = punctuatedProgress(q)
        // 3000 people and 9000 auctions read; left: the 1000 people a future auction may name
        // and the auctions whose seller does not exist yet
        assert(p.numRowsTotal >= 1000 && p.numRowsTotal <= 1000 + 3 * PersonGenerator.PersonIdLead * 10,
          p.json)
        true
      },
      CheckAnswerRows(expected, lastOnly = false, isSorted = false))
  }
}
