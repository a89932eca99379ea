package punctuated.conf

import java.util.Locale

import org.apache.spark.sql.internal.SQLConf

/**
 * The `spark.punctuated.*` settings (user contract, "Semantics of punctuations", "Joins"),
 * read from the session's SQL conf (`spark.conf.set(...)`, `--conf`, `SET k=v`).
 * A bad value fails with a message naming the setting and its allowed values.
 */
final case class PunctuatedConf(
    lateRows: String,
    invalidPunctuations: String,
    emitPunctuations: Boolean,
    punctuationRetention: Int,
    safetyMode: String,
    batchIncludePunctuations: Boolean = false,
    maxRemembered: Int = PunctuatedConf.DefaultMaxRemembered,
    joinPlan: String = "auto",
    shedding: SheddingConf = SheddingConf.Off,
    migrationStrategy: String = "jisc",
    replanEvery: Int = PunctuatedConf.DefaultReplanEvery,
    replanThreshold: Double = PunctuatedConf.DefaultReplanThreshold,
    shareWeights: String = "first_batch") {
  def failOnLateRows: Boolean = lateRows == "fail"
  def failOnInvalidPunctuations: Boolean = invalidPunctuations == "fail"

  /** The join tree `spark.punctuated.join.plan` spells, if it is one (not `auto`, `mjoin`, `written`). */
  def joinTree: Option[String] = if (PunctuatedConf.PlanKeywords.contains(joinPlan)) None else Some(joinPlan)
}

object PunctuatedConf {
  val LateRows = "spark.punctuated.lateRows"
  val InvalidPunctuations = "spark.punctuated.invalidPunctuations"
  val EmitPunctuations = "spark.punctuated.emitPunctuations"
  val PunctuationRetention = "spark.punctuated.punctuationRetention"
  val SafetyMode = "spark.punctuated.safety.mode"
  /** Batch reads of a declared table keep its punctuation rows (default: left out). */
  val BatchIncludePunctuations = "spark.punctuated.batch.includePunctuations"
  /**
   * Closed values an operator remembers per partition and scheme, to recognise late rows after
   * their punctuations are released ([[punctuated.model.ClosedValues]]); 0 remembers none.
   */
  val MaxRemembered = "spark.punctuated.lateRows.maxRemembered"
  val DefaultMaxRemembered = 10000
  /**
   * The plan of a join of three or more streams (user contract, "Joins of three or more
   * streams"): `auto` (default), `mjoin` (one multi-way join, no intermediate state),
   * `written` (the tree of binary joins the query spells), or a join tree over the inputs'
   * names run inside the multi-way join, with intermediate state in its inner nodes below the
   * root: `((bids ⋈ auctions) ⋈ persons)` ([[punctuated.join.multi.MultiJoinPlan.parse]];
   * checked against each group when it is planned).
   */
  val JoinPlan = "spark.punctuated.join.plan"
  /**
   * How a multi-way join completes the intermediate state of a plan it migrates to
   * ([[punctuated.join.multi.MultiJoinMigration]]): `jisc` (default), `moving_state` or `parallel_track`.
   */
  val MigrationStrategy = "spark.punctuated.migration.strategy"
  /**
   * Under `auto`, a multi-way join re-chooses its plan from the observed statistics every
   * this many micro-batches (0: never), switching only when the new plan's cost is below
   * (1 - [[ReplanThreshold]]) times the current plan's under the same statistics.
   */
  val ReplanEvery = "spark.punctuated.join.replanEvery"
  val DefaultReplanEvery = 10
  /** The hysteresis of [[ReplanEvery]]: the relative cost saving a switch needs (0 .. 1). */
  val ReplanThreshold = "spark.punctuated.join.replanThreshold"
  val DefaultReplanThreshold = 0.2
  /**
   * What a multi-way join over two or more attribute classes weighs its hypercube shares by
   * when it first runs ([[punctuated.join.multi.MultiJoinShareWeights]]): `first_batch`
   * (default: the first micro-batch's rows per input, counted before it runs) or `equal` (every
   * input alike). The plan log keeps the shares chosen then.
   */
  val ShareWeights = "spark.punctuated.join.shareWeights"
  /** The keywords of [[JoinPlan]]; anything else is read as a join tree. */
  val PlanKeywords: Seq[String] = Seq("auto", "mjoin", "written")

  /** Stored data rows per partition of one join (unset: no shedding), [[SheddingConf]]. */
  val SheddingMaxStateRows = "spark.punctuated.shedding.maxStateRows"
  /** Which rows a join over its budget sheds: `prob` (default), `life`, `rand`. */
  val SheddingPolicy = "spark.punctuated.shedding.policy"
  /** Arrivals after which the shedding estimator halves its counts (default 100000). */
  val SheddingHistoryRows = "spark.punctuated.shedding.historyRows"
  /** Join values the shedding estimator keeps per input (default 10000). */
  val SheddingHistoryValues = "spark.punctuated.shedding.historyValues"
  val SheddingPolicies: Seq[String] = Seq("prob", "life", "rand")

  /**
   * An aggregation or deduplication whose punctuations fix part of its key hashes its shuffle
   * by that part ([[punctuated.input.KeyPrefix]]; default true); false: by the whole key, as
   * Spark. Read when an operator's checkpoint starts: a checkpoint keeps its partitioning.
   */
  val PrefixPartitioning = "spark.punctuated.prefixPartitioning"

  def prefixPartitioning(conf: SQLConf): Boolean =
    choice(conf, PrefixPartitioning, "true", Seq("true", "false")) == "true"

  /** `spark.punctuated.emitPunctuations` alone (a rule of every optimizer pass reads only it and the next). */
  def emitPunctuations(conf: SQLConf): Boolean =
    choice(conf, EmitPunctuations, "false", Seq("true", "false")) == "true"

