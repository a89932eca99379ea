package punctuated.checkpoint

import org.apache.spark.sql.catalyst.expressions.Attribute

import punctuated.declaration.Declaration
import punctuated.input.{AggregateLayout, InputSpec, KeyScheme, PunctuationKind, PunctuationSources}
import punctuated.join.{PunctuatedSymmetricHashJoinExec, RangeIndex}
import punctuated.input.InputSpec
import punctuated.join.{JoinInputLayout, PunctuatedSymmetricHashJoinExec, RangeIndex}

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

  /** The layout of every operator when checkpoints had no record yet. */
  val BeforeRecords = 1
}

/** The [[OperatorRecord]] of each punctuated operator, built on the driver from its plan. */
object OperatorRecords {

  /** `0`, `0,1<=`: the key positions a scheme fixes, and its range. */
  def keyText(k: KeyScheme): String = (k.constants.map(_.toString) ++ k.range.map(r => s"$r<=")).mkString(",")

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
    def purging(spec: InputSpec): Seq[KeyedScheme] = {
      val named = spec.schemes.map(_._2).zip(spec.schemeNames).collect { case (Some(k), text) => k -> text }
      spec.keySchemes.map(k => KeyedScheme(named.collectFirst { case (`k`, t) => t }.getOrElse(keyText(k)), keyText(k)))
    }
    def input(role: String, d: Option[Declaration], spec: InputSpec, other: InputSpec,
        stored: Seq[Attribute]): InputRecord = {
      val otherPurging = purging(other)
      val indexed = RangeIndex.indexedSchemes(other.keySchemes, keyLength).map { k =>
        otherPurging.find(_.key == keyText(k)).getOrElse(KeyedScheme(keyText(k), keyText(k)))
      }
      InputRecord(
        role = role,
        table = d.map(_.table).getOrElse("(undeclared)"),
        marker = d.flatMap(x => if (x.markers.isEmpty) None else Some(x.markers.mkString(", "))),
        unique = d.flatMap(_.unique).map(_.toString),
        schemes = d.toSeq.flatMap(_.schemes.map(_.toString)),
        purging = purging(spec),
        indexed = indexed,
        columns = stored.map(a => s"${a.name} ${a.dataType.sql}"))
    }
    OperatorRecord(
      operator = exec.shortName,
      layoutVersion = StateLayouts.Join,
      stores = exec.stateStoreNames,
      inputs = exec.inputs.map { in =>
        input(JoinInputLayout.of(in.number).name, Seq(left, right)(in.number), in.spec,
          exec.inputs(exec.other(in.number)).spec, in.plan.output)
      })
  }

  /**
   * A punctuated aggregation or deduplication: per stream read its declaration, and the
   * closing schemes in kind order (with the grouping-key positions, the UNION branch, and
   * whether a unique key implies them).
   */
  def keyed(operator: String, layoutVersion: Int, stores: Seq[String], kind: PunctuationKind): OperatorRecord = {
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
    OperatorRecord(operator, layoutVersion, stores, inputs, kinds)
  }
}
