/*
 * Test-only bridge from acidflow's differential tests to Apache Hive 4.0.1's own classes: what
 * differs from Hive 3.1. The shared code (OrcRecordUpdater, the row-mode and vectorized readers, the
 * JSON answers) is tests/java_hive3plus/acidflow/hive3plus/Hive3PlusOracle.java, compiled with this
 * file against hive-exec 4.0.1 (core) and its dependencies from Maven Central
 * (tests/fixtures/hive4/pom.xml) by tests/fixtures/hive_oracles.py, and called through py4j.
 *
 * Hive 4 passes the reader's snapshot as two strings, as its drivers do: the table's
 * ValidReaderWriteIdList ("db.t:hwm:minOpen:open,..:aborted,..") under
 * ValidWriteIdList.VALID_WRITEIDS_KEY, and the ValidTxnList that decides "_v<txn>" visibility under
 * ValidTxnList.VALID_TXNS_KEY (AcidUtils.getAcidState reads it from the Configuration).
 */
package acidflow.hive4;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidReaderWriteIdList;
import org.apache.hadoop.hive.ql.io.AcidDirectory;
import org.apache.hadoop.hive.ql.io.AcidUtils;
import org.apache.hive.common.util.Ref;

import acidflow.hive3plus.Hive3PlusOracle;

public final class Hive4Oracle {
  private Hive4Oracle() {
  }

  /** Hive3PlusOracle.acidStates with Hive 4's AcidUtils.getAcidState. */
  public static String acidStates(String requests) {
    return Hive3PlusOracle.acidStates(requests, Hive4Oracle::acidState);
  }

  private static Hive3PlusOracle.AcidState acidState(FileSystem fs, Path dir, Configuration conf,
      ValidReaderWriteIdList writeIds) throws IOException {
    // useFileIds=false (the local file system has none): Hive lists through getHdfsDirSnapshots,
    // its code path for every file system but HDFS. ignoreEmptyFiles=false.
    AcidDirectory state = AcidUtils.getAcidState(fs, dir, conf, writeIds, Ref.from(false), false);
    return new Hive3PlusOracle.AcidState(state.getBaseDirectory(), state.getCurrentDirectories(),
        state.getObsolete(), state.getAbortedDirectories(), state.getOriginalFiles());
  }

  /**
   * Hive3PlusOracle.writeEvents; {@code visibilityTxnId} > 0 adds "_v%07d" to the directory name
   * (what Hive 4's compactor and, for a base, insert overwrite name).
   */
  public static String writeEvents(String tableDir, String events, long minWriteId, long maxWriteId, int bucket,
      int statementId, boolean writingBase, long visibilityTxnId) throws IOException {
    return Hive3PlusOracle.writeEvents(tableDir, events, minWriteId, maxWriteId, bucket, statementId, writingBase,
        options -> options.visibilityTxnId(visibilityTxnId));
  }

  /** Hive3PlusOracle.readRows with Hive 4's readers. */
  public static String readRows(String tableDir, String writeIds, String validTxns, int bucketCount,
      boolean vectorized) throws IOException {
    return Hive3PlusOracle.readRows(tableDir, writeIds, validTxns, bucketCount, vectorized);
  }
}
