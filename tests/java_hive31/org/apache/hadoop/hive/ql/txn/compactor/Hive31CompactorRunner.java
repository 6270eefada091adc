/*
 * Test-only: run Apache Hive 3.1.3's own CompactorMR (major or minor) on a local table directory,
 * as tests/java/.../HiveCompactorRunner.java does for Hive 2.3.10 (compiled against hive-exec
 * 3.1.3 core from Maven Central: tests/fixtures/hive31/pom.xml).
 *
 * This calls the real CompactorMR.run(HiveConf, jobName, Table, Partition, StorageDescriptor,
 * ValidWriteIdList, CompactionInfo, Worker.StatsUpdater, TxnStore), which is what Hive 3.1's Worker
 * thread calls:
 * it computes AcidUtils.getAcidState, builds the JobConf (createBaseJobConf), and submits the
 * MapReduce job through JobClient. With mapreduce.framework.name=local the job runs in this JVM
 * under Hadoop's LocalJobRunner (hadoop-mapreduce-client-common 3.1.0): CompactorInputFormat makes
 * one split per bucket, CompactorMap merges with OrcRawRecordMerger and writes through
 * OrcOutputFormat into _tmp_<uuid>, and CompactorOutputCommitter.commitJob renames into the final
 * base_N / delta_N_M / delete_delta_N_M directory.
 *
 * It lives in Hive's package because Worker.StatsUpdater is package-private.
 *
 * What is not Hive here (nothing else is stubbed):
 * - the metastore objects (Table, StorageDescriptor, CompactionInfo) are built in memory, as
 *   Hive's Worker would get them from the metastore;
 * - TxnStore is a java.lang.reflect.Proxy whose only supported call is setHadoopJobId (CompactorMR
 *   records the MR job id through it; the proxy keeps it); every other call throws;
 * - Worker.StatsUpdater is Hive's own, made with an empty "columns with stats" list, which is what
 *   Hive's Worker passes when the table has no column statistics: gatherStats() then does nothing.
 */
package org.apache.hadoop.hive.ql.txn.compactor;

import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.hive.common.ValidCompactorWriteIdList;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.api.CompactionType;
import org.apache.hadoop.hive.metastore.api.FieldSchema;
import org.apache.hadoop.hive.metastore.api.SerDeInfo;
import org.apache.hadoop.hive.metastore.api.StorageDescriptor;
import org.apache.hadoop.hive.metastore.api.Table;
import org.apache.hadoop.hive.metastore.api.hive_metastoreConstants;
import org.apache.hadoop.hive.metastore.txn.CompactionInfo;
import org.apache.hadoop.hive.metastore.txn.TxnStore;

public final class Hive31CompactorRunner {
  private Hive31CompactorRunner() {
  }

  /** The job ids CompactorMR reported through TxnStore.setHadoopJobId (the stub's only memory). */
  private static final List<String> JOB_IDS = Collections.synchronizedList(new ArrayList<String>());

  static TxnStore recordingTxnStore() {
    InvocationHandler handler = new InvocationHandler() {
      @Override
      public Object invoke(Object proxy, Method method, Object[] args) {
        if (method.getName().equals("setHadoopJobId")) {
          JOB_IDS.add((String) args[0]);
          return null;
        }
        if (method.getDeclaringClass() == Object.class) {
          switch (method.getName()) {
            case "toString":
              return "Hive31CompactorRunner.recordingTxnStore";
            case "hashCode":
              return System.identityHashCode(proxy);
            case "equals":
              return proxy == args[0];
            default:
              break;
          }
        }
        throw new UnsupportedOperationException("TxnStore." + method.getName()
            + " is not available to Hive31CompactorRunner (only setHadoopJobId is)");
      }
    };
    return (TxnStore) Proxy.newProxyInstance(TxnStore.class.getClassLoader(), new Class<?>[] {TxnStore.class},
        handler);
  }

  /** A HiveConf for a local run: FastLocalFileSystem, ZLIB (Hive's default), the local MR runner. */
  static HiveConf newConf(String workDir) {
    HiveConf conf = new HiveConf();
    conf.set("fs.file.impl", "acidflow.hive.HiveCompactorLocalFileSystem");
    conf.setBoolean("fs.file.impl.disable.cache", true);
    conf.set("fs.defaultFS", "file:///");
    conf.set("mapreduce.framework.name", "local");
    conf.set("hadoop.tmp.dir", workDir + "/hadoop-tmp");
    conf.set("mapreduce.jobtracker.staging.root.dir", workDir + "/staging");
    conf.set("mapreduce.cluster.local.dir", workDir + "/mr-local");
    conf.set("orc.compress", "ZLIB");
    conf.set("hive.exec.orc.default.compress", "ZLIB");
    conf.setBoolVar(HiveConf.ConfVars.HIVE_IN_TEST, false);
    return conf;
  }

