package acidflow.spark;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/** {@code row__id struct<writeid:bigint, bucketid:int, rowid:bigint>}: a struct of three vectors, never null. */
final class RowIdColumnVector extends ColumnVector {
  private final ColumnVector[] fields;

  RowIdColumnVector(StructType type, ColumnVector writeId, ColumnVector bucketId, ColumnVector rowId) {
    super(type);
    this.fields = new ColumnVector[] {writeId, bucketId, rowId};
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return false;
  }

  @Override
  public int numNulls() {
    return 0;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return false;
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    return fields[ordinal];
  }

  private static UnsupportedOperationException notScalar() {
    return new UnsupportedOperationException("row__id is a struct");
  }

  @Override
  public boolean getBoolean(int rowId) {
    throw notScalar();
  }

  @Override
  public byte getByte(int rowId) {
    throw notScalar();
  }

  @Override
  public short getShort(int rowId) {
    throw notScalar();
  }

  @Override
  public int getInt(int rowId) {
    throw notScalar();
  }

  @Override
  public long getLong(int rowId) {
    throw notScalar();
  }

  @Override
  public float getFloat(int rowId) {
    throw notScalar();
  }

  @Override
  public double getDouble(int rowId) {
    throw notScalar();
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw notScalar();
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    throw notScalar();
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw notScalar();
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw notScalar();
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw notScalar();
  }
}
