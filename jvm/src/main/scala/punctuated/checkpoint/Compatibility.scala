package punctuated.checkpoint

import punctuated.input.BandBucketColumns

/**
 * Can an operator's checkpointed state, written under the declarations of `old`, be
 * followed under those of `now`? Each rule below comes from what the state holds
 * (docs/joins.md and docs/aggregation.md, "Restarts with a changed declaration"):
 *
 *  - the marker column decides which rows are punctuations: rows the source already holds
 *    (and those its writers keep sending) were written under the old one, so a changed,
 *    added or removed marker would turn punctuations into data or data into punctuations;
 *  - a removed or changed unique key: the held punctuations it implied would drop the
 *    input's later rows with a repeated key as late (an added one is an added scheme);
 *  - a join scheme that purged and no longer does: its held punctuations (kept by key
 *    positions) are neither consulted nor released, and rows it closed are stored again;
 *  - a join scheme that needs a range index the state lacks (constant → range, or a new
 *    range / key-prefix scheme): rows stored before are in no index, so its punctuations
 *    never purge them (Tucker et al. 2003, §5.4: the purge must find every matching row);
 *  - other columns (or another order) in the rows a join stores for an input: which columns
 *    reach the join follows the declarations (Spark's own state schema check, when on,
 *    refuses most of these first, with its own message); a band-only join's time-bucket
 *    column names the buckets' width, so a changed band is refused here too;
 *  - a state store the operator did not open before (a store cannot first appear at a
 *    later version);
 *  - an aggregation's or deduplication's closing schemes are numbered (kinds) in its held
 *    punctuations and stored groups: each kind must keep its scheme, new ones come after;
 *  - another state layout version of the operator;
 *  - a multi-way join's other attribute classes (which inputs join on
 *    which columns: rows are stored and looked up by class), or other hypercube shares
 *    (rows are placed in cells by them); the plan log keeps the recorded shares in force
 *    ([[PlanLog]]), so these arise only when the query's joins changed. Another plan (kind or
 *    tree) is continued: the operator migrates to it ([[punctuated.join.multi.MultiJoinMigration]]).
 *
 * Everything else is compatible: an added scheme that needs no new index or store, a
 * changed scheme on columns the operator does not key by, a renamed table.
 */
object Compatibility {

  /** Why `now` cannot resume state written under `old` (empty: it can). */
  def problems(old: OperatorRecord, now: OperatorRecord): Seq[String] = {
    if (old.operator != now.operator) {
      // a tree of binary joins against one multi-way join (spark.punctuated.join.plan)
      val key = punctuated.conf.PunctuatedConf.JoinPlan
      val plan = (old.operator, now.operator) match {
        case ("punctuatedSymmetricHashJoin", "punctuatedMultiJoin") => s" ($key=written continues it)"
        case ("punctuatedMultiJoin", "punctuatedSymmetricHashJoin") => s" ($key=mjoin continues it)"
        case _ => ""
      }
      return Seq(s"the state was written by operator ${old.operator}, the query now plans ${now.operator}$plan")
    }
    if (old.layoutVersion != now.layoutVersion) {
      return Seq(s"the state was written with ${old.operator} state layout version ${old.layoutVersion}; " +
        s"this version of Punctuated reads layout version ${now.layoutVersion}")
    }
    if (old.partitionedBy != now.partitionedBy) {
      def cols(p: Option[Seq[Int]]) = p.map(k => s"key positions ${k.mkString(", ")}").getOrElse("the whole key")
      return Seq(s"the state is hashed to partitions by ${cols(old.partitionedBy)}, the query now hashes by " +
        s"${cols(now.partitionedBy)}: each key's state is in the partition its hash named when the " +
        "checkpoint started")
    }
    if (old.inputs.map(_.role) != now.inputs.map(_.role)) {
      return Seq(s"the operator's punctuated inputs were ${roles(old)}, now ${roles(now)}")
    }
    val perInput = old.inputs.zip(now.inputs).flatMap { case (o, n) => inputProblems(o, n) }
    val stores = now.stores.filterNot(old.stores.contains).map { s =>
      s"the operator now needs state store '$s', which the checkpoint does not have"
    }
    val kinds = old.kinds.zipWithIndex.flatMap { case (k, i) =>
      now.kinds.lift(i) match {
        case Some(n) if sameScheme(k, n) => None
        case Some(n) =>
          val (was, is) = if (n.text == k.text) (s"'${k.text}' (${k.key})", s"'${n.text}' (${n.key})")
            else (s"'${k.text}'", s"'${n.text}'")
          Some(s"closing scheme ${i + 1} was $was, now $is: held punctuations and stored groups name closing " +
            "schemes by number (declare new schemes after the old ones)")
        case None => Some(s"closing scheme ${i + 1} '${k.text}' is gone: its held punctuations " +
          "would never be released")
      }
    }
    perInput ++ stores ++ kinds ++ planProblems(old, now)
  }

