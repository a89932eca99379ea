package punctuated.checkpoint

import java.nio.charset.StandardCharsets

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.json4s._
import org.json4s.jackson.JsonMethods
import punctuated.compat.CheckpointFileManager
import punctuated.compat.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQuery

import punctuated.join.multi.{MultiJoinPlan, MultiJoinTree}

/**
 * Requests to change a running query's multi-way join plan (`punctuated.migrate(query,
 * plan)` in Python): one small JSON file per request in the query's checkpoint, written
 * atomically through Spark's `CheckpointFileManager`, numbered in order:
 *
 * {{{
 *   <checkpoint>/_punctuated/migrate/0   {"inputs": ["a", "b", "c"], "plan": "((a ⋈ b) ⋈ c)"}
 *   <checkpoint>/_punctuated/migrate/1   {"inputs": ["a", "b", "c"], "plan": "auto"}
 * }}}
 *
 * The planner ([[punctuated.spark.rules.PlanPunctuatedMultiJoins]]) reads the newest request
 * for a group's inputs when it plans each micro-batch (one listing of this directory on the
 * driver): `mjoin` or a tree is the plan from then on (the batch migrates to it,
 * [[punctuated.join.multi.MultiJoinMigration]]) until the next request; `auto` hands the
 * choice back to `spark.punctuated.join.plan`. The plan record of the batch that applies it
 * names the request (`request`).
 */
object MigrationRequests {
  val DirName = "migrate"

  /** `<checkpoint root>/_punctuated/migrate`. */
  def dir(checkpointRoot: String): Path =
    new Path(new Path(checkpointRoot, CheckpointDeclarations.DirName), DirName)

  /** The checkpoint root of a state location (`<checkpoint>/state`). */
  def rootOf(stateCheckpointLocation: String): String = new Path(stateCheckpointLocation).getParent.toString

  /** A request: its number, the inputs it is for (by name), the plan (`mjoin`, `auto` or a tree's text). */
  final case class Request(number: Long, inputs: Seq[String], plan: String)

  /**
   * Asks the query for `plan` (`mjoin`, `auto`, or a tree over its multi-way join's input
   * names, as `spark.punctuated.join.plan` spells it): checked against the latest plan record
   * of the query's multi-way join(s) whose inputs it names, then written. Returns the
   * request's number. Fails naming the inputs and an example when it fits no group.
   *
   * Asking again for what the newest request for those inputs already asks writes nothing and
   * returns that request's number: a request stays in force until the next one, so the same
   * plan asked twice is one request (SQL's `punctuated_migrate` may be analysed more than once
   * per call).
   */
  def request(query: StreamingQuery, plan: String): Long = {
    val q = execution(query)
    val root = q.resolvedCheckpointRoot
    val hadoopConf = q.sparkSession.sessionState.newHadoopConf()
    val records = plans(root, hadoopConf)
    if (records.isEmpty) throw new IllegalArgumentException(s"the query ${Option(query.name).getOrElse(query.id)} has no multi-way join with " +
      "a recorded plan yet (run a micro-batch first): there is nothing to migrate")
    val text = plan.trim
    val keyword = text.toLowerCase(java.util.Locale.ROOT)
    val fits = records.filter { r =>
      keyword == "auto" || keyword == "mjoin" || Try(MultiJoinPlan.parse(text, r.inputs)).toOption.exists { t =>
        val classes = r.inputs.indices.map(i => r.classes.indices.filter(c => r.classes(c).contains(i)))
        MultiJoinTree.problem(t, classes, r.inputs).isEmpty
      }
    }
    val target = fits.headOption.getOrElse {
      val r = records.head
      val why = Try(MultiJoinPlan.parse(text, r.inputs)).failed.toOption.map(_.getMessage)
        .getOrElse("a node of it joins inputs that share no join column (a cross product)")
      throw new IllegalArgumentException(s"the plan '$plan' does not fit the multi-way join of " +
        s"${r.inputs.mkString(", ")}: $why. Give its inputs' names in left-deep order (nested lists for a " +
        s"bushy tree), e.g. ${MultiJoinPlan.leftDeep(r.inputs.indices).text(r.inputs)}, or 'mjoin' or 'auto'")
    }
    val asked = if (keyword == "auto" || keyword == "mjoin") keyword else text
    val d = dir(root)
    val fm = CheckpointFileManager.create(d, hadoopConf)
    fm.mkdirs(d)
    latest(fm, d, target.inputs).filter(_.plan == asked).map(_.number).getOrElse {
      val number = (PlanLog.list(fm, d) :+ -1L).max + 1
      val json = JsonMethods.compact(JsonMethods.render(JObject(List[JField](
        "inputs" -> JArray(target.inputs.map(JString(_)).toList), "plan" -> JString(asked)))))
      val out = fm.createAtomic(new Path(d, number.toString), overwriteIfPossible = false)
      try { out.write(json.getBytes(StandardCharsets.UTF_8)); out.close() }
      catch { case NonFatal(e) => out.cancel(); throw e }
      number
    }
  }

  /** The newest request for a group of these inputs, `auto` included. */
  private def latest(fm: CheckpointFileManager, d: Path, inputs: Seq[String]): Option[Request] =
    PlanLog.list(fm, d).sorted.reverseIterator.flatMap { n =>
      CheckpointDeclarations.read(fm, new Path(d, n.toString)).flatMap(j => Try(parse(n, j)).toOption)
    }.find(_.inputs == inputs)

  /** The newest request for a group of these inputs (None: none, or the newest hands back with `auto`). */
  def newest(checkpointRoot: String, inputs: Seq[String], hadoopConf: Configuration): Option[Request] = {
    val d = dir(checkpointRoot)
    latest(CheckpointFileManager.create(d, hadoopConf), d, inputs).filter(_.plan != "auto")
  }

  private def parse(number: Long, json: String): Request = {
    val v = JsonMethods.parse(json)
    val JArray(names) = v \ "inputs": @unchecked
    val JString(plan) = v \ "plan": @unchecked
    Request(number, names.collect { case JString(s) => s }, plan)
  }

  /** The latest plan record of each multi-way join in the checkpoint at `root`. */
  def plans(root: String, hadoopConf: Configuration): Seq[PlanRecord] = {
    val state = new Path(root, "state")
    val fm = CheckpointFileManager.create(state, hadoopConf)
    if (!fm.exists(state)) Nil
    else fm.list(state).toSeq.filter(_.isDirectory).map(_.getPath).sortBy(_.getName)
      .flatMap(op => PlanLog.latest(op, hadoopConf))
  }

  /**
   * The plans the query's multi-way joins run now (their latest plan records), as JSON for
   * Python: `[{"inputs": ["a", "b", "c"], "plan": [[0, 1], 2]}]`.
   */
  def joinPlans(query: StreamingQuery): String = {
    val q = execution(query)
    val records = plans(q.resolvedCheckpointRoot, q.sparkSession.sessionState.newHadoopConf())
    JsonMethods.compact(JsonMethods.render(JArray(records.map { r =>
      JObject(List[JField]("inputs" -> JArray(r.inputs.map(JString(_)).toList), "plan" -> r.tree.toJValue))
    }.toList)))
  }

  private def execution(query: StreamingQuery) = query match {
    case w: StreamingQueryWrapper => w.streamingQuery
    case other => throw new IllegalArgumentException(s"not a streaming query started in this JVM: $other")
  }
}
