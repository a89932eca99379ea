package punctuated.join.multi

import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.types.DataType

/**
 * The cells of a multi-way join: hypercube ("shares") partitioning (Afrati and Ullman 2010,
 * *Optimizing joins in a map-reduce environment*; Squall's hypercube for streams). Each
 * attribute class `c` gets a share `s_c`; a cell has one coordinate per class, `0 <= x_c <
 * s_c`; the cells are the micro-batch's partitions (`prod s_c` of them).
 *
 * A value of class `c` has the coordinate Spark's `HashPartitioning(Seq(column), s_c)` gives it
 * (Murmur3, then `pmod`), so with one class (`s_0` = the number of partitions) the cells are
 * exactly Spark's hash partitions. A row goes to every cell agreeing with it on its classes
 * (the other coordinates range over all values): a row of an input with columns in every
 * class goes to one cell, an input lacking class `c` is replicated `s_c` times. A result binds
 * every class, so it is produced in exactly one cell, where all its rows meet; a punctuation
 * goes to every cell agreeing on the classes it binds, which is every cell where a row it
 * covers can be, so every purge decision is local to a cell.
 *
 * {{{
 *   a(k) ⋈ b(k, v) ⋈ c(v), 4 partitions: shares (k: 2, v: 2), cell = x_k + 2 * x_v
 *     a row (k = 7)          -> cells with x_k = h(7):        2 cells
 *     b row (k = 7, v = 3)   -> the cell (h(7), h'(3)):        1 cell
 *     c row (v = 3)          -> cells with x_v = h'(3):       2 cells
 *     b punctuation (v = 3)  -> cells with x_v = h'(3):       2 cells
 * }}}
 *
 * @param shares the share of each attribute class (class 0 first); cell numbers are mixed
 *               radix, class 0 the least significant digit
 */
final case class Hypercube(shares: IndexedSeq[Int]) {
  require(shares.nonEmpty && shares.forall(_ >= 1), s"shares $shares")

  def numCells: Int = shares.product

  /** The cell's coordinate in each class. */
  def coordinates(cell: Int): IndexedSeq[Int] = {
    var rest = cell
    shares.map { s => val x = rest % s; rest /= s; x }
  }

  /** The cell with these coordinates. */
  def cell(coordinates: Seq[Int]): Int =
    coordinates.zip(shares).foldRight(0) { case ((x, s), acc) => acc * s + x }

  /** Every cell whose coordinates agree with `fixed` (class -> coordinate), in increasing order. */
  def cellsAgreeing(fixed: Map[Int, Int]): Seq[Int] = {
    // cell = sum_c coordinate_c * stride_c (stride_c: the product of the shares before c); the
    // fixed classes give one sum, each free class multiplies the cells by its share (per row:
    // no intermediate collections)
    var cells = Array(0)
    var stride = 1
    var c = 0
    while (c < shares.size) {
      val s = shares(c)
      fixed.get(c) match {
        case Some(x) => var u = 0; while (u < cells.length) { cells(u) += x * stride; u += 1 }
        case None if s > 1 =>
          val more = new Array[Int](cells.length * s)
          var u = 0
          while (u < cells.length) { var x = 0; while (x < s) { more(u * s + x) = cells(u) + x * stride; x += 1 }; u += 1 }
          cells = more
        case None =>
      }
      stride *= s
      c += 1
    }
    java.util.Arrays.sort(cells)
    scala.collection.immutable.ArraySeq.unsafeWrapArray(cells)
  }

  /** Copies of a row of an input with columns in `classes` (the cells it goes to). */
  def replication(classes: Seq[Int]): Int = shares.indices.filterNot(classes.contains).map(shares).product
}

object Hypercube {

  /**
   * The shares for `numCells` cells (their product is exactly `numCells`, so every partition
   * is a cell) that minimise the rows sent, `sum_i w_i * prod_{c not in classes(i)} s_c`
   * (Afrati and Ullman 2010, §3: the communication cost of the shares), with every input
   * weighted alike (`w_i = 1`): what [[chooseWeighted]] does when the inputs' sizes are not
   * known. One class: `Hypercube(Seq(numCells))`, Spark's hash partitioning.
   *
   * Example: `choose(4, Seq(Seq(0), Seq(0, 1), Seq(1)), 2)` = shares (2, 2): each of a and c
   * goes to 2 cells, b to 1 (cost 5; (4, 1) and (1, 4) cost 6).
   *
   * @param numCells       the number of partitions of the operator's state
   * @param inputClasses   per input, the classes it has a column in
   * @param numClasses     the number of attribute classes
   */
  def choose(numCells: Int, inputClasses: Seq[Seq[Int]], numClasses: Int): Hypercube =
    chooseWeighted(numCells, inputClasses.map(cs => cs.toSet -> 1L), numClasses)

  /**
   * The shares for `numCells` cells that minimise the rows sent when `rows` rows pin each set
   * of classes (Afrati and Ullman 2010, §3, with the sizes observed: a row pinning classes P
   * goes to `prod_{c not in P} s_c` cells — a data row pins its input's classes, a punctuation
   * the classes its scheme binds; [[MultiJoinShareWeights]] counts them in the first batch).
   * Ties go to larger shares of earlier classes.
   *
   * Example: a chain bids(a) ⋈ auctions(a, p) ⋈ persons(p) on 4 cells with 46 bids per person
   * and 3 auctions: `chooseWeighted(4, Seq(Set(0) -> 46, Set(0, 1) -> 3, Set(1) -> 1), 2)` =
   * shares (4, 1) (cost 46 + 3 + 4 = 53; (2, 2) costs 92 + 3 + 2 = 97).
   *
   * @param numCells   the number of partitions of the operator's state
   * @param pinned     (classes a row pins, how many rows pin them); weights of 0 count for nothing
   * @param numClasses the number of attribute classes
   */
  def chooseWeighted(numCells: Int, pinned: Seq[(Set[Int], Long)], numClasses: Int): Hypercube = {
    require(numCells >= 1 && numClasses >= 1)
    def factorizations(n: Int, parts: Int): Seq[List[Int]] =
      if (parts == 1) Seq(List(n))
      else (1 to n).filter(n % _ == 0).flatMap(d => factorizations(n / d, parts - 1).map(d :: _))
    def cost(shares: List[Int]): BigInt =
      pinned.map { case (cs, w) => BigInt(w) * shares.indices.filterNot(cs.contains).map(shares(_).toLong).product }.sum
    val best = factorizations(numCells, numClasses)
      .minBy(s => (cost(s), s.map(-_)))(Ordering.Tuple2(Ordering.BigInt, Ordering.Implicits.seqOrdering[List, Int]))
    Hypercube(best.toIndexedSeq)
  }

  /**
   * The coordinate of a class value in a class of share `share` (a factory: call once per task,
   * the function it returns reuses a row). Spark's hash partitioning of one column into `share`
   * partitions, so that a NULL and every type hash as Spark hashes them.
   */
  def coordinate(share: Int, dataType: DataType): Any => Int = {
    val proj = UnsafeProjection.create(Seq(
      HashPartitioning(Seq(BoundReference(0, dataType, nullable = true)), share).partitionIdExpression))
    val row = new GenericInternalRow(1)
    value => { row.update(0, value); proj(row).getInt(0) }
  }
}
