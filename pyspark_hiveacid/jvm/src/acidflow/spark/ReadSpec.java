package acidflow.spark;

import java.io.Serializable;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.util.SerializableConfiguration;

/**
 * What every task of one read shares (the reader factory Spark ships to executors): the output
 * schema and where each output column comes from, the table's row type, the snapshot.
 */
final class ReadSpec implements PartitionReaderFactory, Serializable {
  private static final long serialVersionUID = 1L;

  static final byte DATA = 0;
  static final byte PARTITION = 1;
  static final byte ROW_ID = 2;

  final StructType output;
  /** For output column k: DATA (row field {@code indexes[k]}), PARTITION (value {@code indexes[k]}) or ROW_ID. */
  final byte[] kinds;
  final int[] indexes;
  final String rowType;
  final String writeIds;
  final int batchSize;
  final long deleteEventsInMemory;
  final Broadcast<SerializableConfiguration> conf;

  ReadSpec(
      StructType output,
      byte[] kinds,
      int[] indexes,
      String rowType,
      String writeIds,
      int batchSize,
      long deleteEventsInMemory,
      Broadcast<SerializableConfiguration> conf) {
    this.output = output;
    this.kinds = kinds;
    this.indexes = indexes;
    this.rowType = rowType;
    this.writeIds = writeIds;
    this.batchSize = batchSize;
    this.deleteEventsInMemory = deleteEventsInMemory;
    this.conf = conf;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("hiveacid reads columnar batches only");
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new AcidPartitionReader(this, (HiveAcidInputPartition) partition, conf.value().value());
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }
}
