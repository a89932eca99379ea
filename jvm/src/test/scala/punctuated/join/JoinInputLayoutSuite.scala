package punctuated.join

import org.scalatest.funsuite.AnyFunSuite

/**
 * [[JoinInputLayout]]: where a join input's state lives is a function of its number, and a
 * binary join's two inputs keep the store names and namespace numbers their checkpoints have
 * (a change here makes existing checkpoints unreadable: bump `StateLayouts.Join` instead).
 */
class JoinInputLayoutSuite extends AnyFunSuite {

  test("a binary join's inputs keep their on-disk names and namespaces") {
    assert(JoinInputLayout.of(0) == JoinInputLayout("left", 0, 1, 2, 6, 8))
    assert(JoinInputLayout.of(1) == JoinInputLayout("right", 3, 4, 5, 7, 9))
    assert(JoinInputState.rowsStoreName(0) == "left-punctuated-rows")
    assert(JoinInputState.rowsStoreName(1) == "right-punctuated-rows")
    assert(JoinInputState.storeNames(2, shared = true) ==
      Seq("left-punctuated-rows", "right-punctuated-rows", "punctuated-meta"))
    assert(JoinInputState.storeNames(2, shared = false) == Seq("left-punctuated-rows", "right-punctuated-rows"))
  }

  test("inputs of a wider operator get namespaces of their own") {
    val layouts = (0 until 6).map(JoinInputLayout.of)
    val namespaces = layouts.flatMap(l => Seq(l.wholeKey, l.partitionWide, l.rangeIndex, l.closedValues, l.indexEntries))
    assert(namespaces.distinct.size == namespaces.size)
    assert(layouts.map(_.rowsStore).distinct.size == layouts.size)
    assert(JoinInputLayout.of(2).rowsStore == "input2-punctuated-rows")
    intercept[IllegalArgumentException](JoinInputLayout.of(-1))
  }
}
