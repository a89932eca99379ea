package punctuated.checkpoint

import java.nio.charset.StandardCharsets

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s._
import org.json4s.jackson.JsonMethods
import punctuated.compat.CheckpointFileManager
import punctuated.compat.StatefulOperatorStateInfo

import punctuated.conf.PunctuatedConf
import punctuated.errors.PunctuatedErrors
import punctuated.join.multi.{MultiJoinInputSpec, MultiJoinMigration, MultiJoinPlan, MultiJoinStatistics}

/**
 * The plan a multi-way join runs a micro-batch with, as the checkpoint records it.
 *
 * {{{
 *   a(k) JOIN b(k, v) ON a.k = b.k JOIN c(v) ON b.v = c.v, 4 partitions
 *   PlanRecord("mjoin", inputs = [a, b, c], classes = [[0, 1], [1, 2]],
 *              classColumns = [[a.k, b.k], [b.v, c.v]], shares = [2, 2])
 *   the same with spark.punctuated.join.plan = ((a ⋈ b) ⋈ c):
 *   PlanRecord("tree", ..., plan = Some([[0, 1], 2]))     JSON "plan": [[0, 1], 2]
 * }}}
 *
 * @param kind         the plan kind (`mjoin`: one operator, no intermediate state; `tree`:
 *                     intermediate state in the nodes below the root)
 * @param inputs       the inputs' names, in input order (0 .. n-1)
 * @param classes      for each attribute class, the inputs with a column in it (increasing)
 * @param classColumns for each attribute class, its columns (`input.column`, for people)
 * @param shares       the hypercube share of each class: the state's placement depends on them
 * @param probeOrders  for each input, the order its rows probe the other inputs (for people
 *                     and tools: the operator derives them from its inputs' classes; they do
 *                     not affect the state)
 * @param plan         the plan tree ([[MultiJoinPlan]], canonical; None in records written
 *                     before plans were recorded: the MJoin)
 * @param statistics   the statistics the plan was chosen with ([[punctuated.join.multi.PlanChoice]]; absent in records
 *                     written before plans were chosen): a restart's choice starts from them
 * @param nodeStores   the intermediate nodes that have a rows store of their own in the
 *                     checkpoint (by the inputs they cover): the nodes of the plan of its first
 *                     batch, carried from record to record (None in records written before
 *                     plans migrated: the nodes of `tree`) — [[MultiJoinMigration]]
 * @param migration    the plan change this batch makes (None: the plan of the batch before)
 * @param request      the request in force ([[MigrationRequests]], `punctuated.migrate`), if any
 */
final case class PlanRecord(
    kind: String,
    inputs: Seq[String],
    classes: Seq[Seq[Int]],
    classColumns: Seq[Seq[String]],
    shares: Seq[Int],
    probeOrders: Seq[Seq[Int]] = Nil,
    plan: Option[MultiJoinPlan.Join] = None,
    statistics: Option[MultiJoinStatistics] = None,
    nodeStores: Option[Seq[Seq[Int]]] = None,
    migration: Option[MultiJoinMigration] = None,
    request: Option[Long] = None) {

  /** The nodes with a rows store of their own ([[nodeStores]], else the plan's nodes). */
  def storedNodes: Seq[Seq[Int]] = nodeStores.getOrElse(MultiJoinMigration.nodeSets(tree))

  /** The plan tree (canonical): the recorded one, else the MJoin of the inputs. */
  def tree: MultiJoinPlan.Join =
    plan.getOrElse(MultiJoinPlan.mjoin(inputs.size)).canonical.asInstanceOf[MultiJoinPlan.Join]

  /** The value of `spark.punctuated.join.plan` that runs this plan: `mjoin`, or the tree's text. */
  def setting: String = if (tree.isMJoin) "mjoin" else tree.text(inputs)

  /**
   * What the state's layout depends on: two records of one shape read the same state (the
   * plan tree is not part of it: another plan continues the state by migrating,
   * [[MultiJoinMigration]]).
   */
  def shape: (Int, Seq[Seq[Int]]) = (inputs.size, classes)

  /**
   * For messages: `mjoin of a, b, c, classes {a.k, b.k} {b.v, c.v}, shares 2 x 2`, a tree
   * as `tree ((a ⋈ b) ⋈ c) of a, b, c, ...`.
   */
  def text: String = s"$kind${if (tree.isMJoin) "" else " " + tree.text(inputs)} of ${inputs.mkString(", ")}, classes " +
    classColumns.map(_.mkString("{", ", ", "}")).mkString(" ") + s", shares ${shares.mkString(" x ")}"

  def toJson: String = JsonMethods.compact(JsonMethods.render(PlanRecord.toJValue(this)))
}

