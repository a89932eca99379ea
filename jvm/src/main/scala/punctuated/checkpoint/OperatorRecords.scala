package punctuated.checkpoint

import org.apache.spark.sql.catalyst.expressions.Attribute

import punctuated.declaration.Declaration
import punctuated.input.{AggregateLayout, InputSpec, KeyScheme, PunctuationKind, PunctuationSources}
import punctuated.join.{PunctuatedSymmetricHashJoinExec, RangeIndex}
import punctuated.join.JoinInputLayout
import punctuated.join.multi.MultiJoinInputSpec

/**
 * Versions of the punctuated operators' state layouts: bump one when the operator changes
 * what it stores (store names, namespaces, key or value rows), so that a checkpoint written
 * by another layout is refused by [[Compatibility]] instead of misread.
 */
object StateLayouts {
  /**
   * 2: a join key's rows stored under dense slots (key..., 0 .. n-1), read by point look-ups
   * ([[punctuated.join.JoinInputState]]); 1: under an arrival number, read by prefix scans.
   */
  val Join = 2
  val Aggregate = 1
  val Deduplicate = 1
  /**
   * 1: each input's rows in its own store `input<i>-mjoin-rows`, once under each attribute
   * class it has a column in (key: class, class value, slot), held punctuations and closed
   * values in `punctuated-meta` ([[punctuated.join.multi.PunctuatedMultiJoinExec]]).
   */
  val MultiJoin = 1

  /** The layout of every operator when checkpoints had no record yet. */
  val BeforeRecords = 1
}

/** The [[OperatorRecord]] of each punctuated operator, built on the driver from its plan. */
object OperatorRecords {

  /** `0`, `0,1<=`, `1>=`: the key positions a scheme fixes, and its range. */
  def keyText(k: KeyScheme): String = (k.constants.map(_.toString) ++ Option(k.rangeText).filter(_.nonEmpty)).mkString(",")

  /**
   * A punctuated join: per input its declaration, the schemes that purge (by join-key
   * position) and the other input's schemes its stored keys are indexed for.
   *
   * @param left  the left input's declaration (None: undeclared)
   * @param right the right input's
   */
  def join(exec: PunctuatedSymmetricHashJoinExec, left: Option[Declaration],
      right: Option[Declaration]): OperatorRecord = {
    val keyLength = exec.leftKeys.length
    def input(role: String, d: Option[Declaration], spec: InputSpec, other: InputSpec,
        stored: Seq[Attribute]): InputRecord = {
      val otherPurging = purging(other)
      val indexed = RangeIndex.indexedSchemes(other.keySchemes, keyLength).map { k =>
        otherPurging.find(_.key == keyText(k)).getOrElse(KeyedScheme(keyText(k), keyText(k)))
      }
      declared(role, d, spec, stored).copy(indexed = indexed)
    }
    OperatorRecord(
      operator = exec.shortName,
      layoutVersion = StateLayouts.Join,
      stores = exec.stateStoreNames,
      inputs = exec.inputs.map { in =>
        input(JoinInputLayout.of(in.number).name, Seq(left, right)(in.number), in.spec,
          exec.inputs(exec.other(in.number)).spec, in.output)
      })
  }

  /**
   * A multi-way join input's range index: per scheme over its key, the other input's range
   * scheme it serves, named as declared (`ts<= (watermark) of input 1`).
   */
  private def indexedFor(inputs: Seq[MultiJoinInputSpec], number: Int): Seq[KeyedScheme] = {
    val byNumber = inputs.map(in => in.number -> in).toMap
    MultiJoinInputSpec.rangeLookups(inputs).toSeq.collect { case ((j, id, l), k) if l == number =>
      val scheme = byNumber(j).spec.keySchemes.find(_.id == id)
      val text = scheme.flatMap(s => purging(byNumber(j).spec).find(_.key == keyText(s))).map(_.text)
        .getOrElse(keyText(k))
      KeyedScheme(s"$text of input $j", keyText(k))
    }.sortBy(_.key).distinctBy(_.key)
  }

