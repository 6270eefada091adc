package acidflow.spark;

import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;

/**
 * Keep rows {@code rows[0..kept)} of an ORC vector of scalars, moved down in place to positions
 * 0..kept-1 ({@code rows} ascending, so a row is never overwritten before it is moved). The next
 * batch the ORC reader decodes overwrites every position, so nothing else changes.
 */
final class Compaction {
  private Compaction() {}

  static boolean supports(ColumnVector v) {
    return v instanceof LongColumnVector
        || v instanceof DoubleColumnVector
        || v instanceof BytesColumnVector
        || v instanceof DecimalColumnVector
        || v instanceof TimestampColumnVector;
  }

  static void compact(ColumnVector v, int[] rows, int kept) {
    if (v.isRepeating) {
      return; // one value for every row
    }
    if (!v.noNulls) {
      boolean[] isNull = v.isNull;
      for (int k = 0; k < kept; k++) {
        isNull[k] = isNull[rows[k]];
      }
    }
    if (v instanceof LongColumnVector l) {
      long[] a = l.vector;
      for (int k = 0; k < kept; k++) {
        a[k] = a[rows[k]];
      }
    } else if (v instanceof DoubleColumnVector d) {
      double[] a = d.vector;
      for (int k = 0; k < kept; k++) {
        a[k] = a[rows[k]];
      }
    } else if (v instanceof BytesColumnVector b) {
      byte[][] values = b.vector;
      int[] start = b.start;
      int[] length = b.length;
      for (int k = 0; k < kept; k++) {
        int i = rows[k];
        values[k] = values[i];
        start[k] = start[i];
        length[k] = length[i];
      }
    } else if (v instanceof DecimalColumnVector d) {
      HiveDecimalWritable[] a = d.vector;
      for (int k = 0; k < kept; k++) {
        // Swap, never share: the reader sets each position's own object in place.
        HiveDecimalWritable moved = a[rows[k]];
        a[rows[k]] = a[k];
        a[k] = moved;
      }
    } else if (v instanceof TimestampColumnVector t) {
      long[] time = t.time;
      int[] nanos = t.nanos;
      for (int k = 0; k < kept; k++) {
        time[k] = time[rows[k]];
        nanos[k] = nanos[rows[k]];
      }
    } else {
      throw new IllegalArgumentException("not a vector of scalars: " + v.getClass().getName());
    }
  }

}