object PlanRecord {
  /** Version of the plan record's own format. */
  val FormatVersion = 1

  /**
   * The `mjoin` plan of inputs as planned.
   *
   * @param names  the inputs' names (in input order)
   * @param inputs the inputs (their classes and class columns)
   */
  def mjoin(names: Seq[String], inputs: Seq[MultiJoinInputSpec], shares: Seq[Int],
      probeOrders: Seq[Seq[Int]] = Nil): PlanRecord = {
    val numClasses = shares.size
    val classes = (0 until numClasses).map(c => inputs.filter(_.classes.contains(c)).map(_.number).sorted)
    val columns = (0 until numClasses).map { c =>
      inputs.sortBy(_.number).flatMap(in => in.classes.zip(in.keys).collect {
        case (`c`, a) => s"${names(in.number)}.${a.name}"
      })
    }
    PlanRecord("mjoin", names, classes, columns, shares, probeOrders)
  }

  /** The record of `plan` over inputs as planned ([[mjoin]] with the plan and its kind). */
  def of(names: Seq[String], inputs: Seq[MultiJoinInputSpec], shares: Seq[Int], plan: MultiJoinPlan.Join): PlanRecord = {
    val canonical = plan.canonical.asInstanceOf[MultiJoinPlan.Join]
    mjoin(names, inputs, shares).copy(kind = MultiJoinPlan.kind(canonical), plan = Some(canonical))
  }

  private def ints(s: Seq[Int]): JValue = JArray(s.map(i => JInt(i)).toList)

  private[checkpoint] def toJValue(p: PlanRecord): JValue = JObject(List[JField](
    "formatVersion" -> JInt(FormatVersion),
    "kind" -> JString(p.kind),
    "inputs" -> JArray(p.inputs.map(JString(_)).toList),
    "classes" -> JArray(p.classes.map(ints).toList),
    "classColumns" -> JArray(p.classColumns.map(c => JArray(c.map(JString(_)).toList)).toList),
    "shares" -> ints(p.shares),
    "probeOrders" -> JArray(p.probeOrders.map(ints).toList)) ++
    p.plan.map(t => "plan" -> t.toJValue).toList ++
    p.statistics.map(s => "statistics" -> s.toJValue).toList ++
    p.nodeStores.map(ns => "nodeStores" -> JArray(ns.map(ints).toList)).toList ++
    p.migration.map(m => "migration" -> m.toJValue).toList ++
    p.request.map(n => "request" -> JInt(n)).toList)

  def fromJson(json: String): PlanRecord = fromJValue(JsonMethods.parse(json))

