package punctuated.checkpoint

import java.io.File

import punctuated.compat.MemoryStream
import org.apache.spark.sql.functions.count
import org.apache.spark.sql.streaming.OutputMode

import punctuated.aggregate.PunctuatedAggregateExec
import punctuated.declaration.Declaration._
import punctuated.dedup.PunctuatedDeduplicateExec
import punctuated.join.{Auction, Bid, PunctuatedSymmetricHashJoinExec}
import punctuated.join.JoinTestData._
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/**
 * A punctuated join's, aggregation's and deduplication's checkpoint describes its own state: `format("state-metadata")` lists
 * the stores the join opens (with their prefix-key columns), `format("statestore")` reads its
 * rows store by store, and a restart passes Spark's operator and schema checks. HDFS-backed
 * state store; [[StateMetadataRocksDBSuite]] runs the same on RocksDB.
 */
class StateMetadataSuite extends PunctuatedStreamTest {
  import testImplicits._

  private def auctionJoin() = {
    val auctions = MemoryStream[Auction]
    val bids = MemoryStream[Bid]
    val a = declare(auctions.toDF(), "auctions", Unique -> "id", Marker -> "is_punct")
    val b = declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct")
    (auctions, bids, a.join(b, a("id") === b("auction")).select(a("id"), b("bidder"), b("price")))
  }

  private def bidsStream() = {
    val bids = MemoryStream[Bid]
    (bids, declare(bids.toDF(), "bids", Schemes -> "auction", Marker -> "is_punct"))
  }

  private def planned[T](cls: Class[T]) = AssertOnQuery(s"planned with ${cls.getSimpleName}") { q =>
    q.lastExecution.executedPlan.collect { case p if cls.isInstance(p) => p }.size == 1
  }

  private def storesInMetadata(checkpoint: File): Seq[(Long, String, String, Int)] =
    spark.read.format("state-metadata").load(checkpoint.getCanonicalPath)
      .selectExpr("operatorId", "operatorName", "stateStoreName", "numPartitions").collect()
      .map(r => (r.getLong(0), r.getString(1), r.getString(2), r.getInt(3))).toSeq.sortBy(_._3)

  private def readStore(checkpoint: File, store: String) =
    spark.read.format("statestore").option("operatorId", "0").option("storeName", store)
      .load(checkpoint.getCanonicalPath)

  test("join: state-metadata lists the join's own stores, statestore reads its rows, restart passes") {
    withTempDir { checkpoint =>
      val (auctions, bids, joined) = auctionJoin()
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, bid(3, 100, 1.0), bid(3, 101, 2.0), bid(4, 102, 3.0)),
        CheckNewAnswer(),
        AddData(auctions, auction(4, 12)),
        CheckNewAnswer((4L, 102L, 3.0)),
        AssertOnQuery("planned with the punctuated join") { q =>
          q.lastExecution.executedPlan.collect { case p: PunctuatedSymmetricHashJoinExec => p }.size == 1
        },
        StopStream)

      // the stores the punctuated join opens, not Spark's four (left-keyToNumValues ...)
      val stores = storesInMetadata(checkpoint)
      assert(stores.map(_._3) == Seq("left-punctuated-rows", "punctuated-meta", "right-punctuated-rows"),
        stores.toString)
      assert(stores.forall(s => s._1 == 0 && s._4 == 2), stores.toString)
      // the name Spark's restart check compares with its planned operator (see StateMetadata)
      assert(stores.forall(_._2 == "symmetricHashJoin"), stores.toString)

      // bids (right input) of auction 3 are stored: auction 3 has not come
      val right = readStore(checkpoint, "right-punctuated-rows")
        .selectExpr("key.k0", "value.bidder", "value.price", "value._punctuated_matched").as[(Long, Long, Double, Boolean)]
        .collect().toSeq.sortBy(_._2)
      assert(right == Seq((3L, 100L, 1.0, false), (3L, 101L, 2.0, false)), right.toString)
      // auction 4 (left input) is stored; the shared store holds its unique key (namespace 0:
      // left whole-key punctuations) and the left input's closed values (namespace 6)
      val left = readStore(checkpoint, "left-punctuated-rows")
        .selectExpr("key.k0", "value.id", "value.is_punct").as[(Long, Long, Boolean)].collect().toSeq
      assert(left == Seq((4L, 4L, false)), left.toString)
      // only the columns the join carries are stored: seller, which the query does not read, is not
      assert(!readStore(checkpoint, "left-punctuated-rows").schema("value").dataType.simpleString.contains("seller"))
      val namespaces = readStore(checkpoint, "punctuated-meta").selectExpr("key.namespace").as[Int].collect().toSeq.sorted
      assert(namespaces == Seq(0, 6), namespaces.toString)

