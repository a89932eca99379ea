package punctuated.nexmark

import java.util.Random

import NexmarkRandom._

/**
 * People, re-implementing the reference `PersonGenerator` (Apache Beam
 * `sdks/java/testing/nexmark/.../sources/generator/model/PersonGenerator.java`).
 */
object PersonGenerator {
  /** Person ids not created yet that auctions and bids may already name (reference: 10). */
  val PersonIdLead = 10

  private val UsStates = Array("AZ", "CA", "ID", "OR", "WA", "WY")
  private val UsCities = Array("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
    "Bend", "Redmond", "Seattle", "Kent", "Cheyenne")
  private val FirstNames = Array("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie",
    "Sarah", "Deiter", "Walter")
  private val LastNames = Array("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith",
    "Jones", "Noris")

  /** The person created by event `n`. */
  def person(n: Long, random: Random, timestamp: Long, config: NexmarkConfig): Person = {
    val id = EventSequence.lastBase0PersonId(n) + EventSequence.FirstPersonId
    val name = FirstNames(random.nextInt(FirstNames.length)) + " " +
      LastNames(random.nextInt(LastNames.length))
    val email = nextString(random, 7) + "@" + nextString(random, 5) + ".com"
    val creditCard = {
      val sb = new java.lang.StringBuilder(19)
      for (i <- 0 until 4) {
        if (i > 0) sb.append(' ')
        val group = random.nextInt(10000).toString
        sb.append("0000", 0, 4 - group.length).append(group)
      }
      sb.toString
    }
    val city = UsCities(random.nextInt(UsCities.length))
    val state = UsStates(random.nextInt(UsStates.length))
    val size = 8 + name.length + email.length + creditCard.length + city.length + state.length
    val extra = nextExtra(random, size, config.avgPersonByteSize)
    Person(id, name, email, creditCard, city, state, timestamp, extra)
  }

  /**
   * A random person (id from 0) for an auction's seller or a bid's bidder at event `n`: one of
   * the last `numActivePeople` people or up to [[PersonIdLead]] not created yet.
   */
  def nextBase0PersonId(n: Long, random: Random, config: NexmarkConfig): Long = {
    val numPeople = EventSequence.lastBase0PersonId(n) + 1
    val active = math.min(numPeople, config.numActivePeople.toLong)
    numPeople - active + nextLong(random, active + PersonIdLead)
  }
}
