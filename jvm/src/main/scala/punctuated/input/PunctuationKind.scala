package punctuated.input

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, ExprId}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, CodeGenerator, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.types.{DataType, IntegerType}

import punctuated.errors.PunctuatedErrors
import punctuated.conf.PunctuatedConf

/**
 * One stream whose punctuation rows reach a punctuated aggregation, in positions of the
 * [[PunctuationKind]]'s children.
 *
 * @param name        the stream's name, for messages
 * @param marker      child index of its marker (a BOOLEAN expression)
 * @param columns     child indexes of its other visible columns
 * @param columnNames their names, for messages
 * @param decoder     its rows decoded (over child indexes): data, the scheme a punctuation
 *                    row instantiates, or invalid
 * @param kinds       by scheme index: its kind (> 0: it closes groups;
 *                    [[PunctuationKind.Ignored]]: valid, closes none)
 * @param schemeNames the stream's schemes as declared, for messages
 */
final case class SourceLayout(
    name: String,
    marker: Int,
    columns: Array[Int],
    columnNames: Seq[String],
    decoder: RowDecoder,
    kinds: Array[Int],
    schemeNames: Seq[String])

object SourceLayout {
  /**
   * The kind view of one stream: its marker, columns and schemes as positions of the
   * [[PunctuationKind]]'s children (`child` gives an expression's position, adding it when
   * new; called for the marker, then the columns, then the schemes' columns), and the kind
   * of each of its schemes.
   *
   * {{{
   *   // stream (p, auction, bid); schemes "auction", "bid"; kinds [1, Ignored]
   *   SourceLayout.of(bids, Seq(1, PunctuationKind.Ignored), child)
   *   // marker 0, columns [1, 2], decoder schemes {1}, {2}
   * }}}
   */
  def of(source: FoundSource, kinds: Seq[Int], child: Expression => Int): SourceLayout = {
    val marker = child(source.marker)
    val cols = source.columns.map(c => child(c)).toArray
    val decoder = RowDecoder(Array(marker), cols, source.schemes.map(_._1.map(x => child(x._1)).toSet))
    SourceLayout(source.name, marker, cols, source.columns.map(_.name), decoder, kinds.toArray,
      source.schemes.map(_._2))
  }
}

/**
 * What a punctuated aggregation knows at run time, carried from the analyzer's rewrite
 * ([[punctuated.spark.rules.PunctuateStreamingAggregates]]) to the physical operator.
 *
 * @param closing     by kind - 1: the scheme over the grouping-key positions whose
 *                    punctuations of that kind close groups (Tucker et al. 2003, Table 2,
 *                    group-by: a punctuation matching every future row of a group)
 * @param closingNames the same, as text for messages and plans
 * @param branches    by kind - 1: the UNION input its punctuations come through (all 0
 *                    without a union); with several, a key closes only when every branch's
 *                    punctuations cover it (setCombine, Tucker et al. 2003, Table 3)
 * @param implied     kinds every data group implies at once (a `punctuated.unique` key of a
 *                    stream read directly, within the grouping columns)
 * @param counts      result id of the hidden `punctuation_counts(kind)`: per group its data
 *                    rows, closing kinds, invalid and received punctuations
 * @param streams     names of the streams read, for messages
 * @param watermarks  kinds an event-time watermark closes at each micro-batch, with no
 *                    punctuation rows (see `punctuated.aggregate.WatermarkClosing`)
 */
final case class AggregateLayout(
    closing: Seq[KeyScheme],
    closingNames: Seq[String],
    branches: Seq[Int],
    implied: Seq[Int],
    counts: ExprId,
    streams: Seq[String],
    watermarks: Seq[WatermarkKind] = Nil) {

  /** Kinds of each union branch (one group without a union). */
  def kindsByBranch: Seq[Seq[Int]] =
    branches.zipWithIndex.groupBy(_._1).toSeq.sortBy(_._1).map(_._2.map(_._2 + 1))

  def isUnion: Boolean = branches.distinct.size > 1

  /**
   * Kinds whose punctuations do not fix every grouping column: they may close groups in every
   * partition (unless the shuffle hashes by the columns they fix: `punctuated.input.KeyPrefix`).
   */
  def partitionWide(groupingColumns: Int): Set[Int] =
    closing.zipWithIndex.collect { case (s, i) if !s.isWholeKey(groupingColumns) => i + 1 }.toSet
}

/**
 * A closing kind of a punctuated aggregation or deduplication that Spark's event-time
 * watermark instantiates at each micro-batch: the watermark `w` is the range punctuation
 * `time<=w` (Tucker et al. 2003, §3), which fills the key at `position` with `bound`, an
 * expression of `time` (`time` itself when it is the key column; the last window or day
 * complete by `time` for a time expression: [[MonotoneExpressions]]).
 *
 * {{{
 *   GROUP BY window(ts, '10 seconds'), k over readings.withWatermark("ts", ...)
 *   WatermarkKind(kind 2, ts, position 0, window bound of ts): watermark 0:00:25 closes every
 *   window ending at or before 0:00:20, whatever its k
 * }}}
 */
