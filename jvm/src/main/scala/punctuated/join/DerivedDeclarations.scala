package punctuated.join

import org.apache.spark.sql.catalyst.expressions.{Attribute, ExprId, Expression}
import org.apache.spark.sql.catalyst.planning.ExtractEquiJoinKeys
import org.apache.spark.sql.catalyst.plans.logical.{Join, LogicalPlan}

import punctuated.declaration.{Declaration, Derived, Scheme, SchemeAttribute}
import punctuated.input.{PunctuatedInput, PassThrough, PunctuationColumns}

/**
 * The declaration of a join input that is itself a punctuated join's output (Li et al. 2006,
 * §4, binary join trees): see [[punctuated.declaration.Derived]].
 */
object DerivedDeclarations {

  /** The derived declaration of `input` (reached through pass-through nodes), if it has schemes. */
  def of(input: LogicalPlan, visible: Set[ExprId]): Option[PunctuatedInput] =
    lowerJoin(input).flatMap(derived(_, visible))

  /** The punctuated join whose output this input is, through pass-through nodes only. */
  private def lowerJoin(node: LogicalPlan): Option[Join] = PassThrough.step(node) match {
    case PassThrough.PunctuatedJoin(j, _) => Some(j)
    case PassThrough.Projection(p) => lowerJoin(p.child)
    case PassThrough.Transparent(child) => lowerJoin(child)
    case _ => None
  }

  /**
   * The declaration a punctuated join's output carries for the join above it (Li et al. 2006,
   * §4: an intermediate input carries the schemes its operator propagates). The join emits
   * an output punctuation for a join-key value once both its inputs have closed it (Tucker
   * et al. 2003, Table 3), one per input: that input's key columns set, and the marker of the
   * stream those columns come from true. So the output carries each key scheme both inputs
   * have, as a scheme on each input's key columns; both inputs' states are then purgeable by
   * it (Theorem 1), as Lemma 1 requires of a propagated scheme.
   */
  private def derived(j: Join, visible: Set[ExprId]): Option[PunctuatedInput] = j match {
    case ExtractEquiJoinKeys(_, lk, rk, _, _, _, _, _) =>
      val mark = PunctuationColumns.find(j.condition).get
      val sides = Seq((mark.left, lk), (mark.right, rk)).collect { case (Some(d), keys) => (d, keys) }
      def usable(d: PunctuatedInput, keys: Seq[Expression]) =
        KeySchemes.usable(d, keys).filter { case (s, _) => d.hasPunctuations(s) }.map(_._2)
      val byBoth = if (sides.size < 2) Nil
        else usable(sides(0)._1, sides(0)._2).filter(usable(sides(1)._1, sides(1)._2).contains).distinct
      val columns = scala.collection.mutable.LinkedHashMap.empty[String, ExprId]
      val owners = scala.collection.mutable.LinkedHashMap.empty[String, String]
      // the two inputs' names (`bid`, or `nexmark[1]`/`nexmark[2]` when both read one table)
      val names = sides.map(s => shortName(s._1))
      val prefix: Map[PunctuatedInput, String] = sides.map(_._1).zip(
        if (names.distinct.size < names.size) names.zipWithIndex.map { case (n, i) => s"$n[${i + 1}]" } else names).toMap
      /**
       * The name in the derived declaration of `d`'s column `n`, and its stream's marker
       * (`visibleOnly`: only if the marker is visible; else a marker no row has for a stream
       * whose marker is not visible, so that its columns are never read).
       */
      def owned(d: PunctuatedInput, n: String, visibleOnly: Boolean = true): Option[(String, String)] =
        d.declaration.derived match {
          case None if !visibleOnly || d.markerId.exists(visible.contains) =>
            Some((s"${prefix(d)}.$n", s"${prefix(d)}.${d.declaration.marker.getOrElse("(no marker)")}"))
          case None => None
          case Some(x) => x.owners.collectFirst { case (`n`, m) => (n, m) }
        }
      /** A column's name in the derived declaration, and the marker of the stream it comes from. */
      def column(d: PunctuatedInput, e: Expression): Option[(String, String)] = e match {
        case a: Attribute if visible.contains(a.exprId) =>
          val named = d.columns.collectFirst { case (n, id) if id == a.exprId => n }.flatMap(owned(d, _))
          named.foreach { case (n, m) => columns(n) = a.exprId; owners(n) = m }
          named
        case _ => None
      }
      // every other visible column belongs to its stream too: a punctuation row of one stream
      // leaves the other streams' columns unread (NOT NULL ones cannot carry its NULLs). A
      // declared stream's columns are those of its side of the join (the mark names only the
      // ones the join reads: `PunctuateStreamingJoins.read`); a derived input's, its declaration's.
      val inputColumns = Seq((mark.left, j.left.output), (mark.right, j.right.output)).collect {
        case (Some(d), output) if d.declaration.derived.isEmpty =>
          d -> (d.columns.toSeq ++ output.filterNot(a => d.columns.values.exists(_ == a.exprId)).map(a => a.name -> a.exprId))
        case (Some(d), _) => d -> d.columns.toSeq
      }.toMap
      for ((d, _) <- sides; (n, id) <- inputColumns(d) if visible.contains(id) && !d.markerIds.contains(id);
           (full, m) <- owned(d, n, visibleOnly = false)) {
        columns.getOrElseUpdate(full, id)
        owners.getOrElseUpdate(full, m)
      }
      val schemes = for {
        (d, keys) <- sides
        k <- byBoth
        attrs = (k.constants.toSeq.map(p => (p, false, false)) ++ k.ranges.map { case (p, ge) => (p, true, ge) }).map {
          case (pos, range, ge) => column(d, keys(pos)).map { case (n, m) => (SchemeAttribute(n, range, ge), m) } }
        if attrs.forall(_.isDefined) && attrs.flatten.map(_._2).distinct.size == 1
      } yield Scheme(attrs.flatten.map(_._1))
      val all = schemes ++ bandSchemes(j, IndexedSeq(mark.left, mark.right), column)
      if (all.isEmpty) None
      else {
        val markers = sides.flatMap { case (d, _) => d.markerIds.filter(visible.contains).map { id =>
          val n = d.columns.collectFirst { case (c, `id`) => c }.get
          val full = if (d.declaration.derived.isDefined) n else s"${prefix(d)}.$n"
          columns(full) = id; full } }
        val table = s"(${sides.map(s => prefix(s._1)).mkString(" ⋈ ")})"
        Some(PunctuatedInput(Declaration(table, all.distinct, None, None,
          Some(Derived(markers, owners.toSeq))), columns.toMap))
      }
    case _ => None
  }

