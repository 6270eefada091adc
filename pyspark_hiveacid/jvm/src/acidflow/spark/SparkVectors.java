package acidflow.spark;

import java.util.List;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.Decimal64ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ListColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.MapColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.orc.TypeDescription;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * ORC vectors (as orc-core decodes them with the table's types) as Spark vectors, with the values
 * acidflow's own reader returns (pyarrow's reading of the same ORC data):
 *
 * <pre>
 *   date        the stored day number as is (proleptic Gregorian; no Julian rebase, which
 *               Spark's own ORC vectors apply)
 *   timestamp   microseconds of the stored wall-clock time read as UTC (files are opened with
 *               useUTCTimestamp), for timestamp and timestamp_ntz alike
 *   char(n)     padded with spaces to n characters, as stored (orc-core trims them)
 *   decimal     at the table's scale; booleans, integers, floats, strings, binary as stored
 *   struct, array, map   the same, recursively
 * </pre>
 */
final class SparkVectors {
  private SparkVectors() {}

  /** How many rows the current batch has (set by the reader), for {@code numNulls}. */
  static final class Rows {
    int count;
  }

  static org.apache.spark.sql.vectorized.ColumnVector of(
      DataType type, TypeDescription orcType, ColumnVector orc, Rows rows) {
    if (orc instanceof StructColumnVector s && type instanceof StructType st) {
      org.apache.spark.sql.vectorized.ColumnVector[] children =
          new org.apache.spark.sql.vectorized.ColumnVector[st.size()];
      List<TypeDescription> orcChildren = orcType.getChildren();
      for (int i = 0; i < children.length; i++) {
        children[i] = of(st.fields()[i].dataType(), orcChildren.get(i), s.fields[i], rows);
      }
      return new Struct(type, s, children, rows);
    }
    if (orc instanceof ListColumnVector l && type instanceof ArrayType at) {
      return new List_(type, l, of(at.elementType(), orcType.getChildren().get(0), l.child, null), rows);
    }
    if (orc instanceof MapColumnVector m && type instanceof MapType mt) {
      return new Map_(
          type,
          m,
          of(mt.keyType(), orcType.getChildren().get(0), m.keys, null),
          of(mt.valueType(), orcType.getChildren().get(1), m.values, null),
          rows);
    }
    int padTo = orcType.getCategory() == TypeDescription.Category.CHAR ? orcType.getMaxLength() : -1;
    return new Scalar(type, orc, padTo, rows);
  }

  /** Null handling shared by every vector: ORC's isRepeating / noNulls / isNull. */
  abstract static class Base extends NoScalars {
    final ColumnVector orc;
    /** The batch's row count; null for the elements of arrays and maps (Spark never asks them). */
    final Rows rows;

    Base(DataType type, ColumnVector orc, Rows rows) {
      super(type);
      this.orc = orc;
      this.rows = rows;
    }

    final int at(int rowId) {
      return orc.isRepeating ? 0 : rowId;
    }

    @Override
    public boolean hasNull() {
      return !orc.noNulls;
    }

    @Override
    public int numNulls() {
      if (orc.noNulls) {
        return 0;
      }
      if (rows == null) {
        throw unsupported("numNulls of array elements");
      }
      if (orc.isRepeating) {
        return orc.isNull[0] ? rows.count : 0;
      }
      int nulls = 0;
      for (int i = 0; i < rows.count; i++) {
        nulls += orc.isNull[i] ? 1 : 0;
      }
      return nulls;
    }

    @Override
    public boolean isNullAt(int rowId) {
      return !orc.noNulls && orc.isNull[at(rowId)];
    }
  }

  /** Booleans, integers, dates, floats, strings, binary, decimals, timestamps. */
  static final class Scalar extends Base {
    // The vectors, never their arrays: orc-core reallocates a child's arrays when a batch of
    // lists or maps holds more elements than before.
    private final LongColumnVector longs;
    private final DoubleColumnVector doubles;
    private final BytesColumnVector bytes;
    private final DecimalColumnVector decimals;
    private final Decimal64ColumnVector decimal64;
    private final TimestampColumnVector timestamps;
    private final int padTo;
    private static final UTF8String SPACE = UTF8String.fromString(" ");

    Scalar(DataType type, ColumnVector orc, int padTo, Rows rows) {
      super(type, orc, rows);
      this.decimal64 = orc instanceof Decimal64ColumnVector d ? d : null;
      this.longs = orc instanceof LongColumnVector l && decimal64 == null ? l : null;
      this.doubles = orc instanceof DoubleColumnVector d ? d : null;
      this.bytes = orc instanceof BytesColumnVector b ? b : null;
      this.decimals = orc instanceof DecimalColumnVector d ? d : null;
      this.timestamps = orc instanceof TimestampColumnVector t ? t : null;
      this.padTo = padTo;
    }

    @Override
    public boolean getBoolean(int rowId) {
      return longs.vector[at(rowId)] != 0;
    }

    @Override
    public byte getByte(int rowId) {
      return (byte) longs.vector[at(rowId)];
    }

    @Override
    public short getShort(int rowId) {
      return (short) longs.vector[at(rowId)];
    }

    @Override
    public int getInt(int rowId) {
      return (int) longs.vector[at(rowId)];
    }

    @Override
    public long getLong(int rowId) {
      if (timestamps != null) {
        int i = at(rowId);
        // java.sql.Timestamp's reading, as Spark's DateTimeUtils.fromJavaTimestamp: the
        // milliseconds of time, then the microseconds below a millisecond from nanos.
        return timestamps.time[i] * 1000L + (timestamps.nanos[i] / 1000) % 1000;
      }
      return longs.vector[at(rowId)];
    }

    @Override
    public float getFloat(int rowId) {
      return (float) doubles.vector[at(rowId)];
    }

    @Override
    public double getDouble(int rowId) {
      return doubles.vector[at(rowId)];
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
      int i = at(rowId);
      if (decimal64 != null) {
        return Decimal.apply(java.math.BigDecimal.valueOf(decimal64.vector[i], decimal64.scale), precision, scale);
      }
      java.math.BigDecimal value = decimals.vector[i].getHiveDecimal().bigDecimalValue();
      return Decimal.apply(value, precision, scale);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
      int i = at(rowId);
      UTF8String value = UTF8String.fromBytes(bytes.vector[i], bytes.start[i], bytes.length[i]);
      return padTo > 0 && value.numChars() < padTo ? value.rpad(padTo, SPACE) : value;
    }

    @Override
    public byte[] getBinary(int rowId) {
      int i = at(rowId);
      byte[] out = new byte[bytes.length[i]];
      System.arraycopy(bytes.vector[i], bytes.start[i], out, 0, out.length);
      return out;
    }
  }

  static final class Struct extends Base {
    private final org.apache.spark.sql.vectorized.ColumnVector[] children;

    Struct(
        DataType type,
        StructColumnVector orc,
        org.apache.spark.sql.vectorized.ColumnVector[] children,
        Rows rows) {
      super(type, orc, rows);
      this.children = children;
    }

    @Override
    public org.apache.spark.sql.vectorized.ColumnVector getChild(int ordinal) {
      return children[ordinal];
    }
  }

  static final class List_ extends Base {
    private final ListColumnVector list;
    private final org.apache.spark.sql.vectorized.ColumnVector elements;

    List_(
        DataType type,
        ListColumnVector orc,
        org.apache.spark.sql.vectorized.ColumnVector elements,
        Rows rows) {
      super(type, orc, rows);
      this.list = orc;
      this.elements = elements;
    }

    @Override
    public ColumnarArray getArray(int rowId) {
      int i = at(rowId);
      return new ColumnarArray(elements, (int) list.offsets[i], (int) list.lengths[i]);
    }
  }

  static final class Map_ extends Base {
    private final MapColumnVector map;
    private final org.apache.spark.sql.vectorized.ColumnVector keys;
    private final org.apache.spark.sql.vectorized.ColumnVector values;

    Map_(
        DataType type,
        MapColumnVector orc,
        org.apache.spark.sql.vectorized.ColumnVector keys,
        org.apache.spark.sql.vectorized.ColumnVector values,
        Rows rows) {
      super(type, orc, rows);
      this.map = orc;
      this.keys = keys;
      this.values = values;
    }

    @Override
    public ColumnarMap getMap(int rowId) {
      int i = at(rowId);
      return new ColumnarMap(keys, values, (int) map.offsets[i], (int) map.lengths[i]);
    }
  }
}
