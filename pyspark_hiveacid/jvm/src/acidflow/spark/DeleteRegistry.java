package acidflow.spark;

/**
 * The overriding events of one bucket in memory (Hive's ColumnizedDeleteEventRegistry): sorted,
 * unique keys (originalTransaction, bucket property normalized to V1, rowId), each with the value
 * below which a row version is hidden: Long.MAX_VALUE for a delete event (every version), the
 * update's currentTransaction for a legacy update event (the versions written before it).
 *
 * <p>A row version (o, b, r, current) is hidden when the key is registered with hide > current,
 * as {@code acid_core.orc.deletes} decides.
 */
final class DeleteRegistry {
  private long[] o;
  private long[] b;
  private long[] r;
  private long[] h;
  private int size;

  DeleteRegistry(int capacity) {
    int c = Math.max(capacity, 16);
    o = new long[c];
    b = new long[c];
    r = new long[c];
    h = new long[c];
  }

  int size() {
    return size;
  }

  void add(long ov, long bv, long rv, long hide) {
    if (size == o.length) {
      int c = size * 2;
      o = java.util.Arrays.copyOf(o, c);
      b = java.util.Arrays.copyOf(b, c);
      r = java.util.Arrays.copyOf(r, c);
      h = java.util.Arrays.copyOf(h, c);
    }
    o[size] = ov;
    b[size] = bv;
    r[size] = rv;
    h[size] = hide;
    size++;
  }

  /** Sort by key and keep, for equal keys, the largest hide value. Call once after the adds. */
  void seal() {
    boolean sorted = true;
    for (int i = 1; i < size && sorted; i++) {
      sorted = compare(i - 1, o[i], b[i], r[i]) < 0;
    }
    if (sorted) {
      return; // delete deltas are written in key order: usually nothing to do
    }
    Integer[] order = new Integer[size];
    for (int i = 0; i < size; i++) {
      order[i] = i;
    }
    java.util.Arrays.sort(
        order,
        (x, y) -> {
          int c = Long.compare(o[x], o[y]);
          if (c == 0) c = Long.compare(b[x], b[y]);
          if (c == 0) c = Long.compare(r[x], r[y]);
          if (c == 0) c = Long.compare(h[x], h[y]);
          return c;
        });
    long[] no = new long[size], nb = new long[size], nr = new long[size], nh = new long[size];
    int out = 0;
    for (int k = 0; k < size; k++) {
      int i = order[k];
      if (out > 0 && no[out - 1] == o[i] && nb[out - 1] == b[i] && nr[out - 1] == r[i]) {
        nh[out - 1] = Math.max(nh[out - 1], h[i]);
        continue;
      }
      no[out] = o[i];
      nb[out] = b[i];
      nr[out] = r[i];
      nh[out] = h[i];
      out++;
    }
    o = no;
    b = nb;
    r = nr;
    h = nh;
    size = out;
  }

  private int compare(int at, long ov, long bv, long rv) {
    return compareKeys(o[at], b[at], r[at], ov, bv, rv);
  }

  /** Hive's RecordIdentifier order: originalTransaction, then bucket property, then rowId. */
  static int compareKeys(long o1, long b1, long r1, long o2, long b2, long r2) {
    int c = Long.compare(o1, o2);
    if (c == 0) c = Long.compare(b1, b2);
    if (c == 0) c = Long.compare(r1, r2);
    return c;
  }

  /** The first index whose key is >= (ov, bv, rv). */
  int lowerBound(long ov, long bv, long rv) {
    return lowerBound(0, size, ov, bv, rv);
  }

  /** The first index in [low, high) whose key is >= (ov, bv, rv), or high. */
  private int lowerBound(int low, int high, long ov, long bv, long rv) {
    while (low < high) {
      int mid = (low + high) >>> 1;
      if (compare(mid, ov, bv, rv) < 0) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  /** The first index whose (originalTransaction, bucket) is above (ov, bv). */
  int endOf(long ov, long bv) {
    int low = 0;
    int high = size;
    while (low < high) {
      int mid = (low + high) >>> 1;
      int c = Long.compare(o[mid], ov);
      if (c == 0) c = Long.compare(b[mid], bv);
      if (c <= 0) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  long rowIdAt(int at) {
    return r[at];
  }

  long hideAt(int at) {
    return h[at];
  }

  /** A lookup position for one data file: linear in its rows when they come in key order. */
  Cursor cursor() {
    return new Cursor();
  }

  final class Cursor implements RowHider {
    private int pos;

    @Override
    public boolean hidden(long ov, long bv, long rv, long current) {
      if (size == 0) {
        return false;
      }
      if (pos > 0 && compare(pos - 1, ov, bv, rv) >= 0) {
        pos = lowerBound(0, pos, ov, bv, rv); // the key went backwards: search again
      } else if (pos < size && compare(pos, ov, bv, rv) < 0) {
        int step = 1;
        int low = pos + 1;
        int high = low;
        while (high < size && compare(high, ov, bv, rv) < 0) {
          low = high + 1;
          high = low + step;
          step <<= 1;
        }
        pos = lowerBound(low, Math.min(high, size), ov, bv, rv);
      }
      return pos < size && compare(pos, ov, bv, rv) == 0 && current < h[pos];
    }
  }
}
