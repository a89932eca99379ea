package punctuated.join.multi

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import punctuated.join.multi.ChainedPurge._

/**
 * [[ChainedPurge]] over an in-memory state: Li et al. 2006's chained purge (§3.2) and its
 * generalization to multi-attribute schemes (§4.2), decided without Spark.
 */
class ChainedPurgeSuite extends AnyFunSuite {

  /**
   * A multi-way join's state in memory.
   *
   * @param classesOf the classes of each input
   * @param schemes   per input, its schemes as sets of bound classes
   */
  private class Memory(classesOf: IndexedSeq[Seq[Int]], schemes: IndexedSeq[Seq[Set[Int]]])
      extends State[Int] {
    val rows: IndexedSeq[mutable.Set[Binding[Int]]] = classesOf.map(_ => mutable.Set.empty[Binding[Int]])
    val puncts: IndexedSeq[mutable.Set[Binding[Int]]] = classesOf.map(_ => mutable.Set.empty[Binding[Int]])
    var lookups = 0

    def store(j: Int, values: (Int, Int)*): Binding[Int] = { val k = values.toMap; rows(j) += k; k }
    def punctuate(j: Int, values: (Int, Int)*): Unit = {
      require(schemes(j).contains(values.map(_._1).toSet), s"no scheme $values of $j")
      puncts(j) += values.toMap
    }

    override def size: Int = classesOf.size
    override def classes(j: Int): Seq[Int] = classesOf(j)
    override def storedKeys(j: Int, binding: Binding[Int]): Iterable[Binding[Int]] = {
      assert(classesOf(j).exists(binding.contains), "a look-up needs a shared class")
      lookups += 1
      rows(j).filter(k => k.forall { case (c, v) => binding.get(c).forall(_ == v) }).toSeq
    }
    override def closed(j: Int, binding: Binding[Int]): Boolean = schemes(j).exists { bound =>
      bound.forall(binding.contains) && puncts(j).contains(binding.filter(e => bound(e._1)))
    }
    override def isStored(j: Int, key: Binding[Int]): Boolean = rows(j).contains(key)
    override def remove(j: Int, key: Binding[Int]): Unit = rows(j) -= key
  }

  // classes: 0 = k, 1 = v
  private def chain() = new Memory(IndexedSeq(Seq(0), Seq(0, 1), Seq(1)),
    IndexedSeq(Seq(Set(0)), Seq(Set(0), Set(1)), Seq(Set(1))))

  test("chain a(k) - b(k, v) - c(v): a's row needs b's k and c's v") {
    val m = chain()
    val a = m.store(0, 0 -> 1)
    m.store(1, 0 -> 1, 1 -> 7)
    assert(check(m, 0, a, 100) == Kept)
    m.punctuate(1, 0 -> 1)               // b: no more k = 1
    assert(check(m, 0, a, 100) == Kept)  // a future c(v = 7) still joins a(1) through b(1, 7)
    m.punctuate(2, 1 -> 7)               // c: no more v = 7
    assert(check(m, 0, a, 100) == Purgeable)
  }

  test("chain: c closing another value does not purge; no partner left purges at once") {
    val m = chain()
    val a = m.store(0, 0 -> 1)
    m.store(1, 0 -> 1, 1 -> 7)
    m.punctuate(1, 0 -> 1)
    m.punctuate(2, 1 -> 8)
    assert(check(m, 0, a, 100) == Kept)
    val a2 = m.store(0, 0 -> 2)
    m.punctuate(1, 0 -> 2)               // b closed k = 2 and stores no b(2, _): a(2) has no partner left
    assert(check(m, 0, a2, 100) == Purgeable)
  }

  test("chain: b's row in the middle needs a's k and c's v") {
    val m = chain()
    val b = m.store(1, 0 -> 1, 1 -> 7)
    m.store(0, 0 -> 1)
    m.punctuate(0, 0 -> 1)
    assert(check(m, 1, b, 100) == Kept)  // a(1) is stored: a future c(7) joins it through b(1, 7)
    m.punctuate(2, 1 -> 7)
    assert(check(m, 1, b, 100) == Purgeable)
  }

  test("cycle a(x, y) - b(y, z) - c(z, x)") {
    // classes: 0 = x, 1 = y, 2 = z; single-attribute schemes on every join column
    val m = new Memory(IndexedSeq(Seq(0, 1), Seq(1, 2), Seq(0, 2)),
      IndexedSeq(Seq(Set(0), Set(1)), Seq(Set(1), Set(2)), Seq(Set(0), Set(2))))
    val a = m.store(0, 0 -> 1, 1 -> 2)
    m.store(1, 1 -> 2, 2 -> 3)
    m.punctuate(1, 1 -> 2)               // b closes y = 2: partials {x1, y2, z3}
    assert(check(m, 0, a, 100) == Kept)  // c (z = 3 or x = 1) still open
    m.punctuate(2, 2 -> 3)
    assert(check(m, 0, a, 100) == Purgeable)
  }

  test("star on one class: a row goes once every other input closed its value") {
    val m = new Memory(IndexedSeq(Seq(0), Seq(0), Seq(0), Seq(0)), IndexedSeq.fill(4)(Seq(Set(0))))
    val a = m.store(0, 0 -> 5)
    m.store(1, 0 -> 5); m.store(2, 0 -> 5)
    m.punctuate(1, 0 -> 5); m.punctuate(2, 0 -> 5)
    assert(check(m, 0, a, 100) == Kept)
    m.punctuate(3, 0 -> 5)
    assert(check(m, 0, a, 100) == Purgeable)
  }

