"""The JVM options of the tests' own Spark processes."""

#: JVM options of the tests' Spark processes: the client compiler only and the serial
#: collector. Tests run short jobs on tiny data on 2 cores, where the optimizing compiler's
#: and the parallel collector's threads cost more CPU than they win back (measured: the DML
#: and MERGE modules ran 12-16% faster). Nothing in Spark's or deltalog's behaviour depends
#: on them.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
