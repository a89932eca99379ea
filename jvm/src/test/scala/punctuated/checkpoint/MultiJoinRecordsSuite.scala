package punctuated.checkpoint

import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.AnalysisException
import punctuated.compat.StatefulOperatorStateInfo
import org.scalatest.funsuite.AnyFunSuite

import punctuated.errors.PunctuatedErrors

/**
 * A multi-way join's checkpoint records without Spark queries: its operator record and the
 * compatibility rules on it, and the plan log (the plan in force for a batch, the recorded
 * shares winning, retention). The restarts themselves are in [[MultiJoinCheckpointSuite]].
 */
class MultiJoinRecordsSuite extends AnyFunSuite {

  /** a(k) ⋈ b(k, v) ⋈ c(v): classes {a.k, b.k} and {b.v, c.v}. */
  private val chain = PlanRecord("mjoin", Seq("a", "b", "c"), Seq(Seq(0, 1), Seq(1, 2)),
    Seq(Seq("a.k", "b.k"), Seq("b.v", "c.v")), Seq(2, 2))

  private def input(i: Int, name: String, classes: Seq[Int], schemes: Seq[String]) =
    InputRecord(s"input $i", name, Some("p"), None, schemes,
      purging = schemes.zipWithIndex.map { case (s, p) => KeyedScheme(s, p.toString) },
      columns = Seq("k BIGINT", "v BIGINT", "p BOOLEAN"), classes = classes)

  private val stores = Seq("input0-mjoin-rows", "input1-mjoin-rows", "input2-mjoin-rows", "punctuated-meta")
  private val record = OperatorRecord("punctuatedMultiJoin", StateLayouts.MultiJoin, stores,
    Seq(input(0, "a", Seq(0), Seq("k")), input(1, "b", Seq(0, 1), Seq("k", "v")), input(2, "c", Seq(1), Seq("v"))),
    plan = Some(chain))

  test("the records survive their JSON form; a binary join's record keeps its text") {
    assert(PlanRecord.fromJson(chain.toJson) == chain)
    assert(OperatorRecord.fromJson(record.toJson) == record)
    val withProbes = chain.copy(probeOrders = Seq(Seq(1, 2), Seq(0, 2), Seq(1, 0)))
    assert(PlanRecord.fromJson(withProbes.toJson) == withProbes)
    val binary = OperatorRecord("punctuatedSymmetricHashJoin", StateLayouts.Join, Seq("left-punctuated-rows"),
      Seq(InputRecord("left", "auctions", Some("is_punct"), Some("id"), Nil)))
    assert(!binary.toJson.contains("classes") && !binary.toJson.contains("plan"), binary.toJson)
    assert(OperatorRecord.fromJson(binary.toJson) == binary)
    assert(chain.text == "mjoin of a, b, c, classes {a.k, b.k} {b.v, c.v}, shares 2 x 2")
  }

  test("compatibility: the same plan or another plan kind resumes (migrating); other shares or classes are refused") {
    assert(Compatibility.problems(record, record).isEmpty)
    // a renamed input and other probe orders: compatible
    val renamed = record.copy(inputs = record.inputs.updated(0, record.inputs(0).copy(table = "a2")),
      plan = Some(chain.copy(probeOrders = Seq(Seq(1, 2), Seq(0, 2), Seq(1, 0)))))
    assert(Compatibility.problems(record, renamed).isEmpty)
    def one(now: OperatorRecord, text: String) = {
      val problems = Compatibility.problems(record, now)
      assert(problems.exists(_.contains(text)), problems)
    }
    one(record.copy(plan = Some(chain.copy(shares = Seq(4, 1)))), "placed in hypercube cells by shares 2 x 2, " +
      "the query now places them by 4 x 1")
    one(record.copy(plan = Some(chain.copy(classes = Seq(Seq(0, 1, 2)), classColumns = Seq(Seq("a.k", "b.k", "c.v")),
      shares = Seq(4)))), "the attribute classes were {a.k, b.k} {b.v, c.v}, now {a.k, b.k, c.v}")
    // another plan kind or tree continues: the operator migrates to it (MultiJoinMigration)
    val tree = chain.copy(kind = "tree", plan = Some(punctuated.join.multi.MultiJoinPlan.leftDeep(Seq(0, 1, 2))))
    assert(Compatibility.problems(record, record.copy(plan = Some(tree))).isEmpty)
    one(record.copy(inputs = record.inputs.updated(1, record.inputs(1).copy(classes = Seq(1)))),
      "b (input 1): its rows are stored under classes 0, 1, now 1")
    one(record.copy(operator = "punctuatedSymmetricHashJoin", plan = None),
      "written by operator punctuatedMultiJoin, the query now plans punctuatedSymmetricHashJoin " +
        "(spark.punctuated.join.plan=mjoin continues it)")
    assert(Compatibility.problems(record.copy(operator = "punctuatedSymmetricHashJoin", plan = None), record)
      .exists(_.contains("(spark.punctuated.join.plan=written continues it)")))
    // a purging scheme gone: as for a binary join's
    one(record.copy(inputs = record.inputs.updated(1, input(1, "b", Seq(0, 1), Seq("k")))),
      "b (input 1): scheme 'v' no longer purges")
  }