final case class WatermarkKind(kind: Int, time: Attribute, position: Int, bound: Expression)

/**
 * The kind of a row reaching a punctuated aggregation: 0 for a data row; for a punctuation
 * row (its stream's marker true), the kind of the scheme it instantiates (> 0 when that
 * scheme closes groups, [[PunctuationKind.Ignored]] when it closes none), or
 * [[PunctuationKind.Invalid]] when it instantiates no declared scheme (or the query fails,
 * by `spark.punctuated.invalidPunctuations`).
 *
 * {{{
 *   bids (auction, bidder, price, is_punct), schemes "auction"; GROUP BY auction
 *     (7, 3, 5.0, false)        -> 0   data
 *     (7, NULL, NULL, true)     -> 1   "no more bids for auction 7": closes group 7
 *     (NULL, 3, NULL, true)     -> -1  instantiates no scheme: invalid
 * }}}
 *
 * @param children  the referenced columns and marker expressions
 * @param sources   the streams whose punctuations reach here
 * @param layout    what the physical operator needs (not used here)
 * @param failOnInvalid fail the query on an invalid punctuation (else it is counted)
 */
case class PunctuationKind(
    children: Seq[Expression],
    sources: Seq[SourceLayout],
    layout: AggregateLayout,
    failOnInvalid: Boolean)
  extends Expression {

  import PunctuationKind._

  override def dataType: DataType = IntegerType
  override def nullable: Boolean = false
  override def foldable: Boolean = false
  override def prettyName: String = "punctuation_kind"
  override def toString: String =
    s"$prettyName(${sources.map(_.name).mkString(", ")}: ${layout.closingNames.mkString("; ")})"

  override def eval(input: InternalRow): Any = kindOf(c => children(c).eval(input))

  /** The kind of a row whose children's values are `value(c)` (c: a child's index). */
  private def kindOf(value: Int => Any): Int = {
    var i = 0
    while (i < sources.length) {
      val s = sources(i)
      if (s.decoder.isPunctuation(c => value(c) == true)) {
        return s.decoder.scheme(c => value(c) == null) match {
          case RowDecoder.Invalid => invalid(s, value)
          case scheme => s.kinds(scheme)
        }
      }
      i += 1
    }
    Data
  }

  /** The kind of a punctuation row from its children's values (generated code's slow path). */
  def kindOfValues(values: Array[Any]): Int = kindOf(values(_))

  private def invalid(s: SourceLayout, value: Int => Any): Int = {
    if (failOnInvalid) {
      val row = s.columns.zip(s.columnNames).map { case (c, n) =>
        s"$n=${Option(value(c)).getOrElse("NULL")}"
      }.mkString("(", ", ", ")")
      throw PunctuatedErrors.invalidPunctuation(row, s.name, s.schemeNames)
    }
    Invalid
  }

  /**
   * Generated code (so that the scan, this projection and the partial aggregation stay in one
   * whole-stage-generated loop): a row none of whose markers is true is data — kind 0 with no
   * call out; a punctuation row (rare) passes its children's values to [[kindOfValues]].
   */
  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val self = ctx.addReferenceObj("punctuationKind", this)
    val evals = children.map(_.genCode(ctx))
    val markers = sources.map(_.marker).distinct
    val isPunctuation = ctx.freshName("isPunctuation")
    val checks = markers.map { m =>
      val e = evals(m)
      s"$isPunctuation = $isPunctuation || (!${e.isNull} && ${e.value});"
    }.mkString("\n")
    val values = ctx.freshName("values")
    val boxed = children.indices.map { c =>
      val e = evals(c)
      val v = children(c).dataType match {
        case dt if CodeGenerator.isPrimitiveType(dt) => s"${CodeGenerator.boxedType(dt)}.valueOf(${e.value})"
        case _ => e.value.toString
      }
      s"$values[$c] = ${e.isNull} ? null : (Object) $v;"
    }.mkString("\n")
    ev.copy(code = code"""
      |${evals.map(_.code).mkString("\n")}
      |boolean $isPunctuation = false;
      |$checks
      |int ${ev.value} = 0;
      |if ($isPunctuation) {
      |  Object[] $values = new Object[${children.length}];
      |  $boxed
      |  ${ev.value} = $self.kindOfValues($values);
      |}
      |""".stripMargin, isNull = FalseLiteral)
  }

  override protected def withNewChildrenInternal(newChildren: IndexedSeq[Expression]): Expression =
    copy(children = newChildren)
}

object PunctuationKind {
  val Data = 0
  val Invalid = -1
  val Ignored = -2
  /** Name of the column holding a row's kind, below a punctuated aggregation. */
  val ColumnName = "__punctuation_kind"
  /** At most this many closing kinds (they are bits of a BIGINT). */
  val MaxKinds = 62
}
