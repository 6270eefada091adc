package acidflow.spark;

import java.io.IOException;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

/**
 * The valid overriding events of one file, one at a time in file order: the delete events of a
 * delete delta, or the update and delete events of a legacy (non-split-update) data file, whose
 * currentTransaction is valid in the snapshot. Each comes with the value below which it hides a
 * row version: Long.MAX_VALUE for a delete (every version), the update's currentTransaction for
 * a legacy update (the versions written before it). Bucket properties normalized to V1.
 */
final class OverridingEvents implements AutoCloseable {
  static final int OPERATION_DELETE = 2;

  private final String path;
  private final RecordReader rows;
  private final VectorizedRowBatch batch;
  private final boolean deleteDelta;
  private final ValidWriteIds writeIds;
  private int next;
  private boolean started;
  long o;
  long b;
  long r;
  long hide;

  OverridingEvents(
      String path,
      RecordReader rows,
      TypeDescription eventType,
      int batchSize,
      boolean deleteDelta,
      ValidWriteIds writeIds) {
    this.path = path;
    this.rows = rows;
    this.batch = eventType.createRowBatch(batchSize);
    this.deleteDelta = deleteDelta;
    this.writeIds = writeIds;
  }

  private static long value(LongColumnVector v, int i) {
    return v.isRepeating ? v.vector[0] : v.vector[i];
  }

  static long normalizeBucket(long bucket) {
    return (bucket >>> 29) == 0 ? (1L << 29) | (bucket << 16) : bucket;
  }

  /** Move to the next event; false at the end of the file. */
  boolean next() throws IOException {
    while (true) {
      if (next >= batch.size) {
        if (!rows.nextBatch(batch)) {
          return false;
        }
        next = 0;
        continue;
      }
      int i = next++;
      long operation = value((LongColumnVector) batch.cols[0], i);
      long current = value((LongColumnVector) batch.cols[4], i);
      boolean overriding = deleteDelta ? operation == OPERATION_DELETE : operation != 0;
      if (!overriding || !writeIds.isValid(current)) {
        continue;
      }
      long po = o;
      long pb = b;
      long pr = r;
      o = value((LongColumnVector) batch.cols[1], i);
      b = normalizeBucket(value((LongColumnVector) batch.cols[2], i));
      r = value((LongColumnVector) batch.cols[3], i);
      hide = operation == OPERATION_DELETE ? Long.MAX_VALUE : current;
      if (started && DeleteRegistry.compareKeys(o, b, r, po, pb, pr) < 0) {
        // Streaming relies on key order (as Hive's SortMergedDeleteEventRegistry does): a file
        // out of order would silently lose deletes, so it is an error.
        throw new HiveAcidException(
            "hiveacid: the events of "
                + path
                + " are not sorted by (originalTransaction, bucket, rowId); expected a file Hive's "
                + "writer sorted (read with engine='python' to see the row)");
      }
      started = true;
      return true;
    }
  }

  @Override
  public void close() throws IOException {
    rows.close();
  }
}