  test("plan records: the tree and its kind survive JSON; a record without a plan is the MJoin; trees share a shape") {
    import punctuated.join.multi.MultiJoinPlan
    val leftDeep = chain.copy(kind = "tree", plan = Some(MultiJoinPlan.parse("((a ⋈ b) ⋈ c)", chain.inputs)))
    assert(PlanRecord.fromJson(leftDeep.toJson) == leftDeep)
    assert(leftDeep.toJson.contains("\"plan\":[[0,1],2]"), leftDeep.toJson)
    assert(leftDeep.setting == "((a ⋈ b) ⋈ c)" && leftDeep.text.startsWith("tree ((a ⋈ b) ⋈ c) of a, b, c"))
    // old records (no plan) read as the MJoin, and have its shape
    assert(chain.plan.isEmpty && chain.tree == MultiJoinPlan.mjoin(3) && chain.setting == "mjoin")
    assert(chain.shape == chain.copy(plan = Some(MultiJoinPlan.mjoin(3))).shape)
    // the same tree spelled otherwise: the same tree; another tree: the same shape (it migrates)
    val spelled = leftDeep.copy(plan = Some(MultiJoinPlan.parse("(c ⋈ (b ⋈ a))", chain.inputs)))
    assert(spelled.shape == leftDeep.shape && spelled.tree == leftDeep.tree)
    val other = leftDeep.copy(plan = Some(MultiJoinPlan.parse("(a ⋈ (b ⋈ c))", chain.inputs)))
    assert(other.shape == leftDeep.shape && other.tree != leftDeep.tree)
    // node stores and a migration survive JSON
    val migrating = other.copy(nodeStores = Some(Seq(Seq(0, 1))),
      migration = Some(punctuated.join.multi.MultiJoinMigration(leftDeep.tree, "moving_state", 5)))
    assert(PlanRecord.fromJson(migrating.toJson) == migrating, migrating.toJson)
  }

  test("plan log: a restart under another tree migrates to it, keeping the recorded node stores; a retry reads its record") {
    import punctuated.join.multi.MultiJoinPlan
    val dir = Files.createTempDirectory("punctuated-plan").toFile.getCanonicalPath
    val conf = new Configuration()
    val leftDeep = chain.copy(kind = "tree", plan = Some(MultiJoinPlan.parse("((a ⋈ b) ⋈ c)", chain.inputs)))
    PlanLog.write(info(dir, 0), leftDeep, conf)
    for (now <- Seq(chain, leftDeep.copy(plan = Some(MultiJoinPlan.parse("(a ⋈ (b ⋈ c))", chain.inputs))))) {
      val r = PlanLog.inForce(info(dir, 1), now, conf)
      assert(r.tree == now.tree && r.nodeStores.contains(Seq(Seq(0, 1))), r)
      assert(r.migration.contains(punctuated.join.multi.MultiJoinMigration(leftDeep.tree, "moving_state", 1)), r)
    }
    assert(PlanLog.inForce(info(dir, 1), leftDeep, conf).plan == leftDeep.plan)
    assert(PlanLog.inForce(info(dir, 1), leftDeep, conf).migration.isEmpty)
    // batch 1 recorded under the MJoin: its retry runs the MJoin, migrating, whatever is proposed now
    PlanLog.write(info(dir, 1), PlanLog.inForce(info(dir, 1), chain, conf), conf)
    val retried = PlanLog.inForce(info(dir, 1), leftDeep, conf)
    assert(retried.tree == chain.tree && retried.migration.map(_.since).contains(1L), retried)
  }