  /** `spark.punctuated.joinPlan` alone: a keyword (lower case) or a join tree as written. */
  def joinPlan(conf: SQLConf): String = {
    val text = conf.getConfString(JoinPlan, "auto").trim
    val keyword = text.toLowerCase(Locale.ROOT)
    if (PlanKeywords.contains(keyword)) keyword
    else if (text.contains("(") || text.contains("⋈")) text
    else throw new IllegalArgumentException(s"$JoinPlan must be one of ${PlanKeywords.mkString(", ")} " +
      s"or a join tree of the inputs' names such as ((a ⋈ b) ⋈ c), not '$text'")
  }

  def apply(conf: SQLConf): PunctuatedConf = PunctuatedConf(
    lateRows = choice(conf, LateRows, "drop", Seq("drop", "fail")),
    invalidPunctuations = choice(conf, InvalidPunctuations, "fail", Seq("fail", "drop")),
    emitPunctuations = emitPunctuations(conf),
    punctuationRetention = {
      val text = conf.getConfString(PunctuationRetention, "0").trim
      text.toIntOption.filter(_ >= 0).getOrElse(throw new IllegalArgumentException(
        s"$PunctuationRetention must be a number of micro-batches >= 0, not '$text'"))
    },
    safetyMode = choice(conf, SafetyMode, "strict", Seq("strict", "warn", "off")),
    batchIncludePunctuations = choice(conf, BatchIncludePunctuations, "false", Seq("true", "false")) == "true",
    maxRemembered = {
      val text = conf.getConfString(MaxRemembered, DefaultMaxRemembered.toString).trim
      text.toIntOption.filter(_ >= 0).getOrElse(throw new IllegalArgumentException(
        s"$MaxRemembered must be a number of entries >= 0 (0: remember none), not '$text'"))
    },
    joinPlan = joinPlan(conf),
    shedding = shedding(conf),
    migrationStrategy = choice(conf, MigrationStrategy, "jisc", Seq("jisc", "moving_state", "parallel_track")),
    replanEvery = {
      val text = conf.getConfString(ReplanEvery, DefaultReplanEvery.toString).trim
      text.toIntOption.filter(_ >= 0).getOrElse(throw new IllegalArgumentException(
        s"$ReplanEvery must be a number of micro-batches >= 0 (0: never re-plan), not '$text'"))
    },
    replanThreshold = {
      val text = conf.getConfString(ReplanThreshold, DefaultReplanThreshold.toString).trim
      text.toDoubleOption.filter(t => t >= 0 && t < 1).getOrElse(throw new IllegalArgumentException(
        s"$ReplanThreshold must be a fraction of the current plan's cost in [0, 1), e.g. 0.2, not '$text'"))
    },
    shareWeights = choice(conf, ShareWeights, "first_batch", Seq("first_batch", "equal")))

  /** The shedding settings; a bad value fails naming the setting and what it allows. */
  private def shedding(conf: SQLConf): SheddingConf = {
    def positive(key: String, default: Long, what: String): Long = {
      val text = conf.getConfString(key, default.toString).trim
      text.toLongOption.filter(_ > 0).getOrElse(throw new IllegalArgumentException(
        s"$key must be a number of $what > 0, not '$text'"))
    }
    val maxRows = Option(conf.getConfString(SheddingMaxStateRows, null)).map(_.trim).filter(_.nonEmpty)
      .map { text =>
        text.toLongOption.filter(_ > 0).getOrElse(throw new IllegalArgumentException(
          s"$SheddingMaxStateRows must be a number of stored rows per partition > 0 " +
            s"(unset: no shedding), not '$text'"))
      }
    val values = positive(SheddingHistoryValues, SheddingConf.DefaultHistoryValues, "join values")
    if (values > Int.MaxValue) throw new IllegalArgumentException(
      s"$SheddingHistoryValues must be a number of join values between 1 and ${Int.MaxValue}, not '$values'")
    SheddingConf(maxRows, choice(conf, SheddingPolicy, "prob", SheddingPolicies),
      positive(SheddingHistoryRows, SheddingConf.DefaultHistoryRows, "rows"), values.toInt)
  }

  private def choice(conf: SQLConf, key: String, default: String, allowed: Seq[String]): String = {
    val value = conf.getConfString(key, default).trim.toLowerCase(Locale.ROOT)
    if (!allowed.contains(value)) {
      throw new IllegalArgumentException(
        s"$key must be one of ${allowed.mkString(", ")}, not '$value'")
    }
    value
  }
}

/**
 * Semantic load shedding in the binary punctuated join (Das, Gehrke and Riedewald 2005, §4.2):
 * when a partition of a join would hold more than `maxStateRows` stored data rows, the rows of
 * lowest priority by `policy` are not kept ([[punctuated.join.shedding.JoinShedder]]).
 *
 * Example: `SheddingConf(Some(1000), "prob", 100000, 10000)` keeps at most 1000 rows per
 * partition, the rows whose join value the other input sends most often.
 *
 * @param maxStateRows  stored data rows per partition of one join, both inputs together (None: off)
 * @param policy        `prob`, `life` or `rand`
 * @param historyRows   arrivals on an input after which its estimator halves every count
 * @param historyValues join values an input's estimator keeps (the largest counts)
 */
final case class SheddingConf(maxStateRows: Option[Long], policy: String, historyRows: Long,
    historyValues: Int) {
  def enabled: Boolean = maxStateRows.isDefined
}

object SheddingConf {
  val DefaultHistoryRows = 100000L
  val DefaultHistoryValues = 10000
  val Off: SheddingConf = SheddingConf(None, "prob", DefaultHistoryRows, DefaultHistoryValues)
}
