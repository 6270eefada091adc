/*
 * Test-only: the JSON answers of the Hive oracles (2.3.10's HiveAcidOracle and HiveAcidEvents,
 * 3.1.3's and 4.0.1's Hive3PlusOracle). Plain Java, no Hive class: compiled into every oracle's JVM.
 */
package acidflow.hive;

import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.fs.Path;

public final class OracleJson {
  private OracleJson() {
  }

  /** {@code path} relative to the directory {@code root} (a path below it, else IllegalStateException). */
  public static String relative(String root, Path path) {
    String full = path.toUri().getPath();
    String prefix = root.endsWith("/") ? root : root + "/";
    if (!full.startsWith(prefix)) {
      throw new IllegalStateException(full + " is not below " + root);
    }
    return full.substring(prefix.length());
  }

  /** Each of {@code paths} relative to {@code root}, in order. */
  public static List<String> relative(String root, List<Path> paths) {
    List<String> names = new ArrayList<>();
    for (Path path : paths) {
      names.add(relative(root, path));
    }
    return names;
  }

  /** A JSON array of strings. */
  public static void appendList(StringBuilder out, List<String> values) {
    out.append('[');
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) {
        out.append(',');
      }
      out.append(quote(values.get(i)));
    }
    out.append(']');
  }

  /** A JSON string ({@code null} for null). */
  public static String quote(String value) {
    if (value == null) {
      return "null";
    }
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
