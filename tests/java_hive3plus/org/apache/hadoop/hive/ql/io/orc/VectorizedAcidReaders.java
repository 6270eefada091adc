/*
 * Test-only: open Hive's VectorizedOrcAcidRowBatchReader the way OrcInputFormat does, with a
 * VectorizedRowBatchCtx of our choosing (ROW__ID projected). That constructor is package-private
 * (@VisibleForTesting, used so by Hive's own TestVectorizedOrcAcidRowBatchReader), hence this
 * class in Hive's package. Compiled against Hive 3.1.3 and against Hive 4.0.1 (the constructor is
 * the same in both); nothing of Hive is changed.
 */
package org.apache.hadoop.hive.ql.io.orc;

import java.io.IOException;

import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatchCtx;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;

public final class VectorizedAcidReaders {
  private VectorizedAcidReaders() {
  }

  public static VectorizedOrcAcidRowBatchReader open(OrcSplit split, JobConf conf, VectorizedRowBatchCtx ctx)
      throws IOException {
    return new VectorizedOrcAcidRowBatchReader(split, conf, Reporter.NULL, ctx);
  }
}