  /**
   * Compact {@code location} with Hive 3.1.3's CompactorMR.
   *
   * @param location the table directory (local path)
   * @param columns the table's columns, e.g. "id:int,name:string,salary:int"
   * @param bucketCount the table's bucket count (StorageDescriptor.numBuckets)
   * @param highWatermark the compactor's high watermark (write id)
   * @param aborted the aborted write ids below it, comma-separated ("" for none)
   * @param major major (base_N) or minor (delta_N_M + delete_delta_N_M)
   * @param workDir a scratch directory for MapReduce's staging and local dirs
   * @return the job ids CompactorMR reported (comma-separated)
   */
  public static String compact(String location, String columns, int bucketCount, long highWatermark,
      String aborted, boolean major, String workDir) throws IOException {
    HiveConf conf = newConf(workDir);
    List<FieldSchema> cols = new ArrayList<>();
    for (String column : columns.split(",")) {
      String[] parts = column.split(":", 2);
      cols.add(new FieldSchema(parts[0], parts[1], null));
    }
    SerDeInfo serde = new SerDeInfo();
    serde.setSerializationLib("org.apache.hadoop.hive.ql.io.orc.OrcSerde");
    serde.setParameters(new HashMap<String, String>());
    StorageDescriptor sd = new StorageDescriptor();
    sd.setCols(cols);
    sd.setLocation(location);
    sd.setInputFormat("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat");
    sd.setOutputFormat("org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat");
    sd.setCompressed(false);
    sd.setNumBuckets(bucketCount);
    sd.setSerdeInfo(serde);
    sd.setParameters(new HashMap<String, String>());
    Map<String, String> parameters = new HashMap<>();
    parameters.put(hive_metastoreConstants.TABLE_IS_TRANSACTIONAL, "true");
    parameters.put(hive_metastoreConstants.TABLE_TRANSACTIONAL_PROPERTIES, "default");
    Table table = new Table();
    table.setDbName("default");
    table.setTableName("t");
    table.setOwner(System.getProperty("user.name"));
    table.setSd(sd);
    table.setParameters(parameters);
    table.setPartitionKeys(new ArrayList<FieldSchema>());
    table.setTableType("MANAGED_TABLE");

    // Hive 3.1's Worker: TxnUtils.createValidCompactWriteIdList(tableValidWriteIds) -- the high
    // watermark below the lowest open write id, with the aborted ones as exceptions.
    String writeIdList = "default.t:" + highWatermark + ":" + Long.MAX_VALUE + "::" + aborted;
    ValidCompactorWriteIdList writeIds = new ValidCompactorWriteIdList(writeIdList);
    conf.set(org.apache.hadoop.hive.common.ValidTxnList.VALID_TXNS_KEY, highWatermark + ":" + Long.MAX_VALUE + "::");

    CompactionInfo ci = new CompactionInfo("default", "t", null, major ? CompactionType.MAJOR : CompactionType.MINOR);
    ci.id = 1;
    Worker.StatsUpdater stats = Worker.StatsUpdater.init(ci, new ArrayList<String>(), conf,
        System.getProperty("user.name"));
    int before = JOB_IDS.size();
    new CompactorMR().run(conf, "acidflow-hive31-compactor", table, null, sd, writeIds, ci, stats,
        recordingTxnStore());
    List<String> mine;
    synchronized (JOB_IDS) {
      mine = new ArrayList<>(JOB_IDS.subList(before, JOB_IDS.size()));
    }
    return String.join(",", mine);
  }

  /**
   * For benchmarks, in a JVM of its own:
   * {@code Hive31CompactorRunner <location> <columns> <buckets> <hwm> <aborted> major|minor <workDir>};
   * prints "wall_seconds=<s> jobs=<ids>".
   */
  public static void main(String[] args) throws IOException {
    long started = System.nanoTime();
    String jobs = compact(args[0], args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]), args[4],
        "major".equals(args[5]), args[6]);
    double seconds = (System.nanoTime() - started) / 1e9;
    System.out.println("wall_seconds=" + seconds + " jobs=" + jobs);
  }
}
