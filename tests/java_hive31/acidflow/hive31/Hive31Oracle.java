/*
 * Test-only bridge from acidflow's differential tests to Apache Hive 3.1.3's own classes: what
 * differs from Hive 4. The shared code (OrcRecordUpdater, the row-mode and vectorized readers, the
 * JSON answers) is tests/java_hive3plus/acidflow/hive3plus/Hive3PlusOracle.java, compiled with this
 * file against hive-exec 3.1.3 (core) and its dependencies from Maven Central
 * (tests/fixtures/hive31/pom.xml) by tests/fixtures/hive_oracles.py, and called through py4j.
 *
 * Hive 3.1 passes the reader's snapshot as the table's ValidReaderWriteIdList
 * ("db.t:hwm:minOpen:open,..:aborted,..") under ValidWriteIdList.VALID_WRITEIDS_KEY; the
 * ValidTxnList (ValidTxnList.VALID_TXNS_KEY) is set as Hive's driver sets it, but 3.1's
 * getAcidState does not read it: "_v<txn>" directory names (HIVE-20823) came with Hive 4, and
 * 3.1.3 fails to parse them (Long.parseLong("5_v0000010")).
 */
package acidflow.hive31;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidReaderWriteIdList;
import org.apache.hadoop.hive.ql.io.AcidUtils;

import acidflow.hive3plus.Hive3PlusOracle;

public final class Hive31Oracle {
  private Hive31Oracle() {
  }

  /** Hive3PlusOracle.acidStates with Hive 3.1's AcidUtils.getAcidState. */
  public static String acidStates(String requests) {
    return Hive3PlusOracle.acidStates(requests, Hive31Oracle::acidState);
  }

  private static Hive3PlusOracle.AcidState acidState(FileSystem fs, Path dir, Configuration conf,
      ValidReaderWriteIdList writeIds) throws IOException {
    // useFileIds=false (the local file system has none); ignoreEmptyFiles=false.
    AcidUtils.Directory state = AcidUtils.getAcidState(dir, conf, writeIds, false, false);
    return new Hive3PlusOracle.AcidState(state.getBaseDirectory(), state.getCurrentDirectories(),
        paths(state.getObsolete()), paths(state.getAbortedDirectories()), state.getOriginalFiles());
  }

  private static List<Path> paths(List<FileStatus> statuses) {
    List<Path> paths = new ArrayList<>();
    for (FileStatus status : statuses) {
      paths.add(status.getPath());
    }
    return paths;
  }

  /** Hive3PlusOracle.writeEvents: Hive 3.1's OrcRecordUpdater has no visibility txn. */
  public static String writeEvents(String tableDir, String events, long minWriteId, long maxWriteId, int bucket,
      int statementId, boolean writingBase) throws IOException {
    return Hive3PlusOracle.writeEvents(tableDir, events, minWriteId, maxWriteId, bucket, statementId, writingBase,
        options -> options);
  }

  /** Hive3PlusOracle.readRows with Hive 3.1's readers. */
  public static String readRows(String tableDir, String writeIds, String validTxns, int bucketCount,
      boolean vectorized) throws IOException {
    return Hive3PlusOracle.readRows(tableDir, writeIds, validTxns, bucketCount, vectorized);
  }
}