  /** The schemes of `spec` that purge state, named as declared, keyed by key position. */
  private def purging(spec: InputSpec): Seq[KeyedScheme] = {
    val named = spec.schemes.map(_._2).zip(spec.schemeNames).collect { case (Some(k), text) => k -> text } ++
      spec.watermark
    spec.keySchemes.map(k => KeyedScheme(named.collectFirst { case (`k`, t) => t }.getOrElse(keyText(k)), keyText(k)))
  }

  /** A join's input: its declaration, purging schemes and stored columns. */
  private def declared(role: String, d: Option[Declaration], spec: InputSpec, stored: Seq[Attribute]): InputRecord =
    InputRecord(
      role = role,
      table = d.map(_.table).getOrElse("(undeclared)"),
      marker = d.flatMap(x => if (x.markers.isEmpty) None else Some(x.markers.mkString(", "))),
      unique = d.flatMap(_.unique).map(_.toString),
      schemes = d.toSeq.flatMap(_.schemes.map(_.toString)),
      purging = purging(spec),
      columns = stored.map(a => s"${a.name} ${a.dataType.sql}"))

  /**
   * A multi-way join: per input (role `input <i>`) its declaration, its purging schemes keyed
   * by positions in its key (its class values, in increasing class number), the schemes its
   * stored keys are indexed by for the other inputs' range schemes
   * ([[MultiJoinInputSpec.indexedFor]]), the class of each key column and the columns it
   * stores; and the plan in force ([[PlanLog]]: kind, classes, hypercube shares).
   *
   * {{{
   *   a(k) ⋈ b(k, v) ⋈ c(v), b declaring "k; v":
   *   input 1 (b): classes [0, 1], purging [k (key "0"), v (key "1")]
   * }}}
   *
   * @param operator     the operator's short name (`punctuatedMultiJoin`)
   * @param stores       the stores it opens
   * @param inputs       its inputs as planned
   * @param declarations each input's declaration (None: undeclared), in input order
   * @param columns      each input's stored columns (its child's output), in input order
   */
  def multiJoin(operator: String, stores: Seq[String], inputs: Seq[MultiJoinInputSpec],
      declarations: Seq[Option[Declaration]], columns: Seq[Seq[Attribute]], plan: PlanRecord): OperatorRecord =
    OperatorRecord(
      operator = operator,
      layoutVersion = StateLayouts.MultiJoin,
      stores = stores,
      inputs = inputs.sortBy(_.number).map { in =>
        declared(s"input ${in.number}", declarations(in.number), in.spec, columns(in.number))
          .copy(table = declarations(in.number).map(_.table).getOrElse(plan.inputs.lift(in.number)
            .map(n => s"$n (undeclared)").getOrElse("(undeclared)")), classes = in.classes,
            // its range index: the other inputs' range schemes on its classes (a checkpoint without
            // one for a new range scheme would never find the rows stored before)
            indexed = indexedFor(inputs, in.number))
      },
      plan = Some(plan))

  /**
   * A punctuated aggregation or deduplication: per stream read its declaration, and the
   * closing schemes in kind order (with the grouping-key positions, the UNION branch, and
   * whether a unique key implies them); an aggregation hashed by part of its key, that part.
   */
  def keyed(operator: String, layoutVersion: Int, stores: Seq[String], kind: PunctuationKind,
      partitionedBy: Option[Seq[Int]] = None): OperatorRecord = {
    val layout: AggregateLayout = kind.layout
    val inputs = kind.sources.zipWithIndex.map { case (s, i) =>
      val markers = kind.children(s.marker).references.toSeq.map(_.name)
        .filterNot(_ == PunctuationSources.BranchColumn)
      InputRecord(
        role = s"input ${i + 1}",
        table = s.name,
        marker = if (markers.isEmpty) None else Some(markers.mkString(", ")),
        unique = None,
        schemes = s.schemeNames,
        withUnique = true)
    }
    val kinds = layout.closing.zip(layout.closingNames).zip(layout.branches).zipWithIndex.map {
      case (((k, text), branch), i) =>
        val implied = if (layout.implied.contains(i + 1)) " implied" else ""
        val union = if (layout.isUnion) s" branch $branch" else ""
        KeyedScheme(text, keyText(k) + union + implied)
    }
    OperatorRecord(operator, layoutVersion, stores, inputs, kinds, partitionedBy = partitionedBy)
  }
}
