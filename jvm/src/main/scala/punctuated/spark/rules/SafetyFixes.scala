package punctuated.spark.rules

import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.types.BooleanType

import punctuated.declaration.Declaration
import punctuated.spark.JoinGraph

/**
 * The fix a safety message prints, applicable as printed: the statement that declares a
 * missing punctuation scheme on the stream a column comes from. One place for the join and
 * the aggregation/deduplication checks.
 *
 *  - a catalog table: `ALTER TABLE <its identifier> SET TBLPROPERTIES (...)`, keeping the
 *    schemes it declares (the new one appended with `;`), its marker and its unique key;
 *  - a DataFrame stream: the `punctuated.with_schemes(df, schemes=[...], marker=...)` call;
 *  - an expression (no column of one stream): no declaration can name it, and the sentence
 *    says what can.
 */
object SafetyFixes {

  /** A column traced back to the stream it comes from: the stream and its column name there. */
  final case class Column(stream: JoinGraph.Stream, name: String)

  /**
   * The stream column behind `e`, if `e` is a plain column traced to one stream: for a
   * table its column's name in the table; for a DataFrame stream its name where it is used
   * (`with_schemes` declares the DataFrame as it enters the operator).
   */
  def column(graph: JoinGraph, e: Expression): Option[Column] = e match {
    case a: Attribute => graph.origin(a).map { case (s, c) => Column(s, if (s.table.isDefined) c else a.name) }
    case _ => None
  }

  /**
   * The statement declaring `scheme` (column names of one stream) on `stream`, keeping what
   * it declares already; `input` is the operator's input the stream reaches it through.
   */
  def declare(stream: JoinGraph.Stream, scheme: Seq[String], input: LogicalPlan): String =
    declareAll(stream, Seq(scheme), input)

  /**
   * The statement declaring several schemes (each column names of one stream) on `stream`,
   * keeping what it declares already: `declareAll(bids, Seq(Seq("auction"), Seq("bidder")), in)`
   * appends `auction; bidder` to the schemes bids declares.
   */
  def declareAll(stream: JoinGraph.Stream, added: Seq[Seq[String]], input: LogicalPlan): String = {
    val decl = stream.declaration
    val schemes = (decl.toSeq.flatMap(_.schemes.map(_.toString)) ++ added.map(_.map(quote).mkString(", "))).distinct
    // a DataFrame is declared as it enters the operator: a BOOLEAN column there
    val visible = input.output.filter(_.dataType == BooleanType).map(_.name)
    val marker = decl.flatMap(_.marker).orElse((if (stream.table.isDefined) stream.booleans else visible).headOption)
    stream.table match {
      case Some(table) =>
        val props = Seq(Declaration.Schemes -> schemes.mkString("; ")) ++
          Seq(Declaration.Marker -> marker.getOrElse("is_punct")) ++
          decl.flatMap(_.unique).map(u => Declaration.Unique -> u.toString)
        val add = if (marker.isEmpty) s"ALTER TABLE $table ADD COLUMNS (is_punct BOOLEAN); " else ""
        add + s"ALTER TABLE $table SET TBLPROPERTIES (" +
          props.map { case (k, v) => s"'$k' = '${v.replace("'", "\\'")}'" }.mkString(", ") + ")"
      case None =>
        val name = decl.map(_.table).getOrElse(stream.name)
        val args = Seq(s"schemes=[${schemes.map(pyString).mkString(", ")}]") ++
          Seq(s"marker=${pyString(marker.getOrElse("<a BOOLEAN column of the stream>"))}") ++
          decl.flatMap(_.unique).map(u => s"unique=${pyString(u.toString)}") ++
          Seq(s"name=${pyString(name)}")
        s"punctuated.with_schemes(df, ${args.mkString(", ")}), df being the $name DataFrame as it " +
          s"enters the operator, its columns as named there (a DataFrame stream's form of " +
          s"'${Declaration.Schemes}' = '${schemes.mkString("; ")}')"
    }
  }

  /** What can replace a declaration when a join key or grouping key is an expression. */
  def expressionKey(e: Expression): String =
    s"no declaration can make punctuations close ${e.sql}: a punctuation names column values, " +
      "not values of an expression. Compute it as a column first (a projection, e.g. " +
      s"SELECT ${e.sql} AS k, ... over the stream, then join or group on k) and declare a scheme " +
      "on the column it is computed from, or join/group on a plain column"

  private def quote(name: String): String =
    if (name.matches("[A-Za-z_][A-Za-z0-9_]*")) name else "`" + name.replace("`", "``") + "`"

  private def pyString(s: String): String = "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
}
