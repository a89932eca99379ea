package punctuated.checkpoint

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.AnalysisException
import punctuated.compat.CheckpointFileManager
import org.apache.spark.sql.execution.streaming.state.StateStoreId

import punctuated.state.GroupPunctuations
import punctuated.errors.PunctuatedErrors

/**
 * Whose operator wrote a checkpoint's state — ours or Spark's own — against whose operator
 * a restarted query will run, checked when the query starts (`start()`), before Spark plans
 * its first micro-batch: Spark's own restart checks (operator metadata, state schemas) come
 * at planning and would otherwise answer first, with messages that do not say what changed.
 *
 * {{{
 *   run 1: auctions, bids declared      state/0/_punctuated/declarations.json + our stores
 *   ALTER TABLE ... UNSET TBLPROPERTIES  (declarations removed)
 *   run 2: the same join, undeclared    -> Spark's own join over our state: refused here
 *
 *   run 1: undeclared                   state/0/left-keyToNumValues ... (Spark's join)
 *   ALTER TABLE ... SET TBLPROPERTIES    (declarations added)
 *   run 2: the same join, declared      -> our join over Spark's state: refused here
 * }}}
 *
 * Operators are matched by their state operator id, which Spark assigns in plan order
 * (pre-order, left to right: [[PlannedOperator]]s come in that order). A plan with a
 * stateful operator this check does not know is not judged here (the per-operator check at
 * planning, [[CheckpointDeclarations.verify]], still runs for ours).
 *
 *   run 1: undeclared aggregation        state/0/ (default store only)
 *   run 2: declared                      -> our aggregation over Spark's state: refused here
 *
 *   run 1: a ⋈ b ⋈ c, join plan written  state/0, state/1: two punctuatedSymmetricHashJoins
 *   run 2: the same, join plan auto       -> one punctuatedMultiJoin over their state: refused here
 *   (and the reverse: a multi-way join's state under a tree of binary joins)
 * }}}
 *
 * A group of joins that runs as one multi-way join keeps its state under the top join's
 * operator id; the group's other joins keep none. Moving state between the two plans is
 * not supported yet: such a restart is refused naming `spark.punctuated.join.plan` and the
 * value that continues the checkpoint.
 */
object StateOwners {

  /**
   * A stateful operator the restarted query will run, in state operator id order.
   *
   * @param kind        `join`, `aggregation` or `deduplication`
   * @param punctuated  whether it runs as our operator (its inputs are declared)
   * @param sparkName   Spark's own operator's short name for this kind (for messages)
   * @param tables      the tables or streams it reads (for messages)
   * @param plan        how a join runs: [[Binary]], as the top of a multi-way join ([[MultiWay]],
   *                    which keeps the group's state), or below one ([[InMultiWay]], no state)
   * @param joinPlan    the query's `spark.punctuated.join.plan` (for messages)
   * @param inputs      a multi-way join's inputs' names, in input order
   */
  final case class PlannedOperator(kind: String, punctuated: Boolean, sparkName: String, tables: Seq[String],
      plan: String = Binary, joinPlan: String = "auto", inputs: Seq[String] = Nil)

  val Binary = "binary"
  val MultiWay = "multi-way"
  val InMultiWay = "in multi-way"

  private val BinaryJoinName = "punctuatedSymmetricHashJoin"
  private val MultiJoinName = "punctuatedMultiJoin"

  /** Spark's own join's stores: a checkpoint holding any of them was written by Spark's join. */
  private val SparkJoinStores = for {
    side <- Seq("left", "right")
    store <- Seq("keyToNumValues", "keyWithIndexToValue")
  } yield s"$side-$store"

  /**
   * The refusal, if one of `operators` would resume state written by the other engine.
   *
   * @param stateDir the query's state directory (`<checkpoint>/state`)
   */
  def check(stateDir: String, operators: Seq[PlannedOperator], hadoopConf: Configuration): Option[AnalysisException] = {
    val root = new Path(stateDir)
    val fm = CheckpointFileManager.create(root, hadoopConf)
    if (!fm.exists(root)) return None
    operators.zipWithIndex.iterator.map { case (op, id) =>
      val dir = new Path(root, id.toString)
      if (!fm.exists(dir)) None
      else if (op.punctuated) otherPlan(fm, dir, id, op, hadoopConf).orElse(writtenBySpark(fm, dir, id, op))
      else writtenByUs(fm, dir, id, op)
    }.collectFirst { case Some(e) => e }
  }