      // a restart: Spark's operator check and schema check pass on the metadata we wrote
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(auctions, auction(3, 11)),
        CheckNewAnswer((3L, 100L, 1.0), (3L, 101L, 2.0)),
        StopStream)
      assert(storesInMetadata(checkpoint).map(_._3) ==
        Seq("left-punctuated-rows", "punctuated-meta", "right-punctuated-rows"))
      // the auction's unique key purged the stored bids of auction 3
      assert(readStore(checkpoint, "right-punctuated-rows").count() == 0)
    }
  }

  test("join: schema files exist for the join's stores, with its key and value layouts") {
    withTempDir { checkpoint =>
      val (auctions, bids, joined) = auctionJoin()
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, bid(3, 100, 1.0)),
        CheckNewAnswer(),
        StopStream)
      Seq("left-punctuated-rows", "right-punctuated-rows", "punctuated-meta").foreach { s =>
        assert(new File(checkpoint, s"state/0/0/$s/_metadata/schema").isFile, s)
      }
      val schema = readStore(checkpoint, "right-punctuated-rows").schema
      assert(schema.fieldNames.toSeq == Seq("key", "value", "partition_id"))
      assert(schema("key").dataType.asInstanceOf[org.apache.spark.sql.types.StructType].fieldNames.toSeq ==
        Seq("k0", "_punctuated_seq"))
      assert(schema("value").dataType.asInstanceOf[org.apache.spark.sql.types.StructType].fieldNames.toSeq ==
        Seq("auction", "bidder", "price", "is_punct", "_punctuated_matched"))
    }
  }

  test("aggregation: state-metadata lists its groups and held punctuations, statestore reads the groups") {
    withTempDir { checkpoint =>
      val (bids, b) = bidsStream()
      val counts = b.groupBy("auction").agg(count("*").as("n"))
      testStream(counts, OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, bid(1, 100, 5.0), bid(1, 101, 7.5), bid(2, 100, 3.0)),
        CheckNewAnswer(),
        planned(classOf[PunctuatedAggregateExec]),
        StopStream)
      val stores = storesInMetadata(checkpoint)
      assert(stores.map(_._3) == Seq("default", "punctuations"), stores.toString)
      assert(stores.forall(s => s._1 == 0 && s._2 == "stateStoreSave" && s._4 == 2), stores.toString)
      val groups = readStore(checkpoint, "default").selectExpr("key.auction").as[Long].collect().toSeq.sorted
      assert(groups == Seq(1L, 2L), groups.toString)
      assert(new File(checkpoint, "state/0/0/punctuations/_metadata/schema").isFile)
      // the groups' schema file is the one Spark's planned save step writes and checks
      assert(new File(checkpoint, "state/0/0/_metadata/schema").isFile)

      // a restart passes Spark's checks; auction 1's group is final and forgotten
      testStream(counts, OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, closeBids(1)),
        CheckNewAnswer((1L, 2L)),
        StopStream)
      assert(readStore(checkpoint, "default").selectExpr("key.auction").as[Long].collect().toSeq == Seq(2L))
      assert(storesInMetadata(checkpoint).map(_._3) == Seq("default", "punctuations"))
    }
  }

  test("operator metadata: rewritten at a run's start only when its bytes are not ours") {
    withTempDir { checkpoint =>
      val (bids, b) = bidsStream()
      val counts = b.groupBy("auction").agg(count("*").as("n"))
      def run(data: Bid*) = testStream(counts, OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, data: _*),
        ProcessAllAvailable(),
        StopStream)
      val file = new File(checkpoint, "state/0/_metadata/metadata")
      val crc = new File(checkpoint, "state/0/_metadata/.metadata.crc")
      run(bid(1, 100, 5.0))
      val ours = java.nio.file.Files.readAllBytes(file.toPath)
      assert(new String(ours, "UTF-8").contains("\"punctuations\""), new String(ours, "UTF-8"))

      // a restart finds its own file: not written again
      assert(file.setLastModified(1000000L))
      run(bid(2, 100, 3.0))
      assert(file.lastModified() == 1000000L, "the metadata file was rewritten")

      // a file listing other stores (as Spark's own save step writes it: the default store only)
      // is replaced by ours at the next start
      val sparks = new String(ours, "UTF-8").replaceAll(""",\{[^{}]*"punctuations"[^{}]*\}""", "")
      assert(!sparks.contains("punctuations"), sparks)
      java.nio.file.Files.write(file.toPath, sparks.getBytes("UTF-8"))
      crc.delete()
      run(bid(3, 100, 1.0))
      assert(java.util.Arrays.equals(java.nio.file.Files.readAllBytes(file.toPath), ours))
      assert(storesInMetadata(checkpoint).map(_._3) == Seq("default", "punctuations"))
    }
  }

  test("aggregation: a group's stored value ends with its hidden counts, laid out as the four count/bit_or buffers") {
    // earlier releases computed the hidden counts as count, bit_or, count, count (each with a
    // FILTER); one punctuation_counts aggregate keeps that buffer, so their checkpoints still read
    withTempDir { checkpoint =>
      val (bids, b) = bidsStream()
      testStream(b.groupBy("auction").agg(count("*").as("n")), OutputMode.Append())(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, bid(1, 100, 5.0), bid(1, 101, 7.5), bid(2, 100, 3.0)),
        CheckNewAnswer(),
        StopStream)
      val groups = readStore(checkpoint, "default")
      val tag = org.apache.spark.sql.catalyst.expressions.Literal(0)
      val count1 = org.apache.spark.sql.catalyst.expressions.aggregate.Count(Seq(tag)).aggBufferAttributes.head
      val bits = org.apache.spark.sql.catalyst.expressions.aggregate.BitOrAgg(
        org.apache.spark.sql.catalyst.expressions.ShiftLeft(
          org.apache.spark.sql.catalyst.expressions.Literal(1L), tag)).aggBufferAttributes.head
      val earlier = Seq(count1, bits, count1, count1).map(a => (a.name, a.dataType, a.nullable))
      val value = groups.schema("value").dataType.asInstanceOf[org.apache.spark.sql.types.StructType]
      assert(value.fields.toSeq.takeRight(4).map(f => (f.name, f.dataType, f.nullable)) == earlier, value)
      // auction 1: two data rows, no closing kind yet (NULL), no invalid or received punctuation
      val one = groups.where("key.auction = 1").select("value").collect().map(_.getStruct(0)).head
      val n = one.length
      assert((one.getLong(n - 4), one.isNullAt(n - 3), one.getLong(n - 2), one.getLong(n - 1)) == ((2L, true, 0L, 0L)),
        one)
    }
  }

  test("deduplication: state-metadata lists its seen keys and held punctuations, statestore reads the keys") {
    withTempDir { checkpoint =>
      val (bids, b) = bidsStream()
      val firsts = b.dropDuplicates("auction", "bidder").select("auction", "bidder")
      testStream(firsts)(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, bid(1, 100, 5.0), bid(1, 100, 6.0), bid(1, 101, 7.5)),
        CheckNewAnswer((1L, 100L), (1L, 101L)),
        planned(classOf[PunctuatedDeduplicateExec]),
        StopStream)
      val stores = storesInMetadata(checkpoint)
      assert(stores.map(_._3) == Seq("default", "punctuations"), stores.toString)
      assert(stores.forall(s => s._1 == 0 && s._2 == "dedupe" && s._4 == 2), stores.toString)
      // the seen keys (the default store's schema file is Spark's planned deduplication's: see
      // StoreSchemas.deduplicate); the held punctuations store has a schema file of ours
      def seen() = readStore(checkpoint, "default").selectExpr("key.auction", "key.bidder")
        .as[(Long, Long)].collect().toSeq.sorted
      assert(seen() == Seq((1L, 100L), (1L, 101L)), seen().toString)
      assert(new File(checkpoint, "state/0/0/punctuations/_metadata/schema").isFile)

      // a restart passes Spark's checks; auction 1's keys are forgotten when it is punctuated
      testStream(firsts)(
        StartStream(checkpointLocation = checkpoint.getCanonicalPath),
        AddData(bids, closeBids(1), bid(2, 100, 1.0)),
        CheckNewAnswer((2L, 100L)),
        StopStream)
      assert(seen() == Seq((2L, 100L)), seen().toString)
    }
  }

}

class StateMetadataRocksDBSuite extends StateMetadataSuite with OnRocksDB