  /**
   * The range schemes on time a band join's output carries: `t<=` on input `i`'s band column
   * when the join emits it ([[TimeBandJoin.outputBound]]: `i` punctuates that column with a
   * range scheme, the band bounds `i`'s rows, and the other input bounds its band column, by
   * a range scheme or by its watermark ([[WatermarkPunctuations]])).
   *
   * @param column a column's name in the derived declaration and its stream's marker (registers both)
   */
  private def bandSchemes(j: Join, inputs: IndexedSeq[Option[PunctuatedInput]],
      column: (PunctuatedInput, Expression) => Option[(String, String)]): Seq[Scheme] =
    TimeBand.terms(j.condition, j.left.output, j.right.output).toSeq.flatMap { t =>
      val times = IndexedSeq(t.left, t.right)
      val outputs = IndexedSeq(j.left.output, j.right.output)
      val reach = IndexedSeq(t.hi, t.lo.map(-_))
      def punctuated(i: Int) = TimeBand.rangeSchemeOn(inputs(i), times(i)).isDefined
      def bounded(i: Int) = punctuated(i) ||
        outputs(i).find(_.exprId == times(i).exprId).exists(WatermarkPunctuations.isWatermarked)
      for {
        i <- 0 to 1 if punctuated(i) && reach(i).isDefined && bounded(1 - i)
        (n, _) <- column(inputs(i).get, times(i))
      } yield Scheme(Seq(SchemeAttribute(n, isRange = true)))
    }

  private def shortName(d: PunctuatedInput): String =
    if (d.declaration.derived.isDefined) d.declaration.table else d.declaration.table.split('.').last
}