  /** A multi-way join's plan: kind, attribute classes, shares, each input's key classes. */
  private def planProblems(old: OperatorRecord, now: OperatorRecord): Seq[String] = (old.plan, now.plan) match {
    case (Some(o), Some(n)) =>
      // another plan kind or tree is continued by migrating (punctuated.join.multi.MultiJoinMigration)
      val classes = if (o.classes == n.classes) None else Some(s"the attribute classes were " +
        s"${o.classColumns.map(_.mkString("{", ", ", "}")).mkString(" ")}, now " +
        s"${n.classColumns.map(_.mkString("{", ", ", "}")).mkString(" ")}: rows are stored and looked up by class")
      val shares = if (o.shares == n.shares || classes.isDefined) None else Some(s"the state's rows are placed in " +
        s"hypercube cells by shares ${o.shares.mkString(" x ")}, the query now places them by ${n.shares.mkString(" x ")}")
      val keys = old.inputs.zip(now.inputs).collect { case (oi, ni) if oi.classes != ni.classes =>
        s"${ni.table} (${ni.role}): its rows are stored under classes ${oi.classes.mkString(", ")}, now " +
          s"${ni.classes.mkString(", ")}"
      }
      classes.toSeq ++ shares ++ (if (classes.isDefined) Nil else keys)
    case _ => Nil
  }

  private def roles(r: OperatorRecord) = r.inputs.map(i => s"${i.table} (${i.role})").mkString(", ")

  private def inputProblems(o: InputRecord, n: InputRecord): Seq[String] = {
    val name = s"${n.table} (${n.role})"
    val marker =
      if (o.marker == n.marker) None
      else Some(s"$name: marker column ${show(o.marker)} is now ${show(n.marker)}: rows the source " +
        "holds were written under the old one (punctuation rows would become data, or data punctuations)")
    val unique = (o.unique, n.unique) match {
      case (Some(u), other) if !other.contains(u) =>
        Some(s"$name: unique key '$u' is now ${show(other)}: the punctuations it implied are held and would " +
          "drop later rows with a repeated key as late")
      case _ => None
    }
    val removed = o.purging.filterNot(s => n.purging.exists(sameScheme(s, _))).map { s =>
      s"$name: scheme '${s.text}' no longer purges: its held punctuations would be neither " +
        "consulted nor released"
    }
    val indexed = n.indexed.filterNot(s => o.indexed.exists(sameScheme(_, s))).map { s =>
      o.indexed.find(i => flipped(i.key) == s.key) match {
        case Some(reversed) =>
          s"$name: the other input's scheme '${s.text}' needs a range index of the join keys stored for " +
            s"this input in the order of its range; the checkpoint's index was written for '${reversed.text}', " +
            "in the reversed order: rows stored before would never be purged"
        case None =>
          s"$name: the other input's scheme '${s.text}' needs a range index of the join keys stored for " +
            "this input, which the checkpoint lacks: rows stored before would never be purged"
      }
    }
    val buckets = (o.columns.flatMap(BandBucketColumns.widthOf), n.columns.flatMap(BandBucketColumns.widthOf))
    val columns =
      if (o.columns == n.columns) None
      else if (buckets._1.nonEmpty && buckets._2.nonEmpty && buckets._1 != buckets._2)
        Some(s"$name: the band-only join's rows are stored in time buckets ${buckets._1.mkString} wide " +
          s"(the band's width); the query's band now makes them ${buckets._2.mkString} wide: rows stored " +
          "before sit in buckets the join would no longer look in (a band as wide as before continues)")
      else Some(s"$name: the rows stored for it have columns (${o.columns.mkString(", ")}); the query now " +
        s"stores (${n.columns.mkString(", ")}): stored rows would be misread")
    marker.toSeq ++ unique ++ removed ++ indexed ++ columns
  }

  /**
   * Is `now` the scheme `old` recorded: the same key, or the same declared scheme whose key
   * was recorded before keys named every range (`0<=` then, `0<=,1<=` now: the same
   * `day<=, level<=`).
   *
   * {{{
   *   sameScheme(KeyedScheme("day<=, level<=", "0<="), KeyedScheme("day<=, level<=", "0<=,1<="))  // true
   *   sameScheme(KeyedScheme("day<=", "0<="), KeyedScheme("day<=, level<=", "0<=,1<="))           // false
   * }}}
   */
  private[checkpoint] def sameScheme(old: KeyedScheme, now: KeyedScheme): Boolean =
    old.key == now.key || (old.text == now.text && firstRangeOnly(now.key) == old.key)

  /** A key with its ranges after the first dropped (`0,1<=,2<= branch 1` → `0,1<= branch 1`). */
  private def firstRangeOnly(key: String): String = {
    val (positions, rest) = key.span(_ != ' ')
    val parts = positions.split(",")
    val first = parts.indexWhere(p => p.endsWith("<=") || p.endsWith(">="))
    (if (first < 0) positions else parts.take(first + 1).mkString(",")) + rest
  }

  /** A scheme key (`0,1<=`) with its range's direction reversed (`0,1>=`); unchanged without a range. */
  private def flipped(key: String): String =
    if (key.endsWith("<=")) key.stripSuffix("<=") + ">="
    else if (key.endsWith(">=")) key.stripSuffix(">=") + "<="
    else key

  private def show(s: Option[String]) = s.map(v => s"'$v'").getOrElse("(none)")
}
