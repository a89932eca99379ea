package punctuated.nexmark

import java.util.Random

/**
 * Random values of the NEXMark generator, as the reference draws them (Apache Beam
 * `sdks/java/testing/nexmark`, `LongGenerator`, `PriceGenerator`, `StringsGenerator`).
 */
object NexmarkRandom {
  private val MinStringLength = 3

  /** A long in `[0, n)`. */
  def nextLong(random: Random, n: Long): Long =
    if (n < Int.MaxValue) random.nextInt(n.toInt).toLong
    else math.abs(random.nextLong() % n)

  /** A price in cents, log-uniform in [100, 10^8]. */
  def nextPrice(random: Random): Long = math.round(math.pow(10.0, random.nextDouble() * 6.0) * 100.0)

  /** A string of 3 to `maxLength - 1` lower-case letters and `space`s, trimmed. */
  def nextString(random: Random, maxLength: Int, space: Char = ' '): String = {
    var len = MinStringLength + random.nextInt(maxLength - MinStringLength)
    val sb = new java.lang.StringBuilder(len)
    while (len > 0) {
      if (random.nextInt(13) == 0) sb.append(space) else sb.append(('a' + random.nextInt(26)).toChar)
      len -= 1
    }
    sb.toString.trim
  }

  /**
   * A string of exactly `length` characters: letters, and (as in the reference, which takes
   * the remainder of a negative int) a few of the characters just below `'a'`.
   */
  def nextExactString(random: Random, length: Int): String = {
    val sb = new java.lang.StringBuilder(length)
    var rnd = 0
    var left = 0
    var i = length
    while (i > 0) {
      if (left == 0) {
        rnd = random.nextInt()
        left = 6
      }
      sb.append(('a' + rnd % 26).toChar)
      rnd /= 26
      left -= 1
      i -= 1
    }
    sb.toString
  }

  /** Padding so that `currentSize` plus its length is on average `averageSize`. */
  def nextExtra(random: Random, currentSize: Int, averageSize: Int): String =
    if (currentSize > averageSize) ""
    else {
      val desired = averageSize - currentSize
      val delta = math.round(desired * 0.2).toInt
      val size = desired - delta + (if (delta == 0) 0 else random.nextInt(2 * delta))
      nextExactString(random, size)
    }
}
