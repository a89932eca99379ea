package punctuated.checkpoint

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{AnalysisException, DataFrame}
import punctuated.compat.MemoryStream
import org.apache.spark.sql.internal.SQLConf

import punctuated.conf.PunctuatedConf
import punctuated.declaration.Declaration._
import punctuated.errors.PunctuatedErrors
import punctuated.join.PunctuatedSymmetricHashJoinExec
import punctuated.join.multi.PunctuatedMultiJoinExec
import punctuated.spark.{OnRocksDB, PunctuatedStreamTest}

/** A row of [[MultiJoinCheckpointSuite]]'s streams: two columns and the marker. */
case class KV2(k: Option[Long], v: Option[Long], is_punct: Boolean = false)

/**
 * A multi-way join in the checkpoint: a chain stopped and restarted continues exactly once
 * under the plan recorded for its state (the plan log: a record per batch, the recorded
 * shares winning), `state-metadata` lists its stores and `statestore` reads its rows; restarts across join plans (a tree of binary joins
 * against one multi-way join) are refused at `start()` before any state file changes,
 * naming `spark.punctuated.join.plan` and the value that continues the state; the same plan
 * continues. HDFS-backed state store; [[MultiJoinCheckpointRocksDBSuite]] runs the same on RocksDB.
 */
class MultiJoinCheckpointSuite extends PunctuatedStreamTest {
  import testImplicits._

  // the shares these tests expect are Hypercube.choose's (every input weighted alike): the
  // first-batch weights would depend on which of the three AddData a racing first trigger saw
  // (b's and c's rows without a's give shares 1 x 2); MultiJoinShareWeightsSuite tests those
  override protected def sparkConf = super.sparkConf.set(PunctuatedConf.ShareWeights, "equal")

  private def row(k: Long, v: Long) = KV2(Some(k), Some(v))
  private def closeK(k: Long) = KV2(Some(k), None, is_punct = true)
  private def closeV(v: Long) = KV2(None, Some(v), is_punct = true)

  private def newCheckpoint(): String = Files.createTempDirectory("punctuated-mjoin-ckpt").toFile.getCanonicalPath

  /** Every file of the operators' state directories, with its length. */
  private def stateFiles(checkpoint: String): Map[String, Long] = {
    val dir = new File(checkpoint, "state")
    def walk(f: File): Seq[File] = if (f.isDirectory) f.listFiles().toSeq.flatMap(walk) else Seq(f)
    walk(dir).map(f => dir.toPath.relativize(f.toPath).toString -> f.length()).toMap
  }

  private def stream(s: MemoryStream[KV2], name: String, k: String, v: String, schemes: String) =
    declare(s.toDF().selectExpr(s"k AS $k", s"v AS $v", s"is_punct AS ${name}_p"), name,
      Schemes -> schemes, Marker -> s"${name}_p")

