package acidflow.spark;

import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;

/** {@code row__id struct<writeid:bigint, bucketid:int, rowid:bigint>}: a struct of three vectors, never null. */
final class RowIdColumnVector extends NoScalars {
  private final ColumnVector[] fields;

  RowIdColumnVector(StructType type, ColumnVector writeId, ColumnVector bucketId, ColumnVector rowId) {
    super(type);
    this.fields = new ColumnVector[] {writeId, bucketId, rowId};
  }

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
}