  test("a multi-attribute scheme closes only when both its classes are bound (Li et al. 2006, §4.2)") {
    // a(k) - b(k, v) - c(v); b's only scheme binds (k, v)
    val m = new Memory(IndexedSeq(Seq(0), Seq(0, 1), Seq(1)),
      IndexedSeq(Seq(Set(0)), Seq(Set(0, 1)), Seq(Set(1))))
    val a = m.store(0, 0 -> 1)
    val b = m.store(1, 0 -> 1, 1 -> 7)
    m.punctuate(1, 0 -> 1, 1 -> 7)
    m.punctuate(2, 1 -> 7)
    // from a(k = 1): b would need v bound; c would need v bound: nothing is closed
    assert(check(m, 0, a, 100) == Kept)
    // from b(1, 7): a closed k = 1 lets b's row go once c closed v = 7 too
    m.punctuate(0, 0 -> 1)
    assert(check(m, 1, b, 100) == Purgeable)
  }

  test("the fixpoint: a purged row's partners are checked again, and a multi-attribute scheme waits") {
    // a(k) - b(k, v) - c(v); b's only scheme binds (k, v): b closing (1, 7) says nothing of
    // a future b(1, 8), so a(1) stays even once b(1, 7) went
    val m = new Memory(IndexedSeq(Seq(0), Seq(0, 1), Seq(1)),
      IndexedSeq(Seq(Set(0)), Seq(Set(0, 1)), Seq(Set(1))))
    val a = m.store(0, 0 -> 1)
    val b = m.store(1, 0 -> 1, 1 -> 7)
    m.punctuate(0, 0 -> 1); m.punctuate(2, 1 -> 7); m.punctuate(1, 0 -> 1, 1 -> 7)
    val result = purge(m, Seq(1 -> b), 100)
    assert(result.purged == Seq(1 -> b))
    assert(m.isStored(0, a))
    // b with single-attribute schemes: only b(1, 7) is a candidate, a(1) is found as its partner
    val single = chain()
    val a1 = single.store(0, 0 -> 1)
    val b1 = single.store(1, 0 -> 1, 1 -> 7)
    single.punctuate(0, 0 -> 1); single.punctuate(2, 1 -> 7); single.punctuate(1, 0 -> 1)
    val all = purge(single, Seq(1 -> b1), 100)
    assert(all.purged == Seq(1 -> b1, 0 -> a1))
    assert(single.rows.forall(_.isEmpty))
    assert(all.abandoned == 0)
  }

  test("partials above the cap: the check is abandoned, counted, and the row kept") {
    val m = chain()
    val a = m.store(0, 0 -> 1)
    (1 to 20).foreach(v => m.store(1, 0 -> 1, 1 -> v))
    m.punctuate(1, 0 -> 1)
    (1 to 20).foreach(v => m.punctuate(2, 1 -> v))
    assert(check(m, 0, a, 100) == Purgeable)
    assert(check(m, 0, a, 10) == Abandoned)
    val result = purge(m, Seq(0 -> a), 10)
    assert(result.purged.isEmpty && result.abandoned == 1 && m.isStored(0, a))
  }

  test("no stored partner left: closed inputs without rows purge at once") {
    val m = chain()
    val b = m.store(1, 0 -> 1, 1 -> 7)
    m.punctuate(0, 0 -> 1)               // a closed k = 1 and stores no a(1)
    assert(check(m, 1, b, 100) == Purgeable)
  }

  test("look-ups only by a shared class, and only of inputs the closure reaches") {
    val m = chain()
    val a = m.store(0, 0 -> 1)
    m.store(2, 1 -> 7)
    assert(check(m, 0, a, 100) == Kept)
    assert(m.lookups == 0)               // nothing closed: no input's rows are read
  }

  test("covered set: a node's combination needs only the inputs it does not cover; covered {i} is check(i)") {
    // a(k) ⋈ b(k, v) ⋈ c(v), node {a, b}: its combination {k: 1, v: 7}
    val m = chain()
    val a = m.store(0, 0 -> 1)
    val b = m.store(1, 0 -> 1, 1 -> 7)
    val ab = a ++ b
    assert(check(m, Set(0, 1), ab, 100) == Kept)
    m.punctuate(1, 0 -> 1)                            // b's punctuation: inside the node, says nothing
    assert(check(m, Set(0, 1), ab, 100) == Kept)
    assert(check(m, 0, a, 100) == Kept)               // a(1) still joins a future c(7) through b(1, 7)
    m.punctuate(2, 1 -> 7)                            // c closes v = 7: the combination goes
    assert(check(m, Set(0, 1), ab, 100) == Purgeable)
    assert(check(m, Set(0), a, 100) == check(m, 0, a, 100))
    // node {b, c} with key {k: 1, v: 7}: only a future a(1) could join it

    val bc = b ++ Map(1 -> 7)
    m.store(2, 1 -> 7)
    assert(check(m, Set(1, 2), bc, 100) == Kept)
    m.punctuate(0, 0 -> 1)
    assert(check(m, Set(1, 2), bc, 100) == Purgeable)
  }

  test("covered set: a combination containing a purgeable row is purgeable (its closure is at least as strong)") {
    val m = chain()
    val a = m.store(0, 0 -> 1)
    val b1 = m.store(1, 0 -> 1, 1 -> 7)
    val b2 = m.store(1, 0 -> 1, 1 -> 8)
    m.store(2, 1 -> 7)
    m.punctuate(1, 0 -> 1); m.punctuate(2, 1 -> 7); m.punctuate(2, 1 -> 8)
    assert(check(m, 0, a, 100) == Purgeable)
    for (b <- Seq(b1, b2)) assert(check(m, Set(0, 1), a ++ b, 100) == Purgeable, b)
  }
}
