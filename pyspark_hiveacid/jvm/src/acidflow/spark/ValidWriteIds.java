package acidflow.spark;

import java.io.Serializable;
import java.util.Arrays;

/**
 * Hive's ValidReaderWriteIdList, parsed from its string form {@code table:hwm:minOpen:open,..:aborted,..}
 * (ranges {@code a-b} accepted as Hive 4 writes them for transaction lists).
 *
 * <p>A write ID is valid when it is at most the high watermark and neither open nor aborted
 * ({@code isWriteIdValid}); an event is seen only if its currentTransaction is valid.
 */
final class ValidWriteIds implements Serializable {
  private static final long serialVersionUID = 1L;

  final long highWatermark;
  private final long[] exceptions;

  ValidWriteIds(long highWatermark, long[] exceptions) {
    this.highWatermark = highWatermark;
    this.exceptions = exceptions;
  }

  static ValidWriteIds parse(String text) {
    String[] parts = text.split(":", -1);
    if (parts.length < 5) {
      throw new IllegalArgumentException(
          "ValidWriteIdList '" + text + "': expected 'table:hwm:min_open:open,..:aborted,..'");
    }
    int n = parts.length;
    long hwm = Long.parseLong(parts[n - 4]);
    long[] open = ids(parts[n - 2]);
    long[] aborted = ids(parts[n - 1]);
    long[] all = Arrays.copyOf(open, open.length + aborted.length);
    System.arraycopy(aborted, 0, all, open.length, aborted.length);
    Arrays.sort(all);
    return new ValidWriteIds(hwm, all);
  }

  private static long[] ids(String list) {
    if (list.isEmpty()) {
      return new long[0];
    }
    long[] out = new long[8];
    int size = 0;
    for (String part : list.split(",")) {
      int dash = part.indexOf('-', 1);
      long low = Long.parseLong(dash < 0 ? part : part.substring(0, dash));
      long high = dash < 0 ? low : Long.parseLong(part.substring(dash + 1));
      for (long v = low; v <= high; v++) {
        if (size == out.length) {
          out = Arrays.copyOf(out, size * 2);
        }
        out[size++] = v;
      }
    }
    return Arrays.copyOf(out, size);
  }

  boolean isValid(long writeId) {
    return writeId <= highWatermark
        && (exceptions.length == 0 || Arrays.binarySearch(exceptions, writeId) < 0);
  }

  /** Whether every write ID in [low, high] is valid (then rows need no check). */
  boolean allValid(long low, long high) {
    if (high > highWatermark) {
      return false;
    }
    int at = Arrays.binarySearch(exceptions, low);
    int insertion = at >= 0 ? at : -at - 1;
    return at < 0 && (insertion >= exceptions.length || exceptions[insertion] > high);
  }
}