  private[checkpoint] def fromJValue(v: JValue): PlanRecord = {
    def arr(j: JValue): List[JValue] = j match {
      case JArray(xs) => xs
      case other => throw new IllegalArgumentException(s"expected an array, got $other")
    }
    def int(j: JValue): Int = j match {
      case JInt(i) => i.toInt
      case other => throw new IllegalArgumentException(s"expected a number, got $other")
    }
    def str(j: JValue): String = j match {
      case JString(s) => s
      case other => throw new IllegalArgumentException(s"expected a string, got $other")
    }
    val format = int(v \ "formatVersion")
    require(format <= FormatVersion, s"plan record format $format is newer than this version's ($FormatVersion)")
    PlanRecord(
      kind = str(v \ "kind"),
      inputs = arr(v \ "inputs").map(str),
      classes = arr(v \ "classes").map(arr(_).map(int)),
      classColumns = arr(v \ "classColumns").map(arr(_).map(str)),
      shares = arr(v \ "shares").map(int),
      probeOrders = (v \ "probeOrders") match {
        case JArray(xs) => xs.map(arr(_).map(int))
        case _ => Nil
      },
      plan = (v \ "plan") match {
        case j: JArray => Some(MultiJoinPlan.fromJValue(j).asInstanceOf[MultiJoinPlan.Join])
        case _ => None
      },
      statistics = (v \ "statistics") match {
        case o: JObject => Some(MultiJoinStatistics.fromJValue(o))
        case _ => None
      },
      nodeStores = (v \ "nodeStores") match {
        case JArray(xs) => Some(xs.map(arr(_).map(int)))
        case _ => None
      },
      migration = (v \ "migration") match {
        case o: JObject => Some(MultiJoinMigration.fromJValue(o))
        case _ => None
      },
      request = (v \ "request") match {
        case JInt(n) => Some(n.toLong)
        case _ => None
      })
  }
}

/**
 * The plan log of a multi-way join: the plan each micro-batch ran with, recorded before the
 * batch runs (as Spark's offset log records its input), one small JSON file per batch:
 *
 * {{{
 *   <checkpoint>/state/<operatorId>/_punctuated/plan/0      {"kind":"mjoin","inputs":["a","b","c"],...,"shares":[2,2]}
 *   <checkpoint>/state/<operatorId>/_punctuated/plan/1
 *   ...
 * }}}
 *
 * `operatorId` is the group's top join's state operator id. The plan in force for batch b
 * is the latest record at or below b. [[inForce]] reads it (a retried batch, or the first
 * batch after a restart, gets the plan its state was written under); [[write]] records it
 * for b, atomically through Spark's `CheckpointFileManager`, after the operator's record
 * was verified ([[CheckpointDeclarations.verify]]) and before any state store is opened.
 *
 * The recorded shares win over the ones the planner would choose now: every stored row is
 * placed in the hypercube cell its shares name, so other shares would look rows up in the
 * wrong cells. A recorded plan of another tree is continued: the batch migrates to the new
 * plan ([[MultiJoinMigration]], recorded in its record as `migration`), keeping the node
 * stores the checkpoint has (`nodeStores`). A record of another shape (number of inputs,
 * attribute classes) cannot read the state at all: `PUNCTUATED_INCOMPATIBLE_CHECKPOINT`
 * (the start-time check, [[StateOwners]], refuses most such restarts before this).
 *
 * Records older than `spark.sql.streaming.minBatchesToRetain` batches are deleted (keeping
 * the one in force for the oldest batch Spark can still restart from). Cost per micro-batch,
 * on the driver: one read, a listing of the log only when the batch has no record yet, one
 * small write.
 */
object PlanLog {
  val DirName = "plan"

  /** `<checkpoint>/state/<operatorId>/_punctuated/plan`. */
  def dir(operatorDir: Path): Path = new Path(new Path(operatorDir, CheckpointDeclarations.DirName), DirName)

  def dir(info: StatefulOperatorStateInfo): Path = dir(CheckpointDeclarations.operatorDir(info))

