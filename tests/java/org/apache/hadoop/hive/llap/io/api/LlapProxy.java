/*
 * Test-only stub of Hive's LLAP entry point, which pyspark does not ship.
 *
 * Hive 2.3's HiveInputFormat asks LlapProxy.isDaemon() on its vectorized read path; outside an
 * LLAP daemon the answer is false, and nothing else of LLAP is used. The oracle itself constructs
 * VectorizedOrcAcidRowBatchReader directly and does not reach that code (checked: it reads without
 * this class); the stub is here for tests that go through HiveInputFormat. Compiled at test time
 * and put on the class path AFTER pyspark's jars, so a real LlapProxy would win.
 */
package org.apache.hadoop.hive.llap.io.api;

public final class LlapProxy {
  private LlapProxy() {
  }

  public static boolean isDaemon() {
    return false;
  }
}