  /**
   * A multi-way join's state under a tree of binary punctuated joins or the reverse, or a
   * multi-way join's state under one of other inputs.
   */
  private def otherPlan(fm: CheckpointFileManager, dir: Path, id: Int, op: PlannedOperator,
      hadoopConf: Configuration): Option[AnalysisException] = {
    if (op.kind != "join" || CheckpointDeclarations.storesWithState(fm, dir).isEmpty) return None
    val file = new Path(new Path(dir, CheckpointDeclarations.DirName), CheckpointDeclarations.FileName)
    val old = CheckpointDeclarations.read(fm, file).flatMap(j => scala.util.Try(OperatorRecord.fromJson(j)).toOption)
    val written = old.map(_.operator)
    lazy val recordedPlan = PlanLog.latest(dir, hadoopConf)
    def refuse(problem: String, setting: Option[String]) = Some(PunctuatedErrors.incompatibleCheckpoint(id,
      if (op.plan == Binary) BinaryJoinName else MultiJoinName, dir.toString, Seq(problem),
      old.map(_.declarationText), op.tables.mkString(", "), None, setting))
    val key = punctuated.conf.PunctuatedConf.JoinPlan
    if (op.plan != Binary && written.contains(BinaryJoinName)) {
      val where = if (op.plan == MultiWay) "" else " below it"
      refuse(s"its state was written by a tree of binary punctuated joins ($BinaryJoinName); the joins of " +
        s"${op.inputs.mkString(", ")} now run as one multi-way join ($key=${op.joinPlan}), which keeps its " +
        s"state under the top join's operator id and none$where: it cannot read the binary joins' state " +
        s"(moving state between join plans is not supported yet); $key=written continues it",
        Some(s"$key=written"))
    } else if (op.plan == Binary && written.contains(MultiJoinName)) {
      val was = recordedPlan.map(p => s" (${p.text})").getOrElse("")
      // the recorded plan's setting: mjoin (or auto, which runs it), or the recorded tree
      val continues = recordedPlan.map(_.setting).filter(_ != "mjoin").getOrElse("mjoin (or auto)")
      val why = if (op.joinPlan == "written") s"$key=written" else "its output punctuations are needed above it, " +
        "or its joins changed"
      refuse(s"its state was written by one multi-way join$was ($MultiJoinName); the query now runs the join of " +
        s"${op.tables.mkString(", ")} as a tree of binary punctuated joins ($why), which cannot read it " +
        s"(moving state between join plans is not supported yet); $key=$continues continues it",
        Some(s"$key=${recordedPlan.map(_.setting).getOrElse("mjoin")}"))
    } else if (op.plan == MultiWay && written.contains(MultiJoinName)) {
      recordedPlan.filter(p => p.inputs.size != op.inputs.size).flatMap { p =>
        refuse(s"its state was written by a multi-way join of ${p.inputs.size} inputs (${p.text}); the query " +
          s"now joins ${op.inputs.size} (${op.inputs.mkString(", ")}) there: restore the query's joins", None)
      }
    } else None
  }

  /** Our operator's record and state, now under Spark's own operator. */
  private def writtenByUs(fm: CheckpointFileManager, dir: Path, id: Int, op: PlannedOperator): Option[AnalysisException] = {
    val file = new Path(new Path(dir, CheckpointDeclarations.DirName), CheckpointDeclarations.FileName)
    if (!CheckpointDeclarations.storesWithState(fm, dir).nonEmpty) return None
    CheckpointDeclarations.read(fm, file).map { json =>
      val old = scala.util.Try(OperatorRecord.fromJson(json)).toOption
      val written = old.map(_.operator).getOrElse("punctuated operator")
      PunctuatedErrors.incompatibleCheckpoint(id, op.sparkName, dir.toString,
        Seq(s"its state was written by a punctuated ${op.kind} ($written), and the ${op.kind} of " +
          s"${op.tables.mkString(", ")} now runs as Spark's own ${op.sparkName}: its inputs have no " +
          "punctuation declarations (removed, or the extension's declarations are not read), so " +
          "Spark's operator would read state it did not write; restore the declarations"),
        old.map(_.declarationText), "(no declarations)",
        old.map(_.inputs.map(i => s"${i.table}: ${i.properties}").mkString("; ")))
    }
  }

  /**
   * Spark's own operator's state, now under ours. Our join never opens Spark's join's stores;
   * our aggregation and deduplication always open the held-punctuation store beside the
   * default one, so state in the default store alone, without a record, is Spark's.
   */
  private def writtenBySpark(fm: CheckpointFileManager, dir: Path, id: Int, op: PlannedOperator): Option[AnalysisException] = {
    val file = new Path(new Path(dir, CheckpointDeclarations.DirName), CheckpointDeclarations.FileName)
    if (CheckpointDeclarations.read(fm, file).isDefined) return None
    val found = CheckpointDeclarations.storesWithState(fm, dir)
    val spark = op.kind match {
      case "join" => found.filter(SparkJoinStores.contains)
      case _ if found.contains(StateStoreId.DEFAULT_STORE_NAME) && !found.contains(GroupPunctuations.StoreName) =>
        Seq(StateStoreId.DEFAULT_STORE_NAME)
      case _ => Nil
    }
    if (spark.isEmpty) None
    else Some(PunctuatedErrors.incompatibleCheckpoint(id, s"punctuated ${op.kind}", dir.toString,
      Seq(s"the checkpoint holds state stores ${spark.map(s => s"'$s'").mkString(", ")} written by " +
        s"Spark's own operator (${op.sparkName}: a run without declarations on ${op.tables.mkString(", ")}, or " +
        s"without the extension): the punctuated ${op.kind} cannot read them; remove the declarations to resume it"),
      None, op.tables.mkString(", ") + " (declared)", None))
  }
}