  /**
   * The plan batch `info.storeVersion` runs with: the batch's own record (a retried batch
   * runs as it ran), else `proposed` with the shares and node stores of the latest earlier
   * record (the state was placed by them) — migrating ([[MultiJoinMigration]], `strategy`)
   * when its tree is another — else `proposed` as it is (the query's first batch). Writes
   * nothing. A record of another shape (other inputs or attribute classes) is refused.
   */
  def inForce(info: StatefulOperatorStateInfo, proposed: PlanRecord, hadoopConf: Configuration,
      strategy: String = "moving_state"): PlanRecord = {
    val fm = CheckpointFileManager.create(dir(info), hadoopConf)
    val batch = info.storeVersion
    val own = CheckpointDeclarations.read(fm, new Path(dir(info), batch.toString)).map(parse(info, _))
    val recorded = own.orElse(latest(fm, dir(info), below = batch).map(parse(info, _)))
    recorded match {
      case None => proposed
      case Some(r) if r.shape != proposed.shape => throw PunctuatedErrors.incompatibleCheckpoint(info.operatorId,
        "punctuatedMultiJoin", CheckpointDeclarations.operatorDir(info).toString,
        Seq(s"its state was written under the plan ${r.text}; the query now plans ${proposed.text}: " +
          s"run it with ${PunctuatedConf.JoinPlan}=${r.setting} (or any plan) and the inputs and join predicates " +
          "it was written with"),
        Some(r.text), proposed.text, None)
      case Some(r) if own.isDefined => r.copy(statistics = proposed.statistics.orElse(r.statistics))
      case Some(r) =>
        val migration = if (r.tree == proposed.tree) None else Some(MultiJoinMigration(r.tree, strategy, batch))
        proposed.copy(shares = r.shares, nodeStores = Some(r.storedNodes), migration = migration)
    }
  }

  /** Records `plan` for batch `info.storeVersion` (if absent), and deletes records no restart needs. */
  def write(info: StatefulOperatorStateInfo, plan: PlanRecord, hadoopConf: Configuration): Unit = {
    val d = dir(info)
    val fm = CheckpointFileManager.create(d, hadoopConf)
    val file = new Path(d, info.storeVersion.toString)
    if (!fm.exists(file)) {
      fm.mkdirs(d)
      val out = fm.createAtomic(file, overwriteIfPossible = false)
      try {
        out.write(plan.toJson.getBytes(StandardCharsets.UTF_8))
        out.close()
      } catch {
        case NonFatal(e) => out.cancel(); throw e
      }
      val retain = org.apache.spark.sql.internal.SQLConf.get.minBatchesToRetain
      val batches = list(fm, d)
      val oldest = info.storeVersion - retain + 1
      batches.filter(_ < oldest).sorted.dropRight(1).foreach(b => fm.delete(new Path(d, b.toString)))
    }
  }

  /** The latest record of the log at `operatorDir` (for the start-time check), if any can be read. */
  def latest(operatorDir: Path, hadoopConf: Configuration): Option[PlanRecord] = {
    val fm = CheckpointFileManager.create(dir(operatorDir), hadoopConf)
    latest(fm, dir(operatorDir), below = Long.MaxValue).flatMap(j => Try(PlanRecord.fromJson(j)).toOption)
  }

  /** The batches the log has a record of. */
  private[checkpoint] def list(fm: CheckpointFileManager, d: Path): Seq[Long] =
    if (!fm.exists(d)) Nil
    else fm.list(d).toSeq.map(_.getPath.getName).flatMap(n => Try(n.toLong).toOption)

  /** The text of the latest record before batch `below`. */
  private def latest(fm: CheckpointFileManager, d: Path, below: Long): Option[String] =
    list(fm, d).filter(_ < below).sorted.lastOption.flatMap(b => CheckpointDeclarations.read(fm, new Path(d, b.toString)))

  private def parse(info: StatefulOperatorStateInfo, json: String): PlanRecord =
    try PlanRecord.fromJson(json) catch {
      case NonFatal(e) => throw PunctuatedErrors.incompatibleCheckpoint(info.operatorId, "punctuatedMultiJoin",
        CheckpointDeclarations.operatorDir(info).toString,
        Seq(s"its plan log ${dir(info)} cannot be read (${e.getMessage})"), None, "", None)
    }
}
