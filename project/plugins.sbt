addSbtPlugin("com.eed3si9n" % "sbt-assembly" % "2.3.1")
