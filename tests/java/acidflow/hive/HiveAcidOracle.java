/*
 * Test-only bridge from acidflow's differential tests to Apache Hive 2.3's own classes.
 *
 * Compiled at test time (tests/fixtures/hive.py) against the Hive 2.3.10 jars that pyspark ships,
 * and called through py4j. It only calls Hive; every rule being tested lives in Hive's classes.
 * Answers are JSON strings so that one py4j round trip answers a whole batch.
 */
package acidflow.hive;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static acidflow.hive.OracleJson.appendList;
import static acidflow.hive.OracleJson.quote;
import static acidflow.hive.OracleJson.relative;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.common.ValidReadTxnList;
import org.apache.hadoop.hive.ql.io.AcidUtils;
import org.apache.hadoop.hive.shims.HadoopShims.HdfsFileStatusWithId;

public final class HiveAcidOracle {
  private HiveAcidOracle() {
  }

  /**
   * A Configuration whose file: scheme is FastLocalFileSystem (no fork per listed file), with
   * Hive's default ORC compression.
   */
  public static Configuration newConf() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", FastLocalFileSystem.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    // HiveConf's default; without a HiveConf, pyspark's ORC 2.x would default to ZSTD.
    conf.set("orc.compress", "ZLIB");
    conf.set("hive.exec.orc.default.compress", "ZLIB");
    return conf;
  }

  /** AcidUtils.getAcidState(dir, conf, new ValidReadTxnList(validTxns)) as one JSON object. */
  public static String acidState(String tableDir, String validTxns) {
    Configuration conf = newConf();
    StringBuilder out = new StringBuilder();
    appendAcidState(out, conf, tableDir, validTxns);
    return out.toString();
  }

  /**
   * The same for many directories: {@code requests} holds one "dir TAB validTxns" line per
   * directory; the answer is a JSON array with one object per line.
   */
  public static String acidStates(String requests) {
    Configuration conf = newConf();
    StringBuilder out = new StringBuilder("[");
    String[] lines = requests.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String[] parts = lines[i].split("\t", -1);
      if (i > 0) {
        out.append(',');
      }
      appendAcidState(out, conf, parts[0], parts[1]);
    }
    return out.append(']').toString();
  }

  private static void appendAcidState(StringBuilder out, Configuration conf, String tableDir, String validTxns) {
    try {
      Path dir = new Path(tableDir);
      FileSystem fs = dir.getFileSystem(conf);
      String root = fs.makeQualified(dir).toUri().getPath();
      // useFileIds=false: the local file system has no file ids; ignoreEmptyFiles=false.
      AcidUtils.Directory state =
          AcidUtils.getAcidState(dir, conf, new ValidReadTxnList(validTxns), false, false);
      List<String> deltas = new ArrayList<>();
      for (AcidUtils.ParsedDelta delta : state.getCurrentDirectories()) {
        deltas.add(relative(root, delta.getPath()));
      }
      List<String> obsolete = new ArrayList<>();
      for (FileStatus status : state.getObsolete()) {
        obsolete.add(relative(root, status.getPath()));
      }
      List<String> originals = new ArrayList<>();
      for (HdfsFileStatusWithId file : state.getOriginalFiles()) {
        originals.add(relative(root, file.getFileStatus().getPath()));
      }
      Path base = state.getBaseDirectory();
      out.append("{\"base\":").append(base == null ? "null" : quote(relative(root, base)));
      out.append(",\"deltas\":");
      appendList(out, deltas);
      out.append(",\"obsolete\":");
      appendList(out, obsolete);
      out.append(",\"original_files\":");
      appendList(out, originals);
      out.append('}');
    } catch (IOException | RuntimeException e) {
      out.append("{\"error\":").append(quote(e.getClass().getName() + ": " + e.getMessage())).append('}');
    }
  }
}
