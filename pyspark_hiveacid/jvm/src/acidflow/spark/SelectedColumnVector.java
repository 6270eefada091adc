package acidflow.spark;

import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows {@code selected[0..size)} of another vector, without copying: row i of this vector is
 * row {@code selected[i]} of the inner one. Children (struct fields) see the same selection; an
 * array or map value is the inner one's (its elements are addressed by the inner offsets).
 */
final class SelectedColumnVector extends ColumnVector {
  private final ColumnVector inner;
  private final Selection selection;
  private final SelectedColumnVector[] children;

  /** The selection shared by every column of a batch. */
  static final class Selection {
    int[] rows = new int[0];
    int size;
  }

  SelectedColumnVector(ColumnVector inner, Selection selection, int childCount) {
    super(inner.dataType());
    this.inner = inner;
    this.selection = selection;
    this.children = new SelectedColumnVector[childCount];
  }

  private int at(int rowId) {
    return selection.rows[rowId];
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return inner.hasNull();
  }

  @Override
  public int numNulls() {
    if (!inner.hasNull()) {
      return 0;
    }
    int nulls = 0;
    for (int i = 0; i < selection.size; i++) {
      if (inner.isNullAt(selection.rows[i])) {
        nulls++;
      }
    }
    return nulls;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return inner.isNullAt(at(rowId));
  }

  @Override
  public boolean getBoolean(int rowId) {
    return inner.getBoolean(at(rowId));
  }

  @Override
  public byte getByte(int rowId) {
    return inner.getByte(at(rowId));
  }

  @Override
  public short getShort(int rowId) {
    return inner.getShort(at(rowId));
  }

  @Override
  public int getInt(int rowId) {
    return inner.getInt(at(rowId));
  }

  @Override
  public long getLong(int rowId) {
    return inner.getLong(at(rowId));
  }

  @Override
  public float getFloat(int rowId) {
    return inner.getFloat(at(rowId));
  }

  @Override
  public double getDouble(int rowId) {
    return inner.getDouble(at(rowId));
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    return inner.getArray(at(rowId));
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    return inner.getMap(at(rowId));
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    return inner.getDecimal(at(rowId), precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    return inner.getUTF8String(at(rowId));
  }

  @Override
  public byte[] getBinary(int rowId) {
    return inner.getBinary(at(rowId));
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    SelectedColumnVector child = children[ordinal];
    if (child == null) {
      ColumnVector innerChild = inner.getChild(ordinal);
      int grandChildren =
          innerChild.dataType() instanceof org.apache.spark.sql.types.StructType s ? s.size() : 0;
      child = children[ordinal] = new SelectedColumnVector(innerChild, selection, grandChildren);
    }
    return child;
  }
}
