package acidflow.spark;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark vector whose every getter refuses, naming the type: the base of acidflow's vectors,
 * which each implement only the getters of their type.
 */
abstract class NoScalars extends ColumnVector {
  NoScalars(DataType type) {
    super(type);
  }

  @Override
  public void close() {}

  UnsupportedOperationException unsupported(String what) {
    return new UnsupportedOperationException(what + " of " + type.simpleString());
  }

  @Override
  public boolean getBoolean(int rowId) {
    throw unsupported("getBoolean");
  }

  @Override
  public byte getByte(int rowId) {
    throw unsupported("getByte");
  }

  @Override
  public short getShort(int rowId) {
    throw unsupported("getShort");
  }

  @Override
  public int getInt(int rowId) {
    throw unsupported("getInt");
  }

  @Override
  public long getLong(int rowId) {
    throw unsupported("getLong");
  }

  @Override
  public float getFloat(int rowId) {
    throw unsupported("getFloat");
  }

  @Override
  public double getDouble(int rowId) {
    throw unsupported("getDouble");
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw unsupported("getArray");
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    throw unsupported("getMap");
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    throw unsupported("getDecimal");
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    throw unsupported("getUTF8String");
  }

  @Override
  public byte[] getBinary(int rowId) {
    throw unsupported("getBinary");
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw unsupported("getChild");
  }
}