  private def info(dir: String, batch: Long) =
    StatefulOperatorStateInfo(dir, UUID.randomUUID(), operatorId = 0, storeVersion = batch, numPartitions = 4)

  private def logged(dir: String): Seq[Long] =
    Option(new java.io.File(dir, "0/_punctuated/plan").listFiles()).toSeq.flatten
      .map(_.getName).filter(_.forall(_.isDigit)).map(_.toLong).sorted

  test("plan log: the first batch records the proposed plan; later batches and retries keep the recorded shares") {
    val dir = Files.createTempDirectory("punctuated-plan").toFile.getCanonicalPath
    val conf = new Configuration()
    assert(PlanLog.inForce(info(dir, 0), chain, conf) == chain)
    assert(logged(dir).isEmpty, "inForce writes nothing")
    PlanLog.write(info(dir, 0), chain, conf)
    // the planner would choose other shares now (other input sizes): the recorded ones win
    val other = chain.copy(shares = Seq(4, 1), classColumns = Seq(Seq("a.k", "b.k"), Seq("b.v", "c2.v")))
    val batch1 = PlanLog.inForce(info(dir, 1), other, conf)
    assert(batch1.shares == Seq(2, 2) && batch1.classColumns == other.classColumns, batch1)
    PlanLog.write(info(dir, 1), batch1, conf)
    assert(logged(dir) == Seq(0L, 1L))
    // a retried batch 1 reads its own record
    assert(PlanLog.inForce(info(dir, 1), other, conf).shares == Seq(2, 2))
    // writing again does not replace it
    PlanLog.write(info(dir, 1), other, conf)
    assert(PlanLog.latest(new Path(dir, "0"), conf).map(_.shares).contains(Seq(2, 2)))
    // a restart after a gap (batches 2..4 ran no record: the latest at or below is in force)
    assert(PlanLog.inForce(info(dir, 5), other, conf).shares == Seq(2, 2))
    // probe orders are the operator's (they do not place state)
    val probes = Seq(Seq(1, 2), Seq(0, 2), Seq(1, 0))
    assert(PlanLog.inForce(info(dir, 5), other.copy(probeOrders = probes), conf).probeOrders == probes)
  }

  test("plan log: a plan of another shape is refused naming spark.punctuated.join.plan; a broken record too") {
    val dir = Files.createTempDirectory("punctuated-plan").toFile.getCanonicalPath
    val conf = new Configuration()
    PlanLog.write(info(dir, 0), chain, conf)
    val star = PlanRecord("mjoin", Seq("a", "b", "c"), Seq(Seq(0, 1, 2)), Seq(Seq("a.k", "b.k", "c.k")), Seq(4))
    val e = intercept[AnalysisException](PlanLog.inForce(info(dir, 1), star, conf))
    assert(e.getCondition == PunctuatedErrors.IncompatibleCheckpoint, e.getMessage)
    assert(e.getMessage.contains("written under the plan mjoin of a, b, c, classes {a.k, b.k} {b.v, c.v}"), e.getMessage)
    assert(e.getMessage.contains("spark.punctuated.join.plan=mjoin"), e.getMessage)
    Files.write(new java.io.File(dir, "0/_punctuated/plan/1").toPath, "{not json".getBytes("UTF-8"))
    val broken = intercept[AnalysisException](PlanLog.inForce(info(dir, 1), chain, conf))
    assert(broken.getMessage.contains("cannot be read"), broken.getMessage)
  }

  test("plan log: records older than minBatchesToRetain go, but the one in force for the oldest kept batch stays") {
    val dir = Files.createTempDirectory("punctuated-plan").toFile.getCanonicalPath
    val conf = new Configuration()
    val session = org.apache.spark.sql.internal.SQLConf.get
    val before = session.getConfString("spark.sql.streaming.minBatchesToRetain", "100")
    session.setConfString("spark.sql.streaming.minBatchesToRetain", "3")
    try {
      Seq(0L, 1L, 2L, 6L, 7L, 8L).foreach(b => PlanLog.write(info(dir, b), chain, conf))
      // batch 8 keeps 6..8; batch 2's record is the plan in force for batches 3..5
      assert(logged(dir) == Seq(2L, 6L, 7L, 8L))
    } finally session.setConfString("spark.sql.streaming.minBatchesToRetain", before)
  }
}
