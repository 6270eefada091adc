package acidflow.spark;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One Spark task: one bucket of one table partition, with exactly the files the driver planned
 * (executors never list). Data files in Hive's reading order (originals, base, deltas).
 */
final class HiveAcidInputPartition implements InputPartition, Serializable {
  private static final long serialVersionUID = 1L;

  static final byte ORIGINAL = 0;
  static final byte BASE = 1;
  static final byte DELTA = 2;

  final String location;
  final int bucket;
  final String[] dataPaths;
  final byte[] dataKinds;
  final long[] dataLengths;
  final String[] deletePaths;
  final long[] deleteLengths;
  /** The partition values in Spark's internal form, in the partition columns' order. */
  final InternalRow partitionValues;

  HiveAcidInputPartition(
      String location,
      int bucket,
      String[] dataPaths,
      byte[] dataKinds,
      long[] dataLengths,
      String[] deletePaths,
      long[] deleteLengths,
      InternalRow partitionValues) {
    this.location = location;
    this.bucket = bucket;
    this.dataPaths = dataPaths;
    this.dataKinds = dataKinds;
    this.dataLengths = dataLengths;
    this.deletePaths = deletePaths;
    this.deleteLengths = deleteLengths;
    this.partitionValues = partitionValues;
  }
}
