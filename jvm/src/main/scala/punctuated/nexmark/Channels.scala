package punctuated.nexmark

import java.util.Random

/**
 * The channel a bid came through and its URL, after the `nexmark/nexmark` Flink generator's
 * `BidGenerator`: half the bids come from four hot channels, the rest from `channel-0` ...
 * `channel-9999`, nine in ten of whose URLs carry a `channel_id`.
 *
 * Deviation: the reference draws the hot URLs and the per-channel URLs from a process-wide
 * random source; here each is derived from a fixed seed, so that every run, every executor
 * and every `seed` agree on a channel's URL.
 */
object Channels {
  val HotChannelsRatio = 2
  val ChannelsNumber = 10000
  val HotChannels: Array[String] = Array("Google", "Facebook", "Baidu", "Apple")

  private val hotUrls: Array[String] =
    HotChannels.indices.map(i => baseUrl(new Random(-1L - i))).toArray

  private lazy val coldChannels: Array[(String, String)] = Array.tabulate(ChannelsNumber) { k =>
    val random = new Random(0x6E65786DL + k)
    val url = baseUrl(random)
    val withId = if (random.nextInt(10) > 0) s"$url&channel_id=${math.abs(Integer.reverse(k))}" else url
    (s"channel-$k", withId)
  }

  /** A channel and its URL. */
  def next(random: Random): (String, String) =
    if (random.nextInt(HotChannelsRatio) > 0) {
      val i = random.nextInt(HotChannels.length)
      (HotChannels(i), hotUrls(i))
    } else {
      coldChannels(random.nextInt(ChannelsNumber))
    }

  private def baseUrl(random: Random): String = {
    def part = NexmarkRandom.nextString(random, 5, '_')
    s"https://www.nexmark.com/$part/$part/$part/item.htm?query=1"
  }
}