  /** a(k, x) ⋈ b(k, y) ⋈ c(k, z) on k: a star, safe as a tree of binary joins and as one multi-way join. */
  private def star() = {
    val (a, b, c) = (MemoryStream[KV2], MemoryStream[KV2], MemoryStream[KV2])
    val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_y", "b_k"),
      stream(c, "c", "c_k", "c_z", "c_k"))
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_k") === dc("c_k"))
      .select(da("a_k"), da("a_x"), db("b_y"), dc("c_z"))
    (a, b, c, joined)
  }

  private def refusal(e: Throwable, mentions: String*): Unit = {
    val a = e match {
      case a: AnalysisException => a
      case other => Option(other.getCause).collect { case a: AnalysisException => a }.getOrElse(throw other)
    }
    assert(a.getCondition == PunctuatedErrors.IncompatibleCheckpoint, a.getMessage)
    (mentions :+ "new checkpoint location").foreach(m => assert(a.getMessage.contains(m), s"'$m' in ${a.getMessage}"))
  }

  private def start(df: DataFrame, checkpoint: String) =
    df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()

  /** a(k, x) ⋈ b(k, v) ⋈ c(v, z): a chain over two keys; b declares "b_k; b_v". */
  private def chain() = {
    val (a, b, c) = (MemoryStream[KV2], MemoryStream[KV2], MemoryStream[KV2])
    val (da, db, dc) = (stream(a, "a", "a_k", "a_x", "a_k"), stream(b, "b", "b_k", "b_v", "b_k; b_v"),
      stream(c, "c", "c_v", "c_z", "c_v"))
    val joined = da.join(db, da("a_k") === db("b_k")).join(dc, db("b_v") === dc("c_v"))
      .select(da("a_k"), da("a_x"), db("b_v"), dc("c_z"))
    (a, b, c, joined)
  }

  private def multiJoin(q: punctuated.compat.StreamExecution) = {
    val found = q.lastExecution.executedPlan.collect { case m: PunctuatedMultiJoinExec => m }
    assert(found.size == 1, q.lastExecution.executedPlan.treeString)
    found.head
  }

  /** The batches the plan log of operator 0 has a record of, and the records. */
  private def planLog(checkpoint: String): Seq[(Long, PlanRecord)] =
    Option(new File(checkpoint, "state/0/_punctuated/plan").listFiles()).toSeq.flatten
      .filter(_.getName.forall(_.isDigit))
      .map(f => f.getName.toLong -> PlanRecord.fromJson(new String(Files.readAllBytes(f.toPath), "UTF-8")))
      .sortBy(_._1)

  private def AssertPlanLog(checkpoint: String, shares: Seq[Int]) =
    AssertOnQuery(s"a plan record per batch, shares $shares") { q =>
    val log = planLog(checkpoint)
    assert(log.map(_._1) == (0L to settledProgress(q).batchId), log.map(_._1))
    assert(log.forall { case (_, p) => p.kind == "mjoin" && p.inputs == Seq("a", "b", "c") &&
      p.classes == Seq(Seq(0, 1), Seq(1, 2)) && p.shares == shares }, log)
    assert(multiJoin(q).shares == shares, multiJoin(q).shares)
    true
  }

  private def storesInMetadata(checkpoint: String): Seq[(Long, String, String, Int)] =
    spark.read.format("state-metadata").load(checkpoint)
      .selectExpr("operatorId", "operatorName", "stateStoreName", "numPartitions").collect()
      .map(r => (r.getLong(0), r.getString(1), r.getString(2), r.getInt(3))).toSeq.sortBy(s => (s._1, s._3))

  private def readStore(checkpoint: String, store: String) =
    spark.read.format("statestore").option("operatorId", "0").option("storeName", store).load(checkpoint)

  test("a chain stopped and restarted mid-stream continues exactly once, a plan record per batch; state tools read it") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = chain()
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 100), row(2, 200)), AddData(b, row(1, 10), row(2, 20)), AddData(c, row(10, 1000)),
        CheckNewAnswer((1L, 100L, 10L, 1000L)),
        AssertOnQuery("one multi-way join, reported as one operator") { q =>
          multiJoin(q)
          settledProgress(q).stateOperators.map(_.operatorName).toSeq == Seq("punctuatedMultiJoin")
        },
        // 2 cells: shares 2 x 1 (Hypercube.choose), recorded for every batch
        AssertPlanLog(checkpoint, Seq(2, 1)),
        StopStream,
        StartStream(checkpointLocation = checkpoint),
        AddData(c, row(10, 1001), row(20, 2000)), AddData(a, row(1, 101)),
        CheckNewAnswer((1L, 100L, 10L, 1001L), (1L, 101L, 10L, 1000L), (1L, 101L, 10L, 1001L), (2L, 200L, 20L, 2000L)),
        AssertPlanLog(checkpoint, Seq(2, 1)),
        StopStream)
    }
    // state-metadata: operator 0 lists the multi-way join's stores (under the name Spark's
    // restart check compares, see StateMetadata); the group's other join keeps no store
    val stores = storesInMetadata(checkpoint)
    assert(stores.map(_._3) == Seq("input0-mjoin-rows", "input1-mjoin-rows", "input2-mjoin-rows", "punctuated-meta"),
      stores.toString)
    assert(stores.forall(s => s._1 == 0 && s._2 == "symmetricHashJoin" && s._4 == 2), stores.toString)
    // statestore reads an input's rows: b's two rows, each stored under its two classes
    val bRows = readStore(checkpoint, "input1-mjoin-rows")
      .selectExpr("key.class", "key.slot", "value.b_k", "value.b_v").as[(Int, Long, Long, Long)].collect().toSeq.sorted
    assert(bRows == Seq((0, 0L, 1L, 10L), (0, 0L, 2L, 20L), (1, 0L, 1L, 10L), (1, 0L, 2L, 20L)), bRows.toString)
    val aRows = readStore(checkpoint, "input0-mjoin-rows").selectExpr("value.a_x").as[Long].collect().toSeq.sorted
    assert(aRows == Seq(100L, 101L, 200L), aRows.toString)
    // the operator's record: its inputs' classes and purging schemes, the plan
    val record = OperatorRecord.fromJson(new String(Files.readAllBytes(
      new File(checkpoint, "state/0/_punctuated/declarations.json").toPath), "UTF-8"))
    assert(record.operator == "punctuatedMultiJoin" && record.layoutVersion == StateLayouts.MultiJoin, record)
    assert(record.inputs.map(_.classes) == Seq(Seq(0), Seq(0, 1), Seq(1)), record)
    assert(record.inputs(1).purging.map(_.key) == Seq("0", "1"), record)
    assert(record.plan.map(_.shares).contains(Seq(2, 1)), record)

    // everything punctuated after a third restart: no row left
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, closeK(1), closeK(2)), AddData(b, closeK(1), closeK(2), closeV(10), closeV(20)),
        AddData(c, closeK(10), closeK(20)),
        CheckNewAnswer(),
        AddData(a, row(3, 300)),
        CheckNewAnswer(),
        AssertOnQuery("only a's row 3 left") { q => punctuatedProgress(q).numRowsTotal == 1 },
        AssertPlanLog(checkpoint, Seq(2, 1)),
        StopStream)
    }
  }

  test("a tree plan: the plan log records the tree, the operator record and state-metadata list the node's store") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = chain()
    withSQLConf(PunctuatedConf.SafetyMode -> "warn", PunctuatedConf.JoinPlan -> "((a ⋈ b) ⋈ c)") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 100), row(2, 200)), AddData(b, row(1, 10), row(2, 20)), AddData(c, row(10, 1000)),
        CheckNewAnswer((1L, 100L, 10L, 1000L)),
        AssertOnQuery("the operator runs the tree") { q =>
          val m = multiJoin(q)
          assert(m.joinPlan == punctuated.join.multi.MultiJoinPlan.leftDeep(Seq(0, 1, 2)), m.joinPlan)
          m.stateStoreNames == Seq("input0-mjoin-rows", "input1-mjoin-rows", "input2-mjoin-rows",
            "inputs-0-1-mjoin-rows", "punctuated-meta")
        },
        StopStream)
    }
    val log = planLog(checkpoint)
    assert(log.nonEmpty && log.forall { case (_, p) =>
      p.kind == "tree" && p.plan.map(_.inputs).contains(Seq(0, 1, 2)) && p.setting == "((a ⋈ b) ⋈ c)" &&
        p.text.startsWith("tree ((a ⋈ b) ⋈ c) of a, b, c")
    }, log)
    val record = OperatorRecord.fromJson(new String(Files.readAllBytes(
      new File(checkpoint, "state/0/_punctuated/declarations.json").toPath), "UTF-8"))
    assert(record.stores.contains("inputs-0-1-mjoin-rows") && record.plan.exists(_.kind == "tree"), record)
    assert(storesInMetadata(checkpoint).map(_._3).contains("inputs-0-1-mjoin-rows"), storesInMetadata(checkpoint))
    // statestore reads the node's combinations: a's columns, then b's, under each of k and v
    val ab = readStore(checkpoint, "inputs-0-1-mjoin-rows")
      .selectExpr("key.class", "value.a_x", "value.b_v").as[(Int, Long, Long)].collect().toSeq.sorted
    assert(ab == Seq((0, 100L, 10L), (0, 200L, 20L), (1, 100L, 10L), (1, 200L, 20L)), ab.toString)
    // a restart under a binary tree is refused at start(), naming the recorded tree
    withSQLConf(PunctuatedConf.SafetyMode -> "warn", PunctuatedConf.JoinPlan -> "written") {
      refusal(intercept[Exception](start(joined, checkpoint)), "spark.punctuated.join.plan=((a ⋈ b) ⋈ c)")
    }
  }

  test("the shares recorded for the state win over the ones the planner chooses now") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = chain()
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      // batch 0 stores nothing (a row without a key never joins: filtered before the join)
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, KV2(None, Some(1L))),
        CheckNewAnswer(),
        AssertPlanLog(checkpoint, Seq(2, 1)),
        StopStream)
      // the checkpoint as a planner that chose shares 1 x 2 would have written it (Spark
      // refuses a non-empty state directory at batch 0, so it is rewritten after it)
      val file = new File(checkpoint, "state/0/_punctuated/plan/0")
      val recorded = PlanRecord.fromJson(new String(Files.readAllBytes(file.toPath), "UTF-8")).copy(shares = Seq(1, 2))
      Files.write(file.toPath, recorded.toJson.getBytes("UTF-8"))
      val declarations = new File(checkpoint, "state/0/_punctuated/declarations.json")
      val record = OperatorRecord.fromJson(new String(Files.readAllBytes(declarations.toPath), "UTF-8"))
      Files.write(declarations.toPath, record.copy(plan = record.plan.map(_.copy(shares = Seq(1, 2))))
        .toJson.getBytes("UTF-8"))
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 100), row(2, 200)), AddData(b, row(1, 10), row(2, 20)), AddData(c, row(10, 1000)),
        CheckNewAnswer((1L, 100L, 10L, 1000L)),
        AssertPlanLog(checkpoint, Seq(1, 2)),
        StopStream,
        StartStream(checkpointLocation = checkpoint),
        AddData(c, row(20, 2000)), AddData(a, row(1, 101)),
        CheckNewAnswer((1L, 101L, 10L, 1000L), (2L, 200L, 20L, 2000L)),
        AssertPlanLog(checkpoint, Seq(1, 2)),
        AddData(a, closeK(1), closeK(2)), AddData(b, closeK(1), closeK(2), closeV(10), closeV(20)),
        AddData(c, closeK(10), closeK(20)),
        CheckNewAnswer(),
        AddData(a, row(3, 300)),
        CheckNewAnswer(),
        // a lacks class 1, whose share is now 2: its row 3 is in both cells of its class-0 coordinate
        AssertOnQuery("only a's row 3 left, in two cells") { q => punctuatedProgress(q).numRowsTotal == 2 },
        AssertPlanLog(checkpoint, Seq(1, 2)))
    }
  }

  test("a multi-way join's checkpoint under a tree of binary joins: refused at start(), nothing written") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = chain()
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 100)), AddData(b, row(1, 10)), AddData(c, row(10, 1000)),
        CheckNewAnswer((1L, 100L, 10L, 1000L)),
        StopStream)
      val before = stateFiles(checkpoint)
      withSQLConf(PunctuatedConf.JoinPlan -> "written") {
        val e = intercept[Exception](start(joined, checkpoint))
        refusal(e, "written by one multi-way join (mjoin of a, b, c, classes {a.a_k, b.b_k} {b.b_v, c.c_v}, " +
          "shares 2 x 1) (punctuatedMultiJoin)", "as a tree of binary punctuated joins (spark.punctuated.join.plan=written)",
          "run the query with spark.punctuated.join.plan=mjoin")
      }
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")
      // the plan it was written with continues it
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 101)),
        CheckNewAnswer((1L, 101L, 10L, 1000L)),
        StopStream)
    }
  }

  test("a multi-way join's checkpoint under one of more inputs: refused at start(), nothing written") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = chain()
    withSQLConf(PunctuatedConf.SafetyMode -> "warn") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 100)), AddData(b, row(1, 10)), AddData(c, row(10, 1000)),
        CheckNewAnswer((1L, 100L, 10L, 1000L)),
        StopStream)
      val before = stateFiles(checkpoint)
      // a fourth stream joined on c's z: one multi-way join of four inputs, still operator 0
      val d = MemoryStream[KV2]
      val dd = stream(d, "d", "d_z", "d_w", "d_z")
      val four = joined.join(dd, joined("c_z") === dd("d_z"))
      val e = intercept[Exception](start(four, checkpoint))
      refusal(e, "written by a multi-way join of 3 inputs (mjoin of a, b, c", "now joins 4 (a, b, c, d) there",
        "restore the query's joins")
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")
    }
  }

  test("a tree of binary joins' checkpoint under the multi-way plan: refused at start(), nothing written; written continues") {
    val checkpoint = newCheckpoint()
    val (a, b, c, joined) = star()
    withSQLConf(PunctuatedConf.JoinPlan -> "written") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(a, row(1, 10), row(2, 20)), AddData(b, row(1, 11)), AddData(c, row(1, 12)),
        CheckNewAnswer((1L, 10L, 11L, 12L)),
        AssertOnQuery("two binary joins") { q =>
          q.lastExecution.executedPlan.collect { case j: PunctuatedSymmetricHashJoinExec => j }.size == 2
        },
        StopStream)
    }
    val before = stateFiles(checkpoint)
    for (plan <- Seq("auto", "mjoin")) withSQLConf(PunctuatedConf.JoinPlan -> plan) {
      val e = intercept[Exception](start(joined, checkpoint))
      refusal(e, "written by a tree of binary punctuated joins (punctuatedSymmetricHashJoin)",
        s"now run as one multi-way join (spark.punctuated.join.plan=$plan)",
        "run the query with spark.punctuated.join.plan=written")
      assert(stateFiles(checkpoint) == before, "the refused run wrote state")
    }
    // the plan it was written with continues it, exactly once
    withSQLConf(PunctuatedConf.JoinPlan -> "written") {
      testStream(joined)(
        StartStream(checkpointLocation = checkpoint),
        AddData(b, row(2, 21)), AddData(c, row(2, 22), row(1, 13)),
        CheckNewAnswer((2L, 20L, 21L, 22L), (1L, 10L, 11L, 13L)),
        AddData(a, closeK(1), closeK(2)), AddData(b, closeK(1), closeK(2)), AddData(c, closeK(1), closeK(2)),
        CheckNewAnswer(),
        StopStream)
    }
  }
}

class MultiJoinCheckpointRocksDBSuite extends MultiJoinCheckpointSuite with OnRocksDB
